"""The searched knobs of every finished trial, then its speed-up and objective gain: parallel coordinates."""

from __future__ import annotations

import math
from typing import NamedTuple

import pandas as pd
import plotly.graph_objects as go

from boosttune.tables.results import PARAM_PREFIX, finite
from boosttune.report.figures._common import LAYOUT, compared, inert, per_job, present, varies
from boosttune.report.inputs import ReportInputs

__all__ = ["Axis", "ParallelInfo", "draw_parallel", "parallel_info"]


class Axis(NamedTuple):
    label: str
    values: tuple[float, ...]
    names: tuple[str, ...] | None  # tick names: a choice's (its values are codes into them) or an integer knob's
    ticks: tuple[float, ...] | None = None  # where the names go (None: at the codes 0, 1, ...)


class ParallelInfo(NamedTuple):
    dimensions: tuple[Axis, ...]
    color: tuple[float, ...]  # speed-up of each trial
    trial_ids: tuple[str, ...]


def parallel_info(inputs: ReportInputs) -> ParallelInfo | None:
    """The searched knobs of every finished trial that varied between them and can act on this device, then its
    speed-up and objective gain (categories as codes; "(unset)": the trial did not draw the knob)."""
    if inputs.search is None:
        return None
    finished = compared(inputs.search)
    finished = finished[~finished["is_baseline"].astype(bool)]  # O0 draws no knob: it would sit on "(unset)"
    cannot = inert(inputs)
    params = [c for c in finished.columns if c.startswith(PARAM_PREFIX) and varies(finished[c])
              and c.removeprefix(PARAM_PREFIX) not in cannot]
    if len(finished) < 2:
        return None
    dimensions = [_dimension(column.removeprefix(PARAM_PREFIX), finished[column]) for column in params]
    speed = tuple(per_job(row) for _, row in finished.iterrows())
    dimensions.append(Axis("speed-up per job (x)", speed, None))
    obj = inputs.objective
    dimensions.append(Axis(f"{obj.noun} ({obj.unit})", tuple(float(v) for v in finished["objective_gain"]), None))
    return ParallelInfo(tuple(dimensions), speed, tuple(finished["trial_id"].astype(str)))


def _dimension(name: str, values: pd.Series) -> Axis:
    """A numeric knob as it is; a switch or choice as codes into its sorted names ("(unset)" where not drawn)."""
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().sum() == values.notna().sum() and values.map(lambda v: not isinstance(v, bool)).all():
        drawn = tuple(float(v) if finite(v) else math.nan for v in numeric)
        whole = sorted({int(v) for v in drawn if finite(v)}) if all(
            float(v).is_integer() for v in drawn if finite(v)) else []
        if whole and len(whole) <= 12:  # an integer knob: ticks on its values, not at fractions
            return Axis(name, drawn, tuple(str(v) for v in whole), tuple(float(v) for v in whole))
        return Axis(name, drawn, None)
    names = sorted({str(v) for v in values if present(v)} | ({"(unset)"} if values.isna().any() else set()))
    codes = tuple(float(names.index(str(v) if present(v) else "(unset)")) for v in values)
    return Axis(name, codes, tuple(names))


def _short_labels(labels: list[str]) -> list[str]:
    """Each knob by its name after the section ("freeze_p" for "grad_freeze.freeze_p") where that name is unique,
    so neighbouring titles fit between the axes; the full name otherwise."""
    tails = [label.split(".", 1)[-1] for label in labels]
    return [tail if tails.count(tail) == 1 else label for label, tail in zip(labels, tails)]


def draw_parallel(info: ParallelInfo) -> go.Figure:
    dimensions = []
    short = _short_labels([axis.label for axis in info.dimensions])
    for axis, label in zip(info.dimensions, short):
        dimension = dict(label=label, values=list(axis.values))
        if axis.names is not None:
            ticks = axis.ticks if axis.ticks is not None else range(len(axis.names))
            dimension.update(tickvals=list(ticks), ticktext=list(axis.names))
        dimensions.append(dimension)
    fig = go.Figure(go.Parcoords(line=dict(color=list(info.color), colorscale="Viridis", showscale=True,
                                           colorbar=dict(title="speed-up")), dimensions=dimensions,
                                 labelfont=dict(size=11), rangefont=dict(size=9), tickfont=dict(size=10)))
    fig.update_layout(title="The searched knobs of each finished trial (those that varied)", height=480,
                      font=dict(size=11), **{**LAYOUT, "margin": dict(l=80, r=80, t=120, b=40)})
    return fig
