"""Build the table that benchmarks/confirm_reliability.py replays: real paired runs, every recipe on every seed.

The protocol is the main job's confirm stage (``python experiments/resnet.py``): ResNet-8 with BatchNorm,
Fashion-MNIST, 4,096 training images at 16x16, batch 64, 10 epochs; the learning curve on the 2,000-image
validation slice, the run's accuracy from one evaluation after the last epoch on every held-out image
(9,984 of the 10,000 test images in full batches), as the confirm stage now does. Rounds are paired and
interleaved as in the confirm stage: every recipe of a round trains with the round's seed, the order
rotated each round, so the machine's drift hits every recipe alike; the O0 baseline is one of the recipes
of every round.

How runs are made (the ``mode`` column, and meta.json's ``runs``): by default as the main job makes them, one
after another on one warm Ray Train worker (``boosttune.execution.warm.WarmPool``, one slot of one rank) with
cached graphs, every run through ``boosttune.execution.ray_train.train_run``: a run whose recipe a kept Model
already compiled trains that Model (``graph_cached``; GradientFreeze recipes are never kept). With
``--fresh-processes`` every run is ``boosttune trial`` in a fresh process instead, as the table of 2026-11-24 was
made; with ``--turns`` a round's runs train at once and take their epochs in turn, as the confirm stage makes them
now on one CPU node (``confirm_interleave``). A table made one way is not continued another way (``--replace``
starts it again).

The recipes: O0, the O1 preset as a CPU runs it (LessBN + GradientFreeze 0.7; O2 adds AdaSum, which
trains the same as O1 on one rank), GradientFreeze alone at freeze_p 0.3/0.5/0.7, LessBN alone, one
recipe with gradient accumulation (slow on a CPU), and three recipes of the search table
(benchmarks/data/search_table): a fast one that loses accuracy and two close to the baseline.
Rows are appended as runs finish; rerunning the command continues where it stopped. While ``--pause-file``
exists no new run starts.

    python benchmarks/build_confirm_table.py --seeds 10 --replace   # warm: about 100 min on 2 cores (100 runs)
    python benchmarks/build_confirm_table.py --seeds 10 --fresh-processes   # 82 min on 2026-11-24's machine
    python benchmarks/build_confirm_table.py --seeds 1 --epochs 2 --out /tmp/table   # a smoke check (10 runs)
    python benchmarks/build_confirm_table.py --seeds 8 --turns --out benchmarks/data/confirm_table_2026-11-27_turns

(--replace only the first time over the committed fresh-process table; rerunning with it resumes all the same.
An O0 run took 57.5 s on a warm worker and 57.2 s in a fresh process on 2026-11-25, benchmarks/noise.py, quiet.)
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
import threading
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Callable, Iterator

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
          "final_eval_samples", "compile_s", "train_s", "eval_s", "wall_s", "started_unix", "graph_cached", "mode"]
WARM, FRESH, TURNS = "warm", "fresh-process", "turns"  # the mode column
HOW = {WARM: "one after another on one warm Ray Train worker (boosttune.execution.warm.WarmPool: 1 slot, 1 rank, "
             "cache_graphs true), each through boosttune.execution.ray_train.train_run, as the main job's confirm "
             "stage made them before epochs in turn",
       TURNS: "a round's runs at once on warm Ray Train workers (boosttune.execution.warm.WarmPool: a slot per run, "
              "1 rank, cache_graphs true), taking their epochs in turn in the round's order, through "
              "boosttune.execution.ray_train.train_in_turns, as the main job's confirm stage makes them "
              "(confirm_interleave auto on one CPU node)",
       FRESH: "each as `boosttune trial` in a fresh process (benchmarks/_run.py trial_or_failure), no Ray"}


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


def _figures(status: str, reason: str | None, m: dict) -> dict:
    return {"status": status, "reason": reason or "", "throughput_sps": m["throughput_sps"],
            "val_acc": m["objective_value"], "epoch_val_acc": m.get("epoch_objective_value"),
            "final_eval_samples": m.get("final_eval_samples"), "compile_s": m.get("compile_s"),
            "train_s": m.get("train_s"), "eval_s": m.get("eval_s"), "wall_s": m.get("wall_s"),
            "graph_cached": bool(m.get("graph_cached"))}


def train_fresh(recipe: dict, env: dict, timeout: float) -> dict:
    result = trial_or_failure(recipe, env, timeout)
    if "metrics" not in result:  # it failed before writing a result
        return result
    return _figures(result["status"], result.get("reason"), result["metrics"])


@contextmanager
def turns_trainer(env: dict, timeout: float, slots: int) -> Iterator[Callable[[list[tuple[dict, str]]], list[dict]]]:
    """``train([(recipe, run_id), ...]) -> [figures, ...]``: a round's runs at once, their epochs in turn, the main
    job's way. A round past ``timeout`` seconds a run is cancelled and failed, run by run."""
    from boosttune.execution.ray import connect_ray
    from boosttune.execution.ray_train import train_in_turns
    from boosttune.execution.runs import RunSpec
    from boosttune.execution.start import TURN_CPUS
    from boosttune.execution.warm import WarmPool

    runtime = {"ONEDNN_MAX_CPU_ISA": env.get("ONEDNN_MAX_CPU_ISA", "default")}
    connect_ray(print)
    with tempfile.TemporaryDirectory(prefix="bt_table_") as scratch, \
            WarmPool(slots=slots, env=runtime, storage_path=str(Path(scratch) / "train"), cache_graphs=True,
                     cpus_per_rank=TURN_CPUS, log=print) as pool:
        client = pool.client()

        def train(runs: list[tuple[dict, str]]) -> list[dict]:
            watchdog = threading.Timer(timeout * len(runs), lambda: [client.cancel(r) for _, r in runs])
            watchdog.start()
            try:
                records = train_in_turns([RunSpec(run_id=run_id, role="confirm", recipe=recipe)
                                          for recipe, run_id in runs], output=scratch, pool=client)
            finally:
                watchdog.cancel()
            return [{"status": "failed", "reason": (r.reason or "")[:300]} if r.status == "failed"
                    else _figures(r.status, r.reason, r.metrics) for r in records]

        yield train


