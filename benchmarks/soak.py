"""Soak: many short trials in a row through the real search; does the driver grow?

    python benchmarks/soak.py                 # 50 trials
    python benchmarks/soak.py --trials 12

Runs one experiment in this process (LeNet-5 on scikit-learn's digits, 1 epoch of 2 steps per trial,
local Ray, Tune + Optuna, no early stopping, no confirm stage) while a thread samples this driver's
resident memory and open file descriptors as each trial record lands (DriverGrowth of
tests/helpers/leftovers.py, which tests/search/test_tune.py's end-to-end search also checks). Prints them,
and the growth from the record after warm-up (the 5th) to the last. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.helpers.leftovers import DriverGrowth  # noqa: E402

WARM = 5  # records (baseline included) after which Ray, Tune, Optuna and MindSpore's imports have settled


def soak(trials: int, output: Path, log=print) -> DriverGrowth:
    from boosttune.config.experiment import parse_experiment
    from boosttune.experiment import run_experiment

    config = parse_experiment({
        "name": "soak",
        "base": {"model": "lenet5", "epochs": 1, "batch_size": 32, "steps_per_epoch": 2, "warmup_steps": 0,
                 "data": {"name": "digits", "train_limit": 256, "val_limit": 64}},
        "num_trials": trials, "sampler": "random", "seed": 0, "confirm_seeds": 0, "early_stopping": False,
        "search": ["grad_freeze", "grad_accumulation", "loss_scale", "optimizer"], "max_failure_rate": 1.0,
    })
    with DriverGrowth(output / "trials", log=lambda m: log(f"soak: {m}")) as growth:
        run_experiment(config, output, log=lambda m: None)
    return growth


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    args = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="boosttune_soak_") as tmp:
        growth = soak(args.trials, Path(tmp) / "run")
    rss, fds, first, last = growth.since(WARM)
    print(f"soak: {args.trials} trials in {time.perf_counter() - started:.0f} s; from record {first} to {last}: "
          f"driver RSS {rss:+.0f} MB, open fds {fds:+d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
