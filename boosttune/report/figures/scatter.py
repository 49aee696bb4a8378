"""Speed vs the objective: every run, the search's Pareto front, and the confirmed recipes' paired means."""

from __future__ import annotations

import html
from typing import NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from boosttune.errors import DataError
from boosttune.evaluation.results import FINISHED, PARAM_PREFIX, baseline_row, finite, fmt
from boosttune.evaluation.select import select_best
from boosttune.objective import ACCURACY, Objective
from boosttune.pareto import non_dominated
from boosttune.report.figures._common import (
    BLACK,
    BLUE,
    GREEN,
    GREY,
    LAYOUT,
    ORANGE,
    RED,
    error_bars,
    present,
    selected_id,
)
from boosttune.report.figures.failures import FailedRun, failures_info
from boosttune.report.inputs import ReportInputs

__all__ = ["ConfirmedPoint", "ScatterInfo", "ScatterPoint", "confirmed_points", "draw_scatter", "scatter_info"]


class ScatterPoint(NamedTuple):
    trial_id: str
    x: float
    y: float
    label: str  # the recipe's name (preset, start point or trial id)
    hover: str
    is_baseline: bool
    is_preset: bool
    is_pareto: bool
    is_selected: bool


class ConfirmedPoint(NamedTuple):
    recipe: str
    speedup: float
    speedup_low: float  # nan when fewer than 2 paired seeds
    speedup_high: float
    delta_pt: float
    delta_low_pt: float
    delta_high_pt: float
    n_seeds: int
    verdict: str
    is_selected: bool


class ScatterInfo(NamedTuple):
    x_label: str
    y_label: str
    points: tuple[ScatterPoint, ...]  # every run with figures (search trials, or bench runs per round)
    pareto: tuple[tuple[float, float], ...]  # the front's (x, y), by increasing x; empty for bench runs
    baseline_y: float | None
    max_drop_y: float | None  # the lowest gain within the margin
    selection_reason: str | None
    confirmed: tuple[ConfirmedPoint, ...]  # paired means with 95% intervals, on the same axes
    not_plotted: tuple[FailedRun, ...]  # (trial_id, status, reason)
    max_drop: float = 0.0  # the tolerance, in the objective's gain units
    objective: Objective = ACCURACY


def scatter_info(inputs: ReportInputs) -> ScatterInfo:
    """x: speed-up vs O0 (throughput without a baseline); y: the objective's gain over O0 (its value without)."""
    df, max_drop = inputs.runs, inputs.max_drop
    obj = inputs.objective
    base = baseline_row(df)
    relative = base is not None and finite(base["throughput_sps"]) and finite(base["objective_value"])
    x_column, y_column = ("speedup_vs_baseline", "objective_gain") if relative else ("throughput_sps", "objective_value")
    finished = df["status"].isin(FINISHED)
    plottable = (finished & df[x_column].map(finite) & df[y_column].map(finite)).astype(bool)
    plotted = df[plottable]
    searched = inputs.search is not None
    sign = 1.0 if relative else obj.sign  # a gain is better upwards; a raw value in the objective's direction
    on_front = (non_dominated(plotted[x_column].to_numpy(float), sign * plotted[y_column].to_numpy(float)) if searched
                else np.zeros(len(plotted), bool))
    selected = selected_id(inputs)
    points = tuple(_point(row, x_column, y_column, bool(front), row["trial_id"] == selected, obj)
                   for (_, row), front in zip(plotted.iterrows(), on_front))
    pareto = tuple(sorted(((p.x, p.y) for p in points if p.is_pareto), key=lambda xy: (xy[0], -sign * xy[1])))
    confirmed = confirmed_points(inputs) if relative else ()
    return ScatterInfo(
        x_label="speed-up vs O0 (x, steady-state throughput)" if relative
        else "throughput (samples/s); no finished O0 baseline",
        y_label=(f"{obj.noun} vs O0 ({'points' if obj.fraction else obj.unit}, up is better)" if relative
                 else obj.label),
        points=points, pareto=pareto, baseline_y=0.0 if relative else None,
        max_drop_y=-max_drop if relative else None,
        selection_reason=_selection_reason(inputs), confirmed=confirmed,
        not_plotted=failures_info(inputs), max_drop=max_drop, objective=obj,
    )


def confirmed_points(inputs: ReportInputs) -> tuple[ConfirmedPoint, ...]:
    """Every confirmed recipe but the baseline, with its paired 95% intervals."""
    confirmed = inputs.confirmed
    if confirmed is None:
        return ()
    return tuple(
        ConfirmedPoint(recipe=str(row["recipe"]), speedup=float(row["speedup"]),
                       speedup_low=float(row["speedup_ci_low"]), speedup_high=float(row["speedup_ci_high"]),
                       delta_pt=float(row["objective_gain"]), delta_low_pt=float(row["objective_gain_ci_low"]),
                       delta_high_pt=float(row["objective_gain_ci_high"]), n_seeds=int(row["n_seeds"]),
                       verdict=str(row["verdict"]), is_selected=row["recipe"] == confirmed.selection.recipe)
        for _, row in confirmed.summary.iterrows()
        if finite(row["speedup"]) and row["verdict"] != "baseline")


def _selection_reason(inputs: ReportInputs) -> str | None:
    if inputs.confirmed is not None:
        return f"confirmed: {inputs.confirmed.selection.reason}"
    try:
        return select_best(inputs.runs, inputs.max_drop).reason
    except DataError:
        return None


