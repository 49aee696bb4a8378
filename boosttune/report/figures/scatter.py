"""Speed vs the objective: every run, the search's Pareto front, and the confirmed recipes' paired means.

One speed: the x axis is the speed-up per job (O0's training time over the recipe's at the planned length, compile
included), the decision's speed, for the confirmed means and for each one-seed trial alike (each charged its own
compile: :func:`boosttune.stats.job.one_seed_job_speedups`); per step is in each hover, named so. O0 is drawn once, at
1.0 by construction (every ratio is taken against its runs pooled), with its runs in its hover.
"""

from __future__ import annotations

import html
import math
from typing import NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from boosttune.tables.results import PARAM_PREFIX, baseline_row, finite, fmt
from boosttune.tables.states import FINISHED, RunStatus
from boosttune.stats.decisions import decision_words
from boosttune.stats.job import one_seed_job_speedups
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
)
from boosttune.report.figures.failures import FailedRun, failures_info
from boosttune.report.inputs import ReportInputs
from boosttune.report.recipes import run_name

__all__ = ["ConfirmedPoint", "ScatterInfo", "ScatterPoint", "confirmed_points", "draw_scatter", "scatter_info"]


class ScatterPoint(NamedTuple):
    trial_id: str
    x: float
    y: float
    label: str  # the recipe's name (preset, start point or trial id)
    is_baseline: bool
    is_preset: bool
    is_pareto: bool
    is_selected: bool
    is_o0: bool = False  # an O0 run (the baseline stage's, or the search's own): drawn as the one O0 point
    status: str = RunStatus.COMPLETED  # "stopped": figures at the epoch the scheduler stopped it; "duplicate": an earlier
    # trial's figures (the same recipe, not trained again)
    # the run's levels and figures as the table holds them (pd.NA, NaN or None where it has none), for the hover
    boost_level: object = None
    amp_level: object = None
    loss_scale_kind: object = None
    throughput_sps: float = math.nan
    speedup: float = math.nan  # per job, as x (per step where the run has no job time)
    objective_value: float = math.nan
    objective_gain: float = math.nan
    params: tuple[tuple[str, object], ...] = ()  # (searched knob, the value the trial drew), the knobs it drew
    step_speedup: float = math.nan  # per step: the steady-state throughput ratio


class ConfirmedPoint(NamedTuple):
    recipe: str
    speedup: float
    speedup_low: float  # nan when fewer than 2 paired seeds
    speedup_high: float
    delta_pt: float
    delta_low_pt: float
    delta_high_pt: float
    n_seeds: int
    verdict: str  # the confirm stage's decision (an Exit code)
    is_selected: bool
    search_x: float = float("nan")  # the same recipe's one-seed search trial, when the search ran it
    search_y: float = float("nan")


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
    answer: str = ""  # the run's answer (the recipe best_recipe.json names; O0 when it keeps the baseline)
    o0_runs: tuple[ScatterPoint, ...] = ()  # O0's own runs, drawn as the one O0 point at (1, 0) they are pooled into
    x_range: tuple[float, float] | None = None  # the speed axis: the recipes a user can choose; farther points at its edge


