"""Where a stage's wall time goes: one-off Ray Train runs ("cold", as before warm workers) against warm workers.

A confirm stage in miniature at the main job's size (ResNet-8, Fashion-MNIST 4,096 training images at 16x16, 10
epochs, 2,000 validation images each epoch, then every held-out image once): the same paired runs (O0 and
GradientFreeze in turn, one seed per pair) trained one after another, first on cold runs, then on a warm pool,
then cold and warm again (ABBA, so a drift of the machine hits both). Seen from the driver, per mode:

- the share of the stage's wall time that is training: the runs' cumulative ``train_s`` (the learning curve's last
  point; the first step's graph compile included, evaluation not) over the stage's wall time (target >= 0.85);
- wall time per run outside the worker: the driver's time for a run minus the worker's own ``wall_s`` (target <= 2 s);
- inside the worker, what is not training: the worker's ``wall_s`` minus ``train_s``, split into evaluation and the rest.

Then one warm worker takes 20 small runs (LeNet-5, digits) and the 20th is set against the 1st: driver wall time,
throughput and the process's peak memory. Speed figures are ratios within this run.

    python benchmarks/warm_workers.py
    python benchmarks/warm_workers.py --pairs 2 --quick
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _run import probe_env  # noqa: E402

MAIN_JOB = {"model": "resnet8", "batch_size": 64, "epochs": 10,
            "data": {"name": "fashion_mnist", "train_limit": 4096, "val_limit": 2000, "image_size": 16,
                     "final_val_limit": "all"},
            "optimizer": {"name": "momentum", "learning_rate": 0.05, "lr_schedule": "cosine"}}
FREEZE = {"boost_level": "O1", "boost_config_dict": {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": True},
                                                      "grad_freeze": {"freeze_p": 0.5}}}
SMALL = {"model": "lenet5", "epochs": 1, "batch_size": 32, "steps_per_epoch": 20, "data": {"name": "digits"}}


HELPERS = {"Ray Train's controller": "TrainController", "the warm pool's dispatcher": "_Dispatcher",
           "raylet": "raylet", "gcs_server": "gcs_server"}


def _helper_cpu() -> dict[str, dict[int, float]]:
    """CPU seconds so far of Ray's helper processes alive now, by kind and pid."""
    import psutil

    found: dict[str, dict[int, float]] = {name: {} for name in HELPERS}
    for process in psutil.process_iter(["cmdline", "cpu_times"]):
        line = " ".join(process.info["cmdline"] or [])
        for name, marker in HELPERS.items():
            if marker in line and process.info["cpu_times"] is not None:
                found[name][process.pid] = process.info["cpu_times"].user + process.info["cpu_times"].system
    return found


