"""The ``boosttune`` command: validate, check, probe, trial, tune, bench, verify, export, report, methods, dashboard."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from boosttune.builtin.data import check_data
from boosttune.check import check_experiment
from boosttune.cli.args import (
    EXIT_ANSWERED,
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_NOT_HELD,
    ArgumentParser,
    FieldsFormatter,
    add_deprecated_alias,
    fields_epilog,
    interrupted,
    quiet_mindspore,
)
from boosttune.cli.search import (
    BASE_FLAGS,
    DEVICE_HELP,
    FIELDS,
    OUTPUT_HELP,
    SMOKE_DATA,
    SMOKE_FIELDS,
    SMOKE_HELP,
    script_parser,
)
from boosttune.config import load_document, parse_boost_config, split_boost_document
from boosttune.config.boost import BOOST_LEVEL_NAMES
from boosttune.config.experiment import ExperimentConfig, VerifyConfig, parse_experiment
from boosttune.config.io import load_yaml_text
from boosttune.config.recipe import (
    DataConfig,
    LossScaleConfig,
    ModelEntry,
    OptimizerConfig,
    TrialRecipe,
    parse_recipe,
)
from boosttune.devices import AUTO, DEVICE_CHOICES, DEVICE_NAMES
from boosttune.errors import BoosttuneError, ConfigError, DataError, TrialError
from boosttune.execution.provenance import record_run_info
from boosttune.files import check_new_file, claim_output_folder, write_json
from boosttune.probe import check_recipe, load_cached, run_probe
from boosttune.probe.calibrate import run_calibration
from boosttune.runtime import apply_runtime_env
from boosttune.search.dashboard import serve
from boosttune.trial.runner import run_trial

__all__ = ["main"]


def _parse_value(text: str) -> Any:
    """``--set`` values are YAML scalars: 0.1, true, O1, [1, 2]."""
    try:
        return load_yaml_text(text)
    except yaml.YAMLError:
        return text


def _apply_overrides(document: dict[str, Any], assignments: list[str]) -> dict[str, Any]:
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set: {assignment!r} is invalid; expected KEY=VALUE, e.g. optimizer.learning_rate=0.05")
        node = document
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set: {key} cannot be set: {part} is not a mapping")
            node = child
        node[parts[-1]] = _parse_value(value)
    return document


def cmd_validate(args: argparse.Namespace) -> int:
    document = load_document(args.file)
    if isinstance(document, dict) and "base" in document:  # an experiment file: its own check builds the model too
        raise ConfigError(f"{args.file}: an experiment file (it has base:); validate reads a boost_config_dict. "
                          f"Check an experiment with: boosttune check {args.file}")
    boost_dict, level = split_boost_document(document, args.level)
    config = parse_boost_config(boost_dict, level)
    bare = level == "O0" and args.level is None and isinstance(boost_dict, dict) and bool(boost_dict)
    others = {}
    if bare:  # MindSpore ignores the dict at O0: check what it does at the levels that apply it
        for other in BOOST_LEVEL_NAMES[1:]:
            try:
                others[other] = parse_boost_config(boost_dict, other).effective()
            except ConfigError as e:
                raise ConfigError(f"{e} (at boost_level {other}; at O0, the default for a bare dict, MindSpore "
                                  f"ignores the dict, but O1 and O2 apply it)") from None
    print(config.effective().describe())
    for other, effective in others.items():
        print(f"\nif used with boost_level {other}:")
        print(effective.describe())
    if args.canonical:
        print(json.dumps({"boost_level": config.level, "boost_config_dict": config.to_boost_config_dict()}, indent=2))
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    report = run_probe(args.device, refresh=args.refresh, log=log)
    speed = None
    if args.speed:
        speed = run_calibration(report, refresh=args.refresh, log=log)  # on the built-in stand-in network
    if args.json:
        print(json.dumps({**report.to_dict(), **({"speed": speed.to_dict()} if speed else {})}, indent=2))
    else:
        print(report.table())
        if speed is not None:
            print()
            print(speed.table())
    return 0


def _prepare_runtime(device: str, log) -> Any:
    """Probe (or read the cache) and set the runtime environment before MindSpore is imported."""
    report = load_cached(device)
    if report is None:
        log(f"no capability probe cached for {device}: probing once (about 20 s)")
        report = run_probe(device, log=log)
    apply_runtime_env(report.runtime_env)
    return report


def cmd_trial(args: argparse.Namespace) -> int:
    output = check_new_file(args.output, "--output") if args.output else None  # before training, not after
    document = load_document(args.recipe) if args.recipe else {}
    if not isinstance(document, dict):
        raise ConfigError(f"{args.recipe}: expected a mapping of recipe fields, got {type(document).__name__}")
    recipe = parse_recipe(_apply_overrides(document, args.set or []))
    if recipe.builtin:  # a builder reads its own data, in the trial
        check_data(recipe)
    else:  # the builder's module is found from the folder the command runs in, as `python -m` would find it
        import os

        sys.path.insert(0, os.getcwd())

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    report = _prepare_runtime(recipe.device_target, log)
    check_recipe(recipe, report)
    for note in recipe.boost.effective().notes:
        log(f"note: {note}")

    log(f"trial: {recipe.model_name}{f' on {recipe.data.name}' if recipe.builtin else ''}, boost_level {recipe.boost_level}, "
        f"{recipe.epochs} epoch(s), batch {recipe.batch_size}, seed {recipe.seed}")
    result = run_trial(recipe, work_dir=args.work_dir, log=log)
    m = result.metrics
    print(f"status: {result.status}" + (f" ({result.reason})" if result.reason else ""))
    sure = f", +-{100 * m['throughput_rse']:.1f}% standard error" if m.get("throughput_rse") else ""
    print(f"throughput: {m['throughput_sps']:.1f} samples/s over {m['steady_steps']} steady steps{sure}"
          if m["throughput_sps"] else "throughput: n/a (too few steps)")
    print(f"compile: {m['compile_s']:.2f} s ({m['compile_steps']} graph(s)); val_{m['objective']}: {m['objective_value']}; "
          f"val_loss: {m['val_loss']}; peak RSS: {m['peak_rss_mb']:.0f} MB")
    print(f"boost built by MindSpore: {result.observed_boost}")
    print(f"runtime: {result.environment['runtime_env']}")
    if output is not None:
        write_json(output, result.to_dict())
        print(f"result written to {output}")
    return 0


def _results_folder(results: str) -> Path:
    """The folder of a results argument (a folder, or a results.parquet/.csv file)."""
    path = Path(results)
    if path.is_dir():
        return path
    if path.suffix not in (".parquet", ".csv"):
        raise DataError(f"{path}: expected a results folder, a .parquet or a .csv file")
    if not path.is_file():
        raise DataError(f"{path}: no such results file")
    return path.parent


def cmd_export(args: argparse.Namespace) -> int:
    from boosttune.finish import finish_run
    from boosttune.outputs.judged import read_judged

    folder = _results_folder(args.results)
    judged = read_judged(args.results, args.max_drop)  # judged as the run itself was, unless --max-drop says otherwise
    if judged.best is None:
        raise DataError(f"{folder}: no finished O0 baseline to compare with, so there is no recipe to export; "
                        "rerun the experiment")
    target = claim_output_folder(args.output, "--output", "boosttune export") if args.output else folder
    rejudged = args.max_drop is not None and not args.output  # in place: every file tells the new decision
    if rejudged:
        record_run_info(folder, max_drop_rejudged=args.max_drop)
    finished = finish_run(judged, folder, target=target, decision=rejudged, report=rejudged)
    print(f"selected: {judged.best.selection.reason}")
    print(f"boost_config_dict written to {finished.best_config_path}")
    print(f"recipe written to {finished.best_recipe_path}")
    if finished.summary_path is not None:
        print(f"summary written to {finished.summary_path}")
    if finished.report_path is not None:
        print(f"report written to {finished.report_path} (at max_drop {args.max_drop:g})")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from boosttune.finish import finish_run
    from boosttune.outputs.judged import read_judged

    folder = _results_folder(args.results)
    target = claim_output_folder(args.output, "--output", "boosttune report") if args.output else None
    finished = finish_run(read_judged(folder, args.max_drop), folder, target=target, export=False)
    print(f"report written to {finished.report_path} (tables also in report.md)")
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    serve(args.results, host=args.host, port=args.port, log=lambda m: print(m, flush=True))
    return 0


def cmd_methods(args: argparse.Namespace) -> int:
    from boosttune.report.methods import write_method_cards

    written = write_method_cards(args.bench, args.output, searches=tuple(args.search or ()),
                                 log=lambda m: print(m, flush=True))
    print(f"{len(written)} files written to {Path(args.output)}")
    return 0


# Flags of tune and check that set a field of the experiment file: flag -> (attribute, field).
RUN_FLAGS = {"--device": ("device", "base.device_target"), "--workers": ("workers", "workers_per_trial")}


def _add_experiment_arguments(parser: argparse.ArgumentParser, example: str) -> None:
    """The experiment file, its --set overrides and the run flags: what tune and check both read."""
    parser.add_argument("config", help="experiment file (YAML/JSON)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", help=f"override a field, e.g. {example}")
    parser.add_argument("--device", choices=DEVICE_CHOICES, default=None,
                        help=f"{DEVICE_HELP} (default: the file's base.device_target, else auto)")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="data-parallel ranks per trial, one device each (sets workers_per_trial; default: the "
                             "file's, else 1)")
    FIELDS.add_to(parser, file_defaults=True, skip=tuple(RUN_FLAGS))  # the scripts' field flags, the file's defaults
    _add_base_flags(parser)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP + "; over the file's")
    parser.set_defaults(unknown_hint=set_hint)


def _add_base_flags(parser: argparse.ArgumentParser) -> None:
    """The scripts' flags that set a field of base (``--epochs``, ``--planned-epochs``, ...), each as the script
    defines it (type, choices, help), over the file's value: one front door."""
    script = {action.option_strings[0]: action for action in script_parser("resnet8", "")._actions
              if action.option_strings}
    for flag, name in BASE_FLAGS.items():
        action = script[flag]
        choices = [c for c in action.choices if c != AUTO] if action.choices else None
        described = {"--model": "a built-in network (your own builder is base.model.entry)",
                     "--data": "a built-in data set"}.get(flag, action.help)
        parser.add_argument(flag, dest=_base_dest(flag), type=action.type, choices=choices, default=None,
                            metavar=None if choices else flag.lstrip("-").replace("-", "_").upper(),
                            help=f"{described} (sets {name}; default: the file's)")