def scatter_info(inputs: ReportInputs) -> ScatterInfo:
    """x: speed-up per job vs O0 (throughput without a baseline); y: the objective's gain over O0 (its value
    without)."""
    df, max_drop = inputs.runs, inputs.max_drop
    obj = inputs.objective
    base = baseline_row(df)
    relative = base is not None and finite(base["throughput_sps"]) and finite(base["objective_value"])
    if relative:  # per job; per step where a run has no job time (a folder written before curves were kept)
        job = df["job_speedup_vs_baseline"] if "job_speedup_vs_baseline" in df else one_seed_job_speedups(df)
        df = df.assign(_x=job.where(job.map(finite), df["speedup_vs_baseline"]))
    x_column, y_column = ("_x", "objective_gain") if relative else ("throughput_sps", "objective_value")
    finished = df["status"].isin(FINISHED)
    drawn = df["status"].isin((*FINISHED, RunStatus.STOPPED, RunStatus.DUPLICATE))  # every trial with figures, stopped ones marked
    plottable = (drawn & df[x_column].map(finite) & df[y_column].map(finite)).astype(bool)
    plotted = df[plottable]
    searched = inputs.search is not None
    sign = 1.0 if relative else obj.sign  # a gain is better upwards; a raw value in the objective's direction
    complete = finished[plottable].to_numpy(bool)  # the front: trials trained to the end only
    on_front = np.zeros(len(plotted), bool)
    if searched and complete.any():
        on_front[complete] = non_dominated(plotted[x_column].to_numpy(float)[complete],
                                           sign * plotted[y_column].to_numpy(float)[complete])
    # The star marks the answer: the search's pick only when no confirm stage decided (else the confirmed recipe)
    selected = inputs.selection.search_trial if inputs.confirmed is None else None
    every = [_point(row, x_column, y_column, bool(front), row["trial_id"] == selected)
             for (_, row), front in zip(plotted.iterrows(), on_front)]
    o0 = tuple(p for p in every if p.is_o0) if relative else ()
    points = tuple(p for p in every if not (relative and p.is_o0))
    pareto = tuple(sorted(((p.x, p.y) for p in every if p.is_pareto), key=lambda xy: (xy[0], -sign * xy[1])))
    confirmed = _linked(confirmed_points(inputs), points) if relative else ()
    info = ScatterInfo(
        x_label="speed-up per job vs O0 (x; the planned job, compile included)" if relative
        else "throughput (samples/s); no finished O0 baseline",
        y_label=(f"{obj.noun} vs O0 ({'points' if obj.fraction else obj.unit}, up is better)" if relative
                 else obj.label),
        points=points, pareto=pareto, baseline_y=0.0 if relative else None,
        max_drop_y=-max_drop if relative else None,
        selection_reason=_selection_reason(inputs), confirmed=confirmed,
        not_plotted=failures_info(inputs), max_drop=max_drop, objective=obj, answer=inputs.selection.recipe,
        o0_runs=o0,
    )
    return info._replace(x_range=x_range(info)) if relative else info


def confirmed_points(inputs: ReportInputs) -> tuple[ConfirmedPoint, ...]:
    """Every confirmed recipe but the baseline, with its paired 95% intervals."""
    confirmed = inputs.confirmed
    if confirmed is None:
        return ()
    return tuple(
        ConfirmedPoint(recipe=str(row["recipe"]), speedup=float(row["job_speedup"]),
                       speedup_low=float(row["job_ci_low"]), speedup_high=float(row["job_ci_high"]),
                       delta_pt=float(row["objective_gain"]), delta_low_pt=float(row["objective_gain_ci_low"]),
                       delta_high_pt=float(row["objective_gain_ci_high"]), n_seeds=int(row["n_seeds"]),
                       verdict=str(row["verdict"]), is_selected=row["recipe"] == inputs.selection.recipe)
        for _, row in confirmed.summary.iterrows()
        if finite(row["job_speedup"]) and row["verdict"] != "baseline")


def _linked(confirmed: tuple[ConfirmedPoint, ...], points: tuple[ScatterPoint, ...]) -> tuple[ConfirmedPoint, ...]:
    """Each confirmed recipe with the position of its search trial (same name, trained to the end), if any."""
    trained = {p.label: p for p in points if p.status in FINISHED and not p.is_baseline}
    return tuple(c._replace(search_x=trained[c.recipe].x, search_y=trained[c.recipe].y) if c.recipe in trained else c
                 for c in confirmed)


def _selection_reason(inputs: ReportInputs) -> str | None:
    if inputs.confirmed is not None:
        return f"confirmed: {inputs.confirmed.selection.reason}"
    picked = inputs.selection.search
    return picked.reason if picked is not None else None


