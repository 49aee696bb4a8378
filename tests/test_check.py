"""``boosttune check`` (boosttune/check.py), as a team runs it on its own project outside the repository: every
problem of the project is one line before Ray starts, and ``boosttune tune`` refuses the same, the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.team_project import boosttune, make_project

pytestmark = pytest.mark.slow  # each runs boosttune in a fresh process that builds and steps the team's network


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_project(tmp_path_factory.mktemp("team"))


def test_check_prints_what_tune_would_search_and_leave_out(project):
    done = boosttune(project, "check", "experiment.yaml")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[:3] == ["device: CPU", "objective: val_acc (higher is better, in points)",
                         "steps: 20 per epoch x 2 epoch(s) = 40; 6 trainable parameter tensors"]
    searched = next(line for line in lines if line.startswith("searched: "))
    assert "grad_freeze" in searched and "less_bn" in searched and "adasum" not in searched
    assert any(line.startswith("left out: adasum: needs >= 16 ranks") for line in lines)
    assert lines[-1] == "ok: experiment.yaml is ready for boosttune tune"
    assert not (project / "runs").exists()  # nothing trained, nothing written


CASES = {  # --set overrides -> the one line's start (after "boosttune: error: ")
    "too_short_for_a_speed_figure": (["base.model.kwargs.rows=64"],
                                     "base.epochs: a run of 2 epoch(s) x 2 step(s) leaves 1 steady step(s) after 3 "
                                     "warm-up step(s); a speed figure needs at least 2: raise base.epochs to 3"),
    "output_does_not_fit_the_loss": (["base.model.kwargs.loss=mse"],
                                     "model.entry 'team_model:build': one training step on its first batch failed: "
                                     "ValueError: For 'Sub', input1.shape and input2.shape need to broadcast"),
    "eval_smaller_than_a_batch": (["base.model.kwargs.eval_rows=20"],
                                  "model.entry 'team_model:build': eval has no batches"),
    "builder_not_found": (["base.model.entry=team_modle:build"],
                          "model.entry 'team_modle:build': no module named 'team_modle' on this node"),
    "no_such_function": (["base.model.entry=team_model:biuld"],
                         "model.entry 'team_model:biuld': module team_model has no 'biuld'"),
    "unknown_field": (["base.epoch=3"], "base.epoch"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_problem_of_a_project_is_one_line_and_exit_2(project, case):
    overrides, expected = CASES[case]
    done = boosttune(project, "check", "experiment.yaml", *[f"--set={o}" for o in overrides])
    assert done.returncode == 2, (done.stdout + done.stderr)[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("boosttune: error: ")]
    assert len(errors) == 1 and errors[0].removeprefix("boosttune: error: ").startswith(expected), done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "C++ Call Stack" not in done.stderr  # MindSpore's dump stays quiet


def test_tune_refuses_the_same_before_ray_starts(project, tmp_path):
    done = boosttune(project, "tune", "experiment.yaml", "--set", "base.model.kwargs.rows=64",
                     "--output", str(tmp_path / "run"))
    assert done.returncode == 2, (done.stdout + done.stderr)[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("boosttune: error: ")]
    assert errors and errors[0].startswith("boosttune: error: " + CASES["too_short_for_a_speed_figure"][1])
    assert "ray: " not in done.stdout and not (tmp_path / "run").exists()


def test_the_device_and_ranks_are_flags_and_a_device_this_machine_lacks_is_refused_before_ray(project, tmp_path):
    """`--device` / `--workers` set base.device_target / workers_per_trial. With no cluster to join, a device this
    machine does not have is one line before Ray starts; `check` still builds and steps the project (on CPU)."""
    from boosttune.check import device_here

    if device_here("GPU"):
        pytest.skip("this machine has a GPU")
    done = boosttune(project, "tune", "experiment.yaml", "--device", "GPU", "--output", str(tmp_path / "run"))
    assert done.returncode == 2, (done.stdout + done.stderr)[-3000:]
    assert done.stderr.strip().splitlines()[-1].startswith(
        "boosttune: error: base.device_target: GPU ranks need a GPU, and this machine has none that Ray detects")
    assert "ray: " not in done.stdout and not (tmp_path / "run").exists()
    checked = boosttune(project, "check", "experiment.yaml", "--device", "GPU", "--workers", "2")
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert checked.stdout.splitlines()[0] == "device: GPU (not on this machine: built and stepped on CPU)"
    assert "steps: 10 per epoch x 2 epoch(s)" in checked.stdout  # 640 rows over 2 ranks of batch 32
    clash = boosttune(project, "check", "experiment.yaml", "--device", "GPU", "--set", "base.device_target=CPU")
    assert clash.returncode == 2
    assert clash.stderr.strip() == ("boosttune: error: --device GPU and --set base.device_target=CPU disagree; "
                                    "give one of them")


def test_a_teams_optimizer_is_used_under_boost_left_out_with_mindspores_reason_or_refused(project):
    """The issue's project passes nn.Adam with two parameter groups: GradientFreeze and LessBN rebuild it (same
    updates: tests/trial/test_rebuild.py). A subclass MindSpore cannot rebuild leaves both out with MindSpore's
    reason; a factory that ignores the learning rate it is given is one line."""
    lines = {}
    for kind in ("adam_groups", "renamed_rate", "fixed_rate"):
        done = boosttune(project, "check", "experiment.yaml", f"--set=base.model.kwargs.optimizer={kind}")
        lines[kind] = (done.returncode, done.stdout.splitlines(), done.stderr.strip().splitlines())
    code, out, _ = lines["adam_groups"]
    assert code == 0 and "grad_freeze" in next(x for x in out if x.startswith("searched: "))
    assert not any(x.startswith(("left out: grad_freeze", "left out: less_bn:")) for x in out)
    code, out, _ = lines["renamed_rate"]
    searched = next(x for x in out if x.startswith("searched: "))
    assert code == 0 and "grad_freeze" not in searched and "less_bn" not in searched and "amp" in searched
    for part in ("grad_freeze", "less_bn"):
        why = next(x for x in out if x.startswith(f"left out: {part}: "))
        assert "TeamMomentum" in why and "unexpected keyword argument 'learning_rate'" in why, why
    code, _, err = lines["fixed_rate"]
    assert code == 2 and err[-1].startswith("boosttune: error: optimizer: the builder's factory ignores the learning "
                                            "rate it is given")