@contextmanager
def warm_trainer(env: dict, timeout: float) -> Iterator[Callable[[dict, str], dict]]:
    """``train(recipe, run_id) -> figures`` on one warm worker with cached graphs, the main job's way: the pool and
    Ray live as long as the context. A run past ``timeout`` seconds is cancelled (at a step boundary) and failed."""
    from boosttune.execution.ray import connect_ray
    from boosttune.execution.ray_train import train_run
    from boosttune.execution.runs import RunSpec
    from boosttune.execution.warm import WarmPool

    # "default" removes the variable on the worker (the probe chose the library's own instruction set)
    runtime = {"ONEDNN_MAX_CPU_ISA": env.get("ONEDNN_MAX_CPU_ISA", "default")}
    connect_ray(print)
    with tempfile.TemporaryDirectory(prefix="bt_table_") as scratch, \
            WarmPool(slots=1, env=runtime, storage_path=str(Path(scratch) / "train"), cache_graphs=True,
                     log=print) as pool:
        client = pool.client()

        def train(recipe: dict, run_id: str) -> dict:
            watchdog = threading.Timer(timeout, client.cancel, (run_id,))
            watchdog.start()
            try:
                record = train_run(RunSpec(run_id=run_id, role="confirm", recipe=recipe), output=scratch,
                                   env=runtime, pool=client)
            finally:
                watchdog.cancel()
            if record.status == "failed":
                timed_out = record.reason == "cancelled"
                return {"status": "failed",
                        "reason": f"timed out after {timeout:.0f} s" if timed_out else (record.reason or "")[:300]}
            return _figures(record.status, record.reason, record.metrics)

        yield train


def _done(path: Path) -> set[tuple[int, str]]:
    if not path.is_file():
        return set()
    with path.open() as f:
        return {(int(r["round"]), r["recipe"]) for r in csv.DictReader(f)}


def _add_mode_columns(table: Path) -> None:
    """A table from before the mode column (all its runs made in fresh processes) in this script's columns."""
    if not table.is_file():
        return
    with table.open() as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    if reader.fieldnames == FIELDS[:-2]:
        table.unlink()
        _append(table, FIELDS, [{**r, "graph_cached": False, "mode": FRESH} for r in rows])


