"""Steady-state throughput from per-step times: pure arithmetic, no MindSpore.

The first step compiles the graph. Some boost algorithms compile more graphs later (GradientFreeze
builds one training graph per parameter group and compiles each on first use), so a later step
far slower than the median is counted as compile time too, not as training.

On a shared machine a burst of interference from another process can slow a whole stretch of
steps without any one of them looking like a compile. So the reported throughput is the median
over fixed windows of consecutive steady steps (each window's samples over its time): one bad
stretch moves one window, not the run's figure. ``throughput_mean_sps`` keeps the plain ratio of
all steady samples to all steady time.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

__all__ = ["COMPILE_SPIKE_FACTOR", "MAX_WINDOWS", "MIN_WINDOW_STEPS", "StepSummary", "summarize_steps"]

# A step this many times slower than the steady median is a graph compile, not training.
COMPILE_SPIKE_FACTOR = 5.0
# The steady steps are cut into at most this many windows of at least MIN_WINDOW_STEPS steps each;
# with fewer than 3 windows the median means nothing and the plain ratio is reported.
MAX_WINDOWS = 8
MIN_WINDOW_STEPS = 10


@dataclass(frozen=True)
class StepSummary:
    first_step_s: float
    compile_s: float
    compile_steps: int
    steady_steps: int
    steady_s: float
    throughput_sps: float | None  # median over windows (the plain ratio when too few windows)
    median_step_s: float | None
    throughput_mean_sps: float | None = None  # all steady samples / all steady time
    windows: int = 0  # windows the median was taken over (0: the plain ratio)


def _windowed(steady: Sequence[float], batch_size: int) -> tuple[float | None, int]:
    count = min(MAX_WINDOWS, len(steady) // MIN_WINDOW_STEPS)
    if count < 3:
        return None, 0
    size = len(steady) // count
    rates = [batch_size * size / sum(steady[i * size:(i + 1) * size]) for i in range(count)]
    return statistics.median(rates), count


def summarize_steps(durations: Sequence[float], batch_size: int, warmup_steps: int) -> StepSummary:
    """Summarise step durations (seconds) of one rank.

    ``warmup_steps`` leading steps (at least the first) are excluded from the throughput; later
    steps slower than ``COMPILE_SPIKE_FACTOR`` x the median of the rest count as compiles.
    """
    if not durations:
        return StepSummary(0.0, 0.0, 0, 0, 0.0, None, None)
    skip = max(1, warmup_steps)
    rest = list(durations[skip:])
    median = statistics.median(rest) if rest else None
    limit = COMPILE_SPIKE_FACTOR * median if median else float("inf")
    spikes = [d for d in durations[1:] if d > limit]
    steady = [d for d in rest if d <= limit]
    steady_s = sum(steady)
    mean_rate = batch_size * len(steady) / steady_s if steady and steady_s > 0 else None
    windowed, windows = _windowed(steady, batch_size) if mean_rate else (None, 0)
    return StepSummary(
        first_step_s=durations[0],
        compile_s=durations[0] + sum(spikes),
        compile_steps=1 + len(spikes),
        steady_steps=len(steady),
        steady_s=steady_s,
        throughput_sps=windowed if windowed is not None else mean_rate,
        median_step_s=median,
        throughput_mean_sps=mean_rate,
        windows=windows,
    )
