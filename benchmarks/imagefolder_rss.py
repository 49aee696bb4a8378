"""Peak resident memory per rank of a built-in trial at 224 px: an image folder, or CIFAR-10 binary files.

Writes a synthetic data set into a temporary folder (real JPEG files, or CIFAR-10's binary layout with
10,000 records per file), then runs the trial as every rank of a data-parallel run would: one fresh
process per rank, each ``run_trial(recipe, num_shards=R, shard_id=r)`` on its shard (no AllReduce:
the ranks train apart; what is measured is what each process holds). Each rank reports its peak RSS
(``getrusage``) and its RSS once MindSpore is imported, before the data is touched. The parent also
polls every rank's RSS and stops a rank that passes ``--rss-cap-gb`` (a version of the code that
builds a float32 copy of the whole set would otherwise take the machine down).

    python benchmarks/imagefolder_rss.py                       # image folder, 2 ranks
    python benchmarks/imagefolder_rss.py --data cifar10        # CIFAR-10 layout, 2 ranks

Run from another checkout (e.g. ``git worktree add /tmp/before HEAD``) with that checkout's copy of
this file: the ranks import boosttune from the checkout the script sits in.
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_image_folder(root: Path, images: int, side: int, classes: int = 10) -> None:
    """Real JPEG files (smooth noise tinted per class, compressing like photographs), ``root/<class>/*.jpg``."""
    import numpy as np
    from PIL import Image

    rng = np.random.RandomState(0)
    for i in range(images):
        label = i % classes
        small = rng.randint(0, 256, (side // 16, side // 16, 3)).astype(np.uint8)
        image = Image.fromarray(small).resize((side, side), Image.BICUBIC)
        tint = np.asarray(image, np.int16) + (np.array([label * 20, 0, 255 - label * 20]) - 128) // 2
        folder = root / f"class{label}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.clip(tint, 0, 255).astype(np.uint8)).save(folder / f"{i:05d}.jpg", quality=90)


def write_cifar_folder(root: Path) -> None:
    """data_batch_1..5.bin and test_batch.bin, 10,000 records each (label byte, R, G, B planes)."""
    import numpy as np

    root.mkdir(parents=True)
    rng = np.random.RandomState(0)
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        records = rng.randint(0, 256, (10000, 1 + 3 * 32 * 32)).astype(np.uint8)
        records[:, 0] %= 10
        records.tofile(root / name)


def rank_main(args: argparse.Namespace) -> None:
    """One rank: import, then train and evaluate its shard; print one JSON line."""
    import psutil

    import boosttune
    from boosttune.config.recipe import parse_recipe
    from boosttune.trial.runner import run_trial

    importlib.import_module("mindspore")  # before the baseline is read: its memory is not the data's

    baseline_mb = psutil.Process().memory_info().rss / 2**20
    recipe = parse_recipe({
        "model": "lenet5", "epochs": 1, "batch_size": args.batch_size, "steps_per_epoch": args.steps,
        "shuffle": True, "eval_every_epoch": True,
        "data": {"name": args.data, "path": args.folder, "image_size": args.image_size,
                 "train_limit": args.train_limit, "val_limit": args.val_limit},
    })
    start = time.perf_counter()
    result = run_trial(recipe, num_shards=args.ranks, shard_id=args.rank, log=lambda m: None)
    print(json.dumps({
        "rank": args.rank, "boosttune": str(Path(boosttune.__file__).parent), "status": result.status,
        "steps": result.metrics["total_steps"], "val_acc": result.metrics["val_acc"],
        "wall_s": round(time.perf_counter() - start, 1), "rss_after_import_mb": round(baseline_mb),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }), flush=True)


def run_ranks(args: argparse.Namespace, env: dict[str, str]) -> list[dict]:
    import psutil

    cap = args.rss_cap_gb * 2**30
    ranks = []
    for rank in range(args.ranks):
        cmd = [sys.executable, __file__, "--rank", str(rank), *sys.argv[1:], "--folder", args.folder]
        ranks.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    polled = [0.0] * len(ranks)
    capped = [False] * len(ranks)
    while any(p.poll() is None for p in ranks):
        for i, process in enumerate(ranks):
            try:
                rss = sum(p.memory_info().rss for p in [psutil.Process(process.pid),
                                                         *psutil.Process(process.pid).children(recursive=True)])
            except psutil.Error:
                continue
            polled[i] = max(polled[i], rss / 2**20)
            if rss > cap and process.poll() is None:
                capped[i] = True
                process.kill()
        time.sleep(0.1)
    reports = []
    for i, process in enumerate(ranks):
        out, err = process.communicate()
        lines = [line for line in out.splitlines() if line.startswith("{")]
        report = json.loads(lines[-1]) if lines else {
            "rank": i, "status": f"stopped at the {args.rss_cap_gb} GB cap" if capped[i] else "failed",
            "error": (err.strip().splitlines() or ["?"])[-1][:300]}
        report["polled_peak_rss_mb"] = round(polled[i])
        reports.append(report)
    return reports


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["imagefolder", "cifar10"], default="imagefolder")
    parser.add_argument("--images", type=int, default=2000, help="image folder: files to write")
    parser.add_argument("--side", type=int, default=256, help="image folder: side of the JPEG files")
    parser.add_argument("--image-size", type=int, default=224, help="the side the trial resizes to")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=8, help="training steps per rank")
    parser.add_argument("--train-limit", type=int, default=1024)
    parser.add_argument("--val-limit", type=int, default=64)
    parser.add_argument("--rss-cap-gb", type=float, default=6.0, help="stop a rank whose RSS passes this")
    parser.add_argument("--folder", help="an existing data folder (else one is written to a temporary folder)")
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank is not None:
        rank_main(args)
        return 0

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _run import probe_env

    env = {**probe_env(), "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        if args.folder is None:
            args.folder = str(Path(tmp) / "data")
            start = time.perf_counter()
            if args.data == "imagefolder":
                write_image_folder(Path(args.folder), args.images, args.side)
                what = f"{args.images} JPEG files of {args.side}x{args.side}"
            else:
                write_cifar_folder(Path(args.folder))
                what = "CIFAR-10 binary layout, 60,000 records"
            print(f"data: {what} written in {time.perf_counter() - start:.0f} s", flush=True)
        reports = run_ranks(args, env)
    for report in reports:
        print(json.dumps(report))
    peaks = [r.get("peak_rss_mb", r["polled_peak_rss_mb"]) for r in reports]
    print(f"{args.data} at {args.image_size} px, {args.ranks} ranks, boosttune from {ROOT}: "
          f"peak RSS per rank {', '.join(f'{p} MB' for p in peaks)}")
    return 0 if all(r.get("status") in ("completed", "stopped", "target_reached") for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
