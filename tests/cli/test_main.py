"""The boosttune command: exit codes, one-line errors, no tracebacks for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from boosttune.cli.main import main
from boosttune.errors import ConfigError


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_validate_prints_effective_config(tmp_path, capsys):
    path = _write(tmp_path, "b.json", json.dumps({"boost_level": "O1", "boost_config_dict": {
        "boost": {"mode": "manual", "grad_freeze": False}, "less_bn": {"gc_flag": False}}}))
    assert main(["validate", path, "--canonical"]) == 0
    out = capsys.readouterr().out
    assert "applied: less_bn" in out and "grad_freeze" not in out.split("{")[0].replace("grad_freeze\": false", "")
    canonical = json.loads(out[out.index("{"):])
    assert canonical["boost_config_dict"]["boost"]["mode"] == "manual"


def test_validate_yaml_with_level_flag(tmp_path, capsys):
    path = _write(tmp_path, "b.yaml", "grad_freeze:\n  freeze_p: 0.4\n")
    assert main(["validate", path, "--level", "O1"]) == 0
    assert "freeze_p=0.4" in capsys.readouterr().out


@pytest.mark.parametrize("text, fragment", [
    ('{"dim_reduce": {"n_component": 4}}', "did you mean n_components?"),
    ('{"less_bn": {"gc_flag": "false"}}', "less_bn.gc_flag: 'false' is invalid"),
    ('{"grad_freeze": {"param_groups": 2.5}}', "grad_freeze.param_groups: 2.5"),
    ('{"boost_level": "O4"}', "boost_level"),
    ('{"boost": {', "invalid JSON"),
    ('{"name": "x", "base": {"model": "lenet5"}}', "an experiment file (it has base:); validate reads a "
                                                  "boost_config_dict. Check an experiment with: boosttune check"),
])
def test_validate_bad_input_is_one_line(tmp_path, capsys, text, fragment):
    path = _write(tmp_path, "bad.json", text)
    assert main(["validate", path, "--level", "O1"] if "boost_level" not in text else ["validate", path]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err
    assert err.startswith("boosttune: error: ") and "\n" not in err


def test_console_script_never_prints_a_traceback(tmp_path):
    path = _write(tmp_path, "bad.yaml", "common:\n  device_num: 8\n")
    done = subprocess.run([sys.executable, "-m", "boosttune.cli.main", "validate", path], capture_output=True, text=True)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == ("boosttune: error: common.device_num: unknown key (did you mean device_number?); "
                                   "allowed: gradient_split_groups, device_number")


def test_trial_rejects_bad_override_before_training(capsys):
    assert main(["trial", "--set", "batch_size=0"]) == 2
    assert "batch_size: 0 is invalid" in capsys.readouterr().err
    assert main(["trial", "--set", "nonsense"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_trial_rejects_unsupported_knob_before_training(capsys):
    code = main(["trial", "--set", "boost_level=O1", "--set", "boost_config_dict={boost: {mode: manual}}"])
    assert code == 2
    assert "boost.less_bn.gc_flag is not supported on CPU" in capsys.readouterr().err


@pytest.mark.slow
def test_trial_command_end_to_end(tmp_path):
    output = tmp_path / "result.json"
    done = subprocess.run(
        [sys.executable, "-m", "boosttune.cli.main", "trial", "--set", "steps_per_epoch=10", "--set", "boost_level=O1",
         "--set", "boost_config_dict={less_bn: {gc_flag: false}}", "--output", str(output)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "status: completed" in done.stdout
    result = json.loads(output.read_text())
    assert result["observed_boost"]["less_bn"] and result["observed_boost"]["grad_freeze"]
    assert result["environment"]["runtime_env"]["ONEDNN_MAX_CPU_ISA"] in ("default", "AVX512_CORE", "AVX2")
    assert result["metrics"]["throughput_sps"] > 0
    assert "% standard error" in done.stdout and result["metrics"]["throughput_rse"] > 0  # how sure the figure is


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("validate", "probe", "trial", "tune", "bench", "export", "report", "methods"):
        assert command in out


def test_version_is_the_packages(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"boosttune {version('boosttune')}"


@pytest.mark.parametrize("argv, expected", [
    (["tune", "x.yaml", "--steps-per-epoch", "2"], "--set base.steps_per_epoch=2"),
    (["check", "x.yaml", "--trials=5", "--momentum", "0.8", "--val-fraction", "0.1"],
     "--set base.optimizer.momentum=0.8 --set base.data.val_fraction=0.1"),  # --trials is tune's and check's too
    (["tune", "x.yaml", "--shuffle", "false"], "--set base.shuffle=false"),
])
def test_a_field_flag_tune_does_not_take_points_at_the_field_it_sets(capsys, argv, expected):
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and "unrecognized arguments" in err
    assert f"the experiment's fields are set as --set FIELD=VALUE: {expected}" in err and "abbreviated" not in err


def test_a_misspelt_flag_without_a_field_says_flags_are_read_as_spelled(capsys):
    with pytest.raises(SystemExit):
        main(["tune", "x.yaml", "--epoch", "2"])
    assert "flags are read as spelled, never abbreviated" in capsys.readouterr().err


@pytest.mark.parametrize("document, meant", [
    ({"workers": 8}, "workers_per_trial"),  # the number fits it, not the switch warm_workers
    ({"workers": False}, "warm_workers"),
    ({"trials": 5}, "num_trials"),
    ({"base": {"epoch": 3}}, "epochs"),
])
def test_an_unknown_field_suggests_the_field_its_value_fits(document, meant):
    from boosttune.config.experiment import parse_experiment

    with pytest.raises(ConfigError, match=rf"unknown key \(did you mean {meant}\?\)"):
        parse_experiment(document)


def test_the_bench_takes_its_seeds_as_a_list_named_so_and_the_old_flag_still_works(capsys):
    from boosttune.cli.main import build_parser

    assert build_parser().parse_args(["bench", "b.yaml", "--output", "o", "--seed-list", "0,1,2"]).seed_list == "0,1,2"
    assert build_parser().parse_args(["bench", "b.yaml", "--output", "o", "--seeds", "3,4"]).seed_list == "3,4"
    assert "--seeds is a deprecated alias of --seed-list" in capsys.readouterr().err


def test_exit_codes_a_job_scheduler_reads(monkeypatch, tmp_path, capsys):
    """0: an answer; 1: the run failed or was aborted; 2: the input was wrong."""
    from types import SimpleNamespace

    import boosttune.cli.closing
    import boosttune.experiment
    from boosttune.cli.args import EXIT_ANSWERED, EXIT_BAD_INPUT, EXIT_FAILED
    from boosttune.errors import TrialError

    experiment = tmp_path / "experiment.yaml"
    experiment.write_text("name: x\nbase: {model: lenet5, data: {name: digits}}\n")
    monkeypatch.setattr(boosttune.cli.closing, "format_summary", lambda result: "summary")
    outcomes = {"answered": None, "aborted": "search: stopped after 3 failed trials (max_failure_rate 0.5)"}
    for name, aborted in outcomes.items():
        monkeypatch.setattr(boosttune.experiment, "run_experiment",
                            lambda *a, aborted=aborted, **k: SimpleNamespace(aborted_reason=aborted))
        code = main(["tune", str(experiment), "--output", str(tmp_path / name)])
        assert code == (EXIT_FAILED if aborted else EXIT_ANSWERED), name

    def diverged(*args, **kwargs):
        raise TrialError("the O0 baseline diverged: non-finite loss (nan) at step 3")

    monkeypatch.setattr(boosttune.experiment, "run_experiment", diverged)
    assert main(["tune", str(experiment), "--output", str(tmp_path / "diverged")]) == EXIT_FAILED
    assert capsys.readouterr().err.strip() == "boosttune: error: the O0 baseline diverged: non-finite loss (nan) at step 3"
    assert main(["tune", str(experiment), "--set", "num_trials=zero"]) == EXIT_BAD_INPUT


def test_tune_takes_the_scripts_field_flags_over_the_files_values(tmp_path):
    """One front door: the flags the cluster guide teaches (--concurrency, --storage, --study-storage,
    --accelerator-type, ...) set their fields on top of the file; unset, the file's value stands."""
    from boosttune.cli.main import _experiment, build_parser

    experiment = tmp_path / "experiment.yaml"
    experiment.write_text("name: x\nbase: {model: lenet5, data: {name: digits}}\nmax_concurrent_trials: 3\n"
                          "confirm_seeds: 4\n")
    parse = lambda *flags: _experiment(build_parser().parse_args(["tune", str(experiment), *flags]))  # noqa: E731
    config = parse("--concurrency", "2", "--storage", str(tmp_path / "shared"), "--study-storage",
                   f"sqlite:///{tmp_path / 'study.db'}", "--accelerator-type", "A100", "--keep-slow")
    assert (config.max_concurrent_trials, config.storage, config.accelerator_type) == (2, str(tmp_path / "shared"), "A100")
    assert config.study_storage.startswith("sqlite:///") and config.prune_slow is False
    assert (config.confirm_seeds, parse().max_concurrent_trials, parse().prune_slow) == (4, 3, True)
    with pytest.raises(Exception, match=r"--concurrency 2 and --set max_concurrent_trials=5 disagree"):
        parse("--concurrency", "2", "--set", "max_concurrent_trials=5")
    # the experiment fields the scripts' --search and --prefer-ties set, on tune too
    config = parse("--search", "less_bn, grad_freeze", "--prefer-ties")
    assert (config.search, config.prefer_ties) == (["less_bn", "grad_freeze"], True)
    assert (parse().search, parse().prefer_ties) == (None, False)
    with pytest.raises(Exception, match=r"--search \[less_bn\] and --set search=\[amp\] disagree"):
        parse("--search", "less_bn", "--set", "search=[amp]")


