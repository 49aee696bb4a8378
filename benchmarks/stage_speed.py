"""Each stage's speed against the user's job run plainly: throughput, and per-step speed-up over O0 (issue 75).

    python benchmarks/stage_speed.py                 # pairs until each interval is within +-5% (3 to --max-pairs)
    python benchmarks/stage_speed.py --pairs 3       # exactly 3 pairs
    python benchmarks/stage_speed.py --pairs 0 --readme-run runs/resnet8-... --team-run ../team/runs/... \
        --ci-seconds 1213                           # the job-level targets only, from runs made apart

The recipes: O0 and three of different algorithms that run on CPU (GradientFreeze p=0.5 on 2 groups, LessBN, gradient
accumulation x4), on the main job's network and data (ResNet-8, the 4,096 Fashion-MNIST images boosttune ships, at
16 px, batch 64), ``--epochs`` each.

A pair, in turn on this machine (its two blocks swap places from pair to pair, the recipes rotate within each):
- plain: each recipe as ``boosttune trial`` in a fresh process, alone: the user's job as it runs without boosttune;
- the stages, in one fresh driver process that starts as every boosttune run does (``start_run``: Ray, the probe's
  settings, the ranks' CPU threads) and trains the recipes through each stage's own code:
  - baseline: one run at a time on a warm worker (``StartedRun.train``: the baseline stage);
  - search: the recipes as the search's Tune trials, Optuna's start points, on that warm worker (``run_search``), the
    baseline stage's O0 handed to it as the experiment hands it: O0 trains again first and closes the search, and a
    recipe's per-step speed-up is its results table's (against O0 at the trial's start, between those two runs);
  - rounds: one round of every recipe at once, their epochs in turn (``StartedRun.train_round``: the confirm stage,
    and ``bench`` and ``verify`` on one node).

Printed per stage: throughput over the plain process's (geometric mean over the pairs, 95% t-interval), per recipe
and for all recipes (each pair's mean over them is one observation); the per-step speed-up of each recipe over O0 in
the stage against the plain processes' paired ratio (log difference, each pair's mean over the three recipes one
observation); each stage's wall time; each target met or missed, by how much. The truth is the plain processes,
which no stage sees; a stage that read every recipe as fast as O0 (a fixed answer) misses the per-step target by the
recipes' own speed-ups.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _run import probe_env, run_trial_process  # noqa: E402

STAGES = ("baseline", "search", "rounds")
RECIPES = ("O0", "grad_freeze", "less_bn", "grad_accumulation")
THROUGHPUT_TARGET = 0.9  # a stage's throughput over the plain process's, at least
GAP_MEAN, GAP_INTERVAL = 0.05, 0.10  # the per-step gap: mean within +-5%, its 95% interval inside +-10%
STAGES_TARGET_S = 1000.0  # README command 1's stages, probe cached
CALIBRATION_SHARE_TARGET = 0.15  # a team project's calibration (the probe stage) over its stages, below
CI_TARGET_S = 20 * 60.0  # .ci/run in a fresh clone, install included
HALF_WIDTH = 0.05  # the sequential stop: every interval's half-width within +-5% (log scale)
STEPS_PER_EPOCH = 64  # 4,096 images, batch 64


def main_job_base(epochs: int) -> dict[str, Any]:
    """The README's main job's base recipe (experiments/resnet.py's defaults), ``epochs`` long."""
    return {"model": "resnet8", "batch_size": 64, "epochs": epochs, "seed": 0, "device_target": "CPU",
            "data": {"name": "fashion_mnist", "train_limit": 4096, "val_limit": 2000, "image_size": 16},
            "optimizer": {"name": "momentum", "learning_rate": 0.05, "lr_schedule": "cosine"}}


def recipe_points(base: dict[str, Any]) -> tuple[Any, dict[str, dict[str, Any]]]:
    """The search space's context for the main job and each recipe's point in it (as the search draws them)."""
    from boosttune.space import SpaceContext, informed_points, preset_params

    ctx = SpaceContext(total_steps=STEPS_PER_EPOCH * base["epochs"], param_count=20,
                       base_learning_rate=base["optimizer"]["learning_rate"],
                       unsupported=frozenset({"boost.less_bn.gc_flag"}))  # gradient centralization fails on CPU
    o0 = preset_params("O0", ctx, base)
    informed = dict(informed_points(ctx, base))
    return ctx, {
        "O0": o0,
        "grad_freeze": informed["grad_freeze p=0.5 on 2 groups"],
        "less_bn": informed["less_bn"],
        "grad_accumulation": {**o0, "boost.grad_accumulation": True, "grad_accumulation.grad_accumulation_step": 4},
    }


def recipes(epochs: int) -> dict[str, dict[str, Any]]:
    """Each recipe's document, as every condition trains it."""
    from boosttune.space import recipe_from_params

    base = main_job_base(epochs)
    ctx, points = recipe_points(base)
    return {name: recipe_from_params(params, ctx, base).to_dict() for name, params in points.items()}


def rotated(names: tuple[str, ...], pair: int) -> list[str]:
    shift = pair % len(names)
    return list(names[shift:] + names[:shift])


# --- one pair's stages, in a fresh driver process -------------------------------------------------------------------


def stages_once(epochs: int, order: list[str]) -> dict[str, Any]:
    """Train every recipe in each stage's condition (see the module's docstring); throughputs and wall times."""
    from dataclasses import replace

    from boosttune.config.experiment import parse_experiment
    from boosttune.config.recipe import parse_recipe
    from boosttune.execution.runs import RunSpec
    from boosttune.execution.start import RunRequest, start_run
    from boosttune.search.setup import SearchSetup
    from boosttune.search.tune import run_search
    from boosttune.execution.runs import RecordStore
    from boosttune.space import equivalence_key, recipe_from_params
    from boosttune.tables.results import build_results_table, search_reference

    base = main_job_base(epochs)
    ctx, points = recipe_points(base)
    documents = {name: recipe_from_params(points[name], ctx, base).to_dict() for name in order}
    keys = {equivalence_key(recipe_from_params(points[name], ctx, base)): name for name in order}
    quiet = lambda message: None  # noqa: E731
    said: list[str] = []
    launch = RunRequest(what="stage-speed", document={"base": base}, device_target="CPU", workers=1,
                        project=SimpleNamespace(recipe=parse_recipe(base)))
    out: dict[str, Any] = {"seconds": {}}
    with tempfile.TemporaryDirectory(prefix="stage_speed_") as tmp, \
            start_run(launch, Path(tmp) / "run", resume=False, log=said.append) as started:
        out["threads"] = next((line for line in said if line.startswith("threads:")), "")
        with started.warm_pool(quiet):
            began = time.perf_counter()
            o0_key = next(k for k, name in keys.items() if name == "O0")
            trained = {name: started.train(RunSpec(
                run_id="baseline" if name == "O0" else f"baseline-{name}", role="baseline", recipe=documents[name],
                label=name, preset="O0" if name == "O0" else None,
                key=o0_key if name == "O0" else None)) for name in order}
            out["seconds"]["baseline"] = time.perf_counter() - began
            out["baseline"] = {name: record.metrics.get("throughput_sps") for name, record in trained.items()}
            o0 = trained["O0"].metrics
            # As the experiment hands the search its baseline (boosttune.stages.baseline): O0's start point then
            # trains again first and closes the search, and the speed-ups are read as the results table reads them.
            RecordStore(started.output / "dedup").put(trained["O0"], name=o0_key)
            config = parse_experiment({"name": "stage-speed", "base": base, "num_trials": len(order),
                                       "early_stopping": False, "confirm_seeds": 0})
            setup = SearchSetup(base=base, ctx=ctx, env=started.env, workers=1, output=str(started.output),
                                presets={o0_key: "O0"}, labels=dict(keys),
                                baseline_objective=o0["objective_value"], max_drop=1.0, target=None,
                                max_concurrent=1, baseline_throughput_sps=o0["throughput_sps"],
                                remeasure_baseline=config.remeasure_baseline)
            setup = replace(setup, pool=started.client)
            began = time.perf_counter()
            outcome = run_search(config, started.output, setup=setup, points=[points[name] for name in order],
                                 resume=False, log=quiet)
            out["seconds"]["search"] = time.perf_counter() - began
            table = build_results_table([trained["O0"].to_dict(), *(r.to_dict() for r in outcome.records)],
                                        ray_version="n/a")
            reference = search_reference(table)
            searched = table[table["trial_id"] != "baseline"].set_index("trial_id")
            by_name = {keys[r.key]: r.run_id for r in outcome.records if r.key in keys and r.key != o0_key}
            speedups = searched["speedup_vs_baseline"]
            out["search"] = {name: float(searched.at[run_id, "throughput_sps"]) for name, run_id in by_name.items()}
            out["search"]["O0"] = reference.throughput_sps  # the search's own O0 runs (geometric mean)
            out["search_speedup"] = {name: float(speedups[run_id]) for name, run_id in by_name.items()}
            out["search_speedup"]["O0"] = 1.0
            out["search_o0_runs"] = list(reference.pooled)
        with started.warm_pool(quiet, turns=True):
            began = time.perf_counter()
            records = started.train_round([RunSpec(run_id=f"round-{name}", role="confirm", recipe=documents[name],
                                                   label=name, round=0) for name in order])
            out["seconds"]["rounds"] = time.perf_counter() - began
            out["rounds"] = {name: record.metrics.get("throughput_sps") for name, record in zip(order, records)}
    return out


def run_stages(epochs: int, order: list[str]) -> dict[str, Any]:
    """:func:`stages_once` in a fresh process (a fresh Ray each pair, as each run starts its own)."""
    done = subprocess.run([sys.executable, __file__, "--stages-once", ",".join(order), "--epochs", str(epochs)],
                          capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise RuntimeError(f"the stages' driver failed (exit {done.returncode}): {done.stderr[-3000:]}")
    return json.loads(lines[-1])


# --- the figures ---------------------------------------------------------------------------------------------------


_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
         11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 18: 2.101, 20: 2.086, 25: 2.060, 30: 2.042}


def t_quantile(df: int) -> float:
    """The t distribution's 97.5% point (a table: no SciPy needed; df between entries takes the next smaller one)."""
    return _T975[max(k for k in _T975 if k <= df)] if df < 30 else 1.96 + 2.4 / df


def interval(logs: list[float]) -> tuple[float, float, float]:
    """Mean of ``logs`` and its 95% t-interval, as ratios (exp)."""
    n = len(logs)
    mean = sum(logs) / n
    if n < 2:
        return math.exp(mean), math.nan, math.nan
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def stage_speedup(pair: dict[str, Any], stage: str, name: str) -> float:
    """A recipe's per-step speed-up over O0 as the stage reads it: the search's as its results table reads it (O0 at
    the trial's start, between the search's first and closing O0 runs), else throughput over the stage's O0."""
    read = pair.get(f"{stage}_speedup")
    return float(read[name]) if read and name in read else pair[stage][name] / pair[stage]["O0"]


def figures(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per stage: throughput over plain (per recipe and all), the per-step gap, and the wall times."""
    result: dict[str, Any] = {}
    for stage in STAGES:
        per_recipe = {name: interval([math.log(p[stage][name] / p["plain"][name]) for p in pairs])
                      for name in RECIPES}
        overall = interval([sum(math.log(p[stage][n] / p["plain"][n]) for n in RECIPES) / len(RECIPES)
                            for p in pairs])
        gaps = {name: interval([math.log(stage_speedup(p, stage, name)) - math.log(p["plain"][name] / p["plain"]["O0"])
                                for p in pairs]) for name in RECIPES if name != "O0"}
        gap = interval([sum(math.log(stage_speedup(p, stage, n)) - math.log(p["plain"][n] / p["plain"]["O0"])
                            for n in RECIPES if n != "O0") / (len(RECIPES) - 1) for p in pairs])
        result[stage] = {"throughput": per_recipe, "throughput_all": overall, "gaps": gaps, "gap": gap,
                         "seconds": [p["seconds"][stage] for p in pairs]}
    return result


def precise_enough(figs: dict[str, Any]) -> bool:
    """Every stage's pooled throughput ratio and per-step gap known within +-5% (their 95% half-widths)."""
    for stage in STAGES:
        for mean, low, high in (figs[stage]["throughput_all"], figs[stage]["gap"]):
            if not math.isfinite(low) or max(math.log(high / mean), math.log(mean / low)) > HALF_WIDTH:
                return False
    return True


def report(pairs: list[dict[str, Any]], plain_speedups: dict[str, tuple[float, float, float]]) -> list[str]:
    figs = figures(pairs)
    lines = [f"{len(pairs)} pairs; plain per-step speed-up over O0 (the truth): " + ", ".join(
        f"{name} {m:.3f} [{lo:.3f}, {hi:.3f}]" for name, (m, lo, hi) in plain_speedups.items())]
    for stage in STAGES:
        f = figs[stage]
        m, lo, hi = f["throughput_all"]
        verdict = "met" if lo >= THROUGHPUT_TARGET else (
            f"missed: the interval reaches {lo:.3f}" if m >= THROUGHPUT_TARGET else
            f"missed by {THROUGHPUT_TARGET - m:.3f}")
        lines.append(f"{stage}: throughput over plain {m:.3f} [{lo:.3f}, {hi:.3f}] (target >= {THROUGHPUT_TARGET}: "
                     f"{verdict}); " + ", ".join(f"{n} {a:.3f} [{b:.3f}, {c:.3f}]" for n, (a, b, c) in
                                                 f["throughput"].items()))
        gm, glo, ghi = f["gap"]
        mean_ok = abs(math.log(gm)) <= math.log(1 + GAP_MEAN)
        interval_ok = glo >= 1 - GAP_INTERVAL and ghi <= 1 + GAP_INTERVAL
        gap_verdict = "met" if mean_ok and interval_ok else "missed: " + "; ".join(
            ([] if mean_ok else [f"the mean is {100 * (gm - 1):+.1f}%"])
            + ([] if interval_ok else [f"the interval reaches {100 * (glo - 1):+.1f}% / {100 * (ghi - 1):+.1f}%"]))
        lines.append(f"{stage}: per-step speed-up over the plain paired ratio {gm:.3f} [{glo:.3f}, {ghi:.3f}] (target: "
                     f"mean within +-{100 * GAP_MEAN:.0f}%, interval inside +-{100 * GAP_INTERVAL:.0f}%: {gap_verdict}); "
                     + ", ".join(f"{n} {a:.3f} [{b:.3f}, {c:.3f}]" for n, (a, b, c) in f["gaps"].items()))
        seconds = f["seconds"]
        lines.append(f"{stage}: {len(RECIPES)} runs took {min(seconds):.0f}-{max(seconds):.0f} s of wall time "
                     f"(median {sorted(seconds)[len(seconds) // 2]:.0f} s)")
    return lines


def stage_seconds(run: Path) -> dict[str, float]:
    """A boosttune run folder's time per stage, as its run_info.json recorded it (the run's closing line)."""
    info = json.loads((run / "run_info.json").read_text())
    if not info.get("stage_s"):
        raise SystemExit(f"{run}: run_info.json records no stage_s (a run that did not finish its stages)")
    return {name: float(seconds) for name, seconds in info["stage_s"].items()}


def _verdict(ok: bool, miss: str) -> str:
    return "met" if ok else f"missed by {miss}"


def job_report(readme_runs: list[Path], team_runs: list[Path], ci_seconds: float | None) -> list[str]:
    """The job-level targets, from runs this benchmark did not make: README command 1's stages, a team project's
    calibration share, CI's wall time. Each is printed with its target, met or missed by how much."""
    lines = []
    for run in readme_runs:
        stages = stage_seconds(run)
        total = sum(stages.values())
        lines.append(f"README command 1 {run.name}: stages {total:.0f} s (" + ", ".join(
            f"{k} {v:.0f}" for k, v in stages.items()) + f"; target <= {STAGES_TARGET_S:.0f} s: "
            + _verdict(total <= STAGES_TARGET_S, f"{total - STAGES_TARGET_S:.0f} s") + ")")
    for run in team_runs:
        stages = stage_seconds(run)
        total, probe = sum(stages.values()), stages.get("probe", 0.0)
        share = probe / total if total else float("nan")
        lines.append(f"team project {run.name}: calibration (the probe stage) {probe:.0f} s of {total:.0f} s of "
                     f"stages = {100 * share:.1f}% (target < {100 * CALIBRATION_SHARE_TARGET:.0f}%: "
                     + _verdict(share < CALIBRATION_SHARE_TARGET,
                                f"{100 * (share - CALIBRATION_SHARE_TARGET):.1f} pt") + ")")
    if ci_seconds is not None:
        lines.append(f".ci/run in a fresh clone: {ci_seconds:.0f} s (target <= {CI_TARGET_S:.0f} s: "
                     + _verdict(ci_seconds <= CI_TARGET_S, f"{ci_seconds - CI_TARGET_S:.0f} s") + ")")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=None, help="exactly this many pairs (default: until precise; 0: only the job-level figures)")
    parser.add_argument("--max-pairs", type=int, default=8, help="at most this many pairs without --pairs")
    parser.add_argument("--epochs", type=int, default=4, help="epochs of every run")
    parser.add_argument("--json", type=Path, default=None, help="write every pair's figures here")
    parser.add_argument("--readme-run", type=Path, action="append", default=[], metavar="RUN",
                        help="a README command 1 run folder (runs/...): print its stages against <= 1,000 s")
    parser.add_argument("--team-run", type=Path, action="append", default=[], metavar="RUN",
                        help="a team project's run folder, calibration not cached: print the calibration's share "
                             "of its stages against < 15%%")
    parser.add_argument("--ci-seconds", type=float, default=None,
                        help="the wall time of .ci/run in a fresh clone, as timed: print it against <= 20 min")
    parser.add_argument("--stages-once", default=None, help=argparse.SUPPRESS)  # the driver of one pair's stages
    args = parser.parse_args(argv)
    if args.stages_once:
        print(json.dumps(stages_once(args.epochs, args.stages_once.split(","))), flush=True)
        return 0
    for run in (*args.readme_run, *args.team_run):
        if not (run / "run_info.json").is_file():
            parser.error(f"{run}: no run_info.json there (a boosttune run folder is runs/<name>-<date>-<time>)")
    job_lines = job_report(args.readme_run, args.team_run, args.ci_seconds)
    if args.pairs == 0:
        print("\n".join(job_lines))
        return 0
    env = probe_env()
    documents = recipes(args.epochs)
    pairs: list[dict[str, Any]] = []
    wanted = args.pairs or args.max_pairs
    for index in range(wanted):
        order = rotated(RECIPES, index)
        pair: dict[str, Any] = {"plain": {}}
        blocks = ["plain", "stages"] if index % 2 == 0 else ["stages", "plain"]
        for block in blocks:
            if block == "plain":
                for name in order:
                    pair["plain"][name] = run_trial_process(documents[name], env)["metrics"]["throughput_sps"]
            else:
                pair.update(run_stages(args.epochs, order))
        pairs.append(pair)
        print(f"pair {index + 1}: " + "; ".join(
            f"{where} " + " ".join(f"{name} {pair[where][name]:.0f}" for name in RECIPES)
            for where in ("plain", *STAGES)) + f" samples/s; {pair.get('threads', '')}", flush=True)
        if args.json is not None:
            args.json.write_text(json.dumps(pairs, indent=1))
        if args.pairs is None and len(pairs) >= 3 and precise_enough(figures(pairs)):
            break
    plain = {name: interval([math.log(p["plain"][name] / p["plain"]["O0"]) for p in pairs])
             for name in RECIPES if name != "O0"}
    for line in [*report(pairs, plain), *job_lines]:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
