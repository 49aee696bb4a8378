"""What idle warm groups cost the runs that train: a confirm race's later rounds with the first round's groups kept
idle beside them, and with them closed (``WarmPool.shrink``, as the confirm stage now does).

A race's first round trains one run per candidate and the baseline at once, their epochs in turn, on a warm group
each; candidates leave, and the later rounds train two or three runs. Each group kept idle is five Ray processes
(the rank, Ray Train's controller, placement-group cleaner, dataset manager and synchronization actor) that wake a
hundred times a second (Ray's core worker checks for signals every 10 ms), and on 2 cores those wake-ups take
from the run that trains.

This script trains rounds of two runs in turn (the main job's O0, ResNet-8 on 4,096 Fashion-MNIST images at 16x16,
the rounds' seeds shared, so the blocks differ by the idle groups alone) in alternating blocks: "kept" with
``--idle`` more groups started and left idle, "closed" with them shut (ABAB..., so a drift of the machine meets
both alike). It prints every run's steady throughput, each adjacent pair of blocks' ratio closed / kept, their
geometric mean with a 95% t interval, and the wall time of a round each way.

    python benchmarks/idle_groups.py                       # 6 blocks, 4 idle groups, 6 epochs: about 8 minutes
    python benchmarks/idle_groups.py --blocks 2 --epochs 2 --idle 1   # a check that it runs
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _run import probe_env  # noqa: E402

MAIN_JOB = {"model": "resnet8", "batch_size": 64, "epochs": 6, "eval_every_epoch": False,
            "data": {"name": "fashion_mnist", "train_limit": 4096, "val_limit": 2000, "image_size": 16},
            "optimizer": {"name": "momentum", "learning_rate": 0.05, "lr_schedule": "cosine"}}


def _ranks() -> int:
    import psutil

    return sum("RayTrainWorker" in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))


def _wait_for(ranks: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while _ranks() != ranks and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(5.0)  # the groups' start-up (MindSpore's import) done before the block is timed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=6, help="blocks, kept and closed in turn (even)")
    parser.add_argument("--idle", type=int, default=4, help="idle groups beside the two that train, in a kept block")
    parser.add_argument("--epochs", type=int, default=MAIN_JOB["epochs"])
    args = parser.parse_args()
    if args.blocks < 2 or args.blocks % 2:
        parser.error("--blocks: an even number, 2 or more")
    env = probe_env()
    runtime = {k: v for k, v in env.items() if k == "ONEDNN_MAX_CPU_ISA"}
    os.environ.update({k: v for k, v in env.items() if k in ("ONEDNN_MAX_CPU_ISA", "GLOG_v")})
    from boosttune.execution.ray import connect_ray
    from boosttune.execution.ray_train import train_in_turns
    from boosttune.execution.runs import RunSpec
    from boosttune.execution.start import TURN_CPUS
    from boosttune.execution.warm import WarmPool

    connect_ray(lambda m: print(m, flush=True))
    base = {**MAIN_JOB, "epochs": args.epochs}
    blocks: list[tuple[str, list[float], float]] = []
    with tempfile.TemporaryDirectory(prefix="bt_idle_") as tmp, \
            WarmPool(slots=2, env=runtime, storage_path=str(Path(tmp) / "train"), cpus_per_rank=TURN_CPUS,
                     log=print) as pool:
        for block in range(args.blocks):
            mode = "kept" if block % 2 == 0 else "closed"
            if mode == "kept":
                pool.ensure(2 + args.idle)
                _wait_for(2 + args.idle)
            else:
                pool.shrink(2)
                _wait_for(2)
            specs = [RunSpec(run_id=f"b{block}-{name}", role="bench",
                             recipe={**base, "seed": 100 + block // 2, "warmup_steps": 3 + k})
                     for k, name in enumerate(("O0", "O0 again"))]
            started = time.perf_counter()
            records = train_in_turns(specs, output=Path(tmp), pool=pool.client())
            wall = time.perf_counter() - started
            speeds = [float(r.metrics["throughput_sps"]) for r in records if r.status == "completed"]
            if len(speeds) != len(records):
                print(f"block {block + 1}: a run failed: {[r.reason for r in records]}")
                return 1
            print(f"block {block + 1}/{args.blocks} ({mode}: {_ranks()} ranks alive): "
                  + ", ".join(f"{s:.0f}" for s in speeds) + f" samples/s; round {wall:.1f} s", flush=True)
            blocks.append((mode, speeds, wall))
    logs = [math.log(statistics.fmean(closed) / statistics.fmean(kept))
            for (_, kept, _), (_, closed, _) in zip(blocks[::2], blocks[1::2])]
    mean = statistics.fmean(logs)
    half = (statistics.stdev(logs) / math.sqrt(len(logs)) * _t975(len(logs) - 1)) if len(logs) > 1 else math.nan
    walls = {mode: statistics.fmean(w for m, _, w in blocks if m == mode) for mode in ("kept", "closed")}
    print(f"throughput, closed / kept ({args.idle} idle groups): {math.exp(mean):.3f}x"
          + (f" (95% CI {math.exp(mean - half):.3f}-{math.exp(mean + half):.3f}, {len(logs)} pairs of blocks)"
             if math.isfinite(half) else " (one pair of blocks: no interval)"))
    print(f"a round of two runs: {walls['kept']:.1f} s kept, {walls['closed']:.1f} s closed")
    return 0


def _t975(df: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.975, df))


if __name__ == "__main__":
    sys.exit(main())
