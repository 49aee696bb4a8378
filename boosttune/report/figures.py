"""Draw the report's figures (plotly) from the data :mod:`boosttune.report.info` computed; nothing is computed here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from boosttune.report.info import (AblationInfo, CurveInfo, HypervolumeInfo, ImportanceInfo, ParallelInfo,
                                   ScatterInfo, TimelineInfo)
from boosttune.objective import ACCURACY, Objective
from boosttune.evaluation.results import finite

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["ablation_figure", "curves_figure", "hypervolume_figure", "importance_figure", "parallel_figure",
           "scatter_figure", "timeline_figure"]

BLUE, ORANGE, RED, GREEN, GREY, BLACK = "#4c78a8", "#f58518", "#e45756", "#54a24b", "#999999", "#222222"
_LAYOUT = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50))


def _errors(values, low, high) -> dict:
    return dict(type="data", symmetric=False, array=[h - v if finite(h) else 0 for v, h in zip(values, high)],
                arrayminus=[v - lo if finite(lo) else 0 for v, lo in zip(values, low)], thickness=1.5)


def scatter_figure(info: ScatterInfo, margin: float, obj: Objective = ACCURACY) -> go.Figure:
    """Every run, the Pareto front, baseline and presets, the confirmed means with intervals, the tolerance band."""
    import plotly.graph_objects as go

    fig = go.Figure()
    if info.tolerance_y is not None:  # the region a recipe's objective may fall to
        fig.add_hrect(y0=info.tolerance_y, y1=0, fillcolor=GREEN, opacity=0.08, line_width=0,
                      annotation_text=f"within {margin:.3g} {obj.unit} of O0", annotation_position="bottom left")
        fig.add_hline(y=info.tolerance_y, line_dash="dash", line_color=RED)
    if info.pareto:  # drawn as the staircase bounding the region the front dominates
        xs, ys = zip(*info.pareto)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="Pareto front (search)",
                                 line=dict(color=GREEN, width=2, shape="vh"), hoverinfo="skip"))
    groups = (
        ("searched trials" if info.pareto or not info.confirmed else "runs (one per seed)",
         lambda p: not p.is_preset, dict(symbol="circle", size=8, color=BLUE, opacity=0.75)),
        ("presets (O1/O2-equivalent)", lambda p: p.is_preset and not p.is_baseline,
         dict(symbol="square", size=10, color=ORANGE, opacity=0.85)),
        ("O0 baseline", lambda p: p.is_baseline, dict(symbol="diamond", size=12, color=BLACK)),
        ("best trial of the search", lambda p: p.is_selected, dict(symbol="star", size=16, color=RED)),
    )
    for name, keep, marker in groups:
        chosen = [p for p in info.points if keep(p)]
        if chosen:
            fig.add_trace(go.Scatter(
                x=[p.x for p in chosen], y=[p.y for p in chosen], mode="markers", name=name, marker=marker,
                text=[p.label for p in chosen], hovertext=[p.hover for p in chosen], hoverinfo="text"))
    if info.confirmed:
        c = info.confirmed
        fig.add_trace(go.Scatter(
            x=[q.speedup for q in c], y=[q.delta_pt for q in c], mode="markers+text", name="confirmed (95% CI)",
            text=[q.recipe for q in c], textposition="top center",
            marker=dict(symbol="x-thin-open", size=[18 if q.is_selected else 12 for q in c],
                        color=[RED if q.is_selected else BLACK for q in c], line=dict(width=3)),
            error_x=_errors([q.speedup for q in c], [q.speedup_low for q in c], [q.speedup_high for q in c]),
            error_y=_errors([q.delta_pt for q in c], [q.delta_low_pt for q in c], [q.delta_high_pt for q in c]),
            hovertext=[f"<b>{q.recipe}</b>: {q.speedup:.3f}x [{q.speedup_low:.2f}, {q.speedup_high:.2f}], "
                       f"{q.delta_pt:{obj.gain_spec}} {obj.unit} [{q.delta_low_pt:{obj.gain_spec}}, "
                       f"{q.delta_high_pt:{obj.gain_spec}}], {q.n_seeds} seeds, {q.verdict}" for q in c],
            hoverinfo="text"))
    if info.baseline_y is not None:
        fig.add_vline(x=1.0, line_dash="dot", line_color=GREY)
    fig.update_layout(title=f"Speed vs {obj.noun}", xaxis_title=info.x_label, yaxis_title=info.y_label, height=560,
                      legend=dict(orientation="h", y=-0.15), **_LAYOUT)
    return fig


def ablation_figure(info: AblationInfo, obj: Objective = ACCURACY) -> go.Figure:
    """A forest plot: each method alone and the recommended recipe, speed-up and objective with their intervals."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = list(info.alone) + ([info.best._replace(name=f"recommended: {info.best.name}")] if info.best else [])
    names = [r.name for r in rows]
    colours = [RED if r.name.startswith("recommended") else ORANGE if r.in_best else BLUE for r in rows]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=("speed-up vs O0 (x)",
                                        f"{obj.noun} vs O0 ({'points' if obj.fraction else obj.unit})"))
    for col, (values, low, high, unit) in enumerate((
            ([r.speedup for r in rows], [r.speedup_low for r in rows], [r.speedup_high for r in rows], "x"),
            ([r.delta_pt for r in rows], [r.delta_low_pt for r in rows], [r.delta_high_pt for r in rows],
             f" {obj.unit}")),
            start=1):
        fig.add_trace(go.Scatter(
            x=values, y=names, mode="markers", marker=dict(size=11, color=colours), showlegend=False,
            error_x=_errors(values, low, high),
            hovertext=[f"{r.name}: {v:.3f}{unit} ({r.runs} run(s), {r.source})" for r, v in zip(rows, values)],
            hoverinfo="text"), row=1, col=col)
    fig.add_vline(x=1.0, line_dash="dot", line_color=GREY, row=1, col=1)
    fig.add_vline(x=0.0, line_dash="dot", line_color=GREY, row=1, col=2)
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(title="Each method alone, and the recommended recipe (orange: part of it; bars: 95% CI)",
                      height=140 + 36 * len(rows), **_LAYOUT)
    return fig


