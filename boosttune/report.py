"""The experiment report: speed vs accuracy scatter, Pareto front, tolerance band, top trials, failures.

As in Optuna's visualisations, :func:`_get_scatter_info` computes everything the figure shows from
the results table (tested without rendering) and :func:`write_report` draws it into one
self-contained HTML file (plotly.js embedded: it opens without a network).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from boosttune.errors import DataError
from boosttune.files import write_atomically
from boosttune.results import FINISHED, baseline_row, finite
from boosttune.select import Selection, non_dominated, select_best

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from boosttune.summary import Confirmed

__all__ = ["ConfirmedInfo", "ConfirmedPoint", "ScatterInfo", "ScatterPoint", "write_report"]

DEFAULT_TITLE = "boosttune: speed vs accuracy"
_TOP_COLUMNS = ("trial_id", "preset", "status", "boost_level", "amp_level", "loss_scale_kind", "optimizer_name",
                "learning_rate", "throughput_sps", "speedup_vs_baseline", "val_acc", "val_acc_delta_pt",
                "compile_s", "time_to_target_s", "peak_rss_mb")


class ScatterPoint(NamedTuple):
    trial_id: str
    x: float
    y: float
    label: str  # the preset name, or the trial id
    hover: str
    is_baseline: bool
    is_preset: bool
    is_pareto: bool
    is_selected: bool


class ScatterInfo(NamedTuple):
    x_label: str
    y_label: str
    points: tuple[ScatterPoint, ...]
    pareto: tuple[tuple[float, float], ...]  # the front's (x, y), by increasing x
    baseline_val_acc: float | None
    tolerance_val_acc: float | None  # baseline val_acc - tolerance_pt / 100
    selection_reason: str | None
    not_plotted: tuple[tuple[str, str, str], ...]  # (trial_id, status, reason)


def _get_scatter_info(df: pd.DataFrame, tolerance_pt: float = 0.5) -> ScatterInfo:
    """The figure's data. x is the speed-up vs the O0 baseline (throughput when there is none)."""
    selection = _selection(df, tolerance_pt)
    base = baseline_row(df)
    has_speedup = base is not None and finite(base["throughput_sps"])
    x_column = "speedup_vs_baseline" if has_speedup else "throughput_sps"
    x_label = "speed-up vs O0 baseline (x)" if has_speedup else "throughput (samples/s); no finished O0 baseline"
    finished = df["status"].isin(FINISHED)
    plottable = finished & df[x_column].map(finite) & df["val_acc"].map(finite)
    plotted = df[plottable.astype(bool)]
    on_front = non_dominated(plotted[x_column].to_numpy(float), plotted["val_acc"].to_numpy(float))
    selected_id = selection.row["trial_id"] if selection else None
    points = tuple(_point(row, x_column, bool(pareto), row["trial_id"] == selected_id)
                   for (_, row), pareto in zip(plotted.iterrows(), on_front))
    pareto = tuple(sorted(((p.x, p.y) for p in points if p.is_pareto), key=lambda xy: (xy[0], -xy[1])))
    base_acc = float(base["val_acc"]) if base is not None and finite(base["val_acc"]) else None
    return ScatterInfo(
        x_label=x_label,
        y_label="validation accuracy",
        points=points,
        pareto=pareto,
        baseline_val_acc=base_acc,
        tolerance_val_acc=base_acc - tolerance_pt / 100.0 if base_acc is not None else None,
        selection_reason=selection.reason if selection else None,
        not_plotted=tuple(_not_plotted(df[~plottable.astype(bool)])),
    )


def _selection(df: pd.DataFrame, tolerance_pt: float) -> Selection | None:
    try:
        return select_best(df, tolerance_pt)  # ConfigError (bad tolerance) goes to the caller
    except DataError:
        return None


