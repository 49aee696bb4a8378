"""A team's own model and data, tuned as a user would: the example project copied outside the repository (not
installed), its data prepared as MindRecord, ``boosttune tune experiment.yaml`` run from its folder on a local Ray
instance, the exported JSON taken home to the team's own ``Model``. And the builder's mistakes, refused in one line
before anything trains."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.example_project import BOOSTTUNE, copy_example, user_env
from tests.helpers.one_answer import disagreements

pytestmark = [pytest.mark.slow, pytest.mark.ray]


@pytest.fixture(scope="module")
def user_project(tmp_path_factory, custom_example):
    return copy_example(tmp_path_factory.mktemp("team"), custom_example)


@pytest.fixture(scope="module")
def tuned(user_project):
    """The team's ``boosttune tune``, judged by its held-out loss, with a confirm stage: runs/smoke."""
    return subprocess.run(
        [BOOSTTUNE, "tune", "experiment.yaml", "--set", "num_trials=2", "--set", "base.epochs=2",
         "--set", "confirm_seeds=3", "--set", "confirm_candidates=1", "--set", "base.model.kwargs.objective=loss",
         "--set", "max_drop=0.05", "--set", "prune_slow=false", "--set", "base.planned_epochs=3",
         "--confirm-epochs", "3", "--output", "runs/smoke"],
        cwd=user_project, env=user_env(), capture_output=True, text=True, timeout=560)


