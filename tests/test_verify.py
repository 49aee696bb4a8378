"""``boosttune verify``'s plan, refusals and report section, on a finished run's folder (paired runs without training:
tests/helpers/paired_runs.py). Verify trained for real on Ray, on a team's project: tests/e2e/test_custom_project.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from boosttune.errors import ConfigError, DataError
from boosttune.outputs.summary import load_confirmed
from boosttune.stats.decide import at_planned_epochs
from boosttune.stats.holds import HOLDS, JobFigures, judge_verification
from boosttune.objective import ACCURACY
from boosttune.verify import VERIFY_NAME, plan_verify
from tests.helpers.paired_runs import experiment_folder


@pytest.fixture
def run(tmp_path, search, confirmed_dir):
    return experiment_folder(tmp_path, search, confirmed_dir)


def test_the_answer_and_o0_train_at_the_planned_job_on_seeds_the_run_never_used(run):
    plan = plan_verify(run)
    assert plan.answer == plan.recipe == "grad_freeze p=0.5"
    used = set(pd.read_parquet(run / "confirm.parquet")["seed"]) | set(pd.read_parquet(run / "results.parquet")["seed"])
    assert len(plan.bench.seeds) == 2 and not used & set(plan.bench.seeds) and min(plan.bench.seeds) > max(used)
    # the run's own length (3 epochs), O0 as the confirm stage trained it, the answer as its difference from O0
    assert plan.bench.base["epochs"] == plan.bench.base["planned_epochs"] == plan.planned_epochs == 3
    assert plan.bench.recipes == {"O0": {}, "grad_freeze p=0.5": {
        "boost_level": "O1", "boost_config_dict": {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": True}}}}
    summary = pd.read_csv(run / "summary.csv").set_index("recipe").loc["grad_freeze p=0.5"]
    assert plan.predicted.speedup == pytest.approx(summary["job_speedup"])  # the run's own words at its own length
    assert plan.predicted.gain == pytest.approx(summary["objective_gain"]) and plan.predicted.seeds == 5
    assert plan.default_output == run / "verify-3ep"


def test_a_longer_job_on_more_data_is_predicted_from_the_same_runs_at_that_length(run):
    plan = plan_verify(run, planned_epochs=30, seeds=3, base={"data": {"train_limit": 500}})
    assert plan.bench.base["epochs"] == 30 and plan.bench.base["data"] == {"name": "digits", "train_limit": 500}
    assert len(plan.bench.seeds) == 3 and plan.base_overrides == {"data": {"train_limit": 500}}
    confirmed = load_confirmed(run, 1.0)
    longer = at_planned_epochs(confirmed, 30).summary.set_index("recipe").loc["grad_freeze p=0.5"]
    assert plan.predicted.speedup == pytest.approx(longer["job_speedup"]) and plan.predicted.planned_epochs == 30
    # its compile is charged once: over ten times the epochs, the per-job speed-up moves towards the per-step one
    short = plan_verify(run).predicted.speedup
    per_step = float(confirmed.summary.set_index("recipe").loc["grad_freeze p=0.5", "step_speedup"])
    assert abs(plan.predicted.speedup - per_step) < abs(short - per_step)


def test_the_experiments_verify_block_sets_the_planned_job_and_the_command_line_wins(run):
    document = json.loads((run / "experiment.json").read_text())
    document["verify"] = {"planned_epochs": 12, "seeds": 4, "base": {"data": {"train_limit": 600}, "batch_size": 16}}
    (run / "experiment.json").write_text(json.dumps(document))
    plan = plan_verify(run, base={"data": {"train_limit": 900}})
    assert plan.planned_epochs == 12 and len(plan.bench.seeds) == 4 and plan.bench.base["batch_size"] == 16
    assert plan.bench.base["data"]["train_limit"] == 900
    assert plan_verify(run, planned_epochs=5, seeds=2).planned_epochs == 5


def test_another_raced_recipe_can_be_verified_in_a_folder_of_its_own(run):
    plan = plan_verify(run, recipe="O1-equivalent")
    assert plan.answer == "grad_freeze p=0.5" and plan.recipe == "O1-equivalent" and plan.asked
    assert plan.default_output == run / "verify-3ep-O1-equivalent" and list(plan.bench.recipes) == ["O0", "O1-equivalent"]
    with pytest.raises(ConfigError, match=r"--recipe: 'less_bn' was not raced in exp; allowed: O1-equivalent, grad"):
        plan_verify(run, recipe="less_bn")


def test_keep_o0_is_verified_with_the_fastest_recipe_the_race_dropped(run):
    document = json.loads((run / "experiment.json").read_text())
    (run / "experiment.json").write_text(json.dumps({**document, "max_drop": 0.01}))  # nothing within 0.01 pt
    plan = plan_verify(run)
    summary = pd.read_csv(run / "summary.csv")
    fastest = summary[summary["recipe"] != "O0"].sort_values("job_speedup").iloc[-1]["recipe"]
    assert plan.answer == "O0" and plan.recipe == fastest == "grad_freeze p=0.5"


@pytest.mark.parametrize("change, error, message", [
    (lambda run: run / "nothing", DataError, "no such run folder"),
    (lambda run: [(run / "bench.json").write_text("{}"), run][1], DataError, "a bench folder; verify reads a tuning run"),
    (lambda run: (run / "confirm.parquet").unlink() or run, DataError, "no confirm stage ran"),
    (lambda run: (run / "experiment.json").unlink() or run, DataError, "no readable experiment.json"),
    (lambda run: [(run / "experiment.json").write_text(json.dumps({"name": "x", "verify": {"seeds": 1}})), run][1],
     ConfigError, "verify.seeds: 1 is invalid"),
])
def test_what_cannot_be_verified_is_one_line_before_anything_trains(run, change, error, message):
    with pytest.raises(error, match=message):
        plan_verify(change(run))


def test_a_planned_job_field_that_does_not_exist_is_named(run):
    with pytest.raises(ConfigError, match=r"^the planned job: base\.\S*epohcs"):
        plan_verify(run, base={"epohcs": 3})


@pytest.mark.parametrize("args, message", [
    (["--set", "num_trials=3"], "--set: num_trials cannot be set here; verify sets the planned job's base.* fields"),
    (["--seeds", "1"], "--seeds: 1 is invalid; allowed: 2 or more paired seeds"),
])
def test_the_command_refuses_bad_flags_in_one_line(run, args, message):
    done = subprocess.run([sys.executable, "-m", "boosttune.cli.main", "verify", str(run), *args], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip() == f"boosttune: error: {message}" + (
        ", e.g. --set base.data.train_limit=60000" if "num_trials" in message else " (an interval needs two)")


def test_the_runs_report_gains_a_section_for_each_verification(run):
    from boosttune.report import load_report_inputs, write_report

    measured = JobFigures(1.21, 1.10, 1.33, -0.3, -1.1, 0.5, seeds=2, planned_epochs=30)
    predicted = plan_verify(run, planned_epochs=30).predicted
    verification = judge_verification("grad_freeze p=0.5", "grad_freeze p=0.5", predicted, measured, max_drop=1.0,
                                      planned_epochs=30, objective=ACCURACY)
    folder = run / "verify-30ep"
    folder.mkdir()
    (folder / VERIFY_NAME).write_text(json.dumps({**verification.to_dict(), "seeds": [6, 7], "base": {}}))
    (run / "run_info.json").write_text(json.dumps({**json.loads((run / "run_info.json").read_text()),
                                                   "verified": [str(folder)]}))
    inputs = load_report_inputs(run)
    assert [d["recipe"] for d in inputs.verified] == ["grad_freeze p=0.5"]
    _, markdown = write_report(inputs)
    text = markdown.read_text()
    assert "## Verified at the planned job" in text and verification.outcome == HOLDS
    assert "| 30 epochs | grad_freeze p=0.5 | 6 7 |" in text and "1.21x per job [1.10, 1.33]" in text
    assert verification.line in text


def test_a_run_whose_baseline_was_still_climbing_is_said_to_be_one_whose_accuracy_changes_may_not_hold(tmp_path):
    """The team's LSTM at 3 epochs (+4.64 pt in O0's last epoch): two keep-O0 answers that the 12-epoch job showed
    wrong, with a recipe the race never raced winning there; verify checks one recipe and says so."""
    import json

    import pandas as pd

    from boosttune.objective import ACCURACY
    from boosttune.verify import unconverged_baseline

    def run(values):
        folder = tmp_path / "-".join(str(v) for v in values)
        folder.mkdir()
        curve = [{"epoch": i + 1, "objective_value": v} for i, v in enumerate(values)]
        pd.DataFrame([{"label": "O0", "is_baseline": True, "curve_json": json.dumps(curve)},
                      {"label": "x", "is_baseline": False, "curve_json": "[]"}]).to_csv(folder / "results.csv")
        return folder

    assert "+4.64 pt in the last epoch" in unconverged_baseline(run([0.55, 0.6542, 0.7006]), ACCURACY)
    assert unconverged_baseline(run([0.80, 0.84, 0.842]), ACCURACY) is None  # converged
    assert unconverged_baseline(tmp_path, ACCURACY) is None  # no results table: nothing said
