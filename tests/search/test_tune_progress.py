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


def test_the_speed_floor_stops_a_slow_preset_at_once_and_a_slow_searched_trial_once_o0s_second_run_is_in(tmp_path):
    """The scheduler as the search builds it, with the speed floor the experiment hands it: results as Tune passes
    them, the records as the search keeps them, the progress line and the start line."""
    from functools import partial

    from boosttune.config.experiment import parse_experiment
    from boosttune.execution.runs import RunRecord
    from boosttune.search.hooks import Progress
    from boosttune.search.setup import SearchSetup
    from boosttune.search.speed import SpeedFloor, stopped_for_speed
    from boosttune.search.tune import REMEASURED, _floor_line, _scheduler, o0_speeds, search_throughput_reference
    from boosttune.space import SpaceContext, equivalence_key, preset_params, recipe_from_params
    from boosttune.stats.handoff import MIN_P_ACCEPTABLE, slowest_handed_on

    base = {"model": "lenet5", "epochs": 4, "batch_size": 32, "data": {"name": "digits"}}
    config = parse_experiment({"name": "floor", "base": base, "num_trials": 4})
    ctx = SpaceContext(total_steps=40, param_count=10, base_learning_rate=0.05)
    o0 = preset_params("O0", ctx, base)
    slow = {**o0, "amp_level": "O2"}
    searched = {**o0, "optimizer.learning_rate": 0.02}
    key = lambda params: equivalence_key(recipe_from_params(params, ctx, base))  # noqa: E731
    setup = SearchSetup(base=base, ctx=ctx, env={}, workers=1, output=str(tmp_path),
                        presets={key(o0): "O0", key(slow): "O2-equivalent"}, baseline_objective=0.84, max_drop=1.0,
                        target=None, max_concurrent=1, baseline_throughput_sps=1000.0, remeasure_baseline=True,
                        speed_floor=SpeedFloor(partial(slowest_handed_on, 0.067), MIN_P_ACCEPTABLE))
    scheduler = _scheduler(config, setup, single=False)
    assert "below 0.82x O0 is too slow" in _floor_line(setup, scheduler)
    assert "a preset stops at epoch 1" in _floor_line(setup, scheduler)
    assert "a searched trial at epoch 2, where its speed has settled, and once the search's own O0 run is in" \
        in _floor_line(setup, scheduler)  # 4 epochs: rungs at 1 and 2
    trial = lambda tid, params: SimpleNamespace(trial_id=tid, config=params)  # noqa: E731
    result = lambda sps, epoch=1: {"epoch": epoch, "throughput_sps": sps, "objective_score": 80.0,  # noqa: E731
                                   "throughput_rse": 0.01, "timestamp": 10.0, "time_total_s": 2.0}
    # Before O0's second run: the preset at 0.5x stops, the searched trial at 0.5x goes on (the reference may move)
    assert scheduler.on_trial_result(None, trial("p", slow), result(500.0)) == scheduler.STOP
    assert scheduler.on_trial_result(None, trial("s", searched), result(500.0)) == scheduler.CONTINUE
    assert search_throughput_reference(setup) == 1000.0  # the baseline stage's, until the search's own O0 is in
    # O0 ran again in the search at 800 samples/s: the reference is complete and is that run alone (timed as the
    # trials are); the searched trial stops at its next rung
    setup.first_of_key.put(RunRecord(run_id="o0", role="search", recipe=base, label="O0", status="completed",
                                     metrics={"throughput_sps": 800.0}), name=f"{key(o0)}{REMEASURED}")
    assert o0_speeds(setup) == ([800.0], True) and search_throughput_reference(setup) == 800.0
    assert scheduler.on_trial_result(None, trial("e", searched), result(500.0)) == scheduler.CONTINUE  # not the last
    assert scheduler.on_trial_result(None, trial("s", searched), result(500.0, epoch=2)) == scheduler.STOP
    assert scheduler.on_trial_result(None, trial("f", searched), result(1200.0, epoch=2)) == scheduler.CONTINUE
    assert scheduler.on_trial_result(None, trial("o", o0), result(100.0)) == scheduler.CONTINUE  # O0: never
    stopped = {r.run_id: r for r in setup.records}
    assert set(stopped) == {"p", "s"} and all(r.status == "stopped" for r in stopped.values())
    assert stopped["p"].rung == 1 and stopped["s"].rung == 2 and all(map(stopped_for_speed, (r.reason for r in stopped.values())))
    assert "0.63x O0 at epoch 2" in stopped["s"].reason and "preset all the same" in stopped["p"].reason
    lines: list[str] = []
    Progress(setup, 4, lines.append).on_trial_complete(0, [], SimpleNamespace(
        trial_id="s", config=searched, last_result={**result(500.0, epoch=2), "speedup_vs_baseline": 0.5}))
    assert "stopped at epoch 2/4, too slow to be raced (the speed floor)" in lines[0]
