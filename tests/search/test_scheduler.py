"""The multi-objective successive-halving rule, on made-up rung results (pure: no Ray needed)."""

import math

import pytest

from tests.helpers.benchmark_scripts import load_benchmark

from boosttune.search.scheduler import (
    BaselineCurve,
    RungLadder,
    crowding_distances,
    nondominated_fronts,
    nsga_order,
    promote,
    rungs,
)


def test_fronts_sort_points_by_dominance():
    points = [(1.0, 0.8), (2.0, 0.7), (0.5, 0.5), (1.5, 0.6), (0.4, 0.9)]
    # (1.5, 0.6) is beaten by (2.0, 0.7) only; (0.5, 0.5) by (1.5, 0.6) too, so it comes third.
    assert nondominated_fronts(points) == [[0, 1, 4], [3], [2]]


def test_equal_points_do_not_dominate_each_other():
    assert nondominated_fronts([(1.0, 0.5), (1.0, 0.5)]) == [[0, 1]]


def test_crowding_gives_the_ends_infinity_and_the_middle_its_box():
    points = [(0.0, 1.0), (1.0, 0.5), (2.0, 0.0)]
    distance = crowding_distances(points, [0, 1, 2])
    assert distance[0] == distance[2] == math.inf
    assert distance[1] == pytest.approx((2.0 - 0.0) / 2.0 + (1.0 - 0.0) / 1.0)


def test_nsga_order_puts_fronts_first_and_sparse_points_before_crowded_ones():
    points = [(0.0, 1.0), (0.9, 0.11), (1.0, 0.1), (2.0, 0.0), (0.1, 0.1)]
    order = nsga_order(points)
    assert order[:2] == [0, 3]  # the ends of the first front
    assert order[-1] == 4  # dominated


def test_a_trial_dominated_by_the_front_stops():
    seen = [(1.0, 0.80), (1.3, 0.75), (0.9, 0.82)]
    assert not promote((0.8, 0.70), seen, reduction_factor=3)


def test_a_trial_on_the_front_goes_on_even_when_it_is_worst_on_one_objective():
    seen = [(1.0, 0.80), (1.3, 0.75), (0.9, 0.82)]
    assert promote((2.0, 0.10), seen, reduction_factor=3)  # the fastest so far
    assert promote((0.1, 0.95), seen, reduction_factor=3)  # the most accurate so far


def test_the_first_trial_at_a_rung_goes_on():
    assert promote((0.1, 0.1), [], reduction_factor=3)


def test_a_dominated_trial_goes_on_while_the_rung_keeps_few_enough():
    # Two earlier points on one front; a dominated third: ceil(3 / 2) = 2 kept, it is third -> stops.
    assert not promote((0.5, 0.5), [(1.0, 0.9), (2.0, 0.6)], reduction_factor=2)
    # One earlier point: with reduction factor 1.5, ceil(2 / 1.5) = 2 of 2 go on, dominated or not.
    assert promote((0.5, 0.5), [(1.0, 0.9)], reduction_factor=1.5)


def test_a_dominated_trial_ahead_of_others_on_later_fronts_goes_on():
    seen = [(2.0, 0.9), (0.1, 0.1), (0.2, 0.05), (0.05, 0.2), (0.01, 0.01)]
    # Dominated by (2.0, 0.9) only: second front, ahead of four others -> in the best ceil(6 / 3) = 2.
    assert promote((1.0, 0.5), seen, reduction_factor=3)


def test_non_finite_objectives_count_as_worst():
    assert not promote((math.nan, 0.9), [(1.0, 0.5), (0.5, 0.95)], reduction_factor=3)
    assert not promote((1.0, None), [(1.0, 0.5), (0.5, 0.95)], reduction_factor=3)


def test_reduction_factor_must_exceed_one():
    with pytest.raises(ValueError, match="reduction_factor"):
        promote((1, 1), [], reduction_factor=1)


def test_rungs_grow_geometrically_below_max_t():
    assert rungs(1, 3, 10) == [1, 3, 9]
    assert rungs(1, 2, 10) == [1, 2, 4, 8]
    assert rungs(2, 3, 10) == [2, 6]
    assert rungs(1, 3, 1) == []
    with pytest.raises(ValueError, match="grace_period"):
        rungs(0, 3, 10)


def test_ladder_records_each_trial_once_per_rung_and_remembers_where_it_stopped():
    ladder = RungLadder(grace_period=1, reduction_factor=3, max_t=10)
    assert ladder.report("a", 1, (1.0, 0.8))
    assert ladder.report("b", 1, (1.5, 0.7))
    assert not ladder.report("c", 1, (0.5, 0.6))  # beaten on both by a and b
    assert ladder.stopped_at == {"c": 1}
    assert not ladder.report("c", 2, (9.0, 0.99))  # stopped stays stopped
    assert ladder.report("a", 2, (1.0, 0.85))  # no new rung at epoch 2
    assert ladder.report("a", 3, (1.0, 0.86))
    assert set(ladder.recorded[1]) == {"a", "b", "c"} and set(ladder.recorded[3]) == {"a"}


