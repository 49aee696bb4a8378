"""Every command the README, docs/, the cluster files and the scripts' docstrings give a user is run as printed, as
far as this machine allows, so that a command that would fail cannot ship (tests/helpers/commands.py finds them):

- ``boosttune COMMAND``: boosttune's own parser reads it; ``tune`` and ``bench`` run up to where they would start
  Ray (the file read, every flag and override applied, the device picked, the output folder chosen); ``check`` and
  ``probe`` run for real; the commands that read a finished run or a file of the user's (verify, export, report,
  dashboard, methods, validate, trial) are parsed, their overrides checked.
- ``python experiments/*.py``: the script itself, run as printed up to where it would start Ray.
- ``python benchmarks/*.py``: the script's own argument parser, on the arguments printed.
- ``ray ...``: Ray's own command line parses it; a cluster file it names is checked offline as ``ray up`` checks it
  (a user runs it from their project's folder, where they copied it); ``ray submit``'s script runs alone from a
  home folder, and ``ray job submit``'s entrypoint runs inside the job's working_dir, as Ray runs them.
- the set-up (venv, activate, pip install, pytest): the extras named exist, and .ci/run runs the README's test
  command as printed.

A command a team runs in its own project (``experiment.yaml``, ``cd my-project``, the example project's README)
runs in a copy of the example project (experiments/custom), the team's folder outside the repository. The cluster
file's own ``ray job submit`` line runs the smoke main job for real on a two-node cluster:
tests/e2e/test_job_submit.py.
"""

from __future__ import annotations

import argparse
import copy
import json
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO
from tests.helpers.commands import Shown, commands_outside_shell_blocks, shown, split_line
from tests.helpers.example_project import BOOSTTUNE, user_env

SHOWN = shown()
PYTHONS = ("python", "python3", "python3.11")
# boosttune commands that read a finished run or a file of the user's: parsed (nothing here to read)
READS_A_RUN = ("verify", "export", "report", "dashboard", "methods")
FILTERS = ("grep", "head", "tail", "wc", "sort")  # read the output of the command before them in a pipe
CLUSTER_COMMANDS = ("up", "down", "dashboard", "rsync-down", "rsync-up", "submit", "attach", "exec", "get-head-ip")


class Reached(Exception):
    """Raised where a command would start Ray or train: it got that far, as printed."""

    def __init__(self, what: str, detail: object = None) -> None:
        super().__init__(what)
        self.what, self.detail = what, detail


def _in_project(command: Shown) -> bool:
    """A command a team runs in its own folder: it names the team's experiment.yaml or prepare.py, follows
    ``cd my-project``, or comes from the example project itself."""
    return (command.where.startswith("experiments/custom/") or "cd my-project" in command.line
            or "cd experiments/custom" in command.line
            or any(word in ("experiment.yaml", "prepare.py") for word in command.words))


@pytest.fixture
def context(monkeypatch, tmp_path, custom_example):
    """Runs a command where a user would: the repository, or a copy of the example project; no cluster to join."""
    from boosttune.execution import ray as ray_module

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR", raising=False)
    monkeypatch.setattr(ray_module, "running_cluster", lambda: None)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()

    def project() -> Path:
        from tests.helpers.example_project import copy_example

        folder = tmp_path / "team" / "digits-lstm"
        return folder if folder.is_dir() else copy_example(tmp_path / "team", custom_example)

    return {"monkeypatch": monkeypatch, "tmp_path": tmp_path, "project": project, "custom_example": custom_example}


def run_shown(command: Shown, context: dict, *, words: tuple[str, ...] | None = None, cwd: Path | None = None,
              job: Path | None = None) -> str:
    """Run one simple command as far as this machine allows; what was done, or an AssertionError naming what failed.
    ``job``: the working_dir of the Ray job the command is the entrypoint of."""
    words = words or command.words
    if cwd is None:
        cwd = context["project"]() if _in_project(command) else REPO
    program = words[0]
    if program == "boosttune":
        return _boosttune(command, words, cwd, context, job)
    if program in PYTHONS:
        return _python(command, words, cwd, context, job)
    if program == "ray":
        return _ray(command, words, cwd, context)
    if program == "cd":  # the team's folder (the example project stands for it), or one of the repository's
        assert len(words) == 2 and (words[1] == "my-project" or (REPO / words[1]).is_dir()), \
            f"{command}: no such folder"
        return "the folder the next commands run in"
    if program == ".":
        assert words == (".", ".venv/bin/activate"), f"{command}: not the README's venv"
        return "set-up (the venv the next commands run in)"
    if program == "pip":
        return _pip(command, words)
    if program == "pytest":
        if len(words) == 1:
            return "the test command (.ci/run runs the README's as printed)"
        asked = [w for w in words[1:] if w not in ("--collect-only", "-q")]
        done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", *asked], cwd=REPO,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{command}: pytest collects nothing or fails: {done.stdout[-800:]}"
        return "collected by pytest (the tests it names exist)"
    if program in FILTERS:
        return f"a filter of the command before it ({program})"
    raise AssertionError(f"{command}: {program!r} is no program this test knows how to run; teach tests/test_commands.py")


