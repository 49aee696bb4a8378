"""benchmarks/search_efficiency.py: the scheduler's stop-error figures on planted tables (the replays are the
benchmark's; tests/search/test_scheduler.py checks the figures on the committed table)."""

from __future__ import annotations

import pytest

from tests.helpers.benchmark_scripts import load_benchmark

se = load_benchmark("search_efficiency")

O0 = [0.70, 0.76, 0.80, 0.82, 0.83, 0.84, 0.845, 0.85, 0.852, 0.855]


def row(i: int, speed: float, gaps_pt: list[float], source: str = "search") -> "se.Row":
    return se.Row(row=i, source=source, label=f"r{i}", params={}, speedup=[speed] * 10,
                  val_acc=[a + g / 100 for a, g in zip(O0, gaps_pt)], train_s=[float(e + 1) for e in range(10)])


def planted() -> "se.Table":
    ref = row(0, 1.0, [0.0] * 10, source="ref")
    rows = [row(1, 1.3, [-1.0] * 10),  # fast, a point below O0 throughout: acceptable
            row(2, 1.2, [-30, -14, -10, -6, -5, -4, -3.5, -3, -2, -0.8]),  # a slow starter: acceptable
            row(3, 1.5, [-30, -28, -27, -27, -27, -27, -27, -27, -27, -27])]  # hopeless
    return se.Table(rows=rows, refs=[ref], meta={"base": {"epochs": 10}}, baseline_acc=O0[-1])


def test_acceptable_is_within_max_drop_of_o0s_final():
    assert planted().acceptable() == {1, 2}
    assert planted().acceptable(max_drop_pt=0.5) == set()


def test_directly_the_old_rule_stops_the_slow_starter_and_the_curve_rule_keeps_it():
    table = planted()
    old, new = (se.Strategy("random", True, True, True, 2.0, margin_pt=5.0, curve=c) for c in (False, True))
    assert (se.direct_stop_error(old, table, table.acceptable()).stopped,
            se.direct_stop_error(new, table, table.acceptable()).stopped) == (1, 0)


def test_replayed_stop_error_counts_each_draw_of_an_acceptable_recipe():
    replays = [se.Replay(hv=[], compute_s=[], stopped=[], drawn_rows=[1, 2, 3], stopped_rows={2, 3}),
               se.Replay(hv=[], compute_s=[], stopped=[], drawn_rows=[2, 3], stopped_rows=set())]
    error = se.replayed_stop_error(replays, {1, 2})
    assert (error.stopped, error.of) == (1, 3) and error.share == pytest.approx(1 / 3)
    assert str(error) == "33.3% (1/3)"


def test_the_speed_floor_at_the_last_rung_stops_a_recipe_that_speeds_up_late_only_if_still_slow_there(capsys):
    """Planted: a GradientFreeze-like recipe slow at epoch 1 that ends at 1.0x, one slow throughout, one that clears
    the bar only at its last epoch. At every rung the first is stopped by mistake; at the last rung (as shipped) only
    the slow one and the late one, which is the floor's own error."""
    late = row(3, 0.8, [0.0] * 10)
    late.speedup[-1] = 0.9
    rows = [se.Row(row=1, source="search", label="freeze", params={}, speedup=[0.6, 0.7, 0.8, 0.9, 1.0] + [1.0] * 5,
                   val_acc=O0, train_s=[float(e + 1) for e in range(10)]), row(2, 0.5, [0.0] * 10), late]
    shipped, every = se.speed_floor_replay(rows, 10), se.speed_floor_replay(rows, 10, at=(1, 2, 4, 8))
    assert shipped.bar == pytest.approx(0.822, abs=0.001)
    assert shipped.stopped == {2: 8, 3: 8} and every.stopped == {1: 1, 2: 1, 3: 1}
    assert (shipped.false_stops.stopped, shipped.false_stops.of) == (1, 2)  # the late one: cleared, stopped
    assert (every.false_stops.stopped, every.false_stops.of) == (2, 2)
    assert shipped.saved_s == pytest.approx(2 + 2) and every.saved_s == pytest.approx(9 * 3)
    assert se.main(["--floor"]) == 0  # on the committed table
    out = capsys.readouterr().out
    shipped_line = next(line for line in out.splitlines() if "as shipped" in line and "all (100)" in line)
    assert shipped_line.rstrip().endswith("met")
    assert any("every rung" in line and line.rstrip().endswith("MISSED") for line in out.splitlines())
