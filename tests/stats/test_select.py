"""Pareto front and best-within-max_drop selection on hand-made trial records."""

from __future__ import annotations

import numpy as np
import pytest

from boosttune.errors import ConfigError, DataError
from boosttune.tables.results import build_results_table
from boosttune.stats.margin import Margin, Tolerance
from boosttune.stats.select import non_dominated, pareto_front, select_best
from boosttune.objective import ACCURACY, Objective
from tests.helpers.records import RAY_VERSION, make_record, sample_records


def test_pareto_front_members_sorted_by_speedup(table):
    front = pareto_front(table)
    # t_00001 (1.28x, 0.770) is beaten by t_00003 (1.40x, 0.780); the failed t_00004 never competes.
    assert list(front["trial_id"]) == ["t_00005", "t_00000", "t_00002", "t_00003"]
    assert list(front["speedup_vs_baseline"]) == pytest.approx([0.9, 1.0, 1.2, 1.4])


def test_pareto_front_keeps_ties_and_ignores_stopped_trials(table):
    records = sample_records() + [
        make_record("t_00006", sps=600.0, acc=0.797),  # same point as t_00002
        make_record("t_00007", "stopped", sps=900.0, acc=0.9, reason="non-finite loss"),
    ]
    front = pareto_front(build_results_table(records, ray_version=RAY_VERSION))
    assert {"t_00002", "t_00006"} <= set(front["trial_id"]) and "t_00007" not in set(front["trial_id"])


def test_non_dominated_mask():
    x = np.array([1.0, 2.0, 2.0, 0.5, 2.0])
    y = np.array([0.9, 0.8, 0.8, 0.95, 0.7])
    assert list(non_dominated(x, y)) == [True, True, True, True, False]


def test_pareto_front_is_empty_without_a_baseline():
    records = sample_records()
    records[0] = {**records[0], "status": "failed", "reason": "boom", "metrics": {}}
    assert pareto_front(build_results_table(records, ray_version=RAY_VERSION)).empty


def test_select_fastest_within_max_drop(table):
    selection = select_best(table, Margin(ACCURACY, 0.5))
    assert selection.row["trial_id"] == "t_00002" and not selection.fell_back_to_baseline
    assert selection.max_drop == 0.5
    assert selection.reason.startswith("trial t_00002 is the fastest within 0.5 pt")
    assert "1.200x" in selection.reason and "-0.30 pt" in selection.reason


def test_select_includes_a_trial_exactly_at_max_drop(table):
    # t_00003 is 0.780 vs 0.800: -2.0 pt up to float rounding
    assert select_best(table, Margin(ACCURACY, 2.0)).row["trial_id"] == "t_00003"
    assert select_best(table, Margin(ACCURACY, 1.99)).row["trial_id"] == "t_00002"


def test_select_falls_back_to_the_baseline(table):
    selection = select_best(table, Margin(ACCURACY, 0.2))
    assert selection.row["trial_id"] == "t_00000" and selection.fell_back_to_baseline
    assert "3 faster trial(s) lost more than 0.2 pt" in selection.reason
    assert selection.reason.endswith("falling back to the baseline (trial t_00000)")


def test_zero_max_drop_is_allowed(table):
    assert select_best(table, Margin(ACCURACY, 0)).fell_back_to_baseline


@pytest.mark.parametrize("max_drop", [-0.1, float("nan"), "1"])
def test_bad_max_drop_is_config_error(max_drop):
    with pytest.raises(ConfigError, match="max_drop: .* is invalid; allowed: a finite number >= 0"):
        Margin(ACCURACY, max_drop)


def test_no_finished_baseline_is_data_error():
    records = sample_records()
    records[0] = {**records[0], "status": "failed", "reason": "boom", "metrics": {}}
    with pytest.raises(DataError, match="no finished O0 baseline"):
        select_best(build_results_table(records, ray_version=RAY_VERSION), Margin(ACCURACY, 1.0))


MAE = Objective("mae", higher_is_better=False, fraction=False)


def test_a_tolerance_is_its_value_or_default_points_for_a_fraction_objective(table):
    assert Tolerance(ACCURACY, 0.5, 1.0).at().value == Tolerance(ACCURACY, 0.5, 1.0).on(table).value == 0.5
    assert Tolerance(ACCURACY, None, 1.0).at().value == Tolerance(ACCURACY, None, 1.0).on(table).value == 1.0
    assert Tolerance(MAE, 0.02, 1.0).on(table).value == 0.02  # given: in the objective's own units


def test_a_tolerance_left_unset_on_another_objective_is_percent_of_the_tables_own_baseline(table):
    assert Tolerance(MAE, None, 10.0).at(0.4).value == pytest.approx(0.04)
    assert Tolerance(MAE, None, 10.0).on(table).value == pytest.approx(0.08)  # 10% of the baseline's 0.800
    paired = table.copy()  # a confirm table: one finished baseline run per paired seed, the mean taken
    paired.loc[paired["trial_id"] == "t_00001", "is_baseline"] = True
    assert Tolerance(MAE, None, 10.0).on(paired).value == pytest.approx(0.0785)  # 10% of (0.800 + 0.770) / 2
    assert Tolerance(MAE, None, 10.0).on(table.iloc[1:]).value == 0.0  # no baseline: nothing allowed


def test_a_tolerance_fixed_at_the_first_baseline_is_one_number_for_every_later_table(table):
    """Resolved once where the run starts (the baseline stage's value): the search's table and the confirm stage's
    paired baselines, with another mean, then read the same number."""
    fixed = Tolerance(MAE, None, 10.0).at(0.5)
    assert fixed.value == pytest.approx(0.05) and fixed.objective == MAE
    paired = table.copy()
    paired.loc[paired["trial_id"] == "t_00001", "is_baseline"] = True  # a baseline mean of 0.785, not 0.5
    assert Tolerance(MAE, None, 10.0).on(paired).value != pytest.approx(fixed.value)  # resolved again: another number
    assert select_best(table, fixed).max_drop == select_best(paired, fixed).max_drop == pytest.approx(0.05)
    assert Tolerance(ACCURACY, None, 1.0).at(0.9).value == 1.0  # points for a fraction: no baseline read


def test_a_margin_on_a_table_takes_the_tables_objective(table):
    assert Margin.on(table, None, 1.0) == Tolerance(ACCURACY, None, 1.0).on(table) == Margin(ACCURACY, 1.0)
    assert Margin.on(table, 2.0, 1.0) == Margin(ACCURACY, 2.0)
    assert select_best(table, Margin.on(table, 2.0, 1.0)).row["trial_id"] == "t_00003"  # as max_drop=2.0
    with pytest.raises(ConfigError, match="max_drop: -0.1 is invalid"):
        Margin.on(table, -0.1, 1.0)
