"""Progress in the user's terms: what Tune's table shows for a trial, and the per-trial lines."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ray.tune.experimental.output import _infer_user_metrics  # (what Tune's table shows)

from boosttune.objective import Objective
from boosttune.search.hooks import figures
from boosttune.search.tune import PROGRESS_COLUMNS, progress_columns, progress_metrics

WORKER_REPORT = {"steps": 64, "train_loss": 1.04, "first_step_s": 1.4, "compile_s": 1.4, "steady_steps": 61,
                 "throughput_sps": 1800.0, "throughput_windows": 6, "train_s": 4.3, "peak_rss_mb": 978.0,
                 "objective_value": 0.84, "val_acc": 0.84, "val_loss": 0.77, "epoch": 3, "world_rank": 0, "pid": 1, "final": False,
                 "curve": [{"epoch": 1}]}


def test_tunes_table_shows_epoch_throughput_speedup_and_accuracy():
    flat = progress_metrics(WORKER_REPORT, baseline_sps=1500.0, baseline_value=0.85)
    assert flat["speedup_vs_baseline"] == pytest.approx(1.2) and flat["objective_gain"] == pytest.approx(-1.0)
    assert flat["stage"] == "search" and "curve" not in flat  # nested values do not reach Tune
    trial = SimpleNamespace(last_result={**flat, "training_iteration": 3, "time_total_s": 10.0})
    assert _infer_user_metrics([trial]) == list(PROGRESS_COLUMNS)


def test_without_a_baseline_throughput_the_speedup_is_missing_not_invented():
    flat = progress_metrics(WORKER_REPORT, baseline_sps=None, baseline_value=None)
    assert flat["speedup_vs_baseline"] is None and flat["objective_gain"] is None
    assert figures(flat) == "1800 samples/s, val_acc 0.8400"
    assert figures(progress_metrics(WORKER_REPORT, 1500.0, 0.85)) == "1800 samples/s, 1.20x O0, val_acc 0.8400 (-1.00 pt)"


def test_tunes_table_names_a_teams_objective_as_the_team_does():
    mae = Objective("mae", higher_is_better=False, fraction=False)
    report = {**{k: v for k, v in WORKER_REPORT.items() if k != "val_acc"}, "objective_value": 0.31, "val_mae": 0.31}
    flat = progress_metrics(report, baseline_sps=1500.0, baseline_value=0.35, objective=mae)
    assert flat["objective_gain"] == pytest.approx(0.04)  # a lower MAE: better
    trial = SimpleNamespace(last_result={**flat, "training_iteration": 3, "time_total_s": 10.0})
    assert _infer_user_metrics([trial]) == list(progress_columns(mae))[:3] + ["val_mae"]
    assert figures(flat, mae) == "1800 samples/s, 1.20x O0, val_mae 0.31 (+0.04 mae)"


def test_the_multi_objective_scheduler_judges_trials_against_the_baselines_curve_in_points(tmp_path):
    """Built as the search builds it: O0's per-epoch accuracy (a fraction) reaches the scheduler in points, the
    scale of ``objective_score``; the start line says what stops a trial."""
    from boosttune.config.experiment import parse_experiment
    from boosttune.search.scheduler import MultiObjectiveASHA
    from boosttune.search.setup import SearchSetup
    from boosttune.search.tune import _scheduler, _scheduler_line, baseline_curve
    from boosttune.space import SpaceContext

    base = {"model": "lenet5", "epochs": 4, "batch_size": 32, "data": {"name": "digits"}}
    config = parse_experiment({"name": "curve", "base": base, "num_trials": 2, "confirm_seeds": 0})
    setup = SearchSetup(base=base, ctx=SpaceContext(total_steps=40, param_count=10, base_learning_rate=0.05), env={},
                        workers=1, output=str(tmp_path), presets={}, baseline_objective=0.84, max_drop=1.0,
                        target=None, max_concurrent=1, baseline_throughput_sps=1000.0,
                        baseline_by_epoch={1: 0.70, 2: 0.80, 3: 0.84, 4: 0.85})
    curve = baseline_curve(setup)
    assert curve.by_epoch == pytest.approx({1: 70.0, 2: 80.0, 3: 84.0, 4: 85.0})
    assert curve.final == pytest.approx(85.0) and curve.max_drop == 1.0  # the curve's last epoch, not the final eval
    assert curve.noise(4) == pytest.approx(0.5) and curve.noise(1) == pytest.approx(0.5 + 0.7 * 15.0)
    scheduler = _scheduler(config, setup, single=False)
    assert isinstance(scheduler, MultiObjectiveASHA) and scheduler.ladder.baseline == curve
    assert "judged against O0's val_acc at the same epoch" in _scheduler_line(config, setup, scheduler)
    no_curve = SearchSetup(**{**setup.__dict__, "baseline_by_epoch": {}})
    assert baseline_curve(no_curve) is None  # without O0's curve: trials compared with each other only
    assert "beaten on both speed and val_acc (by more than 5 pt" in _scheduler_line(
        config, no_curve, _scheduler(config, no_curve, single=False))
