"""The search's speed floor: a trial too slow for the confirm stage to race stops at a rung (issue 62, item 4).

Below :func:`boosttune.stats.handoff.slowest_handed_on` a trial is less than ``MIN_P_ACCEPTABLE`` likely faster than
O0, so the handoff never races it. A preset stops at its first rung (the confirm stage races MindSpore's presets on
every run, on its own runs); a searched trial only at the last rung, once O0's pooled runs are all in (earlier, a
GradientFreeze recipe still speeds up as it freezes); O0 never. Ray Tune's schedulers stop by rank or dominance, none
by a bar another stage sets, so this is our own; the bar's statistics stay with the handoff, handed in as
``slowest``. Why and what was measured: docs/design/early-stopping.md#the-speed-floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from boosttune.tables.confirm_runs import BASELINE_NAME

__all__ = ["TOO_SLOW", "SpeedFloor", "stopped_for_speed"]

# How a stop for speed reads in a run record's reason (and the results table's): the handoff finds it by this.
TOO_SLOW = "too slow to be raced"


def stopped_for_speed(reason: object) -> bool:
    """Whether a stopped run's ``reason`` is the speed floor's (not the rung scheduler's)."""
    return isinstance(reason, str) and reason.startswith(TOO_SLOW)


@dataclass(frozen=True)
class SpeedFloor:
    """The slowest speed-up a trial may show at a rung and still be raced by the confirm stage.

    ``slowest(o0_speeds, own_sd)``: that speed-up, given O0's runs so far and the reading's own log sd
    (:func:`boosttune.stats.handoff.slowest_handed_on` with the device's noise, bound by the experiment);
    ``min_p``: the handoff's bar, for the wording.
    """

    slowest: Callable[[Sequence[float], float], float]
    min_p: float

    def verdict(self, *, preset: str | None, throughput: float | None, rse: float | None, epoch: int,
                o0_speeds: Sequence[float], complete: bool, last_rung: bool) -> str | None:
        """The reason a trial stops at ``epoch``; None when it goes on.

        ``throughput``: its samples per second at the rung (steady-state steps so far); ``rse``: that figure's
        relative standard error (None: not measured); ``o0_speeds``: O0's runs known now; ``complete``: whether
        they are every run the results table will pool; ``last_rung``: whether ``epoch`` is the search's last rung
        (a searched trial is judged there only).
        """
        speeds = [float(v) for v in o0_speeds if v is not None and math.isfinite(v) and v > 0]
        if preset == BASELINE_NAME or not speeds or throughput is None or not math.isfinite(throughput):
            return None
        if preset is None and not (complete and last_rung):
            return None
        reference = math.exp(sum(math.log(v) for v in speeds) / len(speeds))
        own = float(rse) if rse is not None and math.isfinite(rse) and rse > 0 else 0.0
        bar = self.slowest(speeds, own)
        speedup = throughput / reference
        if speedup >= bar:
            return None
        raced = ("the confirm stage races MindSpore's preset all the same and gives it its verdict from its own runs"
                 if preset is not None else "the confirm stage would never race it")
        return (f"{TOO_SLOW}: {speedup:.2f}x O0 at epoch {epoch}, below the {bar:.2f}x a trial needs to be "
                f"{100 * self.min_p:.0f}% likely faster with the search's noise; {raced}")
