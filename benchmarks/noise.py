"""Know the noise: where the run-to-run spread of training speed comes from (issue 29).

The main job's confirm protocol (ResNet-8, Fashion-MNIST 4,096 images at 16x16, batch 64, 10 epochs, the 2,000-image
validation slice after every epoch, every held-out image at the end: BASE of benchmarks/build_confirm_table.py), O0
only, trained in three series one after another:

- fresh: N runs, seeds 1..N, each ``boosttune trial`` in a fresh process (no Ray running);
- warm, same seed: N runs of seed 1 on one warm Ray Train worker with cached graphs (the main job's way: a WarmPool
  and ``train_run``); its first run compiles the graph, the others train the kept one;
- warm, seeds 1..N: N more runs on the same worker, a new seed each.

Per series, for three ways to turn a run into one speed (all from the run's own record):

- windowed: the run's ``throughput_sps``, the median over <= 8 windows of its steady steps (what the table and the
  confirm stage use now);
- steady mean: ``throughput_mean_sps``, every steady step of every epoch (samples over time);
- epochs 2+: the epochs after the first (which holds the compile), from the learning curve's cumulative ``train_s``.

it prints the sd of log speed per run, the sd of the log ratio of consecutive runs paired (1-2, 3-4, ...), the lag-1
autocorrelation of log speed in run order, and an A/A check: O0 against O0, the mean log ratio of the pairs with a 95%
t interval (0 should be inside; its half-width is what one pair of runs can resolve). Then, per epoch (epochs 2+),
the spread of a run's epochs around its own mean against the spread between runs' means, the per-run component that
the epochs cannot explain, and the lag-1 autocorrelation of consecutive epochs inside a run.

Other work on the machine moves every figure: run it on a quiet machine. It says how much CPU processes outside its own
tree (other people's work) took during each run.

    python benchmarks/noise.py            # about 15 min on 2 cores (5 runs per series, 10 epochs)
    python benchmarks/noise.py --quick    # under 3 min (3 epochs, 2 runs per series): a check that it runs

Measured 2026-11-25 with ``--runs 6`` on a quiet machine (other work <= 0.02 cores; 17 min 43 s): sd of log speed per
run 0.037 in fresh processes, 0.025-0.034 on one warm worker (0.029 over its 12 runs), pair sd 0.030-0.058, every A/A
interval holding 0 (warm, 12 runs: -0.014 [-0.062, +0.034]): O0 against O0 paired 0.045 on warm workers, against
0.125 per paired seed (a recipe against the round's O0) in the committed table. The three speed figures were alike (warm, 12 runs: 0.029 windowed, 0.026 steady mean, 0.027 epochs 2+).
Warm runs trained 12% slower than fresh processes (957 against 1,092 samples/s; not Ray's OMP_NUM_THREADS=1, which
costs a fresh process nothing here), with per-epoch spread inside a run of 0.042 and epoch lag-1 +0.56 (slow
stretches of several epochs) against 0.016 and +0.21 in fresh processes.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _run import probe_env, trial_or_failure  # noqa: E402
from build_confirm_table import BASE  # noqa: E402

ESTIMATORS = ("windowed", "steady mean", "epochs 2+")
BUSY_CORES = 0.1  # other work above this share of a core during a run: the machine was not quiet
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 20: 2.086, 30: 2.042}


# --- what one run leaves ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One run's speed figures (samples/s) and what it cost, seen from the driver."""

    seed: int
    speeds: dict[str, float | None]
    epoch_speeds: list[float]  # epochs 2+, one figure each
    driver_s: float
    wall_s: float
    graph_cached: bool
    others_cores: float  # CPU cores that processes outside this script's tree used during the run


