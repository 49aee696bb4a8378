"""What several figures share: the rows they compare, the knobs that count, and the drawing style."""

from __future__ import annotations

import pandas as pd

from boosttune.tables.results import finite
from boosttune.tables.states import FINISHED
from boosttune.report.inputs import ReportInputs

BLUE, ORANGE, RED, GREEN, GREY, BLACK = "#4c78a8", "#f58518", "#e45756", "#54a24b", "#999999", "#222222"
LAYOUT = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50))


# --- data ---------------------------------------------------------------------------------------------------

def compared(table: pd.DataFrame) -> pd.DataFrame:
    """Finished rows with both a speed-up and an objective gain against the baseline."""
    return table[table["status"].isin(FINISHED) & table["speedup_vs_baseline"].map(finite)
                 & table["objective_gain"].map(finite)]


def per_job(row: pd.Series) -> float:
    """A trial's speed-up per job (one seed, its own compile: the speed every page tells), or per step where its job
    time cannot be told (a folder written before curves were kept)."""
    job = row.get("job_speedup_vs_baseline")
    return float(job) if finite(job) else float(row["speedup_vs_baseline"])


def present(value: object) -> bool:
    """A value a trial drew (not None, NA or NaN: a knob the trial did not draw)."""
    return value is not None and value is not pd.NA and not (isinstance(value, float) and value != value)


def inert(inputs: ReportInputs) -> dict[str, str]:
    """Searched knob (its param name) -> why it cannot act on the trials' device (MindSpore's reason, from the
    probe): such a knob's draws change nothing, so no figure gives it a share or an axis."""
    out = {}
    for name, why in inputs.unsupported.items():
        out[name] = why
        out[name.removeprefix("boost.")] = why
    return out


def varies(values: pd.Series) -> bool:
    """Whether a knob changed between the trials: a number takes two values or more among the trials that drew it
    (one drawn once, or always alike, did not vary); a switch or choice counts "not drawn" as a value of its own
    (grad_freeze on in some trials, not drawn in the others, varied)."""
    drawn = values[values.map(present)]
    if len(drawn) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in drawn):
        return drawn.astype(float).nunique() > 1
    return values.map(lambda v: str(v) if present(v) else "(unset)").nunique() > 1


# --- drawing ------------------------------------------------------------------------------------------------

def error_bars(values, low, high) -> dict:
    """Plotly's asymmetric error bars from an interval (none where a bound is missing)."""
    return dict(type="data", symmetric=False, array=[h - v if finite(h) else 0 for v, h in zip(values, high)],
                arrayminus=[v - lo if finite(lo) else 0 for v, lo in zip(values, low)], thickness=1.5)
