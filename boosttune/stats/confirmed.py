"""The confirm stage's figures from its runs: the ratios of each paired round and each recipe's figures.

Per recipe, from the paired rounds: the speed-up per step, the objective's gain (:mod:`boosttune.objective`), the
speed-up per job (:mod:`boosttune.stats.job`) and the time to the target; :func:`replay_race` replays the race on
stored runs. Figures only: the decision is :func:`boosttune.stats.decide.decide`'s. Pure: pandas and numpy, no Ray,
no MindSpore. The runs come from :mod:`boosttune.stages.rounds`, their table from :mod:`boosttune.tables.confirm_runs`.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from boosttune.config.recipe import TrialRecipe
from boosttune.objective import ACCURACY, Objective
from boosttune.stats.job import (
    break_even_steps,
    charge_variances,
    compile_charges,
    job_seconds,
    job_steps,
    planned_epochs,
)
from boosttune.stats.margin import Margin
from boosttune.stats.paired import (
    Interval,
    paired_delta,
    paired_ratio,
    ratio_interval,
)
from boosttune.stats.race import Race, RaceRules
from boosttune.tables.confirm_runs import BASELINE_NAME, confirm_rows
from boosttune.tables.results import finite, table_objective
from boosttune.tables.states import FINISHED

__all__ = [
    "SUMMARY_COLUMNS",
    "confirm_table",
    "replay_race",
    "summarize",
    "time_to_accuracy",
    "with_job_figures",
]


SUMMARY_COLUMNS = (
    "recipe", "n_seeds",
    # the speed-up: per job at the planned length, compile charged fairly (boosttune.stats.job), the decision's speed;
    # job_p_value: the deciding test's one-sided p that it is not faster; break_even_steps: steps after which the
    # recipe's job is the shorter
    "job_speedup", "job_ci_low", "job_ci_high", "job_p_value", "planned_epochs", "compile_charged_s",
    "break_even_steps", "job_steps",  # job_steps: the planned job's training steps (a rank's), every recipe's
    "step_speedup", "step_ci_low", "step_ci_high",  # per step (steady state, compile apart), from the same model
    # noninferiority_p_value: the deciding test's one-sided p that it loses more than the margin
    "objective_value", "objective_gain", "objective_gain_ci_low", "objective_gain_ci_high", "noninferiority_p_value",
    "e2e_speedup", "e2e_n", "e2e_ci_low", "e2e_ci_high",  # time to the target objective: secondary, never the verdict
    "failed_runs", "seeds_to_show", "qualifies", "verdict", "verdict_text", "secondary_text",
    "objective", "gain_unit", "margin",  # margin: the max_drop judged at (named so on disk)
)


def round_figures(table: pd.DataFrame, index: int, names: Iterable[str]) -> dict[str, tuple[float, float] | None]:
    """name -> (job speed-up, objective gain) against round ``index``'s baseline; None where either is missing. The
    job speed-up is the baseline's job time over the recipe's at the planned length (:mod:`boosttune.stats.job`):
    what the race decides "faster" on."""
    rows = table[(table["round"] == index) & table["status"].isin(FINISHED)].drop_duplicates("recipe")
    rows = rows.set_index("recipe")
    figures: dict[str, tuple[float, float] | None] = {}
    for name in names:
        job, step, gain = (rows.at[name, c] if name in rows.index and c in rows else math.nan
                           for c in ("job_speedup_vs_baseline", "speedup_vs_baseline", "objective_gain"))
        ratio = job if finite(job) else step  # per job; a run without its curve or compile time: per step
        figures[name] = (float(ratio), float(gain)) if finite(ratio) and finite(gain) else None
    return figures


def replay_race(table: pd.DataFrame, rules: RaceRules | None, max_drop: float, alpha: float = 0.05) -> Race:
    """The race as its stored runs decided it, round by round (the same judgement at another ``max_drop``); for
    fixed rounds (``rules`` None) the same test at one look on every round, all of ``alpha`` spent there, so a
    fixed stage makes no claim the race's multiplicity control would not."""
    names = [n for n in dict.fromkeys(table["recipe"].dropna()) if n != BASELINE_NAME]
    rounds = sorted(int(i) for i in table["round"].dropna().unique())
    if rules is None:
        figures = [round_figures(table, index, names) for index in rounds
                   if BASELINE_NAME in set(table.loc[table["round"] == index, "recipe"].dropna())]
        nan = (math.nan, math.nan)
        return Race.one_look({n: [(f[n] or nan)[0] for f in figures] for n in names},
                            {n: [(f[n] or nan)[1] for f in figures] for n in names}, alpha, max_drop)
    race = Race(names, rules, max_drop)
    seeds = table.dropna(subset=["round"]).drop_duplicates("round").set_index("round")["seed"]
    for index in rounds:
        racing = set(race.racing)
        present = set(table.loc[table["round"] == index, "recipe"].dropna())
        if not racing or BASELINE_NAME not in present:
            break
        # the runs up to this round, as the live race read them then: each recipe's compile charge (and so its job
        # figures) and the charge's error come from the compiles made so far
        so_far = _ratios_per_round(table[table["round"] <= index])
        race.charge_var = charge_variances(so_far)
        race.observe(int(seeds.loc[index]), round_figures(so_far, index, [n for n in race.racing if n in present]))
    race.out_of_budget()
    return race


