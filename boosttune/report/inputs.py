"""What a report is built from: a judged run (:class:`~boosttune.outputs.judged.Judged`: its tables, the margin, the
one decision and the recipe it names), its run info and where it lives. The report selects nothing: every figure
reads the recommendation the run was judged to (:attr:`ReportInputs.selection`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from boosttune.execution.provenance import load_run_info
from boosttune.objective import Objective
from boosttune.outputs.export import SelectedRecipe
from boosttune.outputs.judged import Judged, Kind, read_judged
from boosttune.stats.decide import Decision
from boosttune.stats.select import Selection

__all__ = ["ReportInputs", "ReportSelection", "load_report_inputs", "report_inputs"]


class ReportSelection(NamedTuple):
    """What the report recommends, as the run was judged: every figure reads it, none selects again."""

    recipe: str  # the recommended recipe's name; O0 when none qualifies or nothing can be compared
    verdict: str  # the confirm stage's decision code for it ("baseline": it kept O0); "search_only" without a
    # confirm stage; "no_baseline" without a finished O0 baseline to compare with
    search: Selection | None  # the search's one-seed pick (None without a search or a finished baseline)
    search_trial: str | None  # that pick's trial id (the baseline's when nothing beat it)
    document: dict[str, Any] | None  # best_recipe.json as `boosttune export` writes it; None: nothing to recommend


@dataclass(frozen=True)
class ReportInputs:
    """A judged run and what is known about the run that wrote it (its configuration, run_info.json, its folder and
    the verifications of its answer)."""

    judged: Judged
    title: str
    config: dict[str, Any] = field(default_factory=dict)
    run_info: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None
    verified: tuple[dict[str, Any], ...] = ()  # verify.json of each `boosttune verify` of this run (or of this folder)

    @property
    def kind(self) -> Kind:
        return self.judged.kind

    @property
    def search(self) -> pd.DataFrame | None:
        """The experiment's results table (one row per search trial, the baseline included); None for a bench."""
        return self.judged.search

    @property
    def confirmed(self) -> Decision | None:
        """The decision of the confirm stage's or the bench's paired runs; None without."""
        return self.judged.decision

    @property
    def max_drop(self) -> float:
        """The margin in the objective's gain units (points for accuracy)."""
        return self.judged.margin.value

    @property
    def objective(self) -> Objective:
        """What the runs were judged on."""
        return self.judged.margin.objective

    @property
    def best(self) -> SelectedRecipe | None:
        """The recipe `boosttune export` writes; None: nothing to recommend."""
        return self.judged.best

    @property
    def left_out(self) -> dict[str, str]:
        """Knob or recipe -> why it was not searched or benched on this device."""
        return dict(self.run_info.get("left_out") or {})

    @property
    def unsupported(self) -> dict[str, str]:
        """Knob -> MindSpore's reason it does not run on the trials' device (the probe's finding)."""
        return dict(self.run_info.get("unsupported") or {})

    @property
    def runs(self) -> pd.DataFrame:
        """Every run with figures: the search's trials, else the bench's runs."""
        return self.judged.runs

    @cached_property
    def selection(self) -> ReportSelection:
        """The recommendation: the decision's answer when there is one, else the search's one-seed pick."""
        judged = self.judged
        search = judged.search_pick
        search_trial = str(search.row["trial_id"]) if search is not None else None
        document = judged.best.document if judged.best is not None else None
        if judged.decision is not None:
            chosen = judged.decision.selection
            verdict = "baseline" if chosen.fell_back_to_baseline else str(chosen.row["verdict"])
            return ReportSelection(chosen.recipe, verdict, search, search_trial, document)
        if search is None:
            return ReportSelection("O0", "no_baseline", None, None, document)
        row = search.row
        recipe = "O0" if search.fell_back_to_baseline else str(
            row.get("label") if pd.notna(row.get("label")) else row["trial_id"])
        return ReportSelection(recipe, "search_only", search, search_trial, document)


def load_report_inputs(folder: str | Path, *, max_drop: float | None = None) -> ReportInputs:
    """An experiment or bench folder, judged (:func:`~boosttune.outputs.judged.read_judged`) at ``max_drop`` (the
    objective's gain units; None: the run's own).

    Raises:
        DataError: the folder holds neither results.parquet/.csv nor confirm.parquet, or one is unreadable.
    """
    folder = Path(folder)
    judged = read_judged(folder, max_drop)
    return report_inputs(judged, folder)


def report_inputs(judged: Judged, folder: Path) -> ReportInputs:
    """The inputs of ``judged``'s report, with what ``folder`` records of its run (configuration, run info, the
    verifications of its answer)."""
    config = _read_json(folder / f"{judged.kind}.json")
    name = config.get("name") or folder.name
    title = f"boosttune {'bench' if judged.kind == 'bench' else 'experiment'}: {name}"
    info = load_run_info(folder)
    return ReportInputs(judged, title, config=config, run_info=info, folder=folder, verified=_verified(folder, info))


def _verified(folder: Path, info: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """The verify.json of this folder (a verification's own) and of each verification of this run (run_info.json
    ``verified``), as written; a folder since moved or deleted is left out."""
    folders = [folder, *(Path(p) for p in info.get("verified") or [] if isinstance(p, str))]
    documents = [{**_read_json(f / "verify.json"), "folder": str(f)} for f in folders]
    return tuple(d for d in documents if "outcome" in d)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}