def _point(row: pd.Series, x_column: str, is_pareto: bool, is_selected: bool) -> ScatterPoint:
    preset = row["preset"] if pd.notna(row["preset"]) else None
    label = preset or row["trial_id"]
    lines = [f"<b>{html.escape(str(label))}</b> ({html.escape(row['trial_id'])}, {row['status']})",
             f"boost_level {row['boost_level']}, amp {row['amp_level']}, loss scale {row['loss_scale_kind']}",
             f"throughput {_fmt(row['throughput_sps'], '.1f')} samples/s, "
             f"speed-up {_fmt(row['speedup_vs_baseline'], '.3f')}x",
             f"val_acc {_fmt(row['val_acc'], '.4f')} ({_fmt(row['val_acc_delta_pt'], '+.2f')} pt)"]
    params = [f"{name.removeprefix('param.')}={_param_text(row[name])}" for name in row.index
              if name.startswith("param.") and _present(row[name])]
    lines += [html.escape(", ".join(params[i:i + 3])) for i in range(0, len(params), 3)]
    return ScatterPoint(
        trial_id=str(row["trial_id"]), x=float(row[x_column]), y=float(row["val_acc"]), label=str(label),
        hover="<br>".join(lines), is_baseline=bool(row["is_baseline"]), is_preset=preset is not None,
        is_pareto=is_pareto, is_selected=is_selected,
    )


def _not_plotted(rows: pd.DataFrame) -> list[tuple[str, str, str]]:
    return [(str(row["trial_id"]), str(row["status"]),
             str(row["reason"]) if pd.notna(row["reason"]) else "no throughput or val_acc recorded")
            for _, row in rows.iterrows()]


def _present(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and value != value) and value is not pd.NA


def _param_text(value: object) -> str:
    # Integer params read back as floats when some trials lack them (NaN): show 4, not 4.0.
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _fmt(value: object, spec: str) -> str:
    return format(float(value), spec) if finite(value) else "n/a"  # type: ignore[arg-type]


def _figure(info: ScatterInfo, title: str, tolerance_pt: float) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    groups = (
        ("searched trials", lambda p: not p.is_preset, dict(symbol="circle", size=9, color="#4c78a8")),
        ("presets (O1/O2)", lambda p: p.is_preset and not p.is_baseline,
         dict(symbol="square", size=12, color="#f58518")),
        ("O0 baseline", lambda p: p.is_baseline, dict(symbol="diamond", size=14, color="#222222")),
        ("selected", lambda p: p.is_selected, dict(symbol="star", size=20, color="#e45756", line=dict(width=1))),
    )
    if info.pareto:  # drawn as the staircase bounding the region the front dominates
        xs, ys = zip(*info.pareto)
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="Pareto front",
                                 line=dict(color="#54a24b", width=2, shape="vh"), hoverinfo="skip"))
    for name, keep, marker in groups:
        chosen = [p for p in info.points if keep(p)]
        if chosen:
            fig.add_trace(go.Scatter(
                x=[p.x for p in chosen], y=[p.y for p in chosen], mode="markers", name=name, marker=marker,
                text=[p.label for p in chosen], hovertext=[p.hover for p in chosen], hoverinfo="text"))
    if info.tolerance_val_acc is not None:
        fig.add_hline(y=info.tolerance_val_acc, line_dash="dash", line_color="#e45756",
                      annotation_text=f"baseline - {tolerance_pt:g} pt", annotation_position="bottom right")
    if info.x_label.startswith("speed-up"):
        fig.add_vline(x=1.0, line_dash="dot", line_color="#888888")
    fig.update_layout(title=title, xaxis_title=info.x_label, yaxis_title=info.y_label, template="plotly_white",
                      height=560, legend=dict(orientation="h", y=-0.15))
    return fig


_FORMATS = {"throughput_sps": ".1f", "speedup_vs_baseline": ".3f", "val_acc": ".4f", "val_acc_delta_pt": "+.2f",
            "compile_s": ".2f", "time_to_target_s": ".1f", "peak_rss_mb": ".0f", "learning_rate": ".4g"}