def made_another_way(out: Path, how: dict) -> str | None:
    """Why the table in ``out`` cannot be continued with runs made as ``how`` says (mode, base), or None."""
    table, meta = out / "runs.csv", out / "meta.json"
    if not table.is_file():
        return None
    with table.open() as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    if reader.fieldnames == FIELDS[:-2]:  # a table from before the mode column: all made in fresh processes
        rows = [{**r, "mode": FRESH} for r in rows]
    elif reader.fieldnames != FIELDS:
        return f"{table} has other columns than this script writes"
    modes = {r["mode"] for r in rows} - {how["mode"]}
    if modes:
        return f"{table} holds runs made as {', '.join(sorted(modes))}, not {how['mode']}"
    earlier = json.loads(meta.read_text()) if meta.is_file() else {}
    if earlier.get("base", how["base"]) != how["base"]:
        return f"{table} holds runs of another base recipe than {how['base']} ({meta})"
    return None


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
    p.add_argument("--fresh-processes", action="store_true",
                   help="every run as `boosttune trial` in a fresh process (default: one warm Ray Train worker with "
                        "cached graphs, as the main job makes its runs)")
    p.add_argument("--turns", action="store_true",
                   help="a round's runs at once, taking their epochs in turn (the main job's confirm stage on one CPU "
                        "node); default: one after another on one warm worker")
    p.add_argument("--epochs", type=int, default=BASE["epochs"],
                   help=f"epochs per run (default {BASE['epochs']}, the main job's; fewer for a smoke check)")
    p.add_argument("--replace", action="store_true",
                   help="when --out holds a table made another way (the other mode, another base), start a new one "
                        "in its place; a table made this way is continued, so rerunning the command resumes")
    args = p.parse_args(argv)
    if args.epochs < 1:
        p.error(f"--epochs must be at least 1, but got {args.epochs}")

    mode = FRESH if args.fresh_processes else TURNS if args.turns else WARM
    base = {**BASE, "epochs": args.epochs}
    how = {"mode": mode, "base": base}
    args.out.mkdir(parents=True, exist_ok=True)
    if (why := made_another_way(args.out, how)) is not None:
        if not args.replace:
            p.error(f"{why}: pass --replace to start a new table there, or another --out")
        print(f"{why}: starting a new table in its place (--replace)", flush=True)
        (args.out / "runs.csv").unlink()
        (args.out / "meta.json").unlink(missing_ok=True)
    _add_mode_columns(args.out / "runs.csv")
    ctx = space_context()
    env = probe_env()
    chosen = recipes(ctx)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    meta = {"command": "python benchmarks/build_confirm_table.py " + " ".join(argv or sys.argv[1:]),
            "mode": mode, "runs": HOW[mode], "base": base, "seeds": seeds, "recipes": chosen,
            "runtime_env": {"ONEDNN_MAX_CPU_ISA": env.get("ONEDNN_MAX_CPU_ISA", "default")},
            "versions": _versions(), "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
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
    if all((index, name) in done for index, _, name in plan):
        print(f"{table}: every run of the plan is there ({len(plan)})")
        return 0
    print(f"runs: {HOW[mode]}", flush=True)
    if mode == TURNS:
        with turns_trainer(env, args.timeout, len(chosen)) as train_round:
            _run_rounds(plan, done, chosen, train_round, table, ctx, base, args.pause_file)
        return 0
    with (nullcontext(lambda recipe, run_id: train_fresh(recipe, env, args.timeout)) if mode == FRESH
          else warm_trainer(env, args.timeout)) as train:
        _run_plan(plan, done, chosen, train, table, ctx, base, mode, args.pause_file)
    return 0


def _run_plan(plan, done, chosen, train, table: Path, ctx, base: dict, mode: str, pause_file: Path) -> None:
    from boosttune.space import recipe_from_params

    start, took = time.perf_counter(), []
    for n, (index, seed, name) in enumerate(plan, start=1):
        if (index, name) in done:
            continue
        while pause_file.exists():
            time.sleep(2)
        recipe = {**recipe_from_params(chosen[name], ctx, base).to_dict(), "seed": seed}
        started, began = time.time(), time.perf_counter()
        figures = train(recipe, f"run{n}-round{index}")
        took.append(time.perf_counter() - began)
        _append(table, FIELDS, [{"round": index, "seed": seed, "recipe": name, "started_unix": round(started, 1),
                                  "mode": mode, **figures}])
        print(f"[{n}/{len(plan)} {time.perf_counter() - start:.0f} s] round {index + 1}, seed {seed}, {name}: "
              f"{figures['status']}" + (f", {figures['throughput_sps']:.0f} samples/s, val_acc "
                                        f"{figures['val_acc']:.4f}{', graph cached' if figures['graph_cached'] else ''}"
                                        if figures["status"] != "failed" else f" ({figures['reason']})")
              + f"; the run took {took[-1]:.1f} s", flush=True)
    if took:
        print(f"{len(took)} runs in {time.perf_counter() - start:.0f} s: {statistics.median(took):.1f} s per run "
              f"(median; min {min(took):.1f}, max {max(took):.1f}), from the start of a run to its row")


def _run_rounds(plan, done, chosen, train_round, table: Path, ctx, base: dict, pause_file: Path) -> None:
    """The plan round by round, each round's missing runs at once (epochs in turn, in the round's order)."""
    from boosttune.space import recipe_from_params

    start = time.perf_counter()
    for index in sorted({i for i, _, _ in plan}):
        todo = [(seed, name) for i, seed, name in plan if i == index and (i, name) not in done]
        if not todo:
            continue
        while pause_file.exists():
            time.sleep(2)
        runs = [({**recipe_from_params(chosen[name], ctx, base).to_dict(), "seed": seed}, f"round{index}-{name}")
                for seed, name in todo]
        started, began = time.time(), time.perf_counter()
        figures = train_round([(recipe, run_id.replace(" ", "_").replace("=", "")) for recipe, run_id in runs])
        _append(table, FIELDS, [{"round": index, "seed": seed, "recipe": name, "started_unix": round(started, 1),
                                  "mode": TURNS, **f} for (seed, name), f in zip(todo, figures)])
        print(f"[{time.perf_counter() - start:.0f} s] round {index + 1}: {len(todo)} runs in "
              f"{time.perf_counter() - began:.0f} s; " + ", ".join(
                  f"{name} {f['throughput_sps']:.0f}" if f["status"] != "failed" else f"{name} failed ({f['reason']})"
                  for (_, name), f in zip(todo, figures)), flush=True)


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("mindspore", "ray", "boosttune")}


if __name__ == "__main__":
    sys.exit(main())
