"""Throughput of a trial run through boosttune divided by the same training in a bare MindSpore script.

Same model, data, batch size, steps and timing rule; every run in a fresh process; bare and
boosttune runs interleaved so drifts in machine load hit both,
in alternating order (ABBA). Target: >= 0.98.

    python benchmarks/overhead.py
    python benchmarks/overhead.py --repeats 3
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _run import probe_env, run_bare_process, run_trial_process, spread  # noqa: E402

CASES = {"lenet5": 400, "resnet8": 250}  # steps per run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--data", default="fashion_mnist")
    parser.add_argument("--models", default="lenet5,resnet8", help="comma-separated subset of lenet5,resnet8")
    args = parser.parse_args()
    env = probe_env()
    print(f"runtime env: ONEDNN_MAX_CPU_ISA={env.get('ONEDNN_MAX_CPU_ISA', 'default')}")
    models = args.models.split(",")
    for model, steps in ((m, CASES[m]) for m in models):
        batch, limit = 64, 8192
        recipe = {"model": model, "batch_size": batch, "epochs": -(-steps // (limit // batch)),
                  "steps_per_epoch": min(steps, limit // batch),
                  "data": {"name": args.data, "train_limit": limit, "val_limit": 64},
                  "optimizer": {"learning_rate": 0.05}, "eval_every_epoch": False}
        bare_args = ["--model", model, "--data", args.data, "--train-limit", str(limit), "--batch-size", str(batch),
                     "--steps", str(steps)]
        ratios = []
        for repeat in range(args.repeats):
            # Alternate which runs first: the second run of a pair may find the machine in another state.
            if repeat % 2 == 0:
                bare = run_bare_process(bare_args, env)["throughput_sps"]
                trial = run_trial_process(recipe, env)["metrics"]["throughput_sps"]
            else:
                trial = run_trial_process(recipe, env)["metrics"]["throughput_sps"]
                bare = run_bare_process(bare_args, env)["throughput_sps"]
            ratios.append(trial / bare)
            print(f"{model} repeat {repeat + 1}: bare {bare:.1f} samples/s, boosttune {trial:.1f} samples/s, "
                  f"ratio {trial / bare:.3f}", flush=True)
        print(f"{model}: boosttune / bare throughput {spread(ratios)}  (target >= 0.98)\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
