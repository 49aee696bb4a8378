"""What several figures share: the rows they compare, the search's pick, and the drawing style."""

from __future__ import annotations

import pandas as pd

from boosttune.errors import DataError
from boosttune.evaluation.results import FINISHED, finite
from boosttune.evaluation.select import select_best
from boosttune.report.inputs import ReportInputs

BLUE, ORANGE, RED, GREEN, GREY, BLACK = "#4c78a8", "#f58518", "#e45756", "#54a24b", "#999999", "#222222"
LAYOUT = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50))


# --- data ---------------------------------------------------------------------------------------------------

def compared(table: pd.DataFrame) -> pd.DataFrame:
    """Finished rows with both a speed-up and an objective gain against the baseline."""
    return table[table["status"].isin(FINISHED) & table["speedup_vs_baseline"].map(finite)
                 & table["objective_gain"].map(finite)]


def present(value: object) -> bool:
    """A value a trial drew (not None, NA or NaN: a knob the trial did not draw)."""
    return value is not None and value is not pd.NA and not (isinstance(value, float) and value != value)


def selected_id(inputs: ReportInputs) -> str | None:
    """The search trial the selection picks (None without a search or without a finished baseline)."""
    if inputs.search is None:
        return None
    try:
        return str(select_best(inputs.search, inputs.max_drop).row["trial_id"])
    except DataError:
        return None


# --- drawing ------------------------------------------------------------------------------------------------

def error_bars(values, low, high) -> dict:
    """Plotly's asymmetric error bars from an interval (none where a bound is missing)."""
    return dict(type="data", symmetric=False, array=[h - v if finite(h) else 0 for v, h in zip(values, high)],
                arrayminus=[v - lo if finite(lo) else 0 for v, lo in zip(values, low)], thickness=1.5)
