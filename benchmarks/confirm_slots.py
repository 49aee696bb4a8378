"""Paired rounds across a cluster's slots: wall time and paired noise at 1, 2 and 3 slots.

On a cluster of several nodes a round's runs train at once, one per warm slot, each recipe on another slot from
round to round (``boosttune.execution.ray_train.train_on_slots``). This script starts a local Ray cluster as a team
starts one (``ray start``: a head with no CPU and N worker nodes of one CPU each, :mod:`tests.helpers.ray_cluster`)
for each N, runs the same ``boosttune bench`` on it (O0 and O0 again, an A/A pair whose true ratio is 1, on the
same paired seeds), and prints per N: the rounds' wall time (first run's start to last run's end), the paired noise
(the sd of log(O0 again / O0) per seed, per step) and the A/A ratio (a bias of the slots would show there).

On the 2-core development machine, 3 one-CPU nodes share 2 cores: the 3-slot line measures contention, not a
cluster; it is printed, labelled so.

    python benchmarks/confirm_slots.py                    # 6 seeds, about 8 minutes on 2 cores
    python benchmarks/confirm_slots.py --seeds 2 --slots 1 2   # a smoke check
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from tests.helpers.ray_cluster import ray_cluster  # noqa: E402  (the repository's own cluster helper)

BASE = {"model": "lenet5", "data": {"name": "digits"}, "epochs": 2, "batch_size": 32, "warmup_steps": 3}
# "O0 again" is O0 itself under another name: its true ratio to O0 is 1 on every slot


def bench(seeds: int, epochs: int) -> dict:
    return {"name": "confirm_slots", "base": {**BASE, "epochs": epochs}, "seeds": list(range(1, seeds + 1)), "interleave": "runs",
            "recipes": {"O0": {}, "O0 again": {"shuffle": True}}}


def figures(folder: Path) -> dict:
    """The rounds' wall time, the A/A pair's per-step paired noise and mean ratio, and the slots the runs used."""
    runs = [json.loads(p.read_text()) for p in sorted((folder / "runs").glob("*.json"))]
    done = [r for r in runs if r["status"] == "completed"]
    starts = [r["started"] for r in done]
    ends = [r["started"] + r["metrics"]["wall_s"] for r in done]
    table = pd.DataFrame([{"seed": r["recipe"]["seed"], "recipe": r["label"],
                           "sps": r["metrics"]["throughput_sps"]} for r in done])
    wide = table.pivot_table(index="seed", columns="recipe", values="sps", aggfunc="first")
    logs = np.log(wide["O0 again"]) - np.log(wide["O0"])
    sd = float(logs.std(ddof=1)) if len(logs) > 1 else math.nan
    return {"wall_s": max(ends) - min(starts), "noise": sd, "df": len(logs) - 1, "aa": math.exp(float(logs.mean())),
            "runs": len(done), "slots_used": len({r["metrics"].get("warm_slot") for r in done})}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--seeds", type=int, default=6, help="paired seeds (default 6)")
    p.add_argument("--epochs", type=int, default=BASE["epochs"], help=f"epochs per run (default {BASE['epochs']})")
    p.add_argument("--slots", type=int, nargs="+", default=[1, 2, 3], help="worker nodes (one slot each) to try")
    p.add_argument("--out", type=Path, default=Path("/tmp/boosttune_confirm_slots"), help="folder of the benches")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "bench.json"
    path.write_text(json.dumps(bench(args.seeds, args.epochs)))
    rows = []
    for n in args.slots:
        folder = args.out / f"slots-{n}-epochs-{args.epochs}"
        print(f"[{n} worker node(s)]", flush=True)
        with ray_cluster([{"cpus": 0}] + [{"cpus": 1}] * n) as cluster:
            env = {**cluster["env"], "RAY_ADDRESS": cluster["gcs"]}
            began = time.perf_counter()
            subprocess.run([sys.executable, "-m", "boosttune.cli.main", "bench", str(path), "--output", str(folder)],
                           check=True, stdout=subprocess.DEVNULL, env=env)
            rows.append({"nodes": n, "command_s": time.perf_counter() - began, **figures(folder)})
    cores = os.cpu_count() or 1
    print(f"\n{args.seeds} paired seeds, O0 and O0 again (A/A), {BASE['model']} on {BASE['data']['name']}, "
          f"{args.epochs} epochs per run; this machine: {cores} cores")
    print("| worker nodes (slots) | slots used | runs | rounds' wall time | whole command | paired noise per step "
          "(log-sd, df) | O0 again / O0 |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        note = " (more slots than cores: contention)" if row["nodes"] > cores else ""
        print(f"| {row['nodes']}{note} | {row['slots_used']} | {row['runs']} | {row['wall_s']:.0f} s | "
              f"{row['command_s']:.0f} s | {row['noise']:.3f} ({row['df']}) | {row['aa']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
