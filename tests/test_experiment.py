"""The experiment's own rules (boosttune/experiment.py): a baseline nothing can be compared against stops the
experiment before anything is searched, in one line that says what happened, where, and what to change; so do a
device MindSpore cannot train on and a relative output folder inside a Ray job."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from boosttune.errors import ConfigError
from boosttune.execution.runs import RunRecord
from boosttune.experiment import baseline_problem
from boosttune.objective import ACCURACY, Objective
from tests.helpers.team_project import boosttune, make_project

MAE = Objective("mae", higher_is_better=False, fraction=False)


def _baseline(status="completed", reason=None, losses=(1.2, 0.8, 0.6), value=0.85, sps=900.0, steady=120):
    curve = [{"epoch": i + 1, "train_loss": loss, "objective_value": value} for i, loss in enumerate(losses)]
    return RunRecord(run_id="baseline", role="baseline", status=status, recipe={}, reason=reason,
                     metrics={"objective_value": value, "throughput_sps": sps, "steady_steps": steady}, curve=curve)


def test_a_sound_baseline_has_no_problem():
    assert baseline_problem(_baseline(), ACCURACY, learning_rate=0.05, steps_per_epoch=44) is None
    assert baseline_problem(_baseline(value=0.31), MAE, learning_rate=0.05, steps_per_epoch=44) is None


def test_a_diverged_baseline_names_the_epoch_the_step_and_a_lower_learning_rate():
    """The issue's project: a non-finite loss at the third step of a 44-step epoch, at learning rate 0.05."""
    record = _baseline(status="stopped", reason="non-finite loss (inf) at step 3", losses=(math.nan,), value=0.1)
    line = baseline_problem(record, ACCURACY, learning_rate=0.05, steps_per_epoch=44)
    assert line.startswith("the O0 baseline diverged: non-finite loss (inf) at step 3 (epoch 1, step 3 of 44); "
                           "it trained at learning rate 0.05 (base.optimizer.learning_rate")
    assert "--set base.optimizer.learning_rate=0.005" in line and "\n" not in line
    later = _baseline(status="stopped", reason="non-finite loss (nan) at step 90", losses=(1.0, math.nan))
    assert "(epoch 3, step 2 of 44)" in baseline_problem(later, ACCURACY, learning_rate=0.1, steps_per_epoch=44)


def test_an_exploding_but_finite_loss_is_a_divergence_too():
    line = baseline_problem(_baseline(losses=(1.0, 3.0, 40.0)), ACCURACY, learning_rate=0.3, steps_per_epoch=10)
    assert line.startswith("the O0 baseline diverged: its training loss rose from 1 (epoch 1) to 40 (epoch 3)")
    assert "--set base.optimizer.learning_rate=0.03" in line
    assert baseline_problem(_baseline(losses=(1.0, 3.0, 9.0)), ACCURACY, learning_rate=0.3,
                            steps_per_epoch=10) is None  # below the factor: noisy, not diverged


def test_a_baseline_without_an_objective_value_or_a_speed_figure_is_refused_by_name():
    line = baseline_problem(_baseline(value=None), MAE, learning_rate=0.05, steps_per_epoch=44)
    assert line.startswith("the O0 baseline gave no value of the objective val_mae (got None) after 3 epoch(s)")
    line = baseline_problem(_baseline(sps=None, steady=0), ACCURACY, learning_rate=0.05, steps_per_epoch=1)
    assert line.startswith("the O0 baseline gave no throughput figure (0 steady steps of 1 per epoch x 3 epoch(s))")
    assert "base.epochs" in line
    failed = _baseline(status="failed", reason="TrialError: out of memory")
    assert baseline_problem(failed, ACCURACY, learning_rate=0.05, steps_per_epoch=44) == (
        "the O0 baseline failed, nothing to compare against: TrialError: out of memory")


@pytest.mark.parametrize("field, value", [("baseline_objective", None), ("baseline_objective", math.nan),
                                          ("baseline_throughput_sps", None), ("baseline_throughput_sps", 0.0)])
def test_the_search_refuses_a_missing_baseline_figure_by_name_never_a_traceback_in_a_trial(field, value):
    from boosttune.errors import TrialError
    from boosttune.search.tune import SearchSetup

    figures = {"baseline_objective": 0.85, "baseline_throughput_sps": 900.0, field: value}
    with pytest.raises(TrialError, match=f"search: the O0 baseline's {field} is {value!r}; every trial is scored"):
        SearchSetup(base={}, ctx=None, env={}, workers=1, output="/nowhere", presets={}, max_drop=1.0, target=None,
                    max_concurrent=1, **figures)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_project(tmp_path_factory.mktemp("team"))