def test_ladder_records_a_late_report_at_every_rung_it_passed():
    ladder = RungLadder(grace_period=1, reduction_factor=3, max_t=10)
    assert ladder.report("a", 3, (1.0, 0.8))  # its first report at epoch 3: recorded at rungs 1 and 3
    assert set(ladder.recorded[1]) == {"a"} and set(ladder.recorded[3]) == {"a"}


def test_without_keep_front_only_the_best_share_goes_on():
    seen = [(1.0, 0.80), (1.3, 0.75), (0.9, 0.82)]
    # On the front (nothing dominates it) but, by crowding, not among the best ceil(4 / 3) = 2.
    assert promote((1.1, 0.79), seen, reduction_factor=3)
    assert not promote((1.1, 0.79), seen, reduction_factor=3, keep_front=False)


def test_a_lead_within_the_margin_does_not_count_and_the_margin_shrinks_at_later_rungs():
    seen = [(1.3, 0.72)]
    # Slower and 4.7 points less accurate at epoch 1: beaten, unless leads under 5 points are noise there.
    assert not promote((1.2, 0.673), seen, reduction_factor=3)
    assert promote((1.2, 0.673), seen, reduction_factor=3, margin=(0.0, 0.05))
    ladder = RungLadder(grace_period=1, reduction_factor=2, max_t=10, margin=(0.0, 0.04))
    assert ladder.margin_at(1) == (0.0, 0.04) and ladder.margin_at(4) == (0.0, 0.01)
    assert ladder.report("a", 1, (1.3, 0.72)) and ladder.report("b", 1, (1.2, 0.69))  # 3 pt: within 4
    assert ladder.report("a", 4, (1.3, 0.85))  # recorded at rungs 2 and 4
    assert not ladder.report("b", 4, (1.2, 0.82))  # 3 pt behind: more than the 4 / 2 points of rung 2
    assert ladder.stopped_at == {"b": 2}


# ---- against the O0 baseline's curve ------------------------------------------------------------------------------

O0 = {1: 70.0, 2: 76.0, 3: 79.0, 4: 82.0, 5: 83.0, 6: 84.0, 7: 84.5, 8: 85.0, 9: 85.3, 10: 85.5}  # points
NOISE = {1: 10.0, 2: 5.0, 4: 2.0, 8: 0.5}  # an early reading's noise at each rung, as if measured


def curve(**overrides) -> BaselineCurve:
    settings = {"max_drop": 1.0, "noise_floor": 0.5, "noise_by_epoch": NOISE, **overrides}
    return BaselineCurve(O0, O0[10], **settings)


def run(ladder: RungLadder, trial: str, speed: float, gaps: dict[int, float]) -> int:
    """Report a trial's epochs (its gap to O0 at each, in points) until it stops; the epochs it trained."""
    for epoch in range(1, 11):
        if not ladder.report(trial, epoch, (speed, O0[epoch] + gaps.get(epoch, gaps[max(e for e in gaps if e <= epoch)]))):
            return epoch
    return 10


def test_the_noise_model_grows_with_the_training_o0_has_left_and_a_measured_noise_replaces_it():
    model = BaselineCurve(O0, O0[10], max_drop=1.0, noise_floor=0.5, noise_slope=0.7, z=3.0)
    assert model.noise(10) == pytest.approx(0.5)
    assert model.noise(2) == pytest.approx(0.5 + 0.7 * 9.5)
    assert model.allowed(2) == pytest.approx(1.0 + 3.0 * (0.5 + 0.7 * 9.5))
    assert curve().noise(4) == 2.0 and curve().allowed(4) == pytest.approx(7.0)
    assert curve().beaten_by(8) == pytest.approx(1.0 + 3.0 * math.sqrt(2) * 0.5)


def test_verdicts_within_closing_behind_hopeless_and_unknown():
    judge = curve()  # allowed: 31 points at epoch 1, 16 at 2, 7 at 4, 2.5 at 8
    assert judge.verdict(O0[2] - 15.0, 2, previous=(1, O0[1] - 40.0)) == "within"
    assert judge.verdict(O0[1] - 40.0, 1) == "behind"  # one reading: no trend yet
    assert judge.verdict(O0[4] - 10.0, 4, previous=(2, O0[2] - 20.0)) == "closing"  # half the gap made up
    assert judge.verdict(O0[4] - 11.0, 4, previous=(2, O0[2] - 20.0)) == "hopeless"  # less than half
    assert judge.verdict(O0[4] - 30.0, 4, previous=(2, O0[2] - 25.0)) == "hopeless"  # falling further behind
    assert judge.verdict(math.nan, 2, previous=(1, O0[1])) == "hopeless"  # diverged
    assert judge.verdict(80.0, 11) == "unknown"  # beyond O0's curve: the old rule decides


@pytest.mark.parametrize("field, value", [("max_drop", -1.0), ("noise_floor", math.nan), ("z", -0.1),
                                          ("closing", 0.0), ("closing", 1.5)])
