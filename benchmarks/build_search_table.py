"""Build the tabular benchmark that benchmarks/search_efficiency.py replays: real trainings, measured once.

Every row is one recipe of the search space trained for the main job's budget (ResNet-8 with BatchNorm,
Fashion-MNIST, 4,096 training and 2,000 validation images at 16x16, batch 64, 10 epochs, seed 0), each
in a fresh process, one at a time. Per epoch it keeps the cumulative training time (graph compile
included), the steady-state throughput so far and the validation accuracy, so a replay can stop a
trial at any epoch and charge exactly the compute it used.

The rows: the O0 baseline again every 10 rows (speed-ups are ratios to the O0 runs nearest in time,
so a drift of the machine over the hour does not bias them), the O1-equivalent preset, the informed
start points, then recipes drawn at random alternately from the full space and from the space without
the knobs that are slow on a CPU (fp16 amp, DimReduce, gradient accumulation), so both kinds of
search have recipes to land on. Rows are appended as they finish; rerunning the command continues.

    python benchmarks/build_search_table.py --rows 110          # about an hour and a half on 2 cores
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _run import probe_env, trial_or_failure  # noqa: E402

DEFAULT_OUT = HERE / "data" / "search_table"
BASE = {
    "model": "resnet8", "batch_size": 64, "epochs": 10, "seed": 0,
    "data": {"name": "fashion_mnist", "train_limit": 4096, "val_limit": 2000, "image_size": 16},
    "optimizer": {"name": "momentum", "learning_rate": 0.05, "lr_schedule": "cosine"},
}
SLOW_ON_CPU = ("amp", "dim_reduce", "grad_accumulation")  # left out of the "pruned" draws
RECIPE_FIELDS = ["row", "source", "label", "key", "status", "reason", "params", "compile_s", "stage1_s", "wall_s",
                 "started_unix"]
EPOCH_FIELDS = ["row", "epoch", "train_s", "throughput_sps", "val_acc", "train_loss"]
REF_EVERY = 10


def space_context():
    from boosttune.builtin.data import load_dataset
    from boosttune.builtin.models import build_network
    from boosttune.config.recipe import parse_recipe
    from boosttune.probe import run_probe
    from boosttune.space import SpaceContext

    recipe = parse_recipe(BASE)
    data = load_dataset(recipe.data, 16)
    steps = len(data.train) // recipe.batch_size
    network = build_network(recipe.model, data.num_classes, data.channels, 16)
    report = run_probe("CPU", log=lambda m: print(m, file=sys.stderr))
    return SpaceContext(total_steps=steps * recipe.epochs, param_count=len(network.trainable_params()),
                        unsupported=frozenset(c.knob for c in report.unsupported()),
                        base_learning_rate=recipe.optimizer.learning_rate)


def design(ctx, rows: int) -> list[tuple[str, str, dict]]:
    """(source, label, params) for every row, in the order they are trained."""
    import optuna

    from boosttune.space import informed_points, preset_params, suggest_recipe

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    fixed = [("preset", "O1-equivalent", preset_params("O1", ctx, BASE))]
    fixed += [("informed", label, params) for label, params in informed_points(ctx, BASE)]
    draws = []
    pruned = dataclasses.replace(ctx, enabled=frozenset(("less_bn", "grad_freeze", "loss_scale", "optimizer")))
    studies = {"full": (optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1)), ctx),
               "pruned": (optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=2)), pruned)}
    for i in range(rows):
        source = "full" if i % 2 == 0 else "pruned"
        study, space = studies[source]
        trial = study.ask()
        suggest_recipe(trial, space, BASE)
        params = dict(trial.params)
        if source == "pruned":  # the knobs left out keep the base recipe's values, said explicitly
            params = {**preset_params("O0", ctx, BASE), **params}
        draws.append((source, f"{source}-{i // 2}", params))
    ordered, queue = [], fixed + draws
    while len(ordered) < rows:
        if len(ordered) % REF_EVERY == 0:
            ordered.append(("ref", "O0", preset_params("O0", ctx, BASE)))
        else:
            ordered.append(queue.pop(0))
    return ordered


def train(params: dict, ctx, env: dict, timeout: float) -> tuple[dict, list[dict]]:
    from boosttune.space import recipe_from_params

    recipe = recipe_from_params(params, ctx, BASE).to_dict()
    result = trial_or_failure(recipe, env, timeout)
    if "metrics" not in result:  # it failed before writing a result
        return result, []
    metrics = result["metrics"]
    summary = {"status": result["status"], "reason": result.get("reason") or "",
               "compile_s": metrics.get("compile_s"), "stage1_s": metrics.get("stage1_s"), "wall_s": metrics.get("wall_s")}
    epochs = [{"epoch": e["epoch"], "train_s": e["train_s"], "throughput_sps": e.get("throughput_sps"),
               "val_acc": e.get("val_acc"), "train_loss": e.get("train_loss")} for e in result["epochs"]]
    return summary, epochs


def _done_rows(path: Path) -> set[int]:
    if not path.is_file():
        return set()
    with path.open() as f:
        return {int(r["row"]) for r in csv.DictReader(f)}


def _append(path: Path, fields: list[str], rows: list[dict]) -> None:
    new = not path.is_file()
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerows(rows)
        f.flush()
        os.fsync(f.fileno())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--rows", type=int, default=110, help="rows in all, O0 reference runs included (default 110)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"folder of the table (default {DEFAULT_OUT})")
    p.add_argument("--timeout", type=float, default=600, help="seconds before one training is given up as failed")
    p.add_argument("--pause-file", type=Path, default=Path(tempfile.gettempdir()) / "boosttune_table.pause",
                   help="while this file exists no new row starts (so other work does not skew the timings)")
    p.add_argument("--redo", default="", help="comma-separated rows to measure again (e.g. taken on a busy machine)")
    args = p.parse_args(argv)

    from boosttune.space import equivalence_key, recipe_from_params

    args.out.mkdir(parents=True, exist_ok=True)
    ctx = space_context()
    env = probe_env()
    meta = {"command": "python benchmarks/build_search_table.py " + " ".join(argv or sys.argv[1:]),
            "base": BASE, "ref_every": REF_EVERY, "slow_on_cpu_left_out_of_pruned_draws": list(SLOW_ON_CPU),
            "space_context": {"total_steps": ctx.total_steps, "param_count": ctx.param_count,
                              "unsupported": sorted(ctx.unsupported)},
            "runtime_env": {k: env[k] for k in ("ONEDNN_MAX_CPU_ISA",) if k in env}}
    (args.out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    recipes_csv, epochs_csv = args.out / "recipes.csv", args.out / "epochs.csv"
    redo = {int(r) for r in args.redo.split(",") if r.strip()}
    if redo:
        for path in (recipes_csv, epochs_csv):
            with path.open() as f:
                kept = [r for r in csv.DictReader(f) if int(r["row"]) not in redo]
            path.unlink()
            _append(path, RECIPE_FIELDS if path == recipes_csv else EPOCH_FIELDS, kept)
    done = _done_rows(recipes_csv)
    plan = design(ctx, args.rows)
    start = time.perf_counter()
    for row, (source, label, params) in enumerate(plan):
        if row in done:
            continue
        while args.pause_file.exists():
            time.sleep(2)
        key = equivalence_key(recipe_from_params(params, ctx, BASE))
        started = time.time()
        summary, epochs = train(params, ctx, env, args.timeout)
        _append(epochs_csv, EPOCH_FIELDS, [{"row": row, **e} for e in epochs])
        _append(recipes_csv, RECIPE_FIELDS, [{"row": row, "source": source, "label": label, "key": key,
                                             "params": json.dumps(params, sort_keys=True),
                                             "started_unix": round(started, 1), **summary}])
        last = epochs[-1] if epochs else {}
        print(f"[{row + 1}/{len(plan)} {time.perf_counter() - start:.0f} s] {label}: {summary['status']}"
              + (f", {last.get('throughput_sps') or 0:.0f} samples/s, val_acc {last.get('val_acc') or 0:.4f}"
                 if epochs else f" ({summary.get('reason')})"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
