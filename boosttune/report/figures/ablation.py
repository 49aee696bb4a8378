"""Each method alone (the only change from the baseline recipe) and the recommended recipe: a forest plot."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from boosttune.tables.results import finite
from boosttune.objective import ACCURACY, Objective
from boosttune.report.figures._common import BLUE, GREY, LAYOUT, ORANGE, RED, compared, error_bars, per_job
from boosttune.report.inputs import ReportInputs
from boosttune.report.recipes import methods_of, recipe_of

__all__ = ["AblationInfo", "AblationRow", "ablation_info", "draw_ablation"]


class AblationRow(NamedTuple):
    name: str  # a method, or the best recipe's name
    speedup: float
    speedup_low: float
    speedup_high: float
    delta_pt: float
    delta_low_pt: float
    delta_high_pt: float
    runs: int
    source: str  # "paired seeds" or "search, one seed each"
    in_best: bool
    method: str = ""  # the one method a row changes ("" for the recommended recipe)


class AblationInfo(NamedTuple):
    alone: tuple[AblationRow, ...]  # each method as the only change from O0
    best: AblationRow | None  # the recommended recipe as a whole
    best_methods: tuple[str, ...]
    objective: Objective = ACCURACY


def ablation_info(inputs: ReportInputs) -> AblationInfo:
    """Each method alone (the only change from the baseline recipe) and the recommended recipe as a whole.

    Paired figures win over the search's one seed per trial; a method the search tried alone in several
    trials shows their median.
    """
    recommended = inputs.selection
    rows: dict[str, AblationRow] = {}
    best, best_methods = _paired_rows(inputs, recommended.recipe, rows)
    if inputs.search is not None:
        table = inputs.search
        base = _base_recipe(table)
        by_method: dict[str, list[pd.Series]] = {}
        for _, row in compared(table).iterrows():
            methods = methods_of(recipe_of(row))
            if best is None and recommended.verdict == "search_only" and str(row.get("label")) == recommended.recipe:
                best = _single(recommended.recipe, [row])
                best_methods = methods
            if len(methods) == 1 and _same_training(row, base):
                by_method.setdefault(methods[0], []).append(row)
        for method, method_rows in by_method.items():
            if not any(r.method == method for r in rows.values()):  # paired figures, when there are some, win
                rows[method] = _single(method, method_rows)
    alone = tuple(row._replace(in_best=row.method in best_methods) for row in rows.values())
    return AblationInfo(tuple(sorted(alone, key=lambda r: -r.speedup)), best, best_methods, inputs.objective)


def _paired_rows(inputs: ReportInputs, recommended: str,
                 rows: dict[str, AblationRow]) -> tuple[AblationRow | None, tuple[str, ...]]:
    """Fill ``rows`` with the confirmed recipes that change one method; return the recommended one and its methods."""
    best, best_methods = None, ()
    if inputs.confirmed is None:
        return best, best_methods
    runs = inputs.confirmed.runs
    base = _base_recipe(runs)
    for _, row in inputs.confirmed.summary.iterrows():
        if row["recipe"] == "O0" or not finite(row["job_speedup"]):
            continue
        recipe_rows = runs[runs["recipe"] == row["recipe"]]
        methods = methods_of(recipe_of(recipe_rows.iloc[0])) if len(recipe_rows) else ()
        ablation = AblationRow(str(row["recipe"]), float(row["job_speedup"]), float(row["job_ci_low"]),
                               float(row["job_ci_high"]), float(row["objective_gain"]),
                               float(row["objective_gain_ci_low"]), float(row["objective_gain_ci_high"]),
                               int(row["n_seeds"]), "paired seeds", False)
        if row["recipe"] == recommended:
            best, best_methods = ablation, methods
        if len(methods) == 1 and _same_training(recipe_rows.iloc[0], base):
            name = str(row["recipe"])
            rows[name] = ablation._replace(name=name if name.startswith(methods[0]) else f"{methods[0]}: {name}",
                                           method=methods[0])
    return best, best_methods


def _single(name: str, rows: list[pd.Series]) -> AblationRow:
    """Search trials with one seed each: the median over them (per job; per step where a trial has no job time), no
    interval."""
    speed = float(np.median([per_job(r) for r in rows]))
    delta = float(np.median([r["objective_gain"] for r in rows]))
    return AblationRow(name, speed, math.nan, math.nan, delta, math.nan, math.nan, len(rows),
                       "search, one seed each" + (" (median)" if len(rows) > 1 else ""), False, name)


def _base_recipe(table: pd.DataFrame) -> dict[str, Any]:
    base = table[table["is_baseline"].astype(bool)]
    return recipe_of(base.iloc[0]) if len(base) else {}


def _same_training(row: pd.Series, base: dict[str, Any]) -> bool:
    """Same optimizer (and learning rate) as the baseline: the method is the only change."""
    return not base or recipe_of(row).get("optimizer") == base.get("optimizer")


# --- drawing ------------------------------------------------------------------------------------------------

def draw_ablation(info: AblationInfo) -> go.Figure:
    """A forest plot: each method alone and the recommended recipe, speed-up and objective with their intervals."""
    obj = info.objective
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
            error_x=error_bars(values, low, high),
            hovertext=[f"{r.name}: {v:.3f}{unit} ({r.runs} run(s), {r.source})" for r, v in zip(rows, values)],
            hoverinfo="text"), row=1, col=col)
    fig.add_vline(x=1.0, line_dash="dot", line_color=GREY, row=1, col=1)
    fig.add_vline(x=0.0, line_dash="dot", line_color=GREY, row=1, col=2)
    fig.update_yaxes(autorange="reversed", ticksuffix="  ")  # the names stand clear of the axis
    key = ["red: the recommended recipe"] if info.best else []
    key += ["orange: a method in it"] if any(r.in_best for r in info.alone) else []
    key += ["bars: 95% CI"] if any(finite(r.speedup_low) for r in rows) else []
    fig.update_layout(title="Each method alone" + (", and the recommended recipe" if info.best else "")
                      + (f" ({'; '.join(key)})" if key else ""),
                      height=140 + 36 * len(rows), **LAYOUT)
    return fig