def test_a_bad_baseline_setting_is_refused_by_name(field, value):
    with pytest.raises(ValueError, match=f"BaselineCurve.{field}"):
        curve(**{field: value})


def test_a_slow_starter_whose_gap_closes_is_kept_where_the_old_rule_stopped_it():
    # Like GradientFreeze: 30 points behind at epoch 1, 3 behind at epoch 8 (within 1 point at the end), while a
    # faster recipe sits a point below O0 from the first epoch.
    slow_starter = {1: -30.0, 2: -14.0, 4: -6.0, 8: -3.0, 10: -0.8}
    old = RungLadder(grace_period=1, reduction_factor=2, max_t=10, margin=(0.0, 5.0))
    new = RungLadder(grace_period=1, reduction_factor=2, max_t=10, margin=(0.0, 5.0), baseline=curve())
    for ladder in (old, new):
        assert run(ladder, "fast", 1.3, {1: -1.0}) == 10
    assert run(old, "slow starter", 1.2, slow_starter) == 1
    assert run(new, "slow starter", 1.2, slow_starter) == 10  # epoch 8: 3 > 2.5 behind, but half of 6 made up


def test_one_epochs_dip_does_not_stop_a_trial():
    new = RungLadder(grace_period=1, reduction_factor=2, max_t=10, baseline=curve())
    assert run(new, "dips", 1.0, {1: -10.0, 2: -50.0, 3: -5.0, 4: -2.0}) == 10  # judged at epoch 2 by epoch 1's -10


def test_a_hopeless_trial_stops_even_when_it_is_the_fastest():
    hopeless = {1: -30.0, 2: -28.0}  # 28 behind at epoch 2 (16 allowed) and hardly closing
    old = RungLadder(grace_period=1, reduction_factor=2, max_t=10, margin=(0.0, 5.0))
    new = RungLadder(grace_period=1, reduction_factor=2, max_t=10, margin=(0.0, 5.0), baseline=curve())
    for ladder in (old, new):
        assert run(ladder, "O0-like", 1.0, {1: 0.0}) == 10
    assert run(old, "hopeless", 2.0, hopeless) == 10  # on the front: the fastest
    assert run(new, "hopeless", 2.0, hopeless) == 2 and new.stopped_at["hopeless"] == 2


def test_a_trial_within_reach_stops_only_when_beaten_on_both_by_more_than_the_noise():
    new = RungLadder(grace_period=1, reduction_factor=2, max_t=10, baseline=curve())
    assert run(new, "leader", 1.5, {1: 1.5}) == 10
    # 2 points behind at epoch 8 (within 2.5), 3.5 behind the faster leader: more than 1 + 3 * sqrt(2) * 0.5.
    assert run(new, "beaten", 1.0, {1: -2.0}) == 8
    assert run(new, "close", 1.0, {1: -0.5}) == 10  # 2 points behind the leader: noise


search_efficiency = load_benchmark("search_efficiency")


def test_on_the_committed_table_the_curve_rule_stops_under_5_percent_of_acceptable_recipes_and_the_old_rule_more():
    """Each recipe acceptable at the last epoch (within MAX_DROP of O0's final), judged at each rung against every
    other recipe of benchmarks/data/search_table and O0, with the search's settings (reduction factor 2, grace 1,
    margin 5 points)."""
    table = search_efficiency.load_table()
    acceptable = table.acceptable()
    assert len(acceptable) >= 20  # enough recipes for a share
    errors = {}
    for rule in (False, True):
        strategy = search_efficiency.Strategy("random", True, True, True, reduction_factor=2, grace_period=1,
                                              margin_pt=5.0, curve=rule)
        errors[rule] = search_efficiency.direct_stop_error(strategy, table, acceptable)
    assert errors[True].share < search_efficiency.STOP_ERROR_TARGET
    assert errors[False].share >= search_efficiency.STOP_ERROR_TARGET  # the old rule misses the target there


def test_in_replayed_searches_of_the_committed_table_the_curve_rule_stops_under_5_percent_of_acceptable_recipes():
    """The benchmark's replay (the rung rule fed trials in the sampler's order), random search at the main job's
    budget continued to 2N, a few sampler seeds: the acceptable recipes drawn, and how many the scheduler stopped."""
    table = search_efficiency.load_table()
    ctx, base, slow = search_efficiency.space_of(table)
    errors = {}
    for rule in (False, True):
        replays = [search_efficiency.replay(search_efficiency.Strategy("random", informed, pruned, True, 2.0,
                                                                       margin_pt=5.0, curve=rule),
                                            table, ctx, base, 8, 16, seed, slow)
                   for informed, pruned in ((False, True), (True, False)) for seed in range(3)]
        errors[rule] = search_efficiency.replayed_stop_error(replays, table.acceptable())
    assert errors[True].of >= 20 and errors[True].share < search_efficiency.STOP_ERROR_TARGET
    assert errors[False].share >= search_efficiency.STOP_ERROR_TARGET