@pytest.mark.slow
@pytest.mark.ray
def test_a_diverging_baseline_stops_tune_before_the_search_with_a_lower_learning_rate(project, tmp_path):
    """The issue's project: its baseline's loss went non-finite at step 3; the experiment went on to fail every
    trial. Now: one line naming the step, the learning rate and a lower one, exit 2, no search trial."""
    output = tmp_path / "run"
    done = boosttune(project, "tune", "experiment.yaml", "--set", "base.optimizer.learning_rate=1e8",
                     "--output", str(output), timeout=400)
    assert done.returncode == 2, (done.stdout + done.stderr)[-4000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("boosttune: error: ")]
    assert len(errors) == 1, done.stderr[-3000:]
    assert errors[0].startswith("boosttune: error: the O0 baseline diverged: non-finite loss")
    assert "(epoch 1, step" in errors[0] and "of 20)" in errors[0]
    assert "learning rate 1e+08" in errors[0] and "--set base.optimizer.learning_rate=1e+07" in errors[0]
    assert "search: starts from" not in done.stdout
    assert sorted(p.name for p in (output / "trials").iterdir()) == ["baseline.json"]


@pytest.mark.slow
@pytest.mark.ray
def test_the_issues_project_once_fixed_is_searched_confirmed_and_exported_with_no_failed_trial(project, tmp_path):
    """BatchNorm, the team's nn.Adam with two parameter groups, GradientFreeze and LessBN in the search (they
    rebuild the optimizer): every trial trains, the confirm stage runs, the recipe is exported."""
    import json

    import pandas as pd

    output = tmp_path / "run"
    done = boosttune(project, "tune", "experiment.yaml", "--set", "base.model.kwargs.optimizer=adam_groups",
                     "--set", "base.epochs=3", "--set", "search=[grad_freeze, less_bn]", "--set", "num_trials=3",
                     "--set", "confirm_seeds=2", "--set", "confirm_candidates=1", "--set", "confirm_screen=1000",
                     "--output", str(output), timeout=500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    table = pd.read_csv(output / "results.csv")
    assert (table["status"] != "failed").all(), table[["trial_id", "status"]].to_string()
    boosted = table[table["boost_config_dict_json"].fillna("").str.contains('"grad_freeze": ?true|"less_bn": ?true', regex=True)]
    assert len(boosted) >= 1, table["boost_config_dict_json"].tolist()  # the knobs that rebuild the optimizer trained
    confirm = pd.read_csv(output / "confirm.csv")
    assert len(confirm) >= 2 and (confirm["status"] != "failed").all()
    recipe = json.loads((output / "best_recipe.json").read_text())
    assert recipe["boost_level"] in ("O0", "O1", "O2")


def test_a_device_mindspore_cannot_train_on_is_refused_before_the_baseline():
    from boosttune.config.experiment import parse_experiment
    from boosttune.errors import UnsupportedError
    from boosttune.experiment import _check_device
    from boosttune.probe import Capability, ProbeReport

    reason = "Unsupported device target GPU. This process only supports one of the ['CPU']."
    report = ProbeReport(device_target="GPU", cpu="x", mindspore_version="2.10.0", boosttune_version="0", created="",
                         capabilities={"optimizer.momentum": Capability("optimizer.momentum", False, reason)})
    config = parse_experiment({"base": {"device_target": "GPU"}})
    with pytest.raises(UnsupportedError, match=r"^base.device_target: MindSpore cannot train 'momentum' on GPU on "
                                               r"node gpu-1: Unsupported device target GPU"):
        _check_device(report, config, "gpu-1")


def test_a_relative_output_is_refused_inside_a_ray_job(monkeypatch, tmp_path):
    from boosttune.experiment import _output_folder

    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps({"runtime_env": {"working_dir": "gcs://_ray_pkg.zip"}}))
    with pytest.raises(ConfigError, match=r"^--output: 'runs/x' is relative, so under `ray job submit --working-dir`"):
        _output_folder("runs/x")
    assert _output_folder(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR")
    assert _output_folder("runs/x") == Path("runs/x").resolve()