def hypervolume_figure(info: HypervolumeInfo, obj: Objective = ACCURACY) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=list(range(1, len(info.hypervolume) + 1)), y=info.hypervolume, mode="lines+markers",
                               line=dict(shape="hv", color=BLUE), text=info.labels,
                               hovertemplate="trial %{x} (%{text}): %{y:.3f}<extra></extra>"))
    fig.update_layout(title="Hypervolume of the front found so far", xaxis_title="trial (in start order)",
                      yaxis_title=f"hypervolume above ({info.reference[0]:g}x, {info.reference[1]:+.3g} {obj.unit})",
                      height=380, **_LAYOUT)
    return fig


def importance_figure(info: ImportanceInfo) -> go.Figure:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=len(info.objectives), subplot_titles=[n for n, _ in info.objectives])
    for col, (_, scores) in enumerate(info.objectives, start=1):
        ordered = sorted(scores, key=lambda kv: kv[1])
        fig.add_trace(go.Bar(x=[v for _, v in ordered], y=[k for k, _ in ordered], orientation="h",
                             marker_color=BLUE, showlegend=False), row=1, col=col)
    fig.update_layout(title=f"Parameter importance ({info.evaluator}, {info.note})",
                      height=160 + 28 * max(len(s) for _, s in info.objectives), **_LAYOUT)
    return fig


def parallel_figure(info: ParallelInfo) -> go.Figure:
    import plotly.graph_objects as go

    dimensions = []
    for label, values, names in info.dimensions:
        dimension = dict(label=label, values=list(values))
        if names is not None:
            dimension.update(tickvals=list(range(len(names))), ticktext=list(names))
        dimensions.append(dimension)
    fig = go.Figure(go.Parcoords(line=dict(color=list(info.color), colorscale="Viridis", showscale=True,
                                           colorbar=dict(title="speed-up")), dimensions=dimensions))
    fig.update_layout(title="The searched knobs of each finished trial", height=460,
                      **{**_LAYOUT, "margin": dict(l=80, r=80, t=90, b=40)})
    return fig


def curves_figure(info: CurveInfo) -> go.Figure:
    import plotly.graph_objects as go

    palette = [BLUE, ORANGE, GREEN, RED, "#b279a2", "#9d755d", "#72b7b2", "#eeca3b"]
    colours: dict[str, str] = {}
    fig = go.Figure()
    for s in info.series:
        colour = BLACK if s.role == "baseline" else colours.setdefault(s.name, palette[len(colours) % len(palette)])
        first = s.name not in {t.name for t in fig.data}
        fig.add_trace(go.Scatter(x=s.train_s, y=s.objective_value, mode="lines+markers", name=s.name, legendgroup=s.name,
                                 showlegend=first, line=dict(color=colour, width=2 if s.role == "baseline" else 1.3),
                                 marker=dict(size=4), hovertemplate=f"{s.name} ({s.run_id})<br>%{{x:.1f}} s: "
                                                                    "%{y:.4f}<extra></extra>"))
    fig.update_layout(title=f"Learning curves ({info.source})", xaxis_title="training time, s (compile included)",
                      yaxis_title=info.y_label, height=460, **_LAYOUT)
    return fig


def timeline_figure(info: TimelineInfo) -> go.Figure:
    import plotly.graph_objects as go

    colours = {"completed": BLUE, "target_reached": BLUE, "stopped": ORANGE, "failed": RED}
    bars = info.bars
    fig = go.Figure(go.Bar(
        y=[f"{b.stage}: {b.label}" if b.label == b.run_id else f"{b.stage}: {b.label} ({b.run_id})" for b in bars],
        x=[max(b.duration_s, 0.5) for b in bars], base=[b.start_s for b in bars], orientation="h",
        marker_color=[colours.get(b.status, GREY) for b in bars],
        hovertext=[f"{b.run_id} ({b.label}): {b.status}, {b.duration_s:.0f} s from {b.start_s:.0f} s"
                   + (f"<br>{b.reason}" if b.reason else "") for b in bars], hoverinfo="text"))
    fig.update_layout(title="Timeline (blue: finished, orange: stopped early, red: failed)",
                      xaxis_title="seconds since the first run started", height=140 + 18 * len(bars),
                      yaxis=dict(autorange="reversed", tickfont=dict(size=10)), **_LAYOUT)
    return fig
