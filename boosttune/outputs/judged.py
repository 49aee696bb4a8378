"""A run judged: its tables, the margin resolved once, the one decision and the recipe it names.

:func:`judge_run` is the one place a run's answer becomes a recipe to take home: the experiment and the bench hand it
what they trained, :func:`read_judged` reads a finished folder (``boosttune export``, ``boosttune report``,
``boosttune verify``). The decision itself is :func:`boosttune.stats.decide.decide`'s; the export document is
:func:`~boosttune.outputs.export.selected_recipe`'s; the report draws a :class:`Judged` and selects nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd

from boosttune.config.experiment import recorded_max_drop
from boosttune.errors import DataError
from boosttune.outputs.export import SelectedRecipe, selected_recipe
from boosttune.outputs.summary import load_confirmed
from boosttune.stats.decide import Decision
from boosttune.stats.job import one_seed_job_speedups
from boosttune.stats.margin import Margin
from boosttune.stats.select import Selection, select_best
from boosttune.tables.confirm_runs import CONFIRM_NAME
from boosttune.tables.results import CSV_NAME, PARQUET_NAME, baseline_row, load_results

__all__ = ["Judged", "Kind", "judge_run", "read_judged"]

Kind = Literal["experiment", "bench"]


@dataclass(frozen=True)
class Judged:
    """What every file and page of a run is written from: the search's table (None for a bench), the confirm
    stage's or bench's decision (None without paired runs), the margin both were judged at, the search's one-seed
    pick (None without a search or a finished baseline) and the recipe to take home (None: nothing to recommend)."""

    kind: Kind
    margin: Margin
    search: pd.DataFrame | None
    decision: Decision | None
    search_pick: Selection | None
    best: SelectedRecipe | None

    def __post_init__(self) -> None:
        if self.search is None and self.decision is None:
            raise DataError("report: nothing to report (no search results and no confirmed runs)")

    @property
    def runs(self) -> pd.DataFrame:
        """Every run with figures: the search's trials, else the bench's runs."""
        return self.search if self.search is not None else self.decision.runs  # type: ignore[union-attr]


def judge_run(kind: Kind, margin: Margin, *, search: pd.DataFrame | None = None, decision: Decision | None = None,
          experiment_path: str | Path | None = None) -> Judged:
    """The run's answer as a recipe: the decision's when there is one, else the search's one-seed pick. The search's
    table gains each trial's speed-up per job (``job_speedup_vs_baseline``, one seed, its own compile), the speed
    every page and file tells."""
    pick = None
    if search is not None:
        search = search.assign(job_speedup_vs_baseline=one_seed_job_speedups(search))
        try:
            pick = select_best(search, margin)
        except DataError:  # no finished baseline: nothing to compare with
            pick = None
    best = None
    if decision is not None or pick is not None:
        try:
            best = selected_recipe(search, margin, experiment_path=experiment_path, decision=decision, pick=pick)
        except DataError:
            best = None
    return Judged(kind, margin, search, decision, pick, best)


def read_judged(results: str | Path, max_drop: float | None = None) -> Judged:
    """An experiment or bench folder (or one results.parquet/.csv file in it) judged at ``max_drop`` (the objective's
    gain units; None: the run's own).

    Raises:
        DataError: the folder holds neither results.parquet/.csv nor confirm.parquet, one is unreadable, or the
            search's table has no finished O0 baseline.
    """
    path = Path(results)
    folder = path.parent if path.is_file() else path
    if not folder.is_dir():
        raise DataError(f"{folder}: no such results folder")
    kind: Kind = "bench" if (folder / "bench.json").is_file() else "experiment"
    has_search = path.is_file() or (folder / PARQUET_NAME).is_file() or (folder / CSV_NAME).is_file()
    search = load_results(path) if has_search and kind == "experiment" else None
    decision = load_confirmed(folder, max_drop)
    if search is None and decision is None:
        raise DataError(f"{folder}: no {PARQUET_NAME} or {CONFIRM_NAME}.parquet here; run an experiment "
                        "(python experiments/resnet.py) or a bench (boosttune bench) first")
    if search is not None and baseline_row(search) is None:  # every figure is a ratio to it: no page without it
        what = "no trials" if search.empty else "no finished O0 baseline (preset 'O0')"
        raise DataError(f"{folder / PARQUET_NAME}: the results table holds {what}, so there is nothing to compare "
                        "against; rerun the experiment")
    if decision is not None:
        margin = decision.margin
    else:
        own, default = recorded_max_drop(folder)
        margin = Margin.on(search, own if max_drop is None else max_drop, default)
    return judge_run(kind, margin, search=search, decision=decision, experiment_path=folder.resolve())