def confirm_table(records: Iterable[Any], *, ray_version: str = "") -> pd.DataFrame:
    """One row per run (:func:`~boosttune.tables.confirm_runs.confirm_rows`), with its ratios to its round's
    baseline (:func:`with_job_figures`)."""
    return _ratios_per_round(confirm_rows(records, ray_version=ray_version))


def _ratios_per_round(table: pd.DataFrame) -> pd.DataFrame:
    table = table.copy()
    table["is_baseline"] = (table["recipe"] == BASELINE_NAME).fillna(False).astype(bool)
    table["speedup_vs_baseline"] = np.nan
    table["objective_gain"] = np.nan
    objective = table_objective(table)
    charges = compile_charges(table)
    table["job_s"] = [job_seconds(row, charges.get(str(row["recipe"]))) for _, row in table.iterrows()]
    table["job_speedup_vs_baseline"] = np.nan
    base = table[table["is_baseline"] & table["status"].isin(FINISHED)].drop_duplicates("round").set_index("round")
    for index, row in table.iterrows():
        if pd.isna(row["round"]) or row["round"] not in base.index:
            continue
        reference = base.loc[row["round"]]
        if finite(row["throughput_sps"]) and finite(reference["throughput_sps"]) and reference["throughput_sps"] > 0:
            table.at[index, "speedup_vs_baseline"] = row["throughput_sps"] / reference["throughput_sps"]
        if finite(row["job_s"]) and finite(reference["job_s"]) and row["job_s"] > 0:
            table.at[index, "job_speedup_vs_baseline"] = reference["job_s"] / row["job_s"]
        if finite(row["objective_value"]) and finite(reference["objective_value"]):
            table.at[index, "objective_gain"] = objective.gain(row["objective_value"], reference["objective_value"])
    return table


def with_job_figures(table: pd.DataFrame) -> pd.DataFrame:
    """A confirm table read from disk with the per-job figures of this version (a table written before had none)."""
    return _ratios_per_round(table)


def time_to_accuracy(curve: Sequence[dict[str, Any]], target: float,
                     objective: Objective = ACCURACY) -> float | None:
    """Training time (compile included, evaluation excluded) until objective_value first reached ``target`` (at
    least, or at most for a lower-is-better objective)."""
    for epoch in curve:
        if finite(epoch.get("objective_value")) and objective.reached(epoch["objective_value"], target) \
                and finite(epoch.get("train_s")):
            return float(epoch["train_s"])
    return None


def summarize(table: pd.DataFrame, *, margin: Margin | None = None, confidence: float = 0.95) -> pd.DataFrame:
    """One row per recipe (the baseline first) from the paired rounds of :func:`confirm_table`: the figures, with the
    decision's columns (``verdict``, ``qualifies``, ...) left for :func:`boosttune.stats.decide.decide` to set.

    The secondary time to the target is read to the baseline's mean objective_value less ``margin`` (None: not read).
    """
    objective = table_objective(table)
    finished = table[table["status"].isin(FINISHED) & table["throughput_sps"].map(finite)
                     & table["objective_value"].map(finite)]
    base = finished[finished["recipe"] == BASELINE_NAME].drop_duplicates("round").set_index("round")
    target = objective.shifted(float(base["objective_value"].mean()), -margin.value) \
        if margin is not None and not base.empty else None
    names = [BASELINE_NAME] + [n for n in dict.fromkeys(table["recipe"].dropna()) if n != BASELINE_NAME]
    rows = [_summary_row(name, table, finished, base, target, confidence, objective) for name in names]
    summary = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    summary["margin"] = margin.value if margin is not None else math.nan
    summary["job_steps"] = job_steps(base)
    return summary


