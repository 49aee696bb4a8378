"""How the search's front grew: the hypervolume of (speed-up, objective gain) after each trial, in start order."""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd
import plotly.graph_objects as go

from boosttune.tables.results import baseline_row, finite
from boosttune.tables.states import FINISHED
from boosttune.stats.select import hypervolume
from boosttune.objective import ACCURACY, Objective
from boosttune.report.figures._common import BLUE, LAYOUT, per_job
from boosttune.report.inputs import ReportInputs

__all__ = ["HV_DROP_CEILING_PT", "HV_SPEED_FLOOR", "HypervolumeInfo", "draw_hypervolume", "hypervolume_info"]

HV_SPEED_FLOOR, HV_DROP_CEILING_PT = 0.8, 5.0  # hypervolume reference point, as benchmarks/search_efficiency.py


class HypervolumeInfo(NamedTuple):
    trial_ids: tuple[str, ...]  # in the order the trials started
    labels: tuple[str, ...]
    hypervolume: tuple[float, ...]  # of the front found so far, after each trial
    reference: tuple[float, float]  # (speed-up, objective gain) the area is measured from
    objective: Objective = ACCURACY


def hypervolume_info(inputs: ReportInputs) -> HypervolumeInfo | None:
    """Hypervolume of (speed-up, objective gain) after each search trial, from 0.8x O0 and O0 - 5 pt (5% of the
    baseline's value for an objective that is not a fraction)."""
    base = None if inputs.search is None else baseline_row(inputs.search)
    if base is None:
        return None
    search = inputs.search
    ordered = _search_order(search[search["trial_id"] != base["trial_id"]])  # the search's own trials
    if ordered.empty:  # the baseline alone: nothing was searched
        return None
    ref = (HV_SPEED_FLOOR, -inputs.objective.tolerance(None, HV_DROP_CEILING_PT, base["objective_value"]))
    points: list[tuple[float, float]] = [(1.0, 0.0)]  # the baseline stage's O0, where every search starts
    values = []
    for _, row in ordered.iterrows():
        if row["status"] in FINISHED and finite(row["speedup_vs_baseline"]) and finite(row["objective_gain"]):
            points.append((per_job(row), float(row["objective_gain"])))
        values.append(hypervolume(points, ref))
    labels = tuple(str(v) for v in ordered["label"].fillna(ordered["trial_id"]))
    return HypervolumeInfo(tuple(ordered["trial_id"].astype(str)), labels, tuple(values), ref, inputs.objective)


def _search_order(search: pd.DataFrame) -> pd.DataFrame:
    """The trials in the order they started (as the table holds them for a table without start times)."""
    if "started_at" in search and search["started_at"].notna().any():
        return search.sort_values("started_at", kind="stable", na_position="last")
    return search


def draw_hypervolume(info: HypervolumeInfo) -> go.Figure:
    fig = go.Figure(go.Scatter(x=list(range(1, len(info.hypervolume) + 1)), y=info.hypervolume, mode="lines+markers",
                               line=dict(shape="hv", color=BLUE), text=info.labels,
                               hovertemplate="trial %{x} (%{text}): %{y:.3f}<extra></extra>"))
    fig.update_layout(title="Hypervolume of the front found so far", xaxis_title="trial (in start order)",
                      yaxis_title=f"hypervolume above ({info.reference[0]:g}x, {info.reference[1]:+.3g} "
                                  f"{info.objective.unit})",
                      height=380, **LAYOUT)
    return fig