def _base_dest(flag: str) -> str:
    return "base_" + flag.lstrip("-").replace("-", "_")


# The experiment scripts' flags whose field is not their name (python experiments/resnet.py --help)
SCRIPT_FLAG_FIELDS = {"trials": "num_trials", "learning_rate": "base.optimizer.learning_rate",
                      "time_budget": "time_budget_s", "train_limit": "base.data.train_limit",
                      "val_limit": "base.data.val_limit", "image_size": "base.data.image_size",
                      "dataset": "base.data.name", "data": "base.data.name", "data_path": "base.data.path",
                      "model": "base.model"}


def flag_field(flag: str) -> str | None:
    """The experiment field a flag most likely meant (``--epochs`` -> ``base.epochs``), or None."""
    name = flag.lstrip("-").partition("=")[0].replace("-", "_")
    if name in SCRIPT_FLAG_FIELDS:
        return SCRIPT_FLAG_FIELDS[name]
    for prefix, model in (("", ExperimentConfig), ("base.", TrialRecipe), ("base.optimizer.", OptimizerConfig),
                          ("base.data.", DataConfig)):
        if name in model.model_fields and name != "base":
            return prefix + name
    return None


def set_hint(extras: list[str]) -> str | None:
    """For flags tune and check do not take: the ``--set FIELD=VALUE`` each stands for, when it names a field."""
    hints = []
    for index, token in enumerate(extras):
        if not token.startswith("--"):
            continue
        field = flag_field(token)
        if field is None:
            continue
        value = token.partition("=")[2] or (extras[index + 1] if index + 1 < len(extras)
                                            and not extras[index + 1].startswith("--") else "VALUE")
        hints.append(f"--set {field}={value}")
    return f"the experiment's fields are set as --set FIELD=VALUE: {' '.join(hints)}" if hints else None