def _summary_row(name: str, table: pd.DataFrame, finished: pd.DataFrame, base: pd.DataFrame, target: float | None,
                 confidence: float, objective: Objective) -> dict[str, Any]:
    runs = finished[finished["recipe"] == name].drop_duplicates("round").set_index("round")
    failed = int(((table["recipe"] == name) & ~table["status"].isin(FINISHED)).sum())
    rounds = sorted(set(runs.index) & set(base.index))
    row: dict[str, Any] = dict.fromkeys(SUMMARY_COLUMNS, math.nan)
    row.update(recipe=name, n_seeds=len(rounds), failed_runs=failed, e2e_n=0, seeds_to_show=None,
               objective=objective.label, gain_unit=objective.unit,
               objective_value=float(runs["objective_value"].mean()) if len(runs) else math.nan)
    if name == BASELINE_NAME:
        if len(base):
            row.update(planned_epochs=planned_epochs(base["recipe_json"].iloc[0], base["epochs"].iloc[0])
                       if "recipe_json" in base else None, job_speedup=1.0,
                       compile_charged_s=compile_charges(base.reset_index()).get(name, math.nan))
        row.update(n_seeds=len(base), step_speedup=1.0, objective_gain=0.0)
        return row
    if not rounds:
        return row
    speed = paired_ratio(runs.loc[rounds, "throughput_sps"].to_numpy(float),
                         base.loc[rounds, "throughput_sps"].to_numpy(float), confidence=confidence)
    delta = paired_delta(runs.loc[rounds, "objective_value"].to_numpy(float),
                         base.loc[rounds, "objective_value"].to_numpy(float),
                         scale=objective.sign * objective.scale, confidence=confidence)
    row.update(_job_figures(runs.loc[rounds], base.loc[rounds], confidence))
    row.pop("interval")
    e2e = _e2e(runs.loc[rounds, "curve_json"], base.loc[rounds, "curve_json"], target, confidence, objective)
    secondary = ""
    if e2e is not None and target is not None:
        reach = f"{100 * target:.2f}% {objective.label}" if objective.fraction else f"{objective.label} {target:.4g}"
        secondary = (f"secondary, time to {reach}: {e2e.estimate:.2f}x (training time, compile "
                     f"included; {e2e.n} of {len(rounds)} rounds reached it)")
    elif target is not None and not _has_curves(runs.loc[rounds, "curve_json"]):
        secondary = "secondary time to target not measured (evaluated after the last epoch only: confirm_curves)"
    row.update(secondary_text=secondary, step_speedup=speed.estimate, step_ci_low=speed.low, step_ci_high=speed.high,
               objective_gain=delta.estimate, objective_gain_ci_low=delta.low, objective_gain_ci_high=delta.high,
               e2e_speedup=e2e.estimate if e2e else math.nan, e2e_n=e2e.n if e2e else 0,
               e2e_ci_low=e2e.low if e2e else math.nan, e2e_ci_high=e2e.high if e2e else math.nan)
    return row


def _job_figures(runs: pd.DataFrame, base: pd.DataFrame, confidence: float) -> dict[str, Any]:
    """The per-job speed-up over paired rounds (an interval, or None without job times), the planned length, the
    compile charged and the steps after which the recipe's job is the shorter."""
    paired = runs["job_s"].map(finite).to_numpy(bool) & base["job_s"].map(finite).to_numpy(bool) \
        if "job_s" in runs and "job_s" in base else np.zeros(len(runs), bool)
    interval = paired_ratio(base["job_s"].to_numpy(float)[paired], runs["job_s"].to_numpy(float)[paired],
                            confidence=confidence) if paired.any() else None
    planned = planned_epochs(runs["recipe_json"].iloc[0], runs["epochs"].iloc[0]) if "recipe_json" in runs else None
    charged = compile_charges(pd.concat([runs, base]).reset_index())
    name, base_name = str(runs["recipe"].iloc[0]), str(base["recipe"].iloc[0])
    batch = runs["batch_size"].astype(float).fillna(TrialRecipe.model_fields["batch_size"].default)
    samples = (batch * runs["world_size"].astype(float).fillna(1)).to_numpy()  # per step, every rank's
    step_s = float(np.mean(samples / runs["throughput_sps"].to_numpy(float)))
    base_step_s = float(np.mean(samples / base["throughput_sps"].to_numpy(float)))
    extra = charged.get(name, math.nan) - charged.get(base_name, math.nan)
    return {"interval": interval, "job_speedup": interval.estimate if interval else math.nan,
            "job_ci_low": interval.low if interval else math.nan, "job_ci_high": interval.high if interval else math.nan,
            "planned_epochs": planned, "compile_charged_s": charged.get(name, math.nan),
            "break_even_steps": break_even_steps(extra, base_step_s, step_s)}


def _has_curves(curves: pd.Series) -> bool:
    """Whether any run's curve holds an objective value (else its one evaluation came after the last epoch)."""
    for text in curves:
        try:
            curve = json.loads(text) if isinstance(text, str) else []
        except ValueError:
            continue
        if any(finite(epoch.get("objective_value")) for epoch in curve):
            return True
    return False


def _e2e(recipe_curves: pd.Series, base_curves: pd.Series, target: float | None,
         confidence: float, objective: Objective = ACCURACY) -> Interval | None:
    if target is None:
        return None
    ratios = []
    for recipe_curve, base_curve in zip(recipe_curves, base_curves):
        mine, theirs = (time_to_accuracy(json.loads(c), target, objective) for c in (recipe_curve, base_curve))
        if mine and theirs:
            ratios.append(theirs / mine)  # > 1: the recipe reaches the target sooner
    return ratio_interval(ratios, confidence=confidence) if ratios else None
