"""Build the table that benchmarks/confirm_reliability.py replays: real paired runs, every recipe on every seed.

The protocol is the main job's confirm stage (``python experiments/resnet.py``): ResNet-8 with BatchNorm,
Fashion-MNIST, 4,096 training images at 16x16, batch 64, 10 epochs; the learning curve on the 2,000-image
validation slice, the run's accuracy from one evaluation after the last epoch on every held-out image
(9,984 of the 10,000 test images in full batches), as the confirm stage now does. Rounds are paired and
interleaved as in the confirm stage: every recipe of a round trains with the round's seed, the order
rotated each round, so the machine's drift hits every recipe alike; the O0 baseline is one of the recipes
of every round. Each run is ``boosttune trial`` in a fresh process (the code a Ray Train worker runs;
Ray's per-run set-up is not part of a run's throughput or accuracy, and is issue 20's concern).

The recipes: O0, the O1 preset as a CPU runs it (LessBN + GradientFreeze 0.7; O2 adds AdaSum, which
trains the same as O1 on one rank), GradientFreeze alone at freeze_p 0.3/0.5/0.7, LessBN alone, one
recipe with gradient accumulation (slow on a CPU), and three recipes of the search table
(benchmarks/data/search_table): a fast one that loses accuracy and two close to the baseline.
Rows are appended as runs finish; rerunning the command continues where it stopped.

    python benchmarks/build_confirm_table.py --seeds 10        # about an hour on 2 cores (100 runs)
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _run import probe_env, trial_or_failure  # noqa: E402
from build_search_table import _append, space_context  # noqa: E402

DEFAULT_OUT = HERE / "data" / "confirm_table"
SEARCH_TABLE = HERE / "data" / "search_table" / "recipes.csv"
BASE = {
    "model": "resnet8", "batch_size": 64, "epochs": 10, "seed": 0,
    "data": {"name": "fashion_mnist", "train_limit": 4096, "val_limit": 2000, "image_size": 16,
             "final_val_limit": "all"},
    "optimizer": {"name": "momentum", "learning_rate": 0.05, "lr_schedule": "cosine"},
}
FROM_SEARCH_TABLE = ("full-11", "pruned-6", "pruned-30", "pruned-39")
FIELDS = ["round", "seed", "recipe", "status", "reason", "throughput_sps", "val_acc", "epoch_val_acc",
          "final_eval_samples", "compile_s", "train_s", "eval_s", "wall_s", "started_unix"]


def recipes(ctx) -> dict[str, dict]:
    """name -> space params, in the table's order (O0 first)."""
    from boosttune.space import informed_points, preset_params

    chosen = {"O0": preset_params("O0", ctx, BASE), "O1": preset_params("O1", ctx, BASE)}
    chosen.update({label: params for label, params in informed_points(ctx, BASE)
                   if label in ("grad_freeze p=0.3", "grad_freeze p=0.5", "grad_freeze p=0.7", "less_bn")})
    with SEARCH_TABLE.open() as f:
        rows = {r["label"]: r for r in csv.DictReader(f)}
    for label in FROM_SEARCH_TABLE:
        chosen[f"search {label}"] = json.loads(rows[label]["params"])
    return chosen


def schedule(names: list[str], seeds: list[int]) -> list[tuple[int, int, str]]:
    """(round, seed, recipe) in run order: every recipe once per round, the order rotated each round."""
    return [(index, seed, names[(index + k) % len(names)]) for index, seed in enumerate(seeds)
            for k in range(len(names))]


def train(recipe: dict, env: dict, timeout: float) -> dict:
    result = trial_or_failure(recipe, env, timeout)
    if "metrics" not in result:  # it failed before writing a result
        return result
    m = result["metrics"]
    return {"status": result["status"], "reason": result.get("reason") or "", "throughput_sps": m["throughput_sps"],
            "val_acc": m["objective_value"], "epoch_val_acc": m.get("epoch_objective_value"),
            "final_eval_samples": m.get("final_eval_samples"), "compile_s": m.get("compile_s"),
            "train_s": m.get("train_s"), "eval_s": m.get("eval_s"), "wall_s": m.get("wall_s")}


def _done(path: Path) -> set[tuple[int, str]]:
    if not path.is_file():
        return set()
    with path.open() as f:
        return {(int(r["round"]), r["recipe"]) for r in csv.DictReader(f)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--seeds", type=int, default=10, help="paired rounds, one seed each (default 10)")
    p.add_argument("--first-seed", type=int, default=1, help="the first round's seed; rounds count up (default 1)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"folder of the table (default {DEFAULT_OUT})")
    p.add_argument("--timeout", type=float, default=600, help="seconds before one training is given up as failed")
    p.add_argument("--pause-file", type=Path, default=Path(tempfile.gettempdir()) / "boosttune_table.pause",
                   help="while this file exists no new run starts (so other work does not skew the timings)")
    p.add_argument("--redo", default="", help="runs to measure again, as ROUND:RECIPE;... (1-based rounds), e.g. "
                                              "taken while the machine was busy")
    args = p.parse_args(argv)

    from boosttune.space import recipe_from_params

    args.out.mkdir(parents=True, exist_ok=True)
    ctx = space_context()
    env = probe_env()
    chosen = recipes(ctx)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    meta = {"command": "python benchmarks/build_confirm_table.py " + " ".join(argv or sys.argv[1:]),
            "base": BASE, "seeds": seeds, "recipes": chosen,
            "runtime_env": {k: env[k] for k in ("ONEDNN_MAX_CPU_ISA",) if k in env},
            "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    earlier = json.loads((args.out / "meta.json").read_text()) if (args.out / "meta.json").is_file() else None
    if earlier is not None:  # a continued or redone table: the first command stays, the later ones are listed
        meta = {**earlier, "continued_with": [*earlier.get("continued_with", []), meta["command"]]}
    (args.out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    table = args.out / "runs.csv"
    redo = {(int(r.split(":", 1)[0]) - 1, r.split(":", 1)[1]) for r in args.redo.split(";") if r.strip()}
    if redo and table.is_file():
        with table.open() as f:
            kept = [r for r in csv.DictReader(f) if (int(r["round"]), r["recipe"]) not in redo]
        table.unlink()
        _append(table, FIELDS, kept)
    done = _done(table)
    plan = schedule(list(chosen), seeds)
    start = time.perf_counter()
    for n, (index, seed, name) in enumerate(plan, start=1):
        if (index, name) in done:
            continue
        while args.pause_file.exists():
            time.sleep(2)
        recipe = {**recipe_from_params(chosen[name], ctx, BASE).to_dict(), "seed": seed}
        started = time.time()
        figures = train(recipe, env, args.timeout)
        _append(table, FIELDS, [{"round": index, "seed": seed, "recipe": name, "started_unix": round(started, 1),
                                  **figures}])
        print(f"[{n}/{len(plan)} {time.perf_counter() - start:.0f} s] round {index + 1}, seed {seed}, {name}: "
              f"{figures['status']}" + (f", {figures['throughput_sps']:.0f} samples/s, val_acc "
                                        f"{figures['val_acc']:.4f}" if figures["status"] != "failed"
                                        else f" ({figures['reason']})"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