def _experiment(args: argparse.Namespace, log=lambda m: print(m, file=sys.stderr, flush=True)) -> ExperimentConfig:
    """The experiment file with its ``--set`` overrides, run flags (``--device``, ``--workers``), field flags, the
    scripts' base flags and ``--smoke``, parsed; ``--device auto`` (the default where the file names no device)
    picks the device the trials' nodes hold, said on ``log``."""
    document = load_document(args.config)
    if not isinstance(document, dict):
        raise ConfigError(f"{args.config}: expected a mapping of experiment fields, got {type(document).__name__}")
    assignments = list(args.set or [])
    flags = {name: (flag, getattr(args, attribute, None)) for flag, (attribute, name) in RUN_FLAGS.items()}
    named = {n: f for f, n in [*FIELDS.on.items(), *FIELDS.off.items(), *FIELDS.switch.items()]}
    flags.update({name: (named[name], value) for name, value in FIELDS.given(args, skip=tuple(RUN_FLAGS)).items()})
    flags.update({name: (flag, getattr(args, _base_dest(flag), None)) for flag, name in BASE_FLAGS.items()})
    for name, (flag, value) in flags.items():  # a flag given: it wins over the file
        if value is None:
            continue
        clash = [a for a in assignments if a.partition("=")[0] == name and a.partition("=")[2] != _yaml_scalar(value)]
        if clash:
            raise ConfigError(f"{flag} {_yaml_scalar(value)} and --set {clash[0]} disagree; give one of them")
        assignments.append(f"{name}={_yaml_scalar(value)}")
    if getattr(args, "smoke", False):
        assignments = _smoke(document, assignments, log)
    document = _apply_overrides(document, assignments)
    base = document.get("base")
    device = base.get("device_target", AUTO) if isinstance(base, dict) else AUTO
    if device != AUTO:
        return parse_experiment(document)
    document = _apply_overrides(document, ["base.device_target=CPU"])
    parse_experiment(document)  # first: what the command line and the file decide is refused before Ray is asked
    from boosttune.execution.capacity import pick_device

    return parse_experiment(_apply_overrides(document, [f"base.device_target={pick_device(log)}"]))