def _top_table(df: pd.DataFrame, top: int, tolerance_pt: float) -> str:
    finished = df[df["status"].isin(FINISHED)]
    order = "speedup_vs_baseline" if finished["speedup_vs_baseline"].notna().any() else "throughput_sps"
    rows = finished.sort_values([order, "val_acc"], ascending=False, na_position="last").head(top)
    shown = pd.DataFrame({name: [_cell(value, _FORMATS.get(name)) for value in rows[name]] for name in _TOP_COLUMNS})
    within = ["" if pd.isna(delta) else "yes" if delta >= -tolerance_pt - 1e-9 else "no"
              for delta in rows["val_acc_delta_pt"]]
    shown.insert(4, f"within {tolerance_pt:g} pt", within)
    return shown.to_html(index=False, escape=True, border=0, classes="trials")


def _cell(value: object, spec: str | None) -> str:
    if not _present(value):
        return ""
    return _fmt(value, spec) if spec else str(value)


def _failures_table(info: ScatterInfo) -> str:
    if not info.not_plotted:
        return "<p>None: every trial finished with figures.</p>"
    body = "".join(f"<tr><td>{html.escape(tid)}</td><td>{html.escape(status)}</td><td>{html.escape(reason)}</td></tr>"
                   for tid, status, reason in info.not_plotted)
    return f'<table class="trials"><thead><tr><th>trial_id</th><th>status</th><th>reason</th></tr></thead>' \
           f"<tbody>{body}</tbody></table>"


