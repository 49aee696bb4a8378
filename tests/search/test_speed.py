"""The search's speed floor (boosttune.search.speed): which trial stops at a rung, and how its reason reads."""

from __future__ import annotations

import math
from functools import partial

import pytest

from boosttune.search.speed import TOO_SLOW, SpeedFloor, stopped_for_speed
from boosttune.stats.handoff import MIN_P_ACCEPTABLE, slowest_handed_on

FLOOR = SpeedFloor(partial(slowest_handed_on, 0.067), MIN_P_ACCEPTABLE)  # 0.82x with one O0 run


def verdict(speedup: float, *, preset: str | None = None, complete: bool = True, rse: float | None = None,
            o0: tuple[float, ...] = (1000.0,), last_rung: bool = True) -> str | None:
    reference = math.exp(sum(map(math.log, o0)) / len(o0))
    return FLOOR.verdict(preset=preset, throughput=speedup * reference, rse=rse, epoch=1, o0_speeds=o0,
                         complete=complete, last_rung=last_rung)


def test_a_searched_trial_below_the_handoffs_bar_stops_and_one_above_goes_on():
    reason = verdict(0.80)
    assert stopped_for_speed(reason) and reason.startswith(f"{TOO_SLOW}: 0.80x O0 at epoch 1, below the 0.82x")
    assert "10% likely faster" in reason and "would never race it" in reason
    assert verdict(0.83) is None and verdict(1.3) is None


def test_a_searched_trial_is_judged_at_the_last_rung_once_the_reference_is_complete_and_a_preset_at_once():
    """Before the search's own O0 run is in, the reference the table will use is unknown; before the last rung, a
    trial's speed has not settled (GradientFreeze speeds up as it freezes): no searched trial stops. A preset is
    raced whatever the search saw, so it stops on what is known, at any rung; O0 never stops."""
    assert verdict(0.5, complete=False) is None and verdict(0.5, last_rung=False) is None
    for complete, last_rung in ((False, False), (True, True)):
        reason = verdict(0.5, preset="O1-equivalent", complete=complete, last_rung=last_rung)
        assert stopped_for_speed(reason) and "races MindSpore's preset all the same" in reason
    assert verdict(0.1, preset="O0") is None


def test_the_reference_is_o0s_runs_pooled_and_their_spread_and_the_readings_noise_lower_the_bar():
    # O0 at 1000 and 1440 samples/s: the reference is their geometric mean (1200), and their spread (a log-sd of
    # 0.26) makes the handoff, and the floor, more lenient: 0.80x goes on there.
    assert verdict(0.80, o0=(1000.0, 1440.0)) is None
    assert stopped_for_speed(FLOOR.verdict(preset=None, throughput=0.5 * 1200, rse=None, epoch=2,
                                           o0_speeds=(1000.0, 1440.0), complete=True, last_rung=True))
    assert verdict(0.81) is not None and verdict(0.81, rse=0.08) is None  # one epoch's steps read noisily
    assert verdict(0.81, rse=float("nan")) is not None


@pytest.mark.parametrize("throughput, o0", [(None, (1000.0,)), (float("nan"), (1000.0,)), (100.0, ()),
                                            (100.0, (0.0, float("nan")))])
def test_a_missing_figure_stops_nothing(throughput, o0):
    assert FLOOR.verdict(preset=None, throughput=throughput, rse=None, epoch=1, o0_speeds=o0, complete=True,
                         last_rung=True) is None


def test_only_the_floors_reason_reads_as_a_stop_for_speed():
    assert not stopped_for_speed("stopped after epoch 1 by the multi-objective scheduler: slower and worse")
    assert not stopped_for_speed(None) and not stopped_for_speed(float("nan"))