def _smoke(document: dict[str, Any], assignments: list[str], log) -> list[str]:
    """--smoke's sizes over the file's, where no flag or --set gives the field; said in one line."""
    given = {a.partition("=")[0] for a in assignments}
    base = document.get("base") if isinstance(document.get("base"), dict) else {}
    builtin = isinstance(base.get("model", "lenet5"), str)  # a builder of the team's own reads its own data
    sizes = {**SMOKE_FIELDS, **(SMOKE_DATA if builtin else {})}
    kept = {name: value for name, value in sizes.items() if name not in given}
    log("smoke: " + ", ".join(f"{name}={value}" for name, value in kept.items())
        + (f"; as given: {', '.join(sorted(given & set(sizes)))}" if given & set(sizes) else ""))
    return [*assignments, *(f"{name}={value}" for name, value in kept.items())]


def _yaml_scalar(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(_yaml_scalar, value)) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def cmd_check(args: argparse.Namespace) -> int:
    config = _experiment(args)
    report = check_experiment(config, log=lambda m: print(m, file=sys.stderr, flush=True))
    from boosttune.experiment import confirm_capacity  # deferred: loads the stages (pandas, scipy)

    capacity = confirm_capacity(config, report.objective)
    if capacity:
        report.notes.append(capacity)
    print("\n".join(report.lines()))
    print(f"ok: {args.config} is ready for boosttune tune")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:

    if args.resume and not args.output:
        raise ConfigError("--resume: needs --output, the folder of the run to continue")
    log = lambda m: print(m, flush=True)  # noqa: E731
    config = _experiment(args, log)  # first: what the command line alone decides is refused before anything loads
    from boosttune.cli.closing import format_summary  # deferred: loads Ray, MindSpore and pandas
    from boosttune.execution.start import default_output
    from boosttune.experiment import run_experiment

    output = Path(args.output) if args.output else default_output(config.name, log)
    try:
        result = run_experiment(config, output, resume=args.resume, log=log, command=f"boosttune tune {args.config}")
    except KeyboardInterrupt:
        return interrupted("boosttune tune", args.argv, output, "experiment.json")
    print(format_summary(result))
    return EXIT_FAILED if result.aborted_reason else EXIT_ANSWERED


