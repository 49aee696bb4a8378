"""Whether an answer holds at the planned job: planted measurements, each outcome and each agreement."""

from __future__ import annotations

import math

import numpy as np
import pytest

from boosttune.objective import ACCURACY, Objective
from boosttune.stats.paired import paired_delta, ratio_interval
from boosttune.stats.holds import HOLDS, NOT_HELD, UNKNOWN, JobFigures, Verification, judge_verification

PREDICTED = JobFigures(1.22, 1.17, 1.27, -0.50, -0.80, -0.20, seeds=7, planned_epochs=20)


def figures(speedup, low, high, gain, gain_low, gain_high, seeds=2):
    return JobFigures(speedup, low, high, gain, gain_low, gain_high, seeds=seeds, planned_epochs=20)


def judge(measured, answer="grad_freeze p=0.5", recipe="grad_freeze p=0.5", predicted=PREDICTED, objective=ACCURACY):
    return judge_verification(answer, recipe, predicted, measured, max_drop=1.0, planned_epochs=20,
                              objective=objective)


def test_a_recipe_that_is_as_fast_at_the_planned_job_holds_and_the_prediction_agrees():
    verification = judge(figures(1.20, 1.12, 1.29, -0.40, -0.90, +0.10))
    assert verification.outcome == HOLDS and verification.shown
    assert verification.speed_agrees is True and verification.gain_agrees is True
    assert verification.line.startswith("holds: grad_freeze p=0.5 at the 20-epoch job: 1.20x per job [1.12, 1.29]")


def test_two_seeds_that_agree_but_cannot_show_it_say_so():
    verification = judge(figures(1.21, 0.95, 1.55, -0.30, -2.50, +1.90))
    assert verification.outcome == HOLDS and not verification.shown
    assert verification.line.endswith("(2 paired seed(s) cannot show it; more (--seeds) would tell)")
    named = judge_verification("r", "r", PREDICTED, figures(1.21, 0.95, 1.55, -0.30, -2.50, +1.90), max_drop=1.0,
                               planned_epochs=20, objective=ACCURACY, seeds_to_show=6)
    assert named.line.endswith("(2 paired seed(s) cannot show it; about 6 would (--seeds 6))")


@pytest.mark.parametrize("measured, why", [
    (figures(1.02, 0.99, 1.04, -0.2, -0.6, 0.2), "a tie or slower"),  # under the 5% tie
    (figures(0.90, 0.85, 0.95, -0.2, -0.6, 0.2), "a tie or slower"),
    (figures(1.25, 1.20, 1.30, -1.8, -2.4, -1.2), "beyond the margin of 1 pt"),  # accuracy lost at the long job
])
def test_an_answer_that_is_slower_or_less_accurate_at_the_planned_job_does_not_hold(measured, why):
    verification = judge(measured)
    assert verification.outcome == NOT_HELD
    assert verification.line.startswith(f"does not hold: grad_freeze p=0.5 at the 20-epoch job is {why}")
    assert verification.shown  # each interval above lies wholly on the failing side


def test_the_prediction_disagrees_when_the_measured_speed_is_more_than_5_percent_off():
    verification = judge(figures(1.40, 1.35, 1.45, -0.4, -0.9, 0.1))
    assert verification.outcome == HOLDS and verification.speed_agrees is False  # 1.22 / 1.40 - 1 = -13%
    assert judge(figures(1.28, 1.2, 1.35, -0.4, -0.9, 0.1)).speed_agrees is True  # -4.7%
    assert judge(figures(1.22, 1.2, 1.25, +0.6, +0.1, +1.1)).gain_agrees is False  # -0.5 outside [+0.1, +1.1]


def test_keep_o0_holds_when_the_dropped_recipe_does_not_qualify_at_the_planned_job():
    held = judge(figures(1.02, 0.97, 1.04, -0.1, -0.5, 0.3), answer="O0", recipe="less_bn")
    assert held.outcome == HOLDS and held.shown
    assert held.line.startswith("holds: keep O0 at the 20-epoch job; the fastest recipe the race dropped, less_bn")
    missed = judge(figures(1.30, 1.20, 1.40, -0.1, -0.5, 0.3), answer="O0", recipe="less_bn")
    assert missed.outcome == NOT_HELD and missed.line.startswith("does not hold: at the 20-epoch job, less_bn")


def test_runs_without_figures_cannot_tell():
    nan = math.nan
    verification = judge(figures(nan, nan, nan, nan, nan, nan))
    assert verification.outcome == UNKNOWN and verification.speed_agrees is None and verification.gain_agrees is None
    assert verification.line.startswith("cannot tell whether grad_freeze p=0.5 holds")
    one = judge(figures(1.14, nan, nan, -0.81, nan, nan, seeds=1))  # the other round's O0 run failed
    assert one.outcome == UNKNOWN and "1 paired seed(s) of grad_freeze p=0.5 and O0 gave a per-job figure" in one.line


def test_a_loss_objective_speaks_its_own_units():
    loss = Objective("loss", higher_is_better=False, fraction=False)
    verification = judge_verification("r", "r", PREDICTED, figures(1.2, 1.1, 1.3, -0.01, -0.03, 0.01),
                                      max_drop=0.05, planned_epochs=20, objective=loss)
    assert verification.outcome == HOLDS and "-0.01 loss" in verification.line and " pt" not in verification.line


def test_a_verification_reads_back_from_its_json():
    verification = judge(figures(1.20, math.nan, math.nan, -0.40, -0.90, +0.10))
    document = verification.to_dict()
    assert document["measured"]["speedup_low"] is None  # JSON has no NaN
    again = Verification.from_dict(document)
    assert again.outcome == verification.outcome and again.line == verification.line
    assert math.isnan(again.measured.speedup_low) and again.predicted == verification.predicted


def test_the_verdict_has_the_power_to_catch_a_planted_loss_on_five_seeds():
    """Planted at today's noise (0.067 log speed, 0.457 pt per paired seed): a recipe that keeps its 1.22x but loses
    2 pt at the long job is caught as not holding, and one that keeps both holds, in at least 95% of 5-seed draws."""
    rng = np.random.default_rng(7)

    def draw(log_speed, gain):
        speed = np.exp(log_speed + rng.normal(0, 0.067, 5))
        gains = gain + rng.normal(0, 0.457, 5)
        ratio, delta = ratio_interval(speed), paired_delta(gains, np.zeros(5))
        return figures(ratio.estimate, ratio.low, ratio.high, delta.estimate, delta.low, delta.high, 5)

    lost = [judge(draw(math.log(1.22), -2.0)).outcome for _ in range(200)]
    kept = [judge(draw(math.log(1.22), -0.3)).outcome for _ in range(200)]
    assert lost.count(NOT_HELD) / 200 >= 0.95 and kept.count(HOLDS) / 200 >= 0.95