def test_a_project_outside_the_repository_is_tuned_confirmed_and_exported(user_project, tuned):
    """The team judges recipes by its held-out loss (lower is better, its own units), end to end. (The speed
    calibration on the team's network is tests/probe/test_calibrate.py's: here it would double the test's time.)"""
    import optuna
    import pandas as pd

    done = tuned
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    assert f"working_dir {user_project}" in log and "shipped to every worker" in log
    assert "model: digits_lstm:build built here as 1 rank(s)" in log  # the check, on the local instance's node
    assert "objective val_loss (lower is better)" in log
    output = user_project / "runs" / "smoke"
    records = [json.loads(p.read_text()) for p in (output / "trials").glob("*.json")]
    trained = [r for r in records if r["status"] == "completed"]
    assert len(records) == 4 and trained  # the baseline, 2 trials, and O0 closing the search (its speed reference)
    for record in trained:  # the team's metric, computed by the team's own nn.Loss on its own eval data
        assert record["recipe"]["model"] == {"entry": "digits_lstm:build",
                                             "kwargs": {"hidden": 32, "data_dir": "data", "objective": "loss"}}
        assert record["metrics"]["objective"] == "loss" and record["metrics"]["objective_higher_is_better"] is False
        assert record["metrics"]["val_loss"] == record["metrics"]["objective_value"] > 0
    confirm = [json.loads(p.read_text()) for p in (output / "confirm").glob("*.json")]
    # a race of the one candidate against the baseline, within what 3 fixed seeds cost (the race's minimum to name a
    # recipe); the team's own eval data
    assert 2 <= len(confirm) <= 6 and {r["label"] for r in confirm if r["round"] == 0} == {"O0", *(
        r["label"] for r in confirm)}
    assert all("final_eval_samples" not in r["metrics"] for r in confirm)
    # trained at the planned job (3 epochs, the search's 2): the race judges the loss where the team will train
    assert "confirm: confirm_epochs 3" in log and all(r["recipe"]["epochs"] == 3 for r in confirm)
    if "confirm: a race of" in log:  # no record of this network's noise: what the budget can take, in its units
        assert "confirm: this network's objective noise is not measured yet: the cap of " in log, log[-4000:]
        assert " loss per paired seed; the race measures it" in log
    assert "Every run trained the planned job's 3 epochs" in (output / "report.md").read_text()
    info = json.loads((output / "run_info.json").read_text())
    assert info["model"] == "digits_lstm:build"

    # Lower is better everywhere: the gain is the baseline's loss less the trial's, Optuna minimised it, and every
    # table, verdict and report names the team's metric, never accuracy.
    table = pd.read_parquet(output / "results.parquet")
    base = table[table["is_baseline"]].iloc[0]
    finished = table[table["status"] == "completed"]
    assert set(finished["objective"]) == {"loss"} and not finished["objective_higher_is_better"].any()
    assert (finished["objective_gain"] - (base["objective_value"] - finished["objective_value"])).abs().max() < 1e-9
    study = optuna.load_study(study_name="digits-lstm", storage=f"sqlite:///{output / 'optuna.db'}")
    assert study.directions == [optuna.study.StudyDirection.MAXIMIZE, optuna.study.StudyDirection.MINIMIZE]
    summary = pd.read_csv(output / "summary.csv")
    assert set(summary["objective"]) == {"val_loss"} and set(summary["gain_unit"]) == {"loss"}
    assert set(summary["margin"]) == {0.05}
    verdicts = " ".join(summary["verdict_text"].dropna())
    assert "val_loss" in verdicts and "accuracy" not in verdicts and " pt" not in verdicts
    best = json.loads((output / "best_recipe.json").read_text())
    assert best["objective"] == {"name": "loss", "higher_is_better": False, "fraction": False}
    assert best["confirmed"]["max_drop"] == 0.05
    report = (output / "report.md").read_text()
    assert "val_loss" in report and "val_acc" not in report and "accuracy points" not in report
    # One answer, one set of numbers: every figure of the decision reads the same on the page, in summary.csv, in
    # best_recipe.json and in the console.
    assert disagreements(output, done.stdout) == []

    # The exported dict goes into the team's own Model as it is, and MindSpore builds what was measured.
    best = json.loads((output / "best_recipe.json").read_text())
    check = textwrap.dedent(f"""
        import json
        import mindspore as ms
        from mindspore import nn
        from boosttune import TrialContext
        from boosttune.trial.runner import observed_boost
        from digits_lstm import build

        ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
        parts = build(TrialContext(rank=0, world_size=1, seed=0, batch_size=32, epochs=1, device_target="CPU",
                                   work_dir=".", kwargs={{"hidden": 32}}))
        level = {best["boost_level"]!r}
        config = json.load(open("runs/smoke/best_boost_config.json"))
        model = ms.Model(parts.network, parts.loss_fn, nn.Momentum(parts.network.trainable_params(), 0.1, 0.9),
                         metrics=parts.metrics, boost_level=level, boost_config_dict=config,
                         loss_scale_manager=ms.FixedLossScaleManager(1.0, False) if level != "O0" else None)
        model.train(1, parts.train.take(3), dataset_sink_mode=False)
        print(json.dumps(observed_boost(model)))
    """)
    built = subprocess.run([sys.executable, "-c", check], cwd=user_project, env=user_env(), capture_output=True,
                           text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    observed = json.loads(built.stdout.strip().splitlines()[-1])
    from boosttune.config.boost import parse_boost_config

    applied = parse_boost_config(best["boost_config_dict"], best["boost_level"]).effective().applied
    for name in ("less_bn", "grad_freeze", "grad_accumulation"):
        assert observed[name] == applied[name], (name, observed, applied)


def test_the_teams_answer_is_verified_at_its_planned_job_on_fresh_seeds(user_project, tuned):
    """``boosttune verify runs/smoke --planned-epochs 3`` from the team's folder: the answer (or, for keep O0, the
    fastest recipe the race dropped) and O0 trained at 3 epochs, not the search's 2, on seeds the run never used, judged
    by the team's loss; the race's prediction beside the measurement, verify.json, and the run's report's section."""
    from boosttune.verify import plan_verify

    assert tuned.returncode == 0, (tuned.stdout + tuned.stderr)[-3000:]
    run = user_project / "runs" / "smoke"
    command = [BOOSTTUNE, "verify", "runs/smoke", "--planned-epochs", "3"]
    done = subprocess.run(command, cwd=user_project, env=user_env(), capture_output=True, text=True, timeout=400)
    verdict = json.loads((run / "verify-3ep" / "verify.json").read_text())
    assert done.returncode == {"holds": 0, "does_not_hold": 3}.get(verdict["outcome"], 1), (done.stdout + done.stderr)[-4000:]
    best = json.loads((run / "best_recipe.json").read_text())
    assert verdict["answer"] == best["confirmed"]["recipe"] and verdict["planned_epochs"] == 3
    used = {json.loads(p.read_text())["recipe"]["seed"] for p in (run / "confirm").glob("*.json")}
    assert len(verdict["seeds"]) == 2 and not used & set(verdict["seeds"])
    records = [json.loads(p.read_text()) for p in (run / "verify-3ep" / "runs").glob("*.json")]
    assert sorted(r["label"] for r in records) == sorted(["O0", verdict["recipe"]] * 2)
    assert all(r["status"] == "completed" and r["recipe"]["epochs"] == 3 and r["recipe"]["seed"] in verdict["seeds"]
               and r["metrics"]["objective"] == "loss" for r in records)
    plan = plan_verify(run, planned_epochs=3)  # what the race predicted at 3 epochs, from the run's own runs
    assert verdict["predicted"]["speedup"] == pytest.approx(plan.predicted.speedup)
    assert verdict["measured"]["seeds"] == 2 and verdict["measured"]["speedup"] > 0
    assert f"verify: {verdict['line']}" in done.stdout
    assert f"predicted by the race ({verdict['predicted']['seeds']} paired seed(s))" in done.stdout
    assert " loss" in verdict["line"] and " pt" not in verdict["line"]  # the team's metric, in its own units
    report = (run / "report.md").read_text()
    assert "## Verified at the planned job" in report and verdict["line"] in report
    again = subprocess.run(command, cwd=user_project, env=user_env(), capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "pass --resume" in again.stderr and again.stderr.count("\n") == 1


def test_a_builder_the_workers_cannot_import_is_refused_before_the_baseline(user_project, tmp_path):
    """Shipping nothing (an empty working_dir) leaves the workers without the module: one line, exit 2."""
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run(
        [BOOSTTUNE, "tune", "experiment.yaml", "--set", f"working_dir={empty}", "--output", str(tmp_path / "run")],
        cwd=user_project, env=user_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, (done.stdout + done.stderr)[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("boosttune: error:")]
    assert errors == ["boosttune: error: model.entry 'digits_lstm:build': no module named 'digits_lstm' on this node "
                      + errors[0].split("on this node ", 1)[1]]
    assert "baseline: O0" not in done.stdout
    assert not (tmp_path / "run" / "trials").exists() or not any((tmp_path / "run" / "trials").iterdir())


BAD_BUILDERS = {
    "does_not_import": ("import no_such_package_here\n", "importing bad_builders_does_not_import failed: "
                        "ModuleNotFoundError: No module named 'no_such_package_here'"),
    "no_function": ("x = 1\n", "module bad_builders_no_function has no 'build'"),
    "wrong_type": ("def build(ctx):\n    return {'network': None}\n",
                   "the builder returned a dict; expected boosttune.TrialParts"),
    "raises": ("def build(ctx):\n    raise ValueError('no data at /nowhere')\n",
               "the builder raised ValueError: no data at /nowhere (at bad_builders_raises.py:2, in build)"),
    "objective_not_a_metric": ("{common}\ndef build(ctx):\n    return parts(ctx, objective='f1')\n",
                               "objective 'f1' is not among the metrics; allowed: acc"),
    "batches_do_not_fit": ("{common}\ndef build(ctx):\n    return parts(ctx, features=5)\n",
                           "one training step on its first batch failed:"),
    "ranks_differ": ("{common}\ndef build(ctx):\n    return parts(ctx, rows=64 + 32 * ctx.rank)\n",
                     "the ranks' training shards differ in batches (rank 0 2, rank 1 3)"),
    "direction_not_a_bool": ("{common}\ndef build(ctx):\n    return parts(ctx, higher_is_better='no')\n",
                             "higher_is_better is a str; expected True or False"),
}

COMMON = '''
import numpy as np
import mindspore.dataset as ds
from mindspore import nn
from boosttune import TrialParts

def parts(ctx, objective="acc", features=4, rows=64, higher_is_better=True):
    x = np.random.RandomState(0).rand(rows, features).astype(np.float32)
    y = (x[:, 0] > 0.5).astype(np.int32)
    data = ds.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False).batch(32, drop_remainder=True)
    return TrialParts(network=nn.Dense(4, 2), loss_fn=nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                      train=data, eval=data, metrics={"acc": nn.Accuracy()}, objective=objective,
                      higher_is_better=higher_is_better)
'''


@pytest.mark.parametrize("case", sorted(BAD_BUILDERS))
def test_a_bad_builder_is_one_line_naming_the_entry_before_anything_trains(case, tmp_path, monkeypatch):
    """What the pre-flight on a worker does before the baseline (it runs in-process here, as in the Ray task)."""
    from boosttune.config.recipe import parse_recipe
    from boosttune.errors import BuilderError
    from boosttune.trial.parts import preflight

    source, expected = BAD_BUILDERS[case]
    module = f"bad_builders_{case}"
    (tmp_path / f"{module}.py").write_text(source.replace("{common}", COMMON))
    monkeypatch.syspath_prepend(str(tmp_path))
    recipe = parse_recipe({"model": {"entry": f"{module}:build"}, "batch_size": 32})
    with pytest.raises(BuilderError) as error:
        preflight(recipe, 2 if case == "ranks_differ" else 1, str(tmp_path))
    message = str(error.value)
    assert message.startswith(f"model.entry '{module}:build': ") and expected in message, message
    assert "\n" not in message
