"""Learning curves: the objective's held-out value against training time, per run."""

from __future__ import annotations

import json
from typing import NamedTuple

import pandas as pd
import plotly.graph_objects as go

from boosttune.tables.results import finite
from boosttune.tables.states import FINISHED
from boosttune.report.figures._common import BLACK, BLUE, GREEN, LAYOUT, ORANGE, RED
from boosttune.report.inputs import ReportInputs

__all__ = ["CurveInfo", "CurveSeries", "curves_info", "draw_curves"]


class CurveSeries(NamedTuple):
    name: str  # the recipe
    run_id: str
    role: str  # baseline / preset / candidate
    train_s: tuple[float, ...]
    objective_value: tuple[float, ...]


class CurveInfo(NamedTuple):
    series: tuple[CurveSeries, ...]
    source: str  # which runs the curves come from
    y_label: str = "val_acc"  # the objective's name


def curves_info(inputs: ReportInputs) -> CurveInfo:
    """The objective's held-out value against training time (compile included, evaluation excluded) for the baseline, the
    presets and the confirmed candidates: every paired seed when they were evaluated every epoch, else the search's
    own runs."""
    series, source = [], "no runs"
    if inputs.confirmed is not None:
        runs = inputs.confirmed.runs
        for _, row in runs[runs["status"].isin(FINISHED)].iterrows():
            series.append(_curve(row, str(row["recipe"]), _role(row)))
        source = "the paired seeds of the " + ("bench" if inputs.kind == "bench" else "confirm stage")
    if not any(len(s.train_s) > 1 for s in series) and inputs.search is not None:  # confirmed without curves
        series, source = _search_curves(inputs)
    return CurveInfo(tuple(s for s in series if s.train_s), source, inputs.objective.label)


def _search_curves(inputs: ReportInputs) -> tuple[list[CurveSeries], str]:
    """The search's own runs (one seed each) of O0 and the answer (the confirmed recipes when the answer keeps O0,
    the presets without a confirm stage), named as the answer names them."""
    table = inputs.search
    answer = inputs.selection.recipe
    if inputs.confirmed is None:
        wanted = {n: n for n in table["preset"].dropna()} | ({answer: answer} if answer != "O0" else {})
        what = "O0, the presets and the search's pick" if answer != "O0" else "O0 and the presets"
    else:
        recipes = [answer] if answer != "O0" else [str(r) for r in inputs.confirmed.summary["recipe"] if r != "O0"]
        wanted = {"O0": "O0", **{r: r for r in recipes}}
        what = f"O0 and the answer, {answer}" if answer != "O0" else "O0 and the recipes the confirm stage raced"
    series = []
    for _, row in table[table["status"].isin(FINISHED)].iterrows():
        name = next((n for n in wanted if _names(row, n)), None)
        if name is not None:
            series.append(_curve(row, name, _role(row)))
    why = ("; the confirm stage evaluated after the last epoch only (confirm_curves)"
           if inputs.confirmed is not None else "")
    missing = [n for n in wanted if n != "O0" and not any(c.name == n for c in series)]
    if missing:
        why += f"; the search never ran {', '.join(missing)}, so no curve of it is drawn"
    return series, f"the search's runs (one seed each) of {what}{why}"


def _names(row: pd.Series, name: str) -> bool:
    """Whether a search row is the run of ``name``: its preset or label, or a searched trial named by its id."""
    label, trial = row.get("label"), str(row["trial_id"])
    return (row.get("preset") == name if pd.notna(row.get("preset")) else False) or \
        (pd.notna(label) and str(label) == name) or name.endswith(f"({trial})") or name == trial


def _role(row: pd.Series) -> str:
    if bool(row["is_baseline"]) or any(isinstance(v, str) and v == "O0" for v in (row.get("recipe"), row.get("preset"))):
        return "baseline"
    return "preset" if pd.notna(row["preset"]) else "candidate"


def _curve(row: pd.Series, name: str, role: str) -> CurveSeries:
    try:
        curve = json.loads(row["curve_json"]) if isinstance(row.get("curve_json"), str) else []
    except ValueError:
        curve = []
    points = [(float(e["train_s"]), float(e["objective_value"])) for e in curve
              if finite(e.get("train_s")) and finite(e.get("objective_value"))]
    return CurveSeries(name, str(row["trial_id"]), role, tuple(p[0] for p in points), tuple(p[1] for p in points))


_PALETTE = (BLUE, ORANGE, GREEN, RED, "#b279a2", "#9d755d", "#72b7b2", "#eeca3b")


def draw_curves(info: CurveInfo) -> go.Figure:
    """One colour per recipe (black for the baseline), one legend entry for all its seeds."""
    colours: dict[str, str] = {}
    fig = go.Figure()
    for s in info.series:
        colour = BLACK if s.role == "baseline" else colours.setdefault(s.name, _PALETTE[len(colours) % len(_PALETTE)])
        first = s.name not in {t.name for t in fig.data}
        fig.add_trace(go.Scatter(x=s.train_s, y=s.objective_value, mode="lines+markers", name=s.name, legendgroup=s.name,
                                 showlegend=first, line=dict(color=colour, width=2 if s.role == "baseline" else 1.3),
                                 marker=dict(size=4), hovertemplate=f"{s.name} ({s.run_id})<br>%{{x:.1f}} s: "
                                                                    "%{y:.4f}<extra></extra>"))
    fig.update_layout(title=f"Learning curves ({info.source})", xaxis_title="training time, s (compile included)",
                      yaxis_title=info.y_label, height=460, **LAYOUT)
    return fig
