"""The search's start points (boosttune/search/start_points.py): O0 and the presets as this device runs them, then the
informed variations, up to half the trial budget."""

from __future__ import annotations

from types import SimpleNamespace

from boosttune.search.start_points import start_points
from tests.helpers.space import BASE
from tests.helpers.space import cpu_context as _ctx


def test_start_points_are_the_presets_then_informed_variations_up_to_half_the_budget():
    def config(num_trials, informed=True, remeasure=False):
        return SimpleNamespace(num_trials=num_trials, informed_start=informed, workers_per_trial=1,
                               remeasure_baseline=remeasure)

    ctx = _ctx()
    start = start_points(None, ctx, BASE, config(8))
    assert start.labels_in_order == ["O0", "O1", "grad_freeze p=0.5 on 2 groups", "grad_freeze p=0.7 on 2 groups"]
    assert len(start.points) == 4 and not start.outside and set(start.presets.values()) == {"O0", "O1"}
    # Re-measured in the search, O0 trains first of the start points: every later trial reads its speed against it.
    again = start_points(None, ctx, BASE, config(8, remeasure=True))
    assert again.labels_in_order == start.labels_in_order and again.points == start.points
    # O2 with one rank is O1 (AdaSum needs 16): not trained apart, and the report says why.
    assert list(start.same_as) == ["O2"] and start.same_as["O2"].startswith("trains the same as O1 on this device")
    assert start_points(None, ctx, BASE, config(8, informed=False)).labels_in_order == ["O0", "O1"]
    assert len(start_points(None, ctx, BASE, config(20)).labels_in_order) == 2 + 6  # every informed point
    slow = start_points(None, _ctx(slow=frozenset({"boost.less_bn"})), BASE, config(8))
    # The preset still trains (outside the searched space); informed points with LessBN are not offered.
    assert slow.outside_labels == ["O1"] and len(slow.outside) == 1
    assert "less_bn" not in slow.labels_in_order and len(slow.labels_in_order) == 4


def test_the_one_informed_point_a_small_budget_leaves_is_the_one_measured_fastest_on_the_teams_network():
    config = SimpleNamespace(num_trials=6, informed_start=True, workers_per_trial=1, remeasure_baseline=False)
    ctx = _ctx()
    assert start_points(None, ctx, BASE, config).labels_in_order == ["O0", "O1", "grad_freeze p=0.5 on 2 groups"]
    ranked = start_points(None, ctx, BASE, config, {"boost.less_bn": 1.25, "boost.grad_freeze": 1.05})
    assert ranked.labels_in_order == ["O0", "O1", "less_bn"]
