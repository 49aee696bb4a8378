"""What an idle local Ray instance beside it costs the user's job run plainly (issue 75: where the stages' time goes).

    python benchmarks/ray_presence.py                  # 4 pairs with Ray's dashboard, 4 without
    python benchmarks/ray_presence.py --pairs 6 --epochs 4

A pair, in turn on this machine: the main job's O0 recipe (ResNet-8 on the 4,096 Fashion-MNIST images boosttune
ships, ``--epochs`` long) as ``boosttune trial`` in a fresh process while a local Ray instance runs idle beside it
(``ray.init`` as the embedded default starts it, one idle actor, 12 s to settle), then the same process with Ray shut
down. The arm ``dashboard`` starts Ray as boosttune's local instance does (with its dashboard); ``no-dashboard`` with
``include_dashboard=False``. Printed: each pair's throughputs and ratio, and per arm the geometric mean of the ratios
with its 95% t-interval, and the CPU the other processes used while the job trained.

Nothing here trains inside Ray: the job is the same plain process in both halves of a pair, so a ratio below 1 is
what Ray's processes do to a job beside them, not what a trial's own code does.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from stage_speed import interval, recipes  # noqa: E402  (the main job's recipes and the interval stage_speed prints)


def o0_recipe(epochs: int, folder: Path) -> Path:
    path = folder / "o0.json"
    path.write_text(json.dumps(recipes(epochs)["O0"]))
    return path


def others_cpu() -> float:
    """CPU seconds used so far by every process running now but this one (an ended trial is no longer among them)."""
    import psutil

    total = 0.0
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            times = proc.cpu_times()
        except (psutil.Error, OSError):
            continue
        total += times.user + times.system
    return total


def plain(recipe: Path, folder: Path) -> tuple[float, float, float]:
    """The job as a fresh process: its samples/s, its wall seconds, and the CPU the other processes used meanwhile."""
    out = folder / f"trial-{time.monotonic_ns()}"
    before, began = others_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "boosttune.cli.main", "trial", str(recipe), "--output", str(out)],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - began
    others = others_cpu() - before  # the trial has ended: it is no longer among them
    found = re.findall(r"([0-9.]+) samples/s", done.stdout)
    if done.returncode or not found:
        raise RuntimeError(f"boosttune trial failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return float(found[-1]), seconds, others


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4, help="pairs per arm (default 4)")
    parser.add_argument("--epochs", type=int, default=4, help="epochs of the job (default 4)")
    parser.add_argument("--arms", default="dashboard,no-dashboard", help="which arms, in this order")
    args = parser.parse_args()
    for arm in args.arms.split(","):
        if arm not in ("dashboard", "no-dashboard"):
            parser.error(f"--arms: unknown arm {arm!r}; allowed: dashboard, no-dashboard")
    import ray

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        recipe = o0_recipe(args.epochs, folder)
        for arm in args.arms.split(","):
            ratios, cores = [], []
            for pair in range(args.pairs):
                ray.init(include_dashboard=arm == "dashboard", log_to_driver=False)

                @ray.remote(num_cpus=1)
                class Idle:
                    def ping(self) -> int:
                        return 1

                idle = Idle.remote()
                ray.get(idle.ping.remote())
                time.sleep(12)
                beside, seconds, others = plain(recipe, folder)
                ray.shutdown()
                time.sleep(3)
                alone, _, _ = plain(recipe, folder)
                ratios.append(beside / alone)
                cores.append(others / seconds)
                print(f"{arm} pair {pair + 1}: with Ray beside {beside:.0f} samples/s, alone {alone:.0f}: "
                      f"{beside / alone:.3f}; the other processes used {others / seconds:.3f} of a core meanwhile",
                      flush=True)
            mean, low, high = interval([math.log(r) for r in ratios])
            print(f"{arm}: the job beside an idle local Ray over the job alone {mean:.3f} [{low:.3f}, {high:.3f}] "
                  f"({args.pairs} pairs, 95% t-interval); the other processes {min(cores):.3f}-{max(cores):.3f} "
                  f"of a core", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