def _boosttune(command: Shown, words, cwd: Path, context: dict, job: Path | None) -> str:
    from boosttune.cli.main import build_parser, main

    monkeypatch = context["monkeypatch"]
    argv = list(words[1:])
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:
        raise AssertionError(f"{command}: boosttune's parser refuses it (exit {e.code})") from None
    monkeypatch.chdir(cwd)
    if job is not None:
        monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps({"runtime_env": {"working_dir": str(job)}}))
    name = args.command
    if name == "check":
        done = subprocess.run([BOOSTTUNE, *argv], cwd=cwd, env={**user_env(), "HOME": str(context["tmp_path"])},
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "is ready for boosttune tune" in done.stdout, \
            f"{command}: exit {done.returncode}: {(done.stdout + done.stderr)[-1500:]}"
        return "ran: boosttune check"
    if name in ("tune", "bench", "probe") and (name != "bench" or (cwd / args.file).is_file()):
        import boosttune.bench
        import boosttune.experiment

        def reached(what):
            def stop(config, output, **kwargs):
                raise Reached(what, (config, output))
            return stop

        monkeypatch.setattr(boosttune.experiment, "run_experiment", reached("tune"))
        monkeypatch.setattr(boosttune.bench, "run_bench", reached("bench"))
        try:
            code = main(argv)
        except Reached as stopped:
            config, output = stopped.detail
            output = Path(output)
            if job is not None:  # the job's working_dir is deleted when it ends: the run must write elsewhere
                assert output.is_absolute() and not output.is_relative_to(job), f"{command}: output {output} inside the job"
            return f"ran up to Ray: boosttune {name} (output {output})"
        assert code == 0, f"{command}: boosttune {name} exit {code}"
        return f"ran: boosttune {name}"
    if name == "trial":
        from boosttune.cli.main import _apply_overrides
        from boosttune.config.recipe import parse_recipe

        parse_recipe(_apply_overrides({}, args.set or []))
        return "parsed, its --set overrides checked (the recipe file is the user's)"
    assert name in (*READS_A_RUN, "validate", "bench"), f"{command}: boosttune {name}: teach this test what it reads"
    return f"parsed (boosttune {name} reads {'a finished run' if name in READS_A_RUN else 'a file of the user'}s)"


def _python(command: Shown, words, cwd: Path, context: dict, job: Path | None) -> str:
    if words[1:3] == ("-m", "venv"):
        return "set-up (a venv: .ci/run makes it)"
    script = words[1]
    if script == "prepare.py":
        assert (context["custom_example"] / "data").is_dir(), f"{command}: the example's data was not prepared"
        return "ran (the custom_example fixture runs the example project's python prepare.py)"
    path = cwd / script
    assert path.is_file(), f"{command}: no such script {script} in {cwd}"
    monkeypatch = context["monkeypatch"]
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", [script, *words[2:]])
    if job is not None:
        monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps({"runtime_env": {"working_dir": str(job)}}))
    if script.startswith("benchmarks/"):
        original = argparse.ArgumentParser.parse_args

        def parsed(self, args=None, namespace=None):
            raise Reached("parsed", original(self, args, namespace))

        monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parsed)
    else:
        import boosttune.experiment

        def stop(config, output, **kwargs):
            raise Reached("run", (config, output))

        monkeypatch.setattr(boosttune.experiment, "run_experiment", stop)
    try:
        runpy.run_path(str(path), run_name="__main__")
    except Reached as stopped:
        if stopped.what == "run" and job is not None:
            output = Path(stopped.detail[1])
            assert output.is_absolute() and not output.is_relative_to(job), f"{command}: output {output} inside the job"
        return "parsed by the script's own parser" if stopped.what == "parsed" else "ran up to Ray"
    except SystemExit as e:
        raise AssertionError(f"{command}: exit {e.code} before it would train") from None
    raise AssertionError(f"{command}: the script ended without parsing its arguments or starting a run")


def _cluster_file(command: Shown, name: str, cwd: Path) -> dict:
    """A cluster file a ray command names: where the user keeps it (copied into their project), one of ours."""
    from ray.autoscaler._private.util import prepare_config, validate_config

    path = cwd / name if (cwd / name).is_file() else REPO / name
    assert path.is_file() and path.parent == REPO and path.name.startswith("cluster"), \
        f"{command}: {name} is not one of the repository's cluster files"
    prepared = prepare_config(copy.deepcopy(yaml.safe_load(path.read_text())))
    validate_config(prepared)
    return prepared