def _point(row: pd.Series, x_column: str, y_column: str, is_pareto: bool, is_selected: bool) -> ScatterPoint:
    return ScatterPoint(
        trial_id=str(row["trial_id"]), x=float(row[x_column]), y=float(row[y_column]), label=run_name(row),
        is_baseline=bool(row["is_baseline"]), is_preset=bool(pd.notna(row["preset"])), is_pareto=is_pareto,
        is_selected=is_selected, is_o0=bool((row["preset"] == "O0") if pd.notna(row["preset"]) else False),
        status=str(row["status"]), boost_level=row["boost_level"],
        amp_level=row["amp_level"], loss_scale_kind=row["loss_scale_kind"],
        throughput_sps=row["throughput_sps"], speedup=row[x_column], step_speedup=row["speedup_vs_baseline"],
        objective_value=row["objective_value"], objective_gain=row["objective_gain"],
        params=tuple((name.removeprefix(PARAM_PREFIX), row[name]) for name in row.index
                     if name.startswith(PARAM_PREFIX) and present(row[name])),
    )


# --- drawing ------------------------------------------------------------------------------------------------

_TRAINED = (RunStatus.COMPLETED, RunStatus.TARGET_REACHED)
_GROUPS = (  # (legend name, which points, marker); the first name is chosen by draw_scatter
    (None, lambda p: not p.is_preset and p.status in _TRAINED, dict(symbol="circle", size=8, color=BLUE, opacity=0.75)),
    ("stopped early (figures at the epoch it stopped)", lambda p: p.status == RunStatus.STOPPED,
     dict(symbol="circle-open", size=9, color=GREY, line=dict(width=1.5))),
    ("duplicate of an earlier trial (not trained again)", lambda p: p.status == RunStatus.DUPLICATE,
     dict(symbol="circle-open-dot", size=16, color=GREY)),
    ("presets (O1/O2-equivalent)", lambda p: p.is_preset and not p.is_baseline and p.status in _TRAINED,
     dict(symbol="square", size=10, color=ORANGE, opacity=0.85)),
    ("O0 baseline", lambda p: p.is_baseline and p.status in _TRAINED and not p.is_o0,  # O0 as its own point
     dict(symbol="diamond", size=12, color=BLACK)),
    ("the answer: the search's best trial (one seed)", lambda p: p.is_selected and not p.is_baseline,
     dict(symbol="star", size=16, color=RED)),
)
# one colour per confirmed recipe, none of the blue, orange, green, red and grey the search's points and lines use
CONFIRMED_COLOURS = ("#7b4fa0", "#9d755d", "#1b9e9e", "#d4a017", "#d6609c", "#444444")


