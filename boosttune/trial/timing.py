"""Steady-state throughput from per-step times: pure arithmetic, no MindSpore.

The first step, and any later step far slower than the median (GradientFreeze compiles a graph per parameter group
on first use), count as compile time, not training. The reported throughput is the median over fixed windows of
consecutive steady steps, so one stretch of interference moves one window, not the figure; ``throughput_mean_sps``
keeps the plain ratio, and ``throughput_rse`` is the relative standard error of the window rates (of the step times
with fewer than 3 windows). Steps are counted across epochs; below ``MIN_STEADY_STEPS`` the preflight refuses the
run before the baseline (:func:`steady_steps_needed`).

Why: docs/design/timing.md.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

__all__ = ["COMPILE_SPIKE_FACTOR", "FEW_STEADY_STEPS", "MAX_WINDOWS", "MIN_STEADY_STEPS", "MIN_WINDOW_STEPS", "StepSummary",
           "steady_steps_needed", "summarize_steps"]

# A step this many times slower than the steady median is a graph compile, not training.
COMPILE_SPIKE_FACTOR = 5.0
# The steady steps are cut into at most this many windows of at least MIN_WINDOW_STEPS steps each;
# with fewer than 3 windows the median means nothing and the plain ratio is reported.
MAX_WINDOWS = 8
MIN_WINDOW_STEPS = 10
# Fewer steady steps than this over a whole run give no speed figure with a spread (one step has none); with few
# more, the figure's standard error (``throughput_rse``) says how little it is worth, and the check says so.
MIN_STEADY_STEPS = 2
# Fewer than this, and the check notes that speed figures will be noisy.
FEW_STEADY_STEPS = 30


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
    throughput_rse: float | None = None  # the figure's standard error relative to it (0.03: about +-3%)


def _windowed(steady: Sequence[float], batch_size: int) -> tuple[float | None, int, float | None]:
    """The median window rate, the number of windows, and the rates' relative standard error."""
    count = min(MAX_WINDOWS, len(steady) // MIN_WINDOW_STEPS)
    if count < 3:
        rse = (statistics.stdev(steady) / statistics.fmean(steady) / len(steady) ** 0.5
               if len(steady) >= 2 and statistics.fmean(steady) > 0 else None)
        return None, 0, rse
    size = len(steady) // count
    rates = [batch_size * size / sum(steady[i * size:(i + 1) * size]) for i in range(count)]
    return statistics.median(rates), count, statistics.stdev(rates) / statistics.fmean(rates) / count ** 0.5


def steady_steps_needed(steps_per_epoch: int, epochs: int, warmup_steps: int) -> str | None:
    """Why a run of ``epochs`` x ``steps_per_epoch`` steps cannot give a speed figure, naming what to change; None
    when it can (at least ``MIN_STEADY_STEPS`` steps after the warm-up ones)."""
    skip = max(1, warmup_steps)
    steady = steps_per_epoch * epochs - skip
    if steady >= MIN_STEADY_STEPS:
        return None
    epochs_needed = -(-(MIN_STEADY_STEPS + skip) // max(1, steps_per_epoch))
    return (f"a run of {epochs} epoch(s) x {steps_per_epoch} step(s) leaves {max(0, steady)} steady step(s) after "
            f"{skip} warm-up step(s); a speed figure needs at least {MIN_STEADY_STEPS}: raise base.epochs to "
            f"{epochs_needed} (--set base.epochs={epochs_needed}), or give the training data more batches per epoch "
            "(more samples, or a smaller base.batch_size)")


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
    windowed, windows, rse = _windowed(steady, batch_size) if mean_rate else (None, 0, None)
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
        throughput_rse=rse,
    )
