"""Each CPU-capable boost algorithm vs the O0 baseline: throughput ratio and accuracy delta, 3 seeds.

Every trial runs in a fresh process through ``boosttune trial``; for each seed the variants run
back to back, so each ratio compares runs minutes apart on the same machine. Compile time and
DimReduce's stage 1 are reported apart from the steady-state throughput.

    python benchmarks/algorithms.py [--seeds 0,1,2] [--model resnet8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _run import probe_env, run_trial_process  # noqa: E402


def _manual(**switches):
    return {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": False, **switches}}


VARIANTS = {
    "O0": ("O0", {}),
    "O1-equivalent": ("O1", {"less_bn": {"gc_flag": False}}),
    "less_bn": ("O1", {**_manual(less_bn=True), "less_bn": {"gc_flag": False}}),
    "grad_freeze p=0.7": ("O1", {**_manual(grad_freeze=True), "grad_freeze": {"freeze_p": 0.7}}),
    "grad_freeze p=0.4": ("O1", {**_manual(grad_freeze=True), "grad_freeze": {"freeze_p": 0.4}}),
    "grad_accum k=4": ("O1", {**_manual(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 4}}),
    "dim_reduce k=16": ("O1", {**_manual(dim_reduce=True), "dim_reduce": {"n_components": 16}}),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--model", default="resnet8")
    parser.add_argument("--data", default="fashion_mnist")
    parser.add_argument("--train-limit", type=int, default=4096)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    env = probe_env()
    print(f"{args.model} on {args.data} ({args.train_limit} train / 2000 val), {args.epochs} epochs, batch 64, "
          f"momentum lr 0.05 cosine; ONEDNN_MAX_CPU_ISA={env.get('ONEDNN_MAX_CPU_ISA', 'default')}", flush=True)
    rows: dict[str, dict[str, list[float]]] = {name: {"ratio": [], "delta": [], "compile": [], "acc": []}
                                               for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="boosttune_bench_") as work:
        for seed in seeds:
            baseline = None
            for name, (level, boost) in VARIANTS.items():
                recipe = {"model": args.model, "batch_size": 64, "epochs": args.epochs, "seed": seed,
                          "data": {"name": args.data, "train_limit": args.train_limit, "val_limit": 2000},
                          "optimizer": {"learning_rate": 0.05, "lr_schedule": "cosine"},
                          "boost_level": level, "boost_config_dict": boost}
                try:
                    m = run_trial_process(recipe, env, work_dir=work)["metrics"]
                except RuntimeError as e:
                    print(f"seed {seed} {name}: {e}", flush=True)
                    continue
                baseline = m if name == "O0" else baseline
                ratio = m["throughput_sps"] / baseline["throughput_sps"]
                delta = 100 * (m["val_acc"] - baseline["val_acc"])
                for key, value in (("ratio", ratio), ("delta", delta), ("compile", m["compile_s"]),
                                   ("acc", m["val_acc"])):
                    rows[name][key].append(value)
                print(f"seed {seed} {name:<18} {m['throughput_sps']:8.1f} samples/s  ratio {ratio:.3f}  "
                      f"val_acc {m['val_acc']:.4f} ({delta:+.2f} pt)  compile {m['compile_s']:.2f} s"
                      + (f"  stage1 {m['stage1_s']:.1f} s" if m.get("stage1_s") else ""), flush=True)
    print(f"\n{'variant':<20}{'speed vs O0 (median, min-max)':<32}{'Δ val_acc pt (mean ± sd)':<28}{'compile s':>10}")
    for name, r in rows.items():
        if not r["ratio"]:
            continue
        sd = statistics.stdev(r["delta"]) if len(r["delta"]) > 1 else 0.0
        print(f"{name:<20}{statistics.median(r['ratio']):.3f} ({min(r['ratio']):.3f}-{max(r['ratio']):.3f}){'':<13}"
              f"{statistics.mean(r['delta']):+6.2f} ± {sd:4.2f}{'':<14}{statistics.median(r['compile']):10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
