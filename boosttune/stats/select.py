"""Pick from the results table: the speed/objective Pareto front and the best recipe within ``max_drop``.

The objective is accuracy or a team's metric in either direction; fronts and tolerances are taken in its direction
and gain units. A :class:`Tolerance` carries it with ``max_drop`` as given: an experiment knows it typed from the
model, a folder read from disk takes its tables' own (:func:`boosttune.outputs.results.table_objective`).

Both read only the results table (:mod:`boosttune.outputs.results`). Only trials that trained to the end
(or to their target accuracy) compete; stopped and failed ones have no comparable figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from boosttune.config.experiment import MAX_DROP
from boosttune.errors import ConfigError, DataError
from boosttune.objective import Objective
from boosttune.outputs.results import FINISHED, baseline_row, finite, table_objective
from boosttune.pareto import non_dominated

__all__ = ["Selection", "Tolerance", "hypervolume", "non_dominated", "pareto_front", "select_best"]


@dataclass(frozen=True)
class Selection:
    """The chosen trial's row, why it was chosen, and whether nothing beat the baseline."""

    row: pd.Series
    reason: str
    fell_back_to_baseline: bool
    max_drop: float  # resolved: in the objective's gain units


@dataclass(frozen=True)
class Tolerance:
    """A tolerance (``max_drop``, ``confirm_screen``) as given, with the objective it is taken in: resolved once
    and carried typed from the experiment to the confirm stage, the export and the report.

    ``given`` is in the objective's gain units (points for accuracy); None: ``default`` points for a fraction
    objective, or ``default`` percent of the baseline's value for another: only then does the number in gain units
    depend on a baseline (:meth:`resolved`, :meth:`resolved_on`).
    """

    objective: Objective
    given: float | None
    default: float

    @classmethod
    def from_table(cls, table: pd.DataFrame, given: float | None, default: float) -> Tolerance:
        """The tolerance on ``table``'s own objective: what a folder read from disk knows of it."""
        return cls(table_objective(table), given, default)

    @classmethod
    def coerce(cls, value: Tolerance | float | None, default: float, table: pd.DataFrame) -> Tolerance:
        """``value`` itself, or a tolerance given as a number (None: ``default``) on ``table``'s own objective."""
        return value if isinstance(value, Tolerance) else cls.from_table(table, value, default)

    def fixed_at(self, baseline_value: Any) -> Tolerance:
        """This tolerance resolved once, against the baseline the experiment trained first: every stage after it
        (search, confirm, summary, export, report) then reads the same number, whatever baseline runs it sees."""
        return Tolerance(self.objective, self.resolved(baseline_value), self.default)

    def resolved(self, baseline_value: Any = None) -> float:
        """In the objective's gain units, against a baseline whose objective_value is ``baseline_value`` (read only
        for a non-fraction objective without a given value; 0 when it is unknown)."""
        return self.objective.tolerance(self.given, self.default, baseline_value)

    def resolved_on(self, table: pd.DataFrame) -> float:
        """In the objective's gain units against ``table``'s baseline: the mean of its finished baseline runs (one
        in a search's table, one per paired seed in a confirm or bench table)."""
        if self.given is not None or self.objective.fraction:
            return self.resolved()
        is_baseline = table["is_baseline"].astype(bool) if "is_baseline" in table else pd.Series(False, index=table.index)
        base = table[is_baseline & table["status"].isin(FINISHED)]["objective_value"].dropna()
        return self.resolved(base.mean() if len(base) else None)


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


def select_best(df: pd.DataFrame, max_drop: Tolerance | float | None = MAX_DROP,
                default: float = MAX_DROP) -> Selection:
    """The fastest finished trial whose objective is no more than ``max_drop`` worse than the baseline's.

    ``max_drop``: a :class:`Tolerance`, or a number in the table's objective's gain units (points for accuracy);
    None: ``default`` points for a fraction objective, or ``default`` percent of the baseline's value for another
    (``default`` is read only with a number or None). The baseline itself qualifies (speed-up
    1), so a trial is chosen only when it is faster; among equally fast ones the better objective wins, then the
    baseline, then the first in the table.

    Raises:
        ConfigError: ``max_drop`` is negative or not a number.
        DataError: the table has no finished O0 baseline with an objective_value.
    """
    tolerance = Tolerance.coerce(max_drop, default, df)
    objective = tolerance.objective
    base = baseline_row(df)
    if base is None or not finite(base["objective_value"]) or not finite(base["throughput_sps"]):
        raise DataError("results: no finished O0 baseline with throughput_sps and objective_value (preset 'O0', status "
                        f"{' or '.join(FINISHED)}); speed-ups are relative to it - rerun the experiment")
    if tolerance.given is not None:
        _checked_max_drop(tolerance.given, objective)
    max_drop = tolerance.resolved(base["objective_value"])
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


def _checked_max_drop(max_drop: float, objective: Objective) -> float:
    if isinstance(max_drop, bool) or not isinstance(max_drop, (int, float)) or not finite(max_drop) \
            or max_drop < 0:
        raise ConfigError(f"max_drop: {max_drop!r} is invalid; allowed: a finite number >= 0 "
                          f"({objective.unit} worse than the baseline's {objective.label})")
    return float(max_drop)