def _ray(command: Shown, words, cwd: Path, context: dict) -> str:
    import click
    from ray.scripts.scripts import cli

    try:
        ctx = cli.make_context("ray", list(words[1:]))
        cmd, names = cli, []
        while isinstance(cmd, click.Group):
            protected = ctx._protected_args if hasattr(ctx, "_protected_args") else ctx.protected_args
            name, cmd, rest = cmd.resolve_command(ctx, [*protected, *ctx.args])
            names.append(name)
            ctx = cmd.make_context(name, rest, parent=ctx)
    except click.exceptions.ClickException as e:
        raise AssertionError(f"{command}: Ray's command line refuses it: {e.format_message()}") from None
    params, done = ctx.params, [f"parsed by Ray's command line (ray {' '.join(names)})"]
    if names[0] in CLUSTER_COMMANDS:
        _cluster_file(command, params["cluster_config_file"], cwd)
        done.append(f"{params['cluster_config_file']} checked offline as `ray up` checks it")
    if names[0] == "submit":  # the script alone, copied to the head's home and run there
        home = context["tmp_path"] / "head-home"
        home.mkdir(exist_ok=True)
        (home / Path(params["script"]).name).write_bytes((cwd / params["script"]).read_bytes())
        done.append(run_shown(command, context, words=("python", Path(params["script"]).name,
                                                        *params["script_args"]), cwd=home))
    if names == ["job", "submit"]:
        entry = tuple(params["entrypoint"])
        working_dir = (cwd / params["working_dir"]).resolve() if params["working_dir"] else None
        done.append("its entrypoint " + run_shown(command, context, words=entry, cwd=working_dir or cwd,
                                                  job=working_dir))
    return "; ".join(done)


def _pip(command: Shown, words) -> str:
    import tomllib

    assert words[:3] == ("pip", "install", "-e") and len(words) == 4, f"{command}: not the README's install"
    target = words[3]
    extras = target.partition("[")[2].rstrip("]")
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"].get("optional-dependencies", {})
    assert target.startswith(".") and all(extra in declared for extra in filter(None, extras.split(","))), \
        f"{command}: pyproject.toml has no such extra ({sorted(declared)})"
    return "set-up (.ci/run installs it)"


@pytest.mark.parametrize("command", SHOWN, ids=[f"{c.where} {shlex.join(c.words)[:60]}" for c in SHOWN])
def test_every_command_shown_runs_as_printed(command, context, capsys):
    done = run_shown(command, context)
    assert done


def test_the_commands_are_found_where_users_copy_them():
    """The finder sees every place: each page kind, both cluster files and the scripts' docstrings, and their
    kinds of command."""
    places = {c.where.split(":")[0] for c in SHOWN}
    assert {"README.md", "docs/cli.md", "docs/clusters-and-devices.md", "cluster.yaml", "cluster-ascend.yaml",
            "experiments/resnet.py", "experiments/custom/README.md"} <= places, sorted(places)
    programs = {c.words[0] for c in SHOWN}
    assert {"boosttune", "ray", "python", "pip", "pytest"} <= programs, programs
    assert any(c.words[:3] == ("ray", "job", "submit") and c.where.startswith("cluster.yaml") for c in SHOWN)


def test_no_command_hides_in_a_block_that_is_not_run():
    assert not commands_outside_shell_blocks(), commands_outside_shell_blocks()


def test_ci_runs_the_readmes_test_command_as_printed():
    """README command 2 is what .ci/run runs (its Python found, pip quiet)."""
    readme = [c for c in SHOWN if c.where.startswith("README.md") and c.words == ("pytest",)]
    assert len(readme) == 1
    line = readme[0].line.split("#")[0].strip()
    ci = [l for l in (REPO / ".ci" / "run").read_text().splitlines() if l.strip().endswith("&& pytest")]
    assert len(ci) == 1 and ci[0].replace("$PY", "python3.11").replace(" -q", "") == line, (ci, line)


@pytest.mark.parametrize("line, wrong", [
    ("boosttune tuen x.yaml", "boosttune's parser refuses it"),
    ("boosttune tune experiments/configs/lenet_smoke.yaml --output runs/x [--device GPU]", "parser refuses it"),
    ("python experiments/resnet.py --trials 4 --no-such", "exit 2 before it would train"),
    ("python experiments/resnet.py --device TPU", "exit 2 before it would train"),
    ("python benchmarks/confirm_reliability.py --replays 200 --no-such 1", "exit 2"),
    ("ray job submit --adress http://127.0.0.1:8265 -- python experiments/resnet.py", "No such option"),
    ("ray up cluster-gpu.yaml", "not one of the repository's cluster files"),
    ("ray job submit --working-dir . -- python experiments/resnet.py --output runs/x", "inside the job"),
    ("ray job submit --working-dir . -- boosttune tune experiments/configs/lenet_smoke.yaml --output runs/x",
     "inside the job"),
    ("pip install -e '.[gpu]'", "no such extra"),
    ("make test", "no program this test knows"),
])
def test_a_command_that_would_fail_is_caught(line, wrong, context, capsys):
    """Planted: each is a command a page could print by mistake; the runner names it."""
    commands = split_line("planted.md:1", line)
    with pytest.raises(AssertionError, match=wrong.replace("[", r"\[")):
        for command in commands:
            run_shown(command, context)
