"""Soak: many short trials in a row through the real search; does the driver grow?

    python benchmarks/soak.py                 # 50 trials (about 6-8 min on 2 cores)
    python benchmarks/soak.py --trials 12     # what tests/test_soak.py runs

Runs one experiment in this process (LeNet-5 on scikit-learn's digits, 1 epoch of 2 steps per trial,
local Ray, Tune + Optuna, no early stopping, no confirm stage) while a thread samples this driver's
resident memory and open file descriptors. Prints them as the trial records land, and the growth from
the record after warm-up (the 5th) to the last. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

WARM = 5  # records (baseline included) after which Ray, Tune, Optuna and MindSpore's imports have settled


def soak(trials: int, output: Path, log=print) -> list[tuple[int, float, int]]:
    """(records landed, driver RSS in MB, open fds) at each record; the experiment runs in this process."""
    from boosttune.config.experiment import parse_experiment
    from boosttune.experiment import run_experiment

    config = parse_experiment({
        "name": "soak",
        "base": {"model": "lenet5", "epochs": 1, "batch_size": 32, "steps_per_epoch": 2, "warmup_steps": 0,
                 "data": {"name": "digits", "train_limit": 256, "val_limit": 64}},
        "num_trials": trials, "sampler": "random", "seed": 0, "confirm_seeds": 0, "early_stopping": False,
        "search": ["grad_freeze", "grad_accumulation", "loss_scale", "optimizer"], "max_failure_rate": 1.0,
    })
    me = psutil.Process()
    samples: list[tuple[int, float, int]] = []
    done = threading.Event()

    def sample() -> None:
        seen = 0
        while not done.is_set():
            count = len(list((output / "trials").glob("*.json"))) if (output / "trials").is_dir() else 0
            if count > seen:
                seen = count
                samples.append((count, me.memory_info().rss / 2**20, me.num_fds()))
                log(f"soak: {count} records, driver RSS {samples[-1][1]:.0f} MB, {samples[-1][2]} open fds")
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        run_experiment(config, output, log=lambda m: None)
    finally:
        time.sleep(1.0)
        done.set()
        sampler.join()
    return samples


def growth(samples: list[tuple[int, float, int]]) -> tuple[float, int, int, int]:
    """(RSS growth MB, fd growth, from record, to record) from the first sample at or after WARM to the last."""
    start = next(s for s in samples if s[0] >= WARM)
    end = samples[-1]
    return end[1] - start[1], end[2] - start[2], start[0], end[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="boosttune_soak_") as tmp:
        samples = soak(args.trials, Path(tmp) / "run")
    rss, fds, first, last = growth(samples)
    print(f"soak: {args.trials} trials in {time.perf_counter() - started:.0f} s; from record {first} to {last}: "
          f"driver RSS {rss:+.0f} MB, open fds {fds:+d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
