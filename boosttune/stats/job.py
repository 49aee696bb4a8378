"""The user's job: how long a recipe takes to train the length the team plans, compile charged the same way for all.

A recipe is faster when the team's job (``planned_epochs``, by default the run's own epochs), compile included, takes
less time (docs/confirm.md). A run's job time is

    job_s = compile charged to its recipe + planned_epochs * (its training seconds per epoch, compile excluded)

The compile charged is the median of the recipe's own **fresh** compiles (its graph not cached), the same for every
run of the recipe; with none, the largest compile it paid. Evaluation is left out. Pure: pandas; no Ray, no MindSpore.
Why (a first round's compiles read several times slower), and what was measured: docs/design/race.md.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from boosttune.tables.results import finite
from boosttune.tables.states import FINISHED

__all__ = ["TIE", "break_even_steps", "compile_charges", "job_seconds", "job_steps", "one_seed_job_speedups",
           "planned_epochs"]

TIE = 0.05  # a per-job gain under 5% is a tie: the answer keeps O0


def planned_epochs(recipe_json: Any, epochs: Any) -> int | None:
    """The job length a run is judged at: its recipe's ``planned_epochs``, else its own ``epochs``."""
    try:
        planned = json.loads(recipe_json).get("planned_epochs") if isinstance(recipe_json, str) else None
    except ValueError:
        planned = None
    value = planned if planned is not None else epochs
    return int(value) if value is not None and finite(value) and int(value) >= 1 else None


def _epoch_seconds(row: Mapping[str, Any]) -> float:
    """Training seconds per epoch of a run, compile excluded (its curve's last cumulative time less the compile)."""
    try:
        curve = json.loads(row["curve_json"]) if isinstance(row.get("curve_json"), str) else []
    except ValueError:
        curve = []
    times = [float(e["train_s"]) for e in curve if finite(e.get("train_s"))]
    epochs = len(times)
    if not epochs or not finite(row.get("compile_s")):
        return math.nan
    seconds = (times[-1] - float(row["compile_s"])) / epochs
    return seconds if seconds > 0 else math.nan


def job_steps(runs: pd.DataFrame) -> float:
    """The planned job's training steps (a rank's), from runs' curves: their steps per epoch times the planned length
    (the median over the runs); NaN where no curve counts its steps (a run recorded before they were kept)."""
    found = []
    for _, row in runs.iterrows():
        try:
            curve = json.loads(row["curve_json"]) if isinstance(row.get("curve_json"), str) else []
        except ValueError:
            continue
        last = curve[-1] if curve else {}
        planned = planned_epochs(row.get("recipe_json"), row.get("epochs"))
        if finite(last.get("steps")) and finite(last.get("epoch")) and last["epoch"] > 0 and planned is not None:
            found.append(planned * float(last["steps"]) / float(last["epoch"]))
    return float(np.median(found)) if found else math.nan


def compile_charges(table: pd.DataFrame) -> dict[str, float]:
    """recipe -> the compile seconds its job is charged: the median of its fresh compiles, else its largest."""
    finished = table[table["status"].isin(FINISHED) & table["compile_s"].map(finite)]
    charges: dict[str, float] = {}
    for name, runs in finished.groupby("recipe", sort=False):
        fresh = runs[~runs["graph_cached"].fillna(False).astype(bool)] if "graph_cached" in runs else runs
        charges[str(name)] = float(fresh["compile_s"].median()) if len(fresh) else float(runs["compile_s"].max())
    return charges


def job_seconds(row: Mapping[str, Any], charge: float | None) -> float:
    """The run's job time at its planned length, with ``charge`` compile seconds (NaN when it cannot be told)."""
    planned = planned_epochs(row.get("recipe_json"), row.get("epochs"))
    per_epoch = _epoch_seconds(row)
    if planned is None or charge is None or not finite(charge) or not finite(per_epoch):
        return math.nan
    return float(charge) + planned * per_epoch


def break_even_steps(extra_compile_s: float, base_step_s: float, step_s: float) -> float:
    """Steps after which a recipe's job is shorter than the baseline's: its extra compile over the time it saves
    per step (0: from the first step; inf: never, it is not faster per step)."""
    saved = base_step_s - step_s
    if not (finite(extra_compile_s) and finite(saved)):
        return math.nan
    if saved <= 0:
        return math.inf
    return max(0.0, extra_compile_s / saved)


def one_seed_job_speedups(table: pd.DataFrame) -> pd.Series:
    """Each run's speed-up per job against the table's finished O0 runs pooled (the geometric mean of their job
    times), every run charged its own compile: a search's trials run once each, so this is one seed's figure. NaN
    where a run's job time cannot be told (no curve, or no finished O0 run with one)."""
    jobs = pd.Series([job_seconds(row, row.get("compile_s")) for _, row in table.iterrows()], index=table.index,
                     dtype=float)
    o0 = ((table["preset"] == "O0").fillna(False).astype(bool) & table["status"].isin(FINISHED)
          & jobs.map(finite) & (jobs > 0))
    if not o0.any():
        return pd.Series(math.nan, index=table.index)
    reference = float(np.exp(np.mean(np.log(jobs[o0].to_numpy(float)))))
    return reference / jobs.where(jobs > 0)