def test_the_scripts_and_tune_take_the_same_experiment_field_flags():
    """One front door: every flag of an experiment script that sets a field of the experiment (not of the built-in
    model's recipe) is one of tune's too, with the same help."""
    from boosttune.cli.main import build_parser
    from boosttune.cli.search import script_parser

    def flags(parser):
        return {flag: action.help for action in parser._actions for flag in action.option_strings}

    script = flags(script_parser("resnet8", "test"))
    tune = flags(next(a for a in build_parser()._actions if a.choices and "tune" in a.choices).choices["tune"])
    shared = {"--search", "--prefer-ties", "--trials", "--max-drop", "--concurrency", "--storage", "--seed"}
    assert shared <= set(script) & set(tune)
    assert "grad_freeze" in script["--search"] and "grad_freeze" in tune["--search"]


def test_a_script_flag_tune_does_not_take_is_mapped_to_a_set_that_works():
    from boosttune.cli.main import set_hint

    assert set_hint(["--data", "fashion_mnist"]) == ("the experiment's fields are set as --set FIELD=VALUE: "
                                                     "--set base.data.name=fashion_mnist")
    assert set_hint(["--data-path", "/d"]).endswith("--set base.data.path=/d")


def test_tune_and_check_take_every_flag_the_scripts_take(tmp_path, capsys):
    """One front door: each flag of `python experiments/resnet.py` that sets a field sets it through `boosttune tune`
    and `check` too, over the file's value; --device auto picks this machine's device and says so."""
    import argparse

    from boosttune.cli.main import _experiment, build_parser
    from boosttune.cli.search import BASE_FLAGS, FIELDS, script_parser

    script = {a.option_strings[0] for a in script_parser("resnet8", "")._actions if a.option_strings}
    tune = {a.option_strings[0] for a in next(a for a in build_parser()._actions
                                              if isinstance(a, argparse._SubParsersAction)).choices["tune"]._actions
            if a.option_strings}
    assert script - tune == set(), script - tune  # --help included
    file = tmp_path / "x.yaml"
    file.write_text("base: {model: lenet5, epochs: 1, data: {name: digits}}\nnum_trials: 2\n")
    argv = ["tune", str(file), "--planned-epochs", "9", "--prefer-ties", "--epochs", "4", "--batch-size", "16",
            "--learning-rate", "0.02", "--train-limit", "300", "--val-limit", "100", "--image-size", "8",
            "--model", "lenet5", "--data", "digits", "--confirm-seeds", "3"]
    config = _experiment(build_parser().parse_args(argv))
    recipe = config.recipe
    assert (recipe.planned_epochs, recipe.epochs, recipe.batch_size, recipe.optimizer.learning_rate) == (9, 4, 16, 0.02)
    assert (recipe.data.train_limit, recipe.data.val_limit, recipe.data.image_size) == (300, 100, 8)
    assert config.prefer_ties and config.confirm_seeds == 3 and recipe.device_target == "CPU"
    assert "device: CPU (--device auto: this machine holds no GPU or NPU" in capsys.readouterr().err
    assert set(BASE_FLAGS) | set(FIELDS.on) <= tune


