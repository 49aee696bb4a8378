"""The multi-objective successive-halving rule, on made-up rung results (pure: no Ray needed)."""

import math

import pytest

from boosttune.search.scheduler import (
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