def run_of(metrics: dict[str, Any], curve: Sequence[dict[str, Any]], *, seed: int, driver_s: float,
           others_cores: float = 0.0) -> Run:
    """A :class:`Run` from a record's metrics and its per-epoch curve (cumulative ``train_s``)."""
    samples = metrics["samples_per_epoch"]
    times = [epoch["train_s"] for epoch in curve]
    epoch_speeds = [samples / (b - a) for a, b in zip(times, times[1:]) if b > a]
    later = samples * (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else None
    return Run(seed=seed, speeds={"windowed": metrics.get("throughput_sps"),
                                  "steady mean": metrics.get("throughput_mean_sps"), "epochs 2+": later},
               epoch_speeds=epoch_speeds, driver_s=driver_s, wall_s=metrics["wall_s"],
               graph_cached=bool(metrics.get("graph_cached")), others_cores=others_cores)


# --- the figures: pure arithmetic --------------------------------------------------------------------------------


def _t975(df: int) -> float:
    if df in T975:
        return T975[df]
    below = max(k for k in T975 if k < df)
    return T975[below] if df < 30 else 1.96 + 2.4 / df


def lag1(values: Sequence[float]) -> float | None:
    """The lag-1 autocorrelation of a sequence (None with fewer than 3 values or no spread)."""
    if len(values) < 3:
        return None
    mean = statistics.fmean(values)
    centred = [v - mean for v in values]
    total = sum(c * c for c in centred)
    return sum(a * b for a, b in zip(centred, centred[1:])) / total if total > 0 else None


class SeriesInfo(NamedTuple):
    n: int
    sd_log: float | None  # sd of log speed per run
    pair_sd: float | None  # sd of log(second / first) over consecutive pairs (1-2, 3-4, ...)
    autocorr: float | None  # lag-1, in run order
    aa_mean: float | None  # A/A: mean log ratio of the pairs
    aa_half: float | None  # its 95% t interval's half-width


def series_info(speeds: Sequence[float]) -> SeriesInfo:
    logs = [math.log(s) for s in speeds]
    pairs = [b - a for a, b in zip(logs[0::2], logs[1::2])]
    pair_sd = statistics.stdev(pairs) if len(pairs) >= 2 else None
    return SeriesInfo(
        n=len(logs), sd_log=statistics.stdev(logs) if len(logs) >= 2 else None, pair_sd=pair_sd,
        autocorr=lag1(logs), aa_mean=statistics.fmean(pairs) if pairs else None,
        aa_half=_t975(len(pairs) - 1) * pair_sd / math.sqrt(len(pairs)) if pair_sd is not None else None)


class EpochInfo(NamedTuple):
    runs: int
    epochs: int  # per run (the fewest)
    within_sd: float | None  # pooled sd of a run's epochs around the run's own mean (log)
    between_sd: float | None  # sd of the runs' mean log epoch speed
    per_run_sd: float | None  # the part of between_sd the epochs' own noise cannot explain: sqrt(b^2 - w^2 / k)
    epoch_autocorr: float | None  # lag-1 of consecutive epochs inside a run, pooled over runs (0: independent)


def epoch_info(runs: Sequence[Sequence[float]]) -> EpochInfo:
    """Within-run against between-run spread of per-epoch speed (log)."""
    runs = [[math.log(s) for s in r] for r in runs if len(r) >= 2]
    if not runs:
        return EpochInfo(0, 0, None, None, None, None)
    k = min(len(r) for r in runs)
    means = [statistics.fmean(r) for r in runs]
    residuals = [[v - m for v in r] for r, m in zip(runs, means)]
    ss, df = sum(x * x for r in residuals for x in r), sum(len(r) - 1 for r in runs)
    within = math.sqrt(ss / df)
    between = statistics.stdev(means) if len(means) >= 2 else None
    per_run = math.sqrt(max(0.0, between ** 2 - within ** 2 / k)) if between is not None else None
    lagged = sum(a * b for r in residuals for a, b in zip(r, r[1:]))
    # around a run's own mean, independent epochs give a lag-1 of about -1/k, not 0: added back (with 2 epochs the
    # residuals are +e and -e, which says nothing)
    autocorr = lagged / ss + 1 / k if ss > 0 and k >= 3 else None
    return EpochInfo(len(runs), k, within, between, per_run, autocorr)


# --- the runs ----------------------------------------------------------------------------------------------------


def _o0(epochs: int, seed: int) -> dict[str, Any]:
    from boosttune.config.recipe import parse_recipe

    return {**parse_recipe({**BASE, "epochs": epochs}).to_dict(), "seed": seed}


def fresh_series(seeds: Sequence[int], epochs: int, env: dict[str, str], log: Callable[[str], None]) -> list[Run]:
    runs = []
    for seed in seeds:
        others = OtherWork()
        began = time.perf_counter()
        result = trial_or_failure(_o0(epochs, seed), env, timeout=900)
        if "metrics" not in result:
            raise RuntimeError(f"fresh run of seed {seed} failed: {result['reason']}")
        runs.append(run_of(result["metrics"], result["epochs"], seed=seed, driver_s=time.perf_counter() - began,
                           others_cores=others.cores()))
        log(_run_line("fresh", runs[-1]))
    return runs


def warm_series(plan: dict[str, Sequence[int]], epochs: int, env: dict[str, str],
                log: Callable[[str], None]) -> dict[str, list[Run]]:
    """Every series of ``plan`` (name -> seeds) in turn on one warm worker with cached graphs."""
    from boosttune.execution.ray import connect_ray
    from boosttune.execution.ray_train import train_run
    from boosttune.execution.runs import RunSpec
    from boosttune.execution.warm import WarmPool

    runtime = {"ONEDNN_MAX_CPU_ISA": env.get("ONEDNN_MAX_CPU_ISA", "default")}
    connect_ray(log)
    out: dict[str, list[Run]] = {}
    with tempfile.TemporaryDirectory(prefix="bt_noise_") as scratch, \
            WarmPool(slots=1, env=runtime, storage_path=str(Path(scratch) / "train"), cache_graphs=True,
                     log=log) as pool:
        client, count = pool.client(), 0
        for name, seeds in plan.items():
            out[name] = []
            for seed in seeds:
                count += 1
                others = OtherWork()
                began = time.perf_counter()
                record = train_run(RunSpec(run_id=f"noise{count}", role="bench", recipe=_o0(epochs, seed)),
                                   output=scratch, env=runtime, pool=client)
                if not record.finished:
                    raise RuntimeError(f"{name} run of seed {seed} failed: {record.reason}")
                out[name].append(run_of(record.metrics, record.curve, seed=seed,
                                        driver_s=time.perf_counter() - began, others_cores=others.cores()))
                log(_run_line(name, out[name][-1]))
    return out


def _run_line(name: str, run: Run) -> str:
    speeds = ", ".join(f"{k} {v:.0f}" for k, v in run.speeds.items() if v)
    return (f"  {name}, seed {run.seed}: {speeds} samples/s; {run.driver_s:.1f} s from the driver "
            f"({run.wall_s:.1f} s in the worker){', graph cached' if run.graph_cached else ''}; other work "
            f"{run.others_cores:.2f} cores")


# --- printing ----------------------------------------------------------------------------------------------------


def _f(value: float | None, form: str = ".3f") -> str:
    return "n/a" if value is None else format(value, form)


def print_figures(series: dict[str, list[Run]]) -> None:
    print("\nspeed per run, log scale (sd 0.10 = about 10%); pairs are consecutive runs 1-2, 3-4, ...; A/A: mean log "
          "ratio of the pairs (second / first) with its 95% t interval")
    print(f"{'series':<24}{'speed':<13}{'runs':>5}{'median/s':>10}{'sd log':>8}{'pair sd':>9}{'lag-1':>7}"
          f"{'A/A mean [95% interval]':>30}")
    for name, runs in series.items():
        for estimator in ESTIMATORS:
            values = [r.speeds[estimator] for r in runs if r.speeds[estimator]]
            if len(values) < 2:
                continue
            info = series_info(values)
            aa = (f"{info.aa_mean:+.3f} [{info.aa_mean - info.aa_half:+.3f}, {info.aa_mean + info.aa_half:+.3f}]"
                  if info.aa_half is not None else _f(info.aa_mean, "+.3f"))
            print(f"{name:<24}{estimator:<13}{info.n:>5}{statistics.median(values):>10.0f}{_f(info.sd_log):>8}"
                  f"{_f(info.pair_sd):>9}{_f(info.autocorr, '+.2f'):>7}{aa:>30}")
    print("\nper epoch (epochs 2+, log scale): a run's epochs around its own mean (within) against the runs' means "
          "(between); per-run part = sqrt(between^2 - within^2 / epochs), the spread a run carries as a whole")
    print(f"{'series':<24}{'runs':>5}{'epochs':>7}{'within sd':>10}{'between sd':>11}{'per-run part':>13}"
          f"{'epoch lag-1':>12}")
    for name, runs in series.items():
        info = epoch_info([r.epoch_speeds for r in runs])
        if info.runs == 0:
            print(f"{name:<24}  n/a: needs 3 epochs or more per run")
            continue
        print(f"{name:<24}{info.runs:>5}{info.epochs:>7}{_f(info.within_sd):>10}{_f(info.between_sd):>11}"
              f"{_f(info.per_run_sd):>13}{_f(info.epoch_autocorr, '+.2f'):>12}")
    print("\ntime per run, median seen from the driver (in the worker): " + "; ".join(
        f"{name} {statistics.median(r.driver_s for r in runs):.1f} s "
        f"({statistics.median(r.wall_s for r in runs):.1f} s)" for name, runs in series.items()))
    others = [r.others_cores for runs in series.values() for r in runs]
    print(f"other work during the runs (CPU of processes outside this script's tree, in cores): median "
          f"{statistics.median(others):.2f}, max {max(others):.2f} of {os.cpu_count()}"
          + (": quiet" if max(others) < BUSY_CORES else
             ": BUSY, other work ran beside these runs and its noise is in the figures above"))


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


class OtherWork:
    """CPU taken by processes outside this script's process tree (its trials and its Ray instance are inside)."""

    def __init__(self) -> None:
        self._seen, self._at = self._cpu(), time.perf_counter()

    @staticmethod
    def _cpu() -> dict[int, float]:
        import psutil

        mine = {os.getpid(), *(child.pid for child in psutil.Process().children(recursive=True))}
        found = {}
        for process in psutil.process_iter(["cpu_times"]):
            times = process.info["cpu_times"]
            if process.pid not in mine and times is not None:
                found[process.pid] = times.user + times.system
        return found

    def cores(self) -> float:
        """Cores they used since the last call (or since this was made)."""
        now, at = self._cpu(), time.perf_counter()
        used = sum(cpu - self._seen.get(pid, 0.0) for pid, cpu in now.items())
        self._seen, elapsed, self._at = now, at - self._at, at
        return max(0.0, used) / elapsed if elapsed > 0 else 0.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--runs", type=int, default=None, help="runs per series (default 5; --quick 2)")
    p.add_argument("--epochs", type=int, default=None,
                   help=f"epochs per run (default {BASE['epochs']}, the main job's; --quick 3)")
    p.add_argument("--quick", action="store_true", help="3 epochs, 2 runs per series: a check that it runs")
    p.add_argument("--skip-fresh", action="store_true", help="warm series only")
    args = p.parse_args(argv)
    runs = args.runs or (2 if args.quick else 5)
    epochs = args.epochs or (3 if args.quick else BASE["epochs"])
    if runs < 2 or epochs < 1:
        p.error(f"--runs must be at least 2 and --epochs at least 1, but got {runs=} and {epochs=}")
    start = time.perf_counter()
    log = lambda message: print(message, flush=True)  # noqa: E731
    env = probe_env()
    log(f"O0, {epochs} epoch(s) per run, {runs} runs per series; {_load()}")
    seeds = list(range(1, runs + 1))
    series: dict[str, list[Run]] = {}
    if not args.skip_fresh:
        log("fresh processes (no Ray running):")
        series["fresh, seeds 1..N"] = fresh_series(seeds, epochs, env, log)
    log(f"one warm worker, cached graphs; {_load()}")
    series.update(warm_series({"warm, same seed": [1] * runs, "warm, seeds 1..N": seeds}, epochs, env, log))
    series["warm, both in order"] = series["warm, same seed"] + series["warm, seeds 1..N"]
    print_figures(series)
    log(f"\n{sum(len(r) for k, r in series.items() if k != 'warm, both in order')} runs in "
        f"{time.perf_counter() - start:.0f} s; at the end: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