def test_a_base_flag_and_a_set_that_disagree_are_refused_in_one_line(tmp_path):
    from boosttune.cli.main import _experiment, build_parser

    file = tmp_path / "x.yaml"
    file.write_text("base: {model: lenet5}\n")
    args = build_parser().parse_args(["tune", str(file), "--epochs", "4", "--set", "base.epochs=5"])
    with pytest.raises(ConfigError, match=r"^--epochs 4 and --set base.epochs=5 disagree; give one of them$"):
        _experiment(args)


def test_smoke_on_tune_sets_the_scripts_sizes_where_nothing_given_says_so(tmp_path, capsys):
    from boosttune.cli.main import _experiment, build_parser

    file = tmp_path / "x.yaml"
    file.write_text("base: {model: lenet5, epochs: 6, data: {name: digits}}\nnum_trials: 20\n")
    config = _experiment(build_parser().parse_args(["tune", str(file), "--smoke", "--trials", "4", "--device", "CPU"]))
    assert (config.num_trials, config.recipe.epochs, config.confirm_seeds, config.confirm_mode) == (4, 3, 2, "fixed")
    assert config.recipe.data.train_limit == 1024
    err = capsys.readouterr().err
    assert err.startswith("smoke: confirm_seeds=2, ") and "as given: num_trials" in err and "device:" not in err


def test_a_list_flag_with_an_empty_item_is_refused_not_dropped(capsys):
    from boosttune.cli import search as search_cli

    with pytest.raises(SystemExit) as done:
        main(["check", "x.yaml", "--search", "less_bn,,amp"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1
    assert "argument --search: 'less_bn,,amp' has an empty item; expected comma-separated names" in err
    with pytest.raises(SystemExit):
        search_cli.script_parser("resnet8", "").parse_args(["--search", "less_bn,"])
    assert "has an empty item" in capsys.readouterr().err
