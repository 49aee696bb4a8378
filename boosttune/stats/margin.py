"""The margin: how much worse than the O0 baseline a recipe's objective may be (``max_drop``), as given and resolved.

A :class:`Tolerance` is the setting as the user gave it (a number in the objective's gain units, or None: a default
in points for a fraction objective, in percent of the baseline's value for another); a :class:`Margin` is that
setting resolved to one number against a baseline. The entry points resolve it once (the experiment against the
baseline stage's run, the bench and a folder read again against their paired baseline runs) and pass the
:class:`Margin` down: nothing below them takes a number, a setting or None in its place, and the one check that
it is a finite number >= 0 is here. Pure: pandas only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from boosttune.errors import ConfigError
from boosttune.objective import Objective
from boosttune.tables.results import table_objective
from boosttune.tables.states import FINISHED

__all__ = ["Margin", "Tolerance"]


@dataclass(frozen=True)
class Margin:
    """``max_drop`` resolved: ``value`` in ``objective``'s gain units (points for accuracy), finite and >= 0."""

    objective: Objective
    value: float

    def __post_init__(self) -> None:
        value = self.value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ConfigError(f"max_drop: {value!r} is invalid; allowed: a finite number >= 0 ({self.objective.unit} "
                              f"worse than the baseline's {self.objective.label})")
        object.__setattr__(self, "value", float(value))

    @classmethod
    def on(cls, table: pd.DataFrame, given: float | None, default: float) -> Margin:
        """The margin of a table read from disk or gathered by a bench: ``given`` (None: ``default``) on the table's
        own objective, resolved against its finished baseline runs."""
        return Tolerance(table_objective(table), given, default).on(table)


@dataclass(frozen=True)
class Tolerance:
    """A tolerance (``max_drop``, ``confirm_screen``) as given, with the objective it is taken in.

    ``given`` is in the objective's gain units (points for accuracy); None: ``default`` points for a fraction
    objective, or ``default`` percent of the baseline's value for another: only then does the number in gain units
    depend on a baseline (:meth:`at`, :meth:`on`).
    """

    objective: Objective
    given: float | None
    default: float

    def at(self, baseline_value: Any = None) -> Margin:
        """Resolved against a baseline whose objective_value is ``baseline_value`` (read only for a non-fraction
        objective without a given value; 0 when it is unknown)."""
        return Margin(self.objective, self.objective.tolerance(self.given, self.default, baseline_value))

    def on(self, table: pd.DataFrame) -> Margin:
        """Resolved against ``table``'s baseline: the mean of its finished baseline runs (one in a search's table,
        one per paired seed in a confirm or bench table)."""
        if self.given is not None or self.objective.fraction:
            return self.at()
        is_baseline = table["is_baseline"].astype(bool) if "is_baseline" in table else pd.Series(False, index=table.index)
        base = table[is_baseline & table["status"].isin(FINISHED)]["objective_value"].dropna()
        return self.at(base.mean() if len(base) else None)
