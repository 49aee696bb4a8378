"""What a report is built from: the results tables of one folder (search, confirm or bench) and its run info."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from boosttune.config.experiment import recorded_max_drop
from boosttune.errors import ConfigError, DataError
from boosttune.evaluation.results import CSV_NAME, PARQUET_NAME, baseline_row, load_results, table_objective
from boosttune.evaluation.select import resolve_tolerance
from boosttune.evaluation.summary import CONFIRM_NAME, Confirmed, load_confirmed
from boosttune.execution.provenance import load_run_info
from boosttune.objective import Objective

__all__ = ["ReportInputs", "load_report_inputs"]

Kind = Literal["experiment", "bench"]


@dataclass(frozen=True)
class ReportInputs:
    """The tables a report reads, and what is known about the run that wrote them.

    ``search`` is the experiment's results table (one row per search trial, the baseline included);
    ``confirmed`` the paired runs of the confirm stage or of a bench, with their summary. ``max_drop`` is the
    tolerance in the objective's gain units (points for accuracy).
    """

    kind: Kind
    title: str
    max_drop: float
    search: pd.DataFrame | None = None
    confirmed: Confirmed | None = None
    config: dict[str, Any] = field(default_factory=dict)
    run_info: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None

    def __post_init__(self) -> None:
        if self.search is None and self.confirmed is None:
            raise DataError("report: nothing to report (no search results and no confirmed runs)")
        if not self.max_drop >= 0:
            raise ConfigError(f"max_drop: {self.max_drop!r} is invalid; expected a number >= 0")

    @property
    def left_out(self) -> dict[str, str]:
        """Knob or recipe -> why it was not searched or benched on this device."""
        return dict(self.run_info.get("left_out") or {})

    @property
    def unsupported(self) -> dict[str, str]:
        """Knob -> MindSpore's reason it does not run on the trials' device (the probe's finding)."""
        return dict(self.run_info.get("unsupported") or {})

    @property
    def objective(self) -> Objective:
        """What the runs were judged on (accuracy for the built-in models)."""
        return table_objective(self.runs)

    @property
    def runs(self) -> pd.DataFrame:
        """Every run with figures: the search's trials, else the bench's runs."""
        return self.search if self.search is not None else self.confirmed.runs  # type: ignore[union-attr]


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
        max_drop = resolve_tolerance(search, max_drop, default)
    if search is None and confirmed is None:
        raise DataError(f"{folder}: no {PARQUET_NAME} or {CONFIRM_NAME}.parquet here; run an experiment "
                        "(python experiments/resnet.py) or a bench (boosttune bench) first")
    if search is not None and baseline_row(search) is None:  # every figure is a ratio to it: no page without it
        what = "no trials" if search.empty else "no finished O0 baseline (preset 'O0')"
        raise DataError(f"{folder / PARQUET_NAME}: the results table holds {what}, so there is nothing to compare "
                        "against; rerun the experiment")
    name = config.get("name") or folder.name
    title = f"boosttune {'bench' if kind == 'bench' else 'experiment'}: {name}"
    return ReportInputs(kind=kind, title=title, max_drop=max_drop, search=search, confirmed=confirmed,
                        config=config, run_info=load_run_info(folder), folder=folder)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}