def draw_scatter(info: ScatterInfo) -> go.Figure:
    """Every run, the Pareto front, baseline and presets, the confirmed means with intervals, the tolerance band."""
    obj = info.objective
    fig = go.Figure()
    if info.max_drop_y is not None:  # the region a recipe's objective may fall to
        fig.add_hrect(y0=info.max_drop_y, y1=0, fillcolor=GREEN, opacity=0.08, line_width=0)
        fig.add_hline(y=info.max_drop_y, line_dash="dash", line_color=RED)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", hoverinfo="skip",  # named in the legend, not
                                 name=f"shaded: within {info.max_drop:.3g} {obj.unit} of O0 (the margin)",  # on a point
                                 marker=dict(symbol="square", size=12, color=GREEN, opacity=0.25)))
    if info.pareto:  # drawn as the staircase bounding the region the front dominates
        xs, ys = zip(*info.pareto)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="Pareto front (search)",
                                 line=dict(color=GREEN, width=2, shape="vh"), hoverinfo="skip"))
    runs_name = "searched trials (one seed each)" if info.pareto or not info.confirmed else "runs (one per seed)"
    low, high = y_range(info)
    left, right = info.x_range or (-math.inf, math.inf)
    inside = [p for p in info.points if left <= p.x <= right]
    for name, keep, marker in _GROUPS:
        chosen = [p for p in inside if keep(p) and p.y >= low]
        if chosen:
            fig.add_trace(go.Scatter(
                x=[p.x for p in chosen], y=[p.y for p in chosen], mode="markers",
                name=(name or runs_name) + (" (the answer: keep O0)" if name == "O0 baseline" and info.answer == "O0"
                                            else ""),
                marker=marker, text=[p.label for p in chosen], hovertext=[_hover(p, obj) for p in chosen],
                hoverinfo="text"))
    _add_o0(fig, info)
    _add_beside(fig, [p for p in info.points if not left <= p.x <= right and p.y >= low], left, right, obj)
    below = [p for p in info.points if p.y < low]
    if below:  # drawn on the bottom edge, their figures on hover: the scale stays on the recipes that matter
        fig.add_trace(go.Scatter(
            x=[min(max(p.x, left), right) for p in below], y=[low] * len(below), mode="markers", cliponaxis=False,
            name=f"below the scale (lost more than {-low:.3g} {obj.unit}; hover for figures)",
            marker=dict(symbol="triangle-down-open", size=11, color=GREY, line=dict(width=1.5)),
            text=[p.label for p in below],
            hovertext=[f"{_hover(p, obj)}<br>off the scale: {p.y:{obj.gain_spec}} {obj.unit}" for p in below],
            hoverinfo="text"))
    labels = label_positions(info.confirmed, low, high) if info.x_range is not None else {}
    for index, point in enumerate(info.confirmed):
        _add_confirmed(fig, point, CONFIRMED_COLOURS[index % len(CONFIRMED_COLOURS)], index, obj,
                       (right, labels[point.recipe]) if point.recipe in labels else None)
    if info.baseline_y is not None:
        fig.add_vline(x=1.0, line_dash="dot", line_color=GREY)
    fig.update_layout(title=f"Speed vs {obj.noun}", xaxis_title=info.x_label, yaxis_title=info.y_label, height=560,
                      legend=dict(orientation="h", y=-0.15), **LAYOUT)
    if info.baseline_y is not None:
        fig.update_yaxes(range=[low, high])
    if info.x_range is not None:
        fig.update_xaxes(range=list(info.x_range))
    if labels:  # the labels' column, right of the plot: wide enough for the longest line of a name
        longest = max(len(line) for q in info.confirmed for line in _label_lines(q.recipe))
        fig.update_layout(margin=dict(LAYOUT["margin"], r=min(_LABEL_MARGIN_MAX, 16 + _CHAR_PX * longest)))
    return fig


# The confirmed recipes' names stand in a column right of the plot, each at its mean's height where it can, pushed
# apart where names would touch, a line from each to its mean: no name covers another, a point or a line of the plot.
_LINE_PX, _PLOT_PX, _CHAR_PX, _LABEL_MARGIN_MAX = 16, 300, 7, 360


def _label_lines(recipe: str) -> list[str]:
    parts = recipe.split(" + ")
    return [parts[0], *(f"+ {p}" for p in parts[1:])]


def label_positions(confirmed: tuple[ConfirmedPoint, ...], low: float, high: float) -> dict[str, float]:
    """recipe -> the height of its name in the labels' column (data units): its mean's height, moved the least that
    keeps every name clear of the next (``_PLOT_PX``, a lower bound of the plot's height, sets what a line is worth
    in data units), inside the axis."""
    unit = (high - low) / _PLOT_PX  # data units per pixel, at the smallest plot the page draws
    heights = {q.recipe: (len(_label_lines(q.recipe)) * _LINE_PX + 4) * unit for q in confirmed}
    order = sorted(confirmed, key=lambda q: -q.delta_pt)
    placed: dict[str, float] = {}
    previous: ConfirmedPoint | None = None
    for q in order:  # from the top down: each name as high as its mean, below the one above it
        y = min(q.delta_pt, high - heights[q.recipe] / 2)
        if previous is not None:
            y = min(y, placed[previous.recipe] - (heights[previous.recipe] + heights[q.recipe]) / 2)
        placed[q.recipe], previous = y, q
    if order:  # the column ran out at the bottom: lift it, the top name no higher than the axis allows
        last = order[-1]
        lift = (low + heights[last.recipe] / 2) - placed[last.recipe]
        if lift > 0:
            room = (high - heights[order[0].recipe] / 2) - placed[order[0].recipe]
            placed = {name: y + min(lift, max(room, 0.0)) for name, y in placed.items()}
    return placed


