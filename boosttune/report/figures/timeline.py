"""Which run trained when (wall clock, set-up included), by stage: a Gantt chart."""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd
import plotly.graph_objects as go

from boosttune.tables.results import finite
from boosttune.report.figures._common import BLUE, GREY, LAYOUT, ORANGE, RED
from boosttune.report.inputs import ReportInputs
from boosttune.report.recipes import run_name
from boosttune.tables.states import RunStatus

__all__ = ["TimelineBar", "TimelineInfo", "draw_timeline", "timeline_info"]


class TimelineBar(NamedTuple):
    run_id: str
    label: str
    stage: str  # baseline / search / confirm / bench
    start_s: float  # from the first run's start
    duration_s: float
    status: str
    reason: str


class TimelineInfo(NamedTuple):
    bars: tuple[TimelineBar, ...]
    total_s: float


def timeline_info(inputs: ReportInputs) -> TimelineInfo | None:
    """Which run trained when (wall clock, set-up included), by stage; None for tables without start times."""
    rows = []
    for stage_table, stage in ((inputs.search, "search"),
                               (inputs.confirmed.runs if inputs.confirmed is not None else None,
                                "bench" if inputs.kind == "bench" else "confirm")):
        if stage_table is None or "started_at" not in stage_table:
            continue
        for _, row in stage_table.iterrows():
            if not finite(row["started_at"]) or row["status"] == RunStatus.DUPLICATE:
                continue
            label = run_name(row)
            rows.append((float(row["started_at"]), float(row["wall_s"]) if finite(row["wall_s"]) else 0.0,
                         str(row["trial_id"]), label,
                         "baseline" if row["trial_id"] == "baseline" else stage, str(row["status"]),
                         str(row["reason"]) if pd.notna(row["reason"]) else ""))
    if not rows:
        return None
    rows.sort()
    origin = rows[0][0]
    bars = tuple(TimelineBar(run_id, label, stage, start - origin, duration, status, reason)
                 for start, duration, run_id, label, stage, status, reason in rows)
    return TimelineInfo(bars, max(b.start_s + b.duration_s for b in bars))


_STATUS_COLOURS = {RunStatus.COMPLETED: BLUE, RunStatus.TARGET_REACHED: BLUE, RunStatus.STOPPED: ORANGE, RunStatus.FAILED: RED}


def draw_timeline(info: TimelineInfo) -> go.Figure:
    bars = info.bars
    fig = go.Figure(go.Bar(
        y=[f"{b.stage}: {b.label}" + (f" #{n}" if n else "") for b, n in zip(bars, _repeats(bars))],
        x=[max(b.duration_s, 0.5) for b in bars], base=[b.start_s for b in bars], orientation="h",
        marker_color=[_STATUS_COLOURS.get(b.status, GREY) for b in bars],
        hovertext=[f"{b.run_id} ({b.label}): {b.status}, {b.duration_s:.0f} s from {b.start_s:.0f} s"
                   + (f"<br>{b.reason}" if b.reason else "") for b in bars], hoverinfo="text"))
    fig.update_layout(title="Timeline (blue: finished, orange: stopped early, red: failed)",
                      xaxis_title="seconds since the first run started", height=140 + 18 * len(bars),
                      yaxis=dict(autorange="reversed", tickfont=dict(size=10)), **LAYOUT)
    return fig


def _repeats(bars: tuple[TimelineBar, ...]) -> list[int]:
    """0 for a bar whose stage and label are unique, else its 1-based count among them (the axis needs distinct
    names: two confirm rounds of one recipe, two searched trials with the same methods)."""
    seen: dict[tuple[str, str], int] = {}
    total: dict[tuple[str, str], int] = {}
    for b in bars:
        total[(b.stage, b.label)] = total.get((b.stage, b.label), 0) + 1
    out = []
    for b in bars:
        key = (b.stage, b.label)
        seen[key] = seen.get(key, 0) + 1
        out.append(seen[key] if total[key] > 1 else 0)
    return out
