"""Steady-state throughput from per-step times: pure arithmetic, no MindSpore.

The first step compiles the graph. Some boost algorithms compile more graphs later (GradientFreeze
builds one training graph per parameter group and compiles each on first use), so a later step
far slower than the median is counted as compile time too, not as training.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

__all__ = ["COMPILE_SPIKE_FACTOR", "StepSummary", "summarize_steps"]

# A step this many times slower than the steady median is a graph compile, not training.
COMPILE_SPIKE_FACTOR = 5.0


@dataclass(frozen=True)
class StepSummary:
    first_step_s: float
    compile_s: float
    compile_steps: int
    steady_steps: int
    steady_s: float
    throughput_sps: float | None
    median_step_s: float | None


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
    throughput = batch_size * len(steady) / steady_s if steady and steady_s > 0 else None
    return StepSummary(
        first_step_s=durations[0],
        compile_s=durations[0] + sum(spikes),
        compile_steps=1 + len(spikes),
        steady_steps=len(steady),
        steady_s=steady_s,
        throughput_sps=throughput,
        median_step_s=median,
    )