def _add_o0(fig: go.Figure, info: ScatterInfo) -> None:
    """O0 once, at (1, 0): every speed-up and gain is a ratio or a difference to its runs pooled; its runs' own
    figures in the hover."""
    if info.baseline_y is None or not info.o0_runs:
        return
    obj = info.objective
    runs = "<br>".join(f"{html.escape(p.trial_id)}: {p.x:.3f}x per job ({fmt(p.step_speedup, '.3f')}x per step), "
                       f"{obj.format_gain(p.y)}" for p in info.o0_runs)
    fig.add_trace(go.Scatter(
        x=[1.0], y=[0.0], mode="markers",
        name="O0 baseline" + (" (the answer: keep O0)" if info.answer == "O0" else ""),
        marker=dict(symbol="diamond", size=12, color=BLACK), text=["O0"],
        hovertext=[f"<b>O0</b>, the baseline: 1.0 by construction, its {len(info.o0_runs)} run(s) pooled "
                   f"(geometric mean of their job times; mean {obj.noun})<br>{runs}"], hoverinfo="text"))


def _add_beside(fig: go.Figure, beside: list[ScatterPoint], left: float, right: float, obj: Objective) -> None:
    """Trials beyond the speed axis (a recipe nobody would choose: one that broke training, or a scheduler's stop at
    a poor epoch) on its edge, their figures on hover: the scale stays on the recipes that matter."""
    if not beside:
        return
    fig.add_trace(go.Scatter(
        x=[min(max(p.x, left), right) for p in beside], y=[p.y for p in beside], mode="markers", cliponaxis=False,
        name="beyond the speed scale (hover for figures)",
        marker=dict(symbol="triangle-right-open", size=11, color=GREY, line=dict(width=1.5)),
        text=[p.label for p in beside],
        hovertext=[f"{_hover(p, obj)}<br>off the scale: {p.x:.3f}x per job" for p in beside], hoverinfo="text"))


def x_range(info: ScatterInfo) -> tuple[float, float]:
    """The speed axis: O0, the confirmed recipes with their intervals, and the trials a user could choose (trained to
    the end, within the objective's scale), with room around them; a farther trial goes on the edge."""
    low, _ = y_range(info)
    kept = [1.0] + [p.x for p in info.points if p.status in _TRAINED and p.y >= low]
    kept += [v for q in info.confirmed for v in (q.speedup, q.speedup_low, q.speedup_high) if finite(v)]
    left, right = min(kept), max(kept)
    room = max(0.08 * (right - left), 0.05)
    return max(left - room, 0.0), right + room


def _hover(p: ScatterPoint, obj: Objective = ACCURACY) -> str:
    """A run's hover: its name, id and status, its levels, its figures, then the knobs it drew, three a line."""
    lines = [f"<b>{html.escape(p.label)}</b> ({html.escape(p.trial_id)}, {p.status})",
             f"boost_level {p.boost_level}, amp {p.amp_level}, loss scale {p.loss_scale_kind}",
             f"throughput {fmt(p.throughput_sps, '.1f')} samples/s, speed-up {fmt(p.speedup, '.3f')}x per job "
             f"({fmt(p.step_speedup, '.3f')}x per step), one seed",
             f"{obj.label} {obj.format_value(p.objective_value)} ({obj.format_gain(p.objective_gain)})"]
    params = [f"{name}={_param_text(value)}" for name, value in p.params]
    lines += [html.escape(", ".join(params[i:i + 3])) for i in range(0, len(params), 3)]
    return "<br>".join(lines)