def _stage(recipes: list[dict], pool, output: Path, env: dict[str, str], tag: str) -> dict[str, float]:
    from boosttune.execution.ray_train import train_run
    from boosttune.execution.runs import RunSpec

    before = _helper_cpu()
    start = time.perf_counter()
    outside, train, inside, evaluation = [], 0.0, 0.0, 0.0
    for index, recipe in enumerate(recipes):
        began = time.perf_counter()
        record = train_run(RunSpec(run_id=f"{tag}-{index}", role="confirm", recipe=recipe), output=output, env=env,
                           pool=pool.client() if pool else None)
        seen = time.perf_counter() - began
        if record.status != "completed":
            raise RuntimeError(f"{tag} run {index}: {record.status}: {record.reason}")
        m = record.metrics
        outside.append(seen - m["wall_s"])
        train += record.curve[-1]["train_s"]
        inside += m["wall_s"]
        evaluation += m["eval_s"]
        print(f"  {tag} run {index + 1}/{len(recipes)}: {seen:.1f} s seen from the driver, {m['wall_s']:.1f} s in the "
              f"worker, of which training {record.curve[-1]['train_s']:.1f} s (compile {m['compile_s']:.1f} s"
              f"{', graph cached' if m.get('graph_cached') else ''}), "
              f"evaluation {m['eval_s']:.1f} s; {m['throughput_sps']:.0f} samples/s", flush=True)
    wall = time.perf_counter() - start
    after = _helper_cpu()
    helpers = {name: sum(cpu - before[name].get(pid, 0.0) for pid, cpu in after[name].items()) / wall
               for name in HELPERS}
    print("  CPU share of the stage's wall time, helpers alive at its end: "
          + ", ".join(f"{name} {share:.3f}" for name, share in helpers.items()), flush=True)
    return {"wall": wall, "train": train, "share": train / wall, "outside": statistics.mean(outside),
            "rest_inside": (inside - train - evaluation) / len(recipes), "eval": evaluation / len(recipes),
            "runs": len(recipes)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2, help="paired rounds (O0 + GradientFreeze) per stage")
    parser.add_argument("--quick", action="store_true", help="2 epochs instead of 10 (a check that it runs)")
    parser.add_argument("--small-runs", type=int, default=20)
    args = parser.parse_args()
    env = probe_env()
    runtime = {k: v for k, v in env.items() if k == "ONEDNN_MAX_CPU_ISA"}
    os.environ.update({k: v for k, v in env.items() if k in ("ONEDNN_MAX_CPU_ISA", "GLOG_v")})
    from boosttune.execution.ray import connect_ray
    from boosttune.execution.warm import WarmPool

    connect_ray(lambda m: print(m, flush=True))
    base = {**MAIN_JOB, "epochs": 2 if args.quick else MAIN_JOB["epochs"]}
    recipes = []
    for pair in range(args.pairs):
        recipes += [{**base, "seed": 1000 + pair}, {**base, **FREEZE, "seed": 1000 + pair}]
    figures: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="bt_warm_") as tmp:
        for block, mode in enumerate(("cold", "warm", "warm", "cold")):
            print(f"{mode} stage ({block + 1}/4): {len(recipes)} runs", flush=True)
            if mode == "cold":
                figures[mode].append(_stage(recipes, None, Path(tmp), runtime, f"{mode}{block}"))
            else:
                started = time.perf_counter()
                with WarmPool(slots=1, env=runtime, storage_path=str(Path(tmp) / "train"), log=print) as pool:
                    print(f"  pool started in {time.perf_counter() - started:.1f} s (its group starts in the "
                          "background; the first run waits for it)", flush=True)
                    figures[mode].append(_stage(recipes, pool, Path(tmp), runtime, f"{mode}{block}"))
        small = []
        with WarmPool(slots=1, env=runtime, storage_path=str(Path(tmp) / "train")) as pool:
            from boosttune.execution.ray_train import train_run
            from boosttune.execution.runs import RunSpec

            for index in range(args.small_runs):
                began = time.perf_counter()
                record = train_run(RunSpec(run_id=f"small{index}", role="bench", recipe={**SMALL, "seed": 7}),
                                   output=Path(tmp), pool=pool.client())
                small.append((time.perf_counter() - began, record.metrics))

    def mean(mode: str, key: str) -> float:
        return statistics.mean(f[key] for f in figures[mode])

    epochs = base["epochs"]
    print(f"\nmain job's size (ResNet-8, {epochs} epochs, 2,000 validation images per epoch, then all), "
          f"{2 * args.pairs} runs per stage, 2 stages per mode (ABBA):")
    for mode in ("cold", "warm"):
        shares = ", ".join(f"{f['share']:.3f}" for f in figures[mode])
        print(f"{mode}: share of the stage's wall time that is training {mean(mode, 'share'):.3f} ({shares}); "
              f"stage {mean(mode, 'wall'):.0f} s; per run: outside the worker {mean(mode, 'outside'):.1f} s, in the "
              f"worker evaluation {mean(mode, 'eval'):.1f} s and {mean(mode, 'rest_inside'):.1f} s neither training "
              "nor evaluation")
    print(f"warm / cold stage wall time: {mean('warm', 'wall') / mean('cold', 'wall'):.3f}")
    print(f"targets: share >= 0.85: {'met' if mean('warm', 'share') >= 0.85 else 'MISSED'} "
          f"({mean('warm', 'share'):.3f}); outside the worker <= 2 s per run: "
          f"{'met' if mean('warm', 'outside') <= 2 else 'MISSED'} ({mean('warm', 'outside'):.1f} s)")
    (first_s, first), (last_s, last) = small[0], small[-1]
    print(f"\none warm worker, {len(small)} LeNet-5 runs of 20 steps (the same recipe and seed):")
    print(f"run 1: {first_s:.1f} s from the driver (the group's start included), {first['throughput_sps']:.0f} "
          f"samples/s, peak memory {first['peak_rss_mb']:.0f} MB")
    print(f"run {len(small)}: {last_s:.1f} s from the driver, {last['throughput_sps']:.0f} samples/s "
          f"({last['throughput_sps'] / first['throughput_sps']:.3f} x run 1), peak memory {last['peak_rss_mb']:.0f} MB; "
          f"same process: {first['pid'] == last['pid']}; same val_acc: {first['objective_value'] == last['objective_value']}")
    middle = [s for s, _ in small[1:]]
    print(f"runs 2-{len(small)} from the driver: median {statistics.median(middle):.2f} s (min {min(middle):.2f}, "
          f"max {max(middle):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