def _seeds(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ConfigError(f"--seed-list: {text!r} is invalid; expected comma-separated integers, e.g. 0,1,2") from None


def cmd_bench(args: argparse.Namespace) -> int:
    from boosttune.bench import parse_bench, recipe_override, run_bench
    from boosttune.outputs.summary import format_confirmed

    document = load_document(args.file)
    if not isinstance(document, dict):
        raise ConfigError(f"{args.file}: expected a mapping of bench fields (base, seeds, recipes), "
                          f"got {type(document).__name__}")
    config = parse_bench(_apply_overrides(document, args.set or []), seeds=_seeds(args.seed_list))
    extra = None
    if args.recipe:
        extra = {"best_recipe": recipe_override(load_document(args.recipe), args.recipe)}
    try:
        confirmed = run_bench(config, args.output, resume=args.resume, extra=extra,
                              log=lambda m: print(m, flush=True), command=f"boosttune bench {args.file}")
    except KeyboardInterrupt:
        return interrupted("boosttune bench", args.argv, args.output, "bench.json")
    print()
    print(format_confirmed(confirmed.summary))
    print(f"\nanswer: {confirmed.selection.reason}")
    print(f"summary: {Path(args.output).resolve() / 'summary.csv'} (runs in confirm.parquet / confirm.csv); "
          f"report: {Path(args.output).resolve() / 'report.html'}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from boosttune.outputs.summary import format_confirmed
    from boosttune.verify import plan_verify, run_verify

    overrides = _apply_overrides({}, args.set or [])
    others = sorted(set(overrides) - {"base"})
    if others:
        raise ConfigError(f"--set: {others[0]} cannot be set here; verify sets the planned job's base.* fields, e.g. "
                          "--set base.data.train_limit=60000")
    if args.seeds is not None and args.seeds < 2:
        raise ConfigError(f"--seeds: {args.seeds} is invalid; allowed: 2 or more paired seeds (an interval needs two)")
    plan = plan_verify(args.run, seeds=args.seeds, planned_epochs=args.planned_epochs, base=overrides.get("base"),
                       recipe=args.recipe)
    output = Path(args.output).resolve() if args.output else plan.default_output
    try:
        verification = run_verify(plan, output, resume=args.resume, log=lambda m: print(m, flush=True),
                                  command=f"boosttune verify {args.run}")
    except KeyboardInterrupt:
        return interrupted("boosttune verify", args.argv, output, "bench.json")
    from boosttune.outputs.summary import load_confirmed

    print()
    print(format_confirmed(load_confirmed(output, verification.max_drop).summary))
    print()
    print(format_verification(verification, plan.objective))
    print(f"\nverify: {verification.line}")
    print(f"written: {output / 'verify.json'}; report: {output / 'report.html'}; the run's report: "
          f"{plan.run / 'report.html'}")
    return {"holds": EXIT_ANSWERED, "does_not_hold": EXIT_NOT_HELD}.get(verification.outcome, EXIT_FAILED)


def format_verification(verification, objective) -> str:
    """The race's prediction beside the planned job's measurement, one line each, and whether they agree."""
    predicted, measured = verification.predicted, verification.measured
    speed = {True: "within 5% of", False: "more than 5% off", None: "not comparable with"}[verification.speed_agrees]
    gain = {True: "inside", False: "outside", None: "not comparable with"}[verification.gain_agrees]
    return "\n".join([
        f"{verification.recipe} against O0 at the {verification.planned_epochs}-epoch job:",
        f"  predicted by the race ({predicted.seeds} paired seed(s)): {predicted.words(objective)}",
        f"  measured at the planned job ({measured.seeds} fresh paired seed(s)): {measured.words(objective)}",
        f"  the predicted per-job speed-up is {speed} the measured one; the predicted {objective.noun} change is "
        f"{gain} the measured interval"])


def _port(text: str) -> int:
    """A TCP port, 1 to 65535."""
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port; allowed: 1 to 65535")
    return port


def _add_validate(sub) -> None:
    validate = sub.add_parser(
        "validate", help="check a boost_config_dict (JSON/YAML) and print what MindSpore will apply",
        description="Validate a boost_config_dict file strictly and print the effective configuration "
                    "MindSpore 2.10 will apply. The file is either a bare boost_config_dict or "
                    "{boost_level: O1, boost_config_dict: {...}}. Exit 0 if valid, 2 with a one-line error if not.",
    )
    validate.add_argument("file", help="JSON or YAML file")
    validate.add_argument("--level", choices=["O0", "O1", "O2"], default=None,
                          help="boost_level for a bare boost_config_dict (default: O0, or the file's boost_level)")
    validate.add_argument("--canonical", action="store_true",
                          help="also print the canonical {boost_level, boost_config_dict} JSON")
    validate.set_defaults(func=cmd_validate)


def _add_probe(sub) -> None:
    probe = sub.add_parser(
        "probe", help="find which knobs this device supports and the fastest CPU runtime settings",
        description="Try every boost/amp/loss-scale/optimizer knob with a tiny real compile, time oneDNN's "
                    "instruction sets, and cache the result per device, CPU and MindSpore version.",
    )
    probe.add_argument("--device", choices=DEVICE_NAMES, default="CPU", help="device target (default CPU)")
    probe.add_argument("--refresh", action="store_true", help="probe again even if a cached result exists")
    probe.add_argument("--speed", action="store_true",
                       help="also time each amp level and boost algorithm against O0 on a small ResNet (about a "
                            "minute, cached; an experiment times them on its own network): the knobs clearly slower "
                            "here are left out of the default search")
    probe.add_argument("--json", action="store_true", help="print the report as JSON")
    probe.set_defaults(func=cmd_probe)


def _add_trial(sub) -> None:
    trial = sub.add_parser(
        "trial", help="train and evaluate one recipe and report honest speed and accuracy",
        description="Run one MindSpore training trial from a recipe file (JSON/YAML), with KEY=VALUE overrides. "
                    "Reports compile time apart, steady-state throughput (warm-up excluded), validation "
                    "accuracy, peak memory and what MindSpore actually built.",
    )
    trial.add_argument("recipe", nargs="?", help="recipe file (JSON/YAML); omit for defaults (LeNet5 on digits)")
    trial.add_argument("--set", action="append", metavar="KEY=VALUE",
                       help="override a recipe field, e.g. --set boost_level=O1 --set data.name=fashion_mnist")
    trial.add_argument("--output", help="write the full result as JSON to this new file (an existing one is refused)")
    trial.add_argument("--work-dir", default=None, help="folder for DimReduce's stage-1 checkpoints (default: a temp folder)")
    trial.set_defaults(func=cmd_trial)


def _experiment_fields() -> str:
    """Every field a FILE or ``--set`` takes: the experiment's, its base recipe's (``base.*``, the nested ones by
    their dotted names) and ``verify.*``."""
    base = [name for name in TrialRecipe.model_fields if name not in ("boost_level", "boost_config_dict")]
    return "\n".join([
        fields_epilog(ExperimentConfig, "FILE fields, each also --set FIELD=VALUE "
                                        "(boosttune.config.experiment.ExperimentConfig):"),
        "",
        fields_epilog(TrialRecipe, "base.* fields: the O0 recipe every trial starts from (boosttune.config.recipe."
                                   "TrialRecipe; boost_level and boost_config_dict are the search's, never base's):",
                      names=base, prefix="base.", defaults={"device_target": f"{AUTO} (--device)"}),
        fields_epilog(ModelEntry, "base.model.*, a builder of your own:", prefix="base.model."),
        fields_epilog(DataConfig, "base.data.*, a built-in data set:", prefix="base.data."),
        fields_epilog(OptimizerConfig, "base.optimizer.*:", prefix="base.optimizer."),
        fields_epilog(LossScaleConfig, "base.loss_scale.*:", prefix="base.loss_scale."),
        "",
        fields_epilog(VerifyConfig, "verify.* fields (boosttune verify's planned job):", prefix="verify."),
    ])


def _add_tune(sub) -> None:
    tune_cmd = sub.add_parser(
        "tune", help="search boost recipes with Ray Tune + Optuna from an experiment file",
        formatter_class=FieldsFormatter, epilog_from=_experiment_fields,
        description="Run a speed-vs-objective search (the builder's objective: accuracy for the built-in models) "
                    "from a YAML/JSON experiment file (its fields below), then confirm the best recipes over paired "
                    "seeds. Knobs measured clearly slower than O0 on this device are left out unless named in "
                    "search or prune_slow is false. Joins the Ray cluster in RAY_ADDRESS (or the one `ray start` "
                    "runs on this machine), else starts a local one.",
    )
    _add_experiment_arguments(tune_cmd, "num_trials=20")
    tune_cmd.add_argument("--output", help=OUTPUT_HELP.format(name="<name>"))
    tune_cmd.add_argument("--resume", action="store_true", help="continue the interrupted experiment in --output")
    tune_cmd.set_defaults(func=cmd_tune)


def _add_check(sub) -> None:
    check = sub.add_parser(
        "check", help="check an experiment file and its model builder in seconds, with no Ray cluster",
        formatter_class=FieldsFormatter, epilog_from=_experiment_fields,
        description="The checks boosttune tune makes before it starts Ray, on their own: parse the experiment file, "
                    "import the builder from the project's folder (working_dir, py_modules) as the workers will, "
                    "build the parts, train one step and evaluate one batch, check the run gives a speed figure, and "
                    "check each knob the search would use against the network, the optimizer and the device's "
                    "cached capability probe. Prints the device, the objective and its direction, the steps per "
                    "epoch, what would be searched and what is left out and why. Exit 0, or 2 with a one-line error.",
    )
    _add_experiment_arguments(check, "base.epochs=3")
    check.set_defaults(func=cmd_check)


def _add_export(sub) -> None:
    export = sub.add_parser(
        "export", help="write the best recipe's boost_config_dict and recipe as JSON",
        description="Select the best recipe and write best_boost_config.json (what mindspore.Model takes as "
                    "boost_config_dict) and best_recipe.json. With confirm runs in RESULTS (an experiment's "
                    "confirm stage, or a bench folder): the race decides, replayed from those paired runs at "
                    "--max-drop: the fastest recipe per job that won it (shown faster and no more than --max-drop "
                    "worse, at the race's level), with its intervals; a winner whose per-job speed-up is under "
                    "1.05x (its point estimate) is a tie "
                    "and O0 is kept unless the run preferred ties. Without: the fastest finished trial within "
                    "--max-drop of the O0 baseline on its one seed. The baseline itself when nothing qualifies. "
                    "The objective is the one the runs were judged on (accuracy for the built-in models, a "
                    "builder's own metric).",
    )
    export.add_argument("results", metavar="RESULTS", help="results folder, or its results.parquet / results.csv")
    export.add_argument("--max-drop", dest="max_drop", type=float, default=None,
                        help="how much worse than the baseline's objective is still accepted, in the objective's "
                             "units: points for accuracy, the metric's own units for a loss or MAE (default: the "
                             "max_drop the run was judged at); with confirm runs in RESULTS the race is replayed at it. "
                             "Without --output the folder is re-judged in place: summary.csv and the report are "
                             "rewritten too, and later reports and exports keep this margin")
    add_deprecated_alias(export, "--tolerance", "--max-drop", type=float)
    export.add_argument("--output", metavar="DIR", default=None, help="folder for the two files: RESULTS, or a new or empty folder (default: RESULTS)")
    export.set_defaults(func=cmd_export)


def _add_report(sub) -> None:
    report = sub.add_parser(
        "report", help="write report.html (self-contained, opens offline) and report.md from a results folder",
        description="Answer 'which boost recipe should I use here, and how sure are we?' from the tables of an "
                    "experiment or a bench folder (results, confirm runs, summary): the answer with its intervals, "
                    "speed vs accuracy with the Pareto front and the confirmed intervals, MindSpore's O1/O2 claims "
                    "judged, an ablation of each method, the search (hypervolume, parameter importance, parallel "
                    "coordinates, knobs left out), learning curves, a timeline and every failed or stopped run. "
                    "Written at the end of every experiment and bench; run it again to re-judge at another "
                    "--max-drop.",
    )
    report.add_argument("results", metavar="RESULTS", help="an experiment or bench folder (or its results.parquet)")
    report.add_argument("--output", metavar="DIR", default=None,
                        help="folder for report.html and report.md (default: RESULTS)")
    report.add_argument("--max-drop", dest="max_drop", type=float, default=None,
                        help="how much worse than the baseline's objective is still accepted, in its units "
                             "(points for accuracy; default: the run's own max_drop)")
    add_deprecated_alias(report, "--tolerance", "--max-drop", type=float)
    report.set_defaults(func=cmd_report)


def _add_dashboard(sub) -> None:
    dashboard = sub.add_parser(
        "dashboard", help="serve optuna-dashboard on an experiment folder's Optuna study",
        description="Serve optuna-dashboard (history, Pareto front, parameter importance, every trial's "
                    "parameters and values) on the Optuna study of an experiment folder: the storage its "
                    "experiment.json names, else its optuna.db. Serves until Ctrl-C. Listens on 127.0.0.1 (this "
                    "machine only) unless --host says otherwise; from a laptop, tunnel to it with "
                    "ssh -L 8080:127.0.0.1:8080 user@head.",
    )
    dashboard.add_argument("results", metavar="RESULTS_DIR",
                           help="an experiment folder (the --output of boosttune tune or experiments/*.py)")
    dashboard.add_argument("--host", default="127.0.0.1",
                           help="address to listen on (default 127.0.0.1, this machine only); any other host, "
                                "e.g. 0.0.0.0, exposes the unauthenticated dashboard to the network")
    dashboard.add_argument("--port", type=_port, default=8080, help="port to listen on (default 8080)")
    dashboard.set_defaults(func=cmd_dashboard)


def _add_methods(sub) -> None:
    methods = sub.add_parser(
        "methods", help="write a method card per boost algorithm (and amp, loss scale, presets) from a bench",
        description="Generate reports/methods/<method>.md: what the method does in MindSpore 2.10 (from its "
                    "source), its knobs and the ranges boosttune searches, the speed-up and accuracy delta a bench "
                    "measured here with paired-seed intervals and the command that produced them, what this device "
                    "does not support, and a verdict ('did not help here' included). Run boosttune bench "
                    "benchmarks/methods.yaml --output runs/bench-methods first.",
    )
    methods.add_argument("bench", metavar="BENCH_DIR", help="a finished bench folder (boosttune bench --output)")
    methods.add_argument("--output", metavar="DIR", default="reports/methods",
                         help="folder for the cards and their README.md index (default: reports/methods)")
    methods.add_argument("--search", metavar="EXPERIMENT_DIR", action="append",
                         help="an experiment folder whose search shows which knob values worked (repeatable)")
    methods.set_defaults(func=cmd_methods)


def _bench_fields() -> str:
    from boosttune.bench import BenchConfig

    return fields_epilog(BenchConfig, "FILE fields (boosttune.bench.BenchConfig):")


def _add_bench(sub) -> None:
    bench = sub.add_parser(
        "bench", help="check a claim: a fixed matrix of recipes over paired, interleaved seeds",
        formatter_class=FieldsFormatter, epilog_from=_bench_fields,
        description="Train a fixed matrix of recipes over the same seeds (paired: one seed per round for every "
                    "recipe; interleaved: round by round, the order rotated), through Ray Train, and report each "
                    "recipe's speed-up and objective delta vs O0 with 95% intervals, a paired test and a verdict. "
                    "Writes summary.csv, confirm.parquet/.csv and report.html into --output.",
    )
    bench.add_argument("file", help="bench file (YAML/JSON; its fields below)")
    bench.add_argument("--output", required=True, metavar="DIR",
                       help="folder for the runs, summary and report: new or empty (--resume continues the bench in it)")
    bench.add_argument("--seed-list", default=None, metavar="S1,S2,...",
                       help="the paired seeds themselves, comma-separated, overriding the file's seeds (e.g. 0,1,2: "
                            "three rounds); a list, where tune's confirm_seeds is a count")
    add_deprecated_alias(bench, "--seeds", "--seed-list")
    bench.add_argument("--recipe", default=None, metavar="BEST_RECIPE_JSON",
                       help="also bench an exported best_recipe.json (as recipe 'best_recipe')")
    bench.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field, e.g. base.epochs=4")
    bench.add_argument("--resume", action="store_true", help="continue the interrupted bench in --output")
    bench.set_defaults(func=cmd_bench)


def _add_verify(sub) -> None:
    verify = sub.add_parser(
        "verify", help="check that a tuning run's answer holds at your planned job (its length, its full data)",
        description="Train a tuning run's answer and O0 at the job the team plans (--planned-epochs, and the full "
                    "data where --set base.data... or the experiment's verify: block says so) on fresh paired seeds, "
                    "none the run used, through the bench's machinery (epochs in turn on one machine, every slot on a "
                    "cluster, --resume). Prints what the run's race predicted for that job beside what it measured "
                    "(per-job speed-up and objective change, each with its 95% interval) and one line: whether the "
                    "answer holds. A keep-O0 answer is verified with the fastest recipe the race dropped. Writes "
                    "verify.json and a report into --output; the run's report gains a section. Exit 0: it holds; 3: "
                    "it does not; 1: the runs could not tell; 2: bad input.",
    )
    verify.add_argument("run", metavar="RUN", help="a tuning run's folder (the --output of boosttune tune or "
                                                   "experiments/*.py), with a confirm stage")
    verify.add_argument("--seeds", type=int, default=None, metavar="N",
                        help="fresh paired seeds (default: the experiment's verify.seeds, 2; 5 for a claim)")
    verify.add_argument("--planned-epochs", dest="planned_epochs", type=int, default=None, metavar="E",
                        help="epochs of the planned job (default: the experiment's verify.planned_epochs, else the "
                             "run's planned_epochs, else its epochs)")
    verify.add_argument("--recipe", default=None, metavar="NAME",
                        help="another recipe the run's confirm stage raced (its name in summary.csv), trained against "
                             "O0 instead of the answer's")
    verify.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="a field of the planned job's base, laid over the run's, e.g. base.data.train_limit=60000")
    verify.add_argument("--output", metavar="DIR", default=None,
                        help="folder for the runs, verify.json and report: new or empty, or the interrupted one with "
                             "--resume (default: RUN/verify-<E>ep)")
    verify.add_argument("--resume", action="store_true", help="continue the interrupted verification in --output")
    verify.set_defaults(func=cmd_verify)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="boosttune",
        description="Benchmark and tune MindSpore boost recipes (LessBN, GradientFreeze, ...) for speed vs accuracy.",
    )
    parser.add_argument("--version", action="version", version=f"boosttune {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_validate, _add_check, _add_probe, _add_trial, _add_tune, _add_export, _add_report, _add_dashboard,
                _add_methods, _add_bench, _add_verify):
        add(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("boosttune")
    except PackageNotFoundError:  # run from a checkout that was never installed
        from boosttune import __version__

        return __version__


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet_mindspore("4" if args.command == "check" else "3")
    args.argv = ["boosttune", *(sys.argv[1:] if argv is None else argv)]
    try:
        return args.func(args)
    except TrialError as e:  # the run failed (a diverged baseline, a lost cluster): not the input's fault
        print(f"boosttune: error: {e}", file=sys.stderr)
        return EXIT_FAILED
    except BoosttuneError as e:
        print(f"boosttune: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("boosttune: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
