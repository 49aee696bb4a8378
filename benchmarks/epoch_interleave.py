"""How much of the confirm stage's speed noise taking epochs in turn removes: paired rounds made both ways.

The speed noise between two runs made one after another on the 2-core machine is about 0.11 in log (the
2026-11-27 confirm table), and it is the machine's: one run's epoch times vary by about as much, with a lag-1
autocorrelation of 0.1-0.5 (40-epoch runs, 2026-11-27), so a run 40 s after another meets another machine.
With ``interleave: epochs`` a round's runs train at once and take the machine's epochs in turn (one trains,
the others wait: ``boosttune.execution.warm._Turns``), so each recipe's epoch n meets the machine its
baseline's epoch n met.

This script benches the same recipes on the same seeds both ways, in alternating blocks of seeds so that a drift
of the machine over the half hour hits both alike: O0, O0 again (an A/A pair: its true ratio is 1) and
GradientFreeze p=0.5, on the main job's workload (the committed confirm table's base: ResNet-8, Fashion-MNIST
4,096 images at 16x16, 10 epochs). It prints, per way, the paired noise (the sd of log(recipe / O0) per seed,
pooled over the recipes, per step and per job), the A/A ratio (a bias of the turn order would show there), the
recipes' mean ratios, the minutes spent, and the paired seeds a 1.10x recipe needs at each noise.

    python benchmarks/epoch_interleave.py                  # 6 seeds each way: 36 runs, about 25 minutes
    python benchmarks/epoch_interleave.py --seeds 2 --epochs 3 --out /tmp/il   # a smoke check
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

HERE = Path(__file__).resolve().parent
TABLE = HERE / "data" / "confirm_table_2026-11-27"
WAYS = ("runs", "epochs")
Z_CLAIM, Z_POWER = 2.576, 0.842  # one-sided 0.005 per candidate, 80% power: the race's claim at 10 seeds


def bench_file(epochs: int) -> dict:
    """The bench: the committed table's base and its GradientFreeze p=0.5 recipe, plus O0 again."""
    sys.path.insert(0, str(HERE))
    from build_confirm_table import space_context

    from boosttune.space import recipe_from_params

    meta = json.loads((TABLE / "meta.json").read_text())
    ctx, base = space_context(), {**meta["base"], "epochs": epochs}
    o0 = recipe_from_params(meta["recipes"]["O0"], ctx, base).to_dict()
    gf = recipe_from_params(meta["recipes"]["grad_freeze p=0.5"], ctx, base).to_dict()
    return {"name": "epoch_interleave", "base": o0,
            "recipes": {"O0": {}, "O0 again": {"shuffle": o0.get("shuffle", True)},
                        "grad_freeze p=0.5": {k: v for k, v in gf.items() if o0.get(k) != v}}}


def paired(table: pd.DataFrame, column: str, invert: bool) -> pd.DataFrame:
    """round x recipe: log(recipe / O0) of ``column`` (of O0 / recipe for a time)."""
    done = table[table["status"] == "completed"]
    wide = done.pivot_table(index="seed", columns="recipe", values=column, aggfunc="first")
    logs = np.log(wide).sub(np.log(wide["O0"]), axis=0).drop(columns="O0")
    return -logs if invert else logs


def noise(logs: pd.DataFrame) -> tuple[float, int]:
    """The pooled sd of the per-seed log ratios about each recipe's mean, and its degrees of freedom."""
    centred = logs.sub(logs.mean())
    df = int(logs.count().sum() - logs.shape[1])
    return (math.sqrt(float((centred ** 2).sum().sum()) / df) if df > 0 else math.nan), df


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--seeds", type=int, default=6, help="paired seeds each way (default 6)")
    p.add_argument("--block", type=int, default=2, help="seeds per block; the ways alternate block by block")
    p.add_argument("--epochs", type=int, default=10, help="epochs per run (default 10, the main job's)")
    p.add_argument("--out", type=Path, default=Path("/tmp/boosttune_epoch_interleave"),
                   help="folder of the benches (rerunning continues the blocks not done)")
    args = p.parse_args(argv)
    if args.block < 2 or args.seeds % args.block:
        p.error(f"--block must be at least 2 (a bench's paired seeds) and divide --seeds ({args.seeds})")
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = list(range(1, args.seeds + 1))
    blocks = [seeds[i:i + args.block] for i in range(0, len(seeds), args.block)]
    spent = {way: 0.0 for way in WAYS}
    for number, block in enumerate(blocks):
        for way in (WAYS if number % 2 == 0 else WAYS[::-1]):
            folder = args.out / f"{way}-{number}"
            if (folder / "confirm.csv").is_file():
                continue
            path = args.out / f"{way}.yaml"
            path.write_text(yaml.safe_dump({**bench_file(args.epochs), "interleave": way,
                                            "seeds": block}))
            began = time.perf_counter()
            print(f"[{way}, seeds {block}]", flush=True)
            subprocess.run([sys.executable, "-m", "boosttune.cli.main", "bench", str(path), "--output", str(folder)],
                           check=True, stdout=subprocess.DEVNULL)
            spent[way] += time.perf_counter() - began
    print(f"\n{args.seeds} paired seeds each way, {args.epochs} epochs per run, blocks of {args.block} alternating")
    print("| way | per-step noise (log-sd, df) | per-job noise | O0 again / O0 per step | grad_freeze p=0.5 per step "
          "| per job | seeds for 1.10x per job | minutes (this run) |")
    print("|---|---|---|---|---|---|---|---|")
    for way in WAYS:
        tables = [pd.read_csv(f) for f in sorted(args.out.glob(f"{way}-*/confirm.csv"))]
        if not tables:
            continue
        table = pd.concat(tables, ignore_index=True)
        step, job = paired(table, "throughput_sps", False), paired(table, "job_s", True)
        (step_sd, step_df), (job_sd, job_df) = noise(step), noise(job)
        need = math.ceil(((Z_CLAIM + Z_POWER) * job_sd / math.log(1.10)) ** 2) if math.isfinite(job_sd) else "n/a"
        print(f"| {way} | {step_sd:.3f} ({step_df}) | {job_sd:.3f} ({job_df}) | {math.exp(step['O0 again'].mean()):.3f} "
              f"| {math.exp(step['grad_freeze p=0.5'].mean()):.3f} | {math.exp(job['grad_freeze p=0.5'].mean()):.3f} "
              f"| {need} | {spent[way] / 60:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
