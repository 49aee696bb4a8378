"""What a report is built from: the results tables of one folder (search, confirm or bench), its run info, and the
recommendation they lead to (decided once, so that every figure reads the same one: here, or handed over by the
experiment that exported it)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple

import pandas as pd

from boosttune.config.experiment import MAX_DROP, recorded_max_drop
from boosttune.errors import ConfigError, DataError
from boosttune.outputs.results import CSV_NAME, PARQUET_NAME, baseline_row, load_results, table_objective
from boosttune.outputs.export import SelectedRecipe, selected_recipe
from boosttune.stats.select import Selection, Tolerance, select_best
from boosttune.outputs.summary import CONFIRM_NAME, Confirmed, load_confirmed
from boosttune.execution.provenance import load_run_info
from boosttune.objective import Objective

__all__ = ["ReportInputs", "ReportSelection", "load_report_inputs"]

Kind = Literal["experiment", "bench"]


class ReportSelection(NamedTuple):
    """What the report recommends, decided once from its inputs: every figure reads it, none selects again."""

    recipe: str  # the recommended recipe's name; O0 when none qualifies or nothing can be compared
    verdict: str  # the confirm stage's decision code for it ("baseline": it kept O0); "search_only" without a
    # confirm stage; "no_baseline" without a finished O0 baseline to compare with
    search: Selection | None  # the search's one-seed pick (None without a search or a finished baseline)
    search_trial: str | None  # that pick's trial id (the baseline's when nothing beat it)
    document: dict[str, Any] | None  # best_recipe.json as `boosttune export` writes it; None: nothing to recommend


@dataclass(frozen=True)
class ReportInputs:
    """The tables a report reads, and what is known about the run that wrote them.

    ``search`` is the experiment's results table (one row per search trial, the baseline included);
    ``confirmed`` the paired runs of the confirm stage or of a bench, with their summary. ``max_drop`` is the
    tolerance in the objective's gain units (points for accuracy). An experiment hands over what it already knows:
    its model's ``objective`` and the recipe it exported (``best``); left out, both come from the tables.
    """

    kind: Kind
    title: str
    max_drop: float
    search: pd.DataFrame | None = None
    confirmed: Confirmed | None = None
    config: dict[str, Any] = field(default_factory=dict)
    run_info: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None
    objective: Objective = None  # type: ignore[assignment]  # what the runs were judged on; None: the runs' own
    best: SelectedRecipe | None = None  # the recipe `boosttune export` writes; None: selected here, from the tables
    verified: tuple[dict[str, Any], ...] = ()  # verify.json of each `boosttune verify` of this run (or of this folder)

    def __post_init__(self) -> None:
        if self.search is None and self.confirmed is None:
            raise DataError("report: nothing to report (no search results and no confirmed runs)")
        if not self.max_drop >= 0:
            raise ConfigError(f"max_drop: {self.max_drop!r} is invalid; expected a number >= 0")
        if self.objective is None:  # a frozen dataclass: set once, here
            object.__setattr__(self, "objective", table_objective(self.runs))

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
        return self.search if self.search is not None else self.confirmed.runs  # type: ignore[union-attr]

    @cached_property
    def selection(self) -> ReportSelection:
        """The recommendation: the confirm stage's decision when there is one, else the search's one-seed pick
        within ``max_drop``. Made the first time it is read, then kept."""
        return _select(self)


def _select(inputs: ReportInputs) -> ReportSelection:
    max_drop = Tolerance(inputs.objective, inputs.max_drop, MAX_DROP)
    best = inputs.best
    if best is not None and inputs.confirmed is None:
        search: Selection | None = best.selection  # the export's pick is the search's one-seed pick
    else:
        search = _search_pick(inputs.search, max_drop)
    search_trial = str(search.row["trial_id"]) if search is not None else None
    if best is not None:
        document: dict[str, Any] | None = best.document
    else:
        try:  # the same document `boosttune export` writes, so the page and the files cannot disagree
            document = selected_recipe(inputs.runs, max_drop=max_drop, confirmed=inputs.confirmed).document
        except DataError:
            document = None
    confirmed = inputs.confirmed
    if confirmed is not None:
        chosen = confirmed.selection
        verdict = "baseline" if chosen.fell_back_to_baseline else str(chosen.row["verdict"])
        return ReportSelection(chosen.recipe, verdict, search, search_trial, document)
    if search is None:
        return ReportSelection("O0", "no_baseline", None, None, document)
    row = search.row
    recipe = "O0" if search.fell_back_to_baseline else str(
        row.get("label") if pd.notna(row.get("label")) else row["trial_id"])
    return ReportSelection(recipe, "search_only", search, search_trial, document)


def _search_pick(search: pd.DataFrame | None, max_drop: Tolerance) -> Selection | None:
    """The search's one-seed pick within ``max_drop``; None without a search or a finished baseline."""
    if search is None:
        return None
    try:
        return select_best(search, max_drop)
    except DataError:
        return None


def load_report_inputs(folder: str | Path, *, max_drop: float | None = None) -> ReportInputs:
    """The tables of an experiment or bench folder; ``max_drop`` (the objective's gain units) defaults to the run's
    own ``max_drop``.

    Raises:
        DataError: the folder holds neither results.parquet/.csv nor confirm.parquet, or one is unreadable.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such results folder")
    kind: Kind = "bench" if (folder / "bench.json").is_file() else "experiment"
    config = _read_json(folder / f"{kind}.json")
    own, default = recorded_max_drop(folder)
    if max_drop is None:
        max_drop = own
    has_search = (folder / PARQUET_NAME).is_file() or (folder / CSV_NAME).is_file()
    search = load_results(folder) if has_search and kind == "experiment" else None
    confirmed = load_confirmed(folder, max_drop=max_drop, default=default)
    if confirmed is not None:
        max_drop = confirmed.max_drop
    elif search is not None and baseline_row(search) is not None:
        max_drop = Tolerance.from_table(search, max_drop, default).resolved_on(search)
    if search is None and confirmed is None:
        raise DataError(f"{folder}: no {PARQUET_NAME} or {CONFIRM_NAME}.parquet here; run an experiment "
                        "(python experiments/resnet.py) or a bench (boosttune bench) first")
    if search is not None and baseline_row(search) is None:  # every figure is a ratio to it: no page without it
        what = "no trials" if search.empty else "no finished O0 baseline (preset 'O0')"
        raise DataError(f"{folder / PARQUET_NAME}: the results table holds {what}, so there is nothing to compare "
                        "against; rerun the experiment")
    name = config.get("name") or folder.name
    title = f"boosttune {'bench' if kind == 'bench' else 'experiment'}: {name}"
    info = load_run_info(folder)
    return ReportInputs(kind=kind, title=title, max_drop=max_drop, search=search, confirmed=confirmed,
                        config=config, run_info=info, folder=folder, verified=_verified(folder, info))


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