def _point(row: pd.Series, x_column: str, y_column: str, is_pareto: bool, is_selected: bool,
           obj: Objective = ACCURACY) -> ScatterPoint:
    preset = row["preset"] if pd.notna(row["preset"]) else None
    label = str(row["label"]) if "label" in row and pd.notna(row["label"]) else (preset or str(row["trial_id"]))
    lines = [f"<b>{html.escape(label)}</b> ({html.escape(str(row['trial_id']))}, {row['status']})",
             f"boost_level {row['boost_level']}, amp {row['amp_level']}, loss scale {row['loss_scale_kind']}",
             f"throughput {fmt(row['throughput_sps'], '.1f')} samples/s, "
             f"speed-up {fmt(row['speedup_vs_baseline'], '.3f')}x",
             f"{obj.label} {obj.format_value(row['objective_value'])} ({obj.format_gain(row['objective_gain'])})"]
    params = [f"{name.removeprefix(PARAM_PREFIX)}={_param_text(row[name])}" for name in row.index
              if name.startswith(PARAM_PREFIX) and present(row[name])]
    lines += [html.escape(", ".join(params[i:i + 3])) for i in range(0, len(params), 3)]
    return ScatterPoint(
        trial_id=str(row["trial_id"]), x=float(row[x_column]), y=float(row[y_column]), label=label,
        hover="<br>".join(lines), is_baseline=bool(row["is_baseline"]), is_preset=preset is not None,
        is_pareto=is_pareto, is_selected=is_selected,
    )


def _param_text(value: object) -> str:
    # Integer params read back as floats when some trials lack them (NaN): show 4, not 4.0.
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


# --- drawing ------------------------------------------------------------------------------------------------

_GROUPS = (  # (legend name, which points, marker); the first name is chosen by draw_scatter
    (None, lambda p: not p.is_preset, dict(symbol="circle", size=8, color=BLUE, opacity=0.75)),
    ("presets (O1/O2-equivalent)", lambda p: p.is_preset and not p.is_baseline,
     dict(symbol="square", size=10, color=ORANGE, opacity=0.85)),
    ("O0 baseline", lambda p: p.is_baseline, dict(symbol="diamond", size=12, color=BLACK)),
    ("best trial of the search", lambda p: p.is_selected, dict(symbol="star", size=16, color=RED)),
)


def draw_scatter(info: ScatterInfo) -> go.Figure:
    """Every run, the Pareto front, baseline and presets, the confirmed means with intervals, the tolerance band."""
    obj = info.objective
    fig = go.Figure()
    if info.max_drop_y is not None:  # the region a recipe's objective may fall to
        fig.add_hrect(y0=info.max_drop_y, y1=0, fillcolor=GREEN, opacity=0.08, line_width=0,
                      annotation_text=f"within {info.max_drop:.3g} {obj.unit} of O0", annotation_position="bottom left")
        fig.add_hline(y=info.max_drop_y, line_dash="dash", line_color=RED)
    if info.pareto:  # drawn as the staircase bounding the region the front dominates
        xs, ys = zip(*info.pareto)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="Pareto front (search)",
                                 line=dict(color=GREEN, width=2, shape="vh"), hoverinfo="skip"))
    runs_name = "searched trials" if info.pareto or not info.confirmed else "runs (one per seed)"
    for name, keep, marker in _GROUPS:
        chosen = [p for p in info.points if keep(p)]
        if chosen:
            fig.add_trace(go.Scatter(
                x=[p.x for p in chosen], y=[p.y for p in chosen], mode="markers", name=name or runs_name,
                marker=marker, text=[p.label for p in chosen], hovertext=[p.hover for p in chosen], hoverinfo="text"))
    if info.confirmed:
        fig.add_trace(_confirmed_trace(info.confirmed, obj))
    if info.baseline_y is not None:
        fig.add_vline(x=1.0, line_dash="dot", line_color=GREY)
    fig.update_layout(title=f"Speed vs {obj.noun}", xaxis_title=info.x_label, yaxis_title=info.y_label, height=560,
                      legend=dict(orientation="h", y=-0.15), **LAYOUT)
    return fig


def _confirmed_trace(c: tuple[ConfirmedPoint, ...], obj: Objective) -> go.Scatter:
    return go.Scatter(
        x=[q.speedup for q in c], y=[q.delta_pt for q in c], mode="markers+text", name="confirmed (95% CI)",
        text=[q.recipe for q in c], textposition="top center",
        marker=dict(symbol="x-thin-open", size=[18 if q.is_selected else 12 for q in c],
                    color=[RED if q.is_selected else BLACK for q in c], line=dict(width=3)),
        error_x=error_bars([q.speedup for q in c], [q.speedup_low for q in c], [q.speedup_high for q in c]),
        error_y=error_bars([q.delta_pt for q in c], [q.delta_low_pt for q in c], [q.delta_high_pt for q in c]),
        hovertext=[f"<b>{q.recipe}</b>: {q.speedup:.3f}x [{q.speedup_low:.2f}, {q.speedup_high:.2f}], "
                   f"{q.delta_pt:{obj.gain_spec}} {obj.unit} [{q.delta_low_pt:{obj.gain_spec}}, "
                   f"{q.delta_high_pt:{obj.gain_spec}}], {q.n_seeds} seeds, {q.verdict}" for q in c],
        hoverinfo="text")
