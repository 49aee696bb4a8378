"""Pick from the results table: the speed/objective Pareto front and the search's one-seed pick within the margin.

The objective is accuracy or a team's metric in either direction; fronts and margins are taken in its direction
and gain units (a :class:`~boosttune.stats.margin.Margin`, resolved where the run starts).

Both read only the results table (:mod:`boosttune.tables.results`). Only trials that trained to the end
(or to their target accuracy) compete; stopped and failed ones have no comparable figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from boosttune.errors import DataError
from boosttune.objective import Objective
from boosttune.stats.margin import Margin
from boosttune.tables.results import baseline_row, finite, table_objective
from boosttune.tables.states import FINISHED
from boosttune.pareto import non_dominated

__all__ = ["Selection", "hypervolume", "non_dominated", "pareto_front", "select_best"]


@dataclass(frozen=True)
class Selection:
    """The chosen trial's row, why it was chosen, and whether nothing beat the baseline."""

    row: pd.Series
    reason: str
    fell_back_to_baseline: bool
    max_drop: float  # resolved: in the objective's gain units


def hypervolume(points: list[tuple[float, float]], ref: tuple[float, float]) -> float:
    """Area dominated by ``points`` (both objectives maximised) above the reference point ``ref``."""
    inside = sorted(((x, y) for x, y in points if x > ref[0] and y > ref[1]), reverse=True)
    area, best_y = 0.0, ref[1]
    for x, y in inside:  # largest x first: each point adds the strip of y it improves
        if y > best_y:
            area += (x - ref[0]) * (y - best_y)
            best_y = y
    return area


def _comparable(df: pd.DataFrame) -> pd.DataFrame:
    """Finished rows with a speed-up and an objective value."""
    speedup = pd.to_numeric(df["speedup_vs_baseline"], errors="coerce")
    acc = pd.to_numeric(df["objective_value"], errors="coerce")
    mask = df["status"].isin(FINISHED) & np.isfinite(speedup) & np.isfinite(acc)
    return df[mask.fillna(False).astype(bool)]


def pareto_front(df: pd.DataFrame) -> pd.DataFrame:
    """Non-dominated rows on (speedup_vs_baseline, objective_value), speed maximised and the objective taken in its
    own direction, sorted by speed-up (the better objective first among equals).

    Empty when the table has no finished baseline (no speed-ups).
    """
    rows = _comparable(df)
    if rows.empty:
        return rows
    sign = table_objective(df).sign
    mask = non_dominated(rows["speedup_vs_baseline"].to_numpy(float), sign * rows["objective_value"].to_numpy(float))
    front = rows[mask]
    return front.sort_values(["speedup_vs_baseline", "objective_value"], ascending=[True, sign < 0], kind="stable")


def select_best(df: pd.DataFrame, margin: Margin) -> Selection:
    """The fastest finished trial whose objective is no more than ``margin`` worse than the baseline's.

    The baseline itself qualifies (speed-up 1), so a trial is chosen only when it is faster; among equally fast ones
    the better objective wins, then the baseline, then the first in the table.

    Raises:
        DataError: the table has no finished O0 baseline with an objective_value.
    """
    objective, max_drop = margin.objective, margin.value
    base = baseline_row(df)
    if base is None or not finite(base["objective_value"]) or not finite(base["throughput_sps"]):
        raise DataError("results: no finished O0 baseline with throughput_sps and objective_value (preset 'O0', status "
                        f"{' or '.join(FINISHED)}); speed-ups are relative to it - rerun the experiment")
    rows = _comparable(df)
    # A tiny slack so a trial exactly at max_drop is not lost to float rounding.
    qualifying = rows[rows["objective_gain"] >= -max_drop - 1e-9]
    ranked = qualifying.assign(_base=qualifying["is_baseline"].astype(int), _score=qualifying["objective_gain"])
    ranked = ranked.sort_values(["speedup_vs_baseline", "_score", "_base"], ascending=False, kind="stable")
    best = ranked.iloc[0].drop(["_base", "_score"])
    within = f"{max_drop:.3g} {objective.unit} of the baseline's {objective.label}"
    if bool(best["is_baseline"]):
        return Selection(best, _fallback_reason(rows, base, within, max_drop, objective), True, max_drop)
    reason = (f"trial {best['trial_id']} is the fastest within {within} {objective.format_value(base['objective_value'])}: "
              f"{best['speedup_vs_baseline']:.3f}x the baseline's throughput, {objective.label} "
              f"{objective.format_value(best['objective_value'])} ({objective.format_gain(best['objective_gain'])})")
    return Selection(best, reason, False, max_drop)


def _fallback_reason(rows: pd.DataFrame, base: pd.Series, within: str, max_drop: float, objective: Objective) -> str:
    faster = rows[rows["speedup_vs_baseline"] > 1.0]
    lost = f"; {len(faster)} faster trial(s) lost more than {max_drop:.3g} {objective.unit}" if len(faster) else ""
    return (f"no trial is faster than the O0 baseline within {within} {objective.format_value(base['objective_value'])}"
            f"{lost}; falling back to the baseline (trial {base['trial_id']})")
