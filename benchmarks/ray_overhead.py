"""Ray Train trials vs the bare MindSpore script: steady-state throughput and start-up overhead.

Throughput: a 1-worker and a 2-worker Ray Train trial (boosttune's MindSpore backend) divided by
the bare script on the same work (same model, data, batch per rank, steps); the 2-worker figure is
the aggregate (2 x per-rank samples/s). Start-up: seconds from the trial's start (``fit()`` called;
for the bare script, the process launched) to its first training step, minus the bare script's.
Ray's own start (``ray.init``) is paid once per experiment and reported apart. Fresh processes,
interleaved repeats. Targets: throughput ratio >= 0.98 (1 worker), start-up overhead <= 6 s.

    python benchmarks/ray_overhead.py
    python benchmarks/ray_overhead.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _run import HERE, probe_env  # noqa: E402


def bare_run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, str(HERE / "bare_mindspore.py"), *args], env=env, capture_output=True,
                              text=True, cwd=tmp)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["throughput_sps"], result["first_step_at"] - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    env = probe_env()
    os.environ.update({k: v for k, v in env.items() if k in ("ONEDNN_MAX_CPU_ISA", "GLOG_v")})
    import ray

    from boosttune.execution.ray_train import run_on_ray

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    print(f"ray.init (once per experiment): {time.perf_counter() - start:.1f} s", flush=True)
    batch, limit = 64, 8192
    per_rank_steps = {1: args.steps, 2: args.steps}
    runtime = {k: v for k, v in env.items() if k == "ONEDNN_MAX_CPU_ISA"}
    figures: dict[str, list[float]] = {"tp1": [], "tp2": [], "st1": [], "st2": [], "bare_st": []}
    for repeat in range(args.repeats):
        bare_tp, bare_st = bare_run(["--model", args.model, "--data", "fashion_mnist", "--train-limit", str(limit),
                                     "--batch-size", str(batch), "--steps", str(args.steps)], env)
        figures["bare_st"].append(bare_st)
        for workers in (1, 2):
            steps = per_rank_steps[workers]
            per_rank = limit // workers // batch
            recipe = {"model": args.model, "batch_size": batch, "epochs": -(-steps // per_rank),
                      "steps_per_epoch": min(steps, per_rank), "eval_every_epoch": False,
                      "data": {"name": "fashion_mnist", "train_limit": limit, "val_limit": 64},
                      "optimizer": {"learning_rate": 0.05}}
            t0 = time.time()
            summary = run_on_ray(recipe, num_workers=workers, env=runtime)
            if summary["status"] == "failed":
                raise RuntimeError(summary["reason"])
            tp = summary["throughput_sps"] * workers
            figures[f"tp{workers}"].append(tp / bare_tp)
            figures[f"st{workers}"].append((summary["first_step_at"] - t0) - bare_st)
            print(f"repeat {repeat + 1}: bare {bare_tp:.0f} samples/s (first step after {bare_st:.1f} s); "
                  f"{workers} worker(s) {tp:.0f} samples/s = {tp / bare_tp:.3f} x bare, first step after "
                  f"{summary['first_step_at'] - t0:.1f} s (comm init {summary['comm_init_s']:.1f} s)", flush=True)

    def med(key: str) -> str:
        values = figures[key]
        return f"median {statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f})"

    print(f"\n{args.model}, batch {batch} per rank, {args.steps} steps per rank, {args.repeats} repeats:")
    print(f"throughput, 1 worker / bare:             {med('tp1')}  (target >= 0.98)")
    print(f"throughput, 2 workers (aggregate) / bare: {med('tp2')}")
    print(f"start-up overhead vs bare, 1 worker (s):  {med('st1')}  (target <= 6)")
    print(f"start-up overhead vs bare, 2 workers (s): {med('st2')}")
    print(f"bare script, launch to first step (s):    {med('bare_st')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
