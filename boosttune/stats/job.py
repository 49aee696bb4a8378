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

__all__ = ["COMPILE_LOG_SD", "TIE", "break_even_steps", "charge_variances", "compile_charges", "job_seconds",
           "job_steps", "one_seed_job_speedups", "planned_epochs"]

TIE = 0.05  # a per-job gain under 5% is a tie: the answer keeps O0

# One fresh compile's log-sd, the prior of charge_variances (COMPILE_PRIOR_DF df), pooled with what the recipes'
# own fresh compiles show. The main job's confirm runs, 2026-11-29 (fresh19): O0's fresh compiles 0.92-1.50 s
# (log-sd 0.20), GradientFreeze p=0.5's 1.38-1.95 s (0.13); a first round of six recipes compiling at once reads
# up to 3x slower (docs/design/race.md); issue 62's simulation charged a log-sd of 0.023 of a 10-epoch job, about
# 0.45 of a compile at its 5% share.
COMPILE_LOG_SD = 0.3
COMPILE_PRIOR_DF = 4


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


def charge_variances(table: pd.DataFrame, baseline: str = "O0") -> dict[str, float]:
    """recipe -> the variance the compile charges add to the log of its per-job speed-up against ``baseline``: its
    charge's and the baseline's, each (charge / median job seconds)^2 x a fresh compile's log-variance / the fresh
    compiles it is the median of. One figure for every seed of the recipe, so more seeds never average it out: the
    race adds it to its intervals (issue 62: a compile drawn once per race let 7-9% of boundary claims through).
    A fresh compile's log-sd: the recipes' own spread (within each, pooled) with COMPILE_LOG_SD as a prior.
    ``table`` needs ``job_s`` (:func:`boosttune.stats.confirmed.confirm_table` gives it)."""
    finished = table[table["status"].isin(FINISHED) & table["compile_s"].map(finite)]
    if "job_s" not in finished or finished.empty:
        return {}
    fresh = finished[~finished["graph_cached"].fillna(False).astype(bool)] if "graph_cached" in finished else finished
    fresh = fresh[fresh["compile_s"] > 0]
    squares, df = COMPILE_PRIOR_DF * COMPILE_LOG_SD ** 2, COMPILE_PRIOR_DF
    for _, runs in fresh.groupby("recipe", sort=False):
        logs = np.log(runs["compile_s"].to_numpy(float))
        if len(logs) > 1:
            squares, df = squares + float(((logs - logs.mean()) ** 2).sum()), df + len(logs) - 1
    log_var = squares / df
    charges = compile_charges(table)
    own: dict[str, float] = {}
    for name, runs in finished.groupby("recipe", sort=False):
        jobs = runs["job_s"].to_numpy(float)
        jobs = jobs[np.isfinite(jobs) & (jobs > 0)]
        charge = charges.get(str(name), math.nan)
        if not len(jobs) or not finite(charge):
            continue
        count = max(1, int((fresh["recipe"] == name).sum()))
        own[str(name)] = (charge / float(np.median(jobs))) ** 2 * log_var / count
    base = own.get(baseline, 0.0)
    return {name: value + base for name, value in own.items() if name != baseline}


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