_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}
table.trials{border-collapse:collapse;font-size:13px}table.trials td,table.trials th{padding:3px 8px;
border-bottom:1px solid #ddd;text-align:right}table.trials th{background:#f4f4f4}"""


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


class ConfirmedInfo(NamedTuple):
    points: tuple[ConfirmedPoint, ...]
    margin_pt: float
    seeds: tuple[int, ...]
    selection_reason: str


def _get_confirmed_info(confirmed: Confirmed) -> ConfirmedInfo:
    """Every confirmed recipe with its paired intervals (the baseline at 1x, 0 pt)."""
    points = tuple(
        ConfirmedPoint(recipe=str(row["recipe"]), speedup=float(row["speedup"]),
                       speedup_low=float(row["speedup_ci_low"]), speedup_high=float(row["speedup_ci_high"]),
                       delta_pt=float(row["val_acc_delta_pt"]), delta_low_pt=float(row["val_acc_delta_pt_ci_low"]),
                       delta_high_pt=float(row["val_acc_delta_pt_ci_high"]), n_seeds=int(row["n_seeds"]),
                       verdict=str(row["verdict"]), is_selected=row["recipe"] == confirmed.selection.recipe)
        for _, row in confirmed.summary.iterrows() if finite(row["speedup"]))
    return ConfirmedInfo(points, confirmed.margin_pt, confirmed.seeds, confirmed.selection.reason)


def _confirmed_figure(info: ConfirmedInfo) -> go.Figure:
    import plotly.graph_objects as go

    def spread(values, low, high):
        return dict(type="data", symmetric=False, array=[h - v if finite(h) else 0 for v, h in zip(values, high)],
                    arrayminus=[v - lo if finite(lo) else 0 for v, lo in zip(values, low)])

    p = info.points
    fig = go.Figure(go.Scatter(
        x=[q.speedup for q in p], y=[q.delta_pt for q in p], mode="markers+text", text=[q.recipe for q in p],
        textposition="top center", marker=dict(size=[16 if q.is_selected else 10 for q in p],
                                               color=["#e45756" if q.is_selected else "#4c78a8" for q in p]),
        error_x=spread([q.speedup for q in p], [q.speedup_low for q in p], [q.speedup_high for q in p]),
        error_y=spread([q.delta_pt for q in p], [q.delta_low_pt for q in p], [q.delta_high_pt for q in p]),
        hovertext=[f"{q.recipe}: {q.speedup:.3f}x [{q.speedup_low:.2f}, {q.speedup_high:.2f}], "
                   f"{q.delta_pt:+.2f} pt [{q.delta_low_pt:+.2f}, {q.delta_high_pt:+.2f}], {q.n_seeds} seeds, "
                   f"{q.verdict}" for q in p], hoverinfo="text", name="confirmed"))
    fig.add_hline(y=-info.margin_pt, line_dash="dash", line_color="#e45756",
                  annotation_text=f"-{info.margin_pt:g} pt", annotation_position="bottom right")
    fig.add_vline(x=1.0, line_dash="dot", line_color="#888888")
    fig.update_layout(title=f"Confirmed over {len(info.seeds)} paired seeds (95% intervals)",
                      xaxis_title="speed-up vs O0 (x)", yaxis_title="accuracy delta vs O0 (points)",
                      template="plotly_white", height=480, showlegend=False)
    return fig


def _confirmed_section(confirmed: Confirmed | None) -> str:
    if confirmed is None:
        return ("<h2>Confirmed</h2>\n<p>No confirm stage ran: every figure above rests on one seed of one run "
                "(this machine's throughput moves by about 10% between runs).</p>")
    info = _get_confirmed_info(confirmed)
    # This section comes first on the page, so it carries plotly.js and the search figure does not.
    figure = _confirmed_figure(info).to_html(full_html=False, include_plotlyjs=True)
    columns = ["recipe", "n_seeds", "speedup", "speedup_ci_low", "speedup_ci_high", "e2e_speedup",
               "val_acc_delta_pt", "val_acc_delta_pt_ci_low", "val_acc_delta_pt_ci_high", "p_value", "verdict"]
    table = confirmed.summary[columns].to_html(index=False, escape=True, border=0, classes="trials",
                                               float_format=lambda v: f"{v:.3f}", na_rep="")
    verdicts = "".join(f"<li><b>{html.escape(str(row['recipe']))}</b>: {html.escape(str(row['verdict_text']))}</li>"
                       for _, row in confirmed.summary.iterrows() if row["recipe"] != "O0")
    return (f"<h2>Confirmed over paired seeds {list(info.seeds)}</h2>\n<p><b>{html.escape(info.selection_reason)}</b>"
            f"</p>\n{figure}\n{table}\n<ul>{verdicts}</ul>")


def _count(df: pd.DataFrame, runs_are: str) -> str:
    return f"{len(df)} search trial(s), one seed each" if runs_are == "search" else f"{len(df)} {runs_are} run(s)"


def write_report(df: pd.DataFrame, path: str | Path, *, title: str = DEFAULT_TITLE, tolerance_pt: float = 0.5,
                 top: int = 15, confirmed: Confirmed | None = None, runs_are: str = "search") -> Path:
    """Write one self-contained HTML report (plotly.js embedded, no CDN) and return its path.

    Raises:
        ConfigError: ``tolerance_pt`` is negative.
    """
    info = _get_scatter_info(df, tolerance_pt)
    figure = _figure(info, title, tolerance_pt).to_html(full_html=False, include_plotlyjs=confirmed is None)
    if confirmed is not None:
        selection = html.escape(f"confirmed: {confirmed.selection.reason}")
    else:
        selection = html.escape(info.selection_reason or "no selection: the table has no finished O0 baseline")
    page = (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_STYLE}</style></head><body>\n<h1>{html.escape(title)}</h1>\n"
            f"<p>{_count(df, runs_are)}; answer at {tolerance_pt:g} pt: {selection}</p>\n"
            f"{_confirmed_section(confirmed)}\n<h2>{'Search' if runs_are == 'search' else 'Every run'}</h2>\n{figure}\n"
            f"<h2>Top trials</h2>\n{_top_table(df, top, tolerance_pt)}\n<h2>Failed, stopped or incomplete trials</h2>\n"
            f"{_failures_table(info)}\n</body></html>\n")
    return write_atomically(path, lambda temp: temp.write_text(page, encoding="utf-8"))
