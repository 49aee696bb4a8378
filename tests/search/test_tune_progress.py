"""Progress in the user's terms: what Tune's table shows for a trial, and the per-trial lines."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ray.tune.experimental.output import _infer_user_metrics  # (what Tune's table shows)

from boosttune.objective import Objective
from boosttune.search.tune import PROGRESS_COLUMNS, _figures, progress_columns, progress_metrics

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
    assert _figures(flat) == "1800 samples/s, val_acc 0.8400"
    assert _figures(progress_metrics(WORKER_REPORT, 1500.0, 0.85)) == "1800 samples/s, 1.20x O0, val_acc 0.8400 (-1.00 pt)"


def test_tunes_table_names_a_teams_objective_as_the_team_does():
    mae = Objective("mae", higher_is_better=False, fraction=False)
    report = {**{k: v for k, v in WORKER_REPORT.items() if k != "val_acc"}, "objective_value": 0.31, "val_mae": 0.31}
    flat = progress_metrics(report, baseline_sps=1500.0, baseline_value=0.35, objective=mae)
    assert flat["objective_gain"] == pytest.approx(0.04)  # a lower MAE: better
    trial = SimpleNamespace(last_result={**flat, "training_iteration": 3, "time_total_s": 10.0})
    assert _infer_user_metrics([trial]) == list(progress_columns(mae))[:3] + ["val_mae"]
    assert _figures(flat, mae) == "1800 samples/s, 1.20x O0, val_mae 0.31 (+0.04 mae)"