def _param_text(value: object) -> str:
    # Integer params read back as floats when some trials lack them (NaN): show 4, not 4.0.
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def y_range(info: ScatterInfo) -> tuple[float, float]:
    """The objective axis: every trained trial, every confirmed interval and the margin, with room around them;
    a trial far below (one that broke training, one stopped early at a poor epoch) goes on the bottom edge."""
    if info.baseline_y is None:  # raw values: plotly's own range
        return -math.inf, math.inf
    kept = [p.y for p in (*info.points, *info.o0_runs) if p.status in _TRAINED]
    kept += [v for q in info.confirmed for v in (q.delta_low_pt, q.delta_high_pt, q.delta_pt) if finite(v)]
    kept += [0.0, -(info.max_drop or 0.0)]
    low, high = min(kept), max(kept)
    room = max(0.15 * (high - low), 0.5 if info.objective.fraction else 0.05 * max(abs(low), abs(high), 1e-9))
    return low - 3 * room, high + room


def _faint(colour: str) -> str:
    """``colour`` (#rrggbb) at 40% opacity: a name's line to its mean, lighter than the figures it crosses."""
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},0.4)"


def _add_confirmed(fig: go.Figure, q: ConfirmedPoint, colour: str, index: int, obj: Objective,
                   label_at: tuple[float, float] | None = None) -> None:
    """One confirmed recipe: its paired mean with 95% intervals in its own colour, a dotted line from its one-seed
    search trial, and its name: in the labels' column at ``label_at`` (x, y in data units) with a line to its mean,
    or set off from the bars (raw axes)."""
    group = f"confirmed-{index}"
    if finite(q.search_x) and finite(q.search_y):
        fig.add_trace(go.Scatter(x=[q.search_x, q.speedup], y=[q.search_y, q.delta_pt], mode="lines",
                                 line=dict(color=colour, width=1, dash="dot"), legendgroup=group, showlegend=False,
                                 hoverinfo="skip"))
    fig.add_trace(go.Scatter(
        x=[q.speedup], y=[q.delta_pt], mode="markers",
        name=f"{q.recipe}{' (the answer)' if q.is_selected else ''}: {q.n_seeds} paired seeds (95% CI)",
        legendgroup=group,
        marker=(dict(symbol="star", size=18, color=colour, line=dict(width=1, color=BLACK)) if q.is_selected
                else dict(symbol="x-thin-open", size=13, color=colour, line=dict(width=3))),
        error_x=error_bars([q.speedup], [q.speedup_low], [q.speedup_high]) | dict(color=colour),
        error_y=error_bars([q.delta_pt], [q.delta_low_pt], [q.delta_high_pt]) | dict(color=colour),
        hovertext=[f"<b>{html.escape(q.recipe)}</b>: {q.speedup:.3f}x per job [{q.speedup_low:.2f}, {q.speedup_high:.2f}], "
                   f"{q.delta_pt:{obj.gain_spec}} {obj.unit} [{q.delta_low_pt:{obj.gain_spec}}, "
                   f"{q.delta_high_pt:{obj.gain_spec}}], {q.n_seeds} paired seeds; {decision_words(q.verdict, obj)}"
                   + (f"<br>its search trial (one seed): {q.search_x:.3f}x per job, {q.search_y:{obj.gain_spec}} {obj.unit}"
                      if finite(q.search_x) else "")],
        hoverinfo="text"))
    if label_at is not None:
        fig.add_annotation(x=q.speedup, y=q.delta_pt, ax=label_at[0], ay=label_at[1], axref="x", ayref="y",
                           text="<br>".join(html.escape(line) for line in _label_lines(q.recipe)),
                           showarrow=True, arrowhead=0, arrowcolor=_faint(colour), arrowwidth=1, standoff=8,
                           xanchor="left", align="left", font=dict(color=colour, size=12),
                           bgcolor="rgba(255,255,255,0.85)")
        return
    # the label sits up and to the right (alternating down for every other recipe, each pair further out, so that
    # neighbours' labels clear each other), clear of the bars' ends; a long name breaks before each " + "
    offset = 40 + 30 * (index // 2)
    fig.add_annotation(x=q.speedup, y=q.delta_pt, text=html.escape(q.recipe).replace(" + ", "<br>+ "),
                       showarrow=True, arrowhead=0, arrowcolor=colour, ax=36,
                       ay=-offset if index % 2 == 0 else offset, xanchor="left",
                       font=dict(color=colour, size=12),
                       bgcolor="rgba(255,255,255,0.85)")
