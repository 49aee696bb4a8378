"""How often is the confirm stage's answer the right one? Replays it by lookup on real paired runs.

The table (benchmarks/data/confirm_table, built by build_confirm_table.py) holds every recipe trained on
every seed, paired by round with the O0 baseline. Each replay draws a confirm stage the way the main job
meets one: ``--candidates`` recipes (the main job confirms O1 and up to 3 searched ones) and an order of the
seeds, then answers it three ways from the same runs:

- **fixed 3** (the confirm stage before the race) and **fixed 5**: every candidate on the first 3 (5) seeds;
  a recipe qualifies when its speed-up's 95% interval lies above 1 and its mean accuracy gain is within
  ``max_drop``; the answer is the fastest that qualifies, else the baseline.
- **race** (:mod:`boosttune.evaluation.race`, its defaults): its budget is what fixed 3 costs; the answer
  is the fastest winner, else the baseline.

The **oracle** is the answer all the table's seeds give for the same candidates: the race's own test
("shown faster and non-inferior", Holm over the candidates at ``alpha``) at one look on every seed. The
answer of the old rule on every seed is printed next to it. A **false claim** is a replay that claims
a recipe (qualifies, or wins) whose all-seed figures say otherwise: a mean speed-up of 1 or less, or a
mean accuracy gain below ``-max_drop``. Shares carry Wilson 95% intervals, runs a 95% interval of the mean.

    python benchmarks/confirm_reliability.py                     # about a minute; --replays 4000 by default
    python benchmarks/confirm_reliability.py --eval epoch        # accuracy on the 2,000-image slice instead
    python benchmarks/confirm_reliability.py --budget-runs 50    # a race with more runs than fixed 3 seeds cost
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DEFAULT_TABLE = HERE / "data" / "confirm_table" / "runs.csv"
TARGETS = {"agreement": 0.90, "false_claims": 0.05}


@dataclass(frozen=True)
class Figures:
    """Per recipe (columns) and round (rows): the throughput ratio to the round's O0 and the accuracy gain (pt)."""

    ratio: pd.DataFrame
    gain: pd.DataFrame
    seeds: pd.Series


def load(path: Path, eval_column: str) -> Figures:
    runs = pd.read_csv(path)
    runs = runs[runs["status"] != "failed"]
    sps = runs.pivot_table(index="round", columns="recipe", values="throughput_sps", aggfunc="first")
    acc = runs.pivot_table(index="round", columns="recipe", values=eval_column, aggfunc="first")
    complete = sps.dropna().index.intersection(acc.dropna().index)  # rounds where every recipe finished
    sps, acc = sps.loc[complete], acc.loc[complete]
    ratio = sps.div(sps["O0"], axis=0).drop(columns="O0")
    gain = (100 * acc.sub(acc["O0"], axis=0)).drop(columns="O0")
    seeds = runs.drop_duplicates("round").set_index("round")["seed"].loc[complete]
    return Figures(ratio, gain, seeds)


def old_rule(ratio: pd.DataFrame, gain: pd.DataFrame, max_drop: float) -> tuple[str | None, set[str]]:
    """Fixed rounds, the rule before the race: (answer, recipes that qualify)."""
    from boosttune.evaluation.stats import paired_ratio

    qualifying = {}
    for name in ratio.columns:
        speed = paired_ratio(ratio[name].to_numpy(), np.ones(len(ratio)))
        if speed.low > 1 and gain[name].mean() >= -max_drop:
            qualifying[name] = speed.estimate
    return (max(qualifying, key=qualifying.get) if qualifying else None), set(qualifying)


def race_once(ratio: pd.DataFrame, gain: pd.DataFrame, rules, max_drop: float) -> tuple[str | None, set[str], int]:
    """The race over the rounds in the given order: (answer, winners, runs spent)."""
    from boosttune.evaluation.race import Race

    race, spent = Race(list(ratio.columns), rules, max_drop), 0
    for index in ratio.index:
        if not race.racing:
            break
        cost = 1 + len(race.racing)
        if not rules.fits(cost, spent, 0.0, None):
            break
        spent += cost
        race.observe(int(index), {n: (float(ratio.at[index, n]), float(gain.at[index, n])) for n in race.racing})
    race.out_of_budget()
    return race.answer(), {w.name for w in race.winners}, spent


def oracle(ratio: pd.DataFrame, gain: pd.DataFrame, alpha: float, max_drop: float) -> str | None:
    """The race's test at one look on every seed: Holm over the candidates, the fastest shown."""
    from boosttune.evaluation.race import Race

    return Race.at_once({n: ratio[n].to_numpy() for n in ratio}, {n: gain[n].to_numpy() for n in gain}, alpha,
                        max_drop).answer()


def clearance(standing, level: float, max_drop: float) -> str:
    """How far the one-sided bounds of the race's claim lie from their nulls, at ``level``."""
    from boosttune.evaluation.race import _t_bound

    speed = _t_bound(standing.log_speedups, level, upper=False)
    gain = _t_bound(standing.gains, level, upper=False) + max_drop
    return f"speed {speed:+.3f} log, gain {gain:+.2f} pt -> {'shown' if min(speed, gain) > 0 else 'not shown'}"


def wilson(k: int, n: int) -> str:
    if n == 0:
        return "n/a"
    z, p = 1.96, k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{100 * p:5.1f}% [{100 * (centre - half):.1f}, {100 * (centre + half):.1f}]"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--table", type=Path, default=DEFAULT_TABLE, help=f"runs.csv (default {DEFAULT_TABLE})")
    p.add_argument("--replays", type=int, default=4000, help="replays, each a draw of candidates and a seed order")
    p.add_argument("--candidates", type=int, default=4, help="candidates per replay next to O0 (default 4)")
    p.add_argument("--max-drop", type=float, default=1.0, help="the margin in accuracy points (default 1, the "
                                                                "experiment scripts')")
    p.add_argument("--eval", choices=["all", "epoch"], default="all",
                   help="the accuracy of a run: all = every held-out image (the confirm stage's), epoch = the last "
                        "epoch's 2,000-image slice (before)")
    p.add_argument("--budget-runs", type=int, default=None,
                   help="the race's budget in runs, the baseline's included (default: what fixed 3 seeds cost)")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws")
    args = p.parse_args(argv)

    from boosttune.evaluation.race import Race, RaceRules

    figures = load(args.table, "val_acc" if args.eval == "all" else "epoch_val_acc")
    names, rounds = list(figures.ratio.columns), list(figures.ratio.index)
    k = min(args.candidates, len(names))
    budget = args.budget_runs if args.budget_runs is not None else 3 * (k + 1)
    if budget < 3 * (k + 1):
        p.error(f"--budget-runs {budget}: the race needs at least {3 * (k + 1)} runs (3 rounds of O0 + {k} "
                "candidates) to be able to claim anything")
    rules = RaceRules(max_runs=budget, max_seeds=len(rounds), gain_noise=1.0)
    fixed3 = " (fixed 3's)" if budget == 3 * (k + 1) else ""
    print(f"table: {args.table} ({len(names) + 1} recipes x {len(rounds)} complete paired rounds); accuracy: "
          f"{'every held-out image' if args.eval == 'all' else 'the 2,000-image slice'}; max_drop {args.max_drop:g} "
          f"pt; {args.replays} replays of O0 + {k} candidates; race budget {rules.max_runs} runs{fixed3}, "
          f"alpha {rules.alpha:g}, seeds {rules.min_seeds}-{rules.max_seeds}")
    print("all-seed figures (the truth a claim is judged by):")
    for name in names:
        speed = math.exp(np.log(figures.ratio[name]).mean())
        print(f"  {name:<22} {speed:.3f}x  gain {figures.gain[name].mean():+.2f} pt  (sd per seed: speed "
              f"{np.log(figures.ratio[name]).std(ddof=1):.3f} log, gain {figures.gain[name].std(ddof=1):.2f} pt)")
    everything = Race.at_once({n: figures.ratio[n].to_numpy() for n in names},
                              {n: figures.gain[n].to_numpy() for n in names}, rules.alpha, args.max_drop)
    print(f"the oracle's test on all {len(rounds)} seeds at its first Holm step (one-sided level "
          f"{rules.alpha / k:.3g}), how far each bound clears its null (negative: not shown):")
    for name in names:
        print(f"  {name:<22} {clearance(everything.standings[name], rules.alpha / k, args.max_drop)}")
    truly_ok = {n for n in names if math.exp(np.log(figures.ratio[n]).mean()) > 1
                and figures.gain[n].mean() >= -args.max_drop}

    rng = np.random.default_rng(args.seed)
    methods = ("fixed 3", "fixed 5", "race")
    agree = dict.fromkeys(methods, 0)
    agree_on = {m: {True: 0, False: 0} for m in methods}  # by whether the oracle answers a recipe
    agree_old = dict.fromkeys(methods, 0)
    false = dict.fromkeys(methods, 0)
    spent: dict[str, list[int]] = {m: [] for m in methods}
    oracle_answers: dict[str | None, int] = {}
    cache: dict[tuple[str, ...], tuple[str | None, str | None]] = {}
    for _ in range(args.replays):
        chosen = tuple(sorted(rng.choice(names, size=k, replace=False)))
        order = list(rng.permutation(rounds))
        ratio, gain = figures.ratio.loc[order, list(chosen)], figures.gain.loc[order, list(chosen)]
        if chosen not in cache:
            cache[chosen] = (oracle(ratio, gain, rules.alpha, args.max_drop),
                             old_rule(ratio, gain, args.max_drop)[0])
        truth, truth_old = cache[chosen]
        oracle_answers[truth] = oracle_answers.get(truth, 0) + 1
        answers = {}
        for m, n in (("fixed 3", 3), ("fixed 5", 5)):
            answer, claims = old_rule(ratio.iloc[:n], gain.iloc[:n], args.max_drop)
            answers[m] = (answer, claims, n * (k + 1))
        answers["race"] = race_once(ratio, gain, rules, args.max_drop)
        for m, (answer, claims, runs) in answers.items():
            agree[m] += answer == truth
            agree_on[m][truth is not None] += answer == truth
            agree_old[m] += answer == truth_old
            false[m] += bool(claims - truly_ok)
            spent[m].append(runs)

    print("oracle answers over the replays: " + ", ".join(
        f"{name or 'baseline'} {100 * c / args.replays:.0f}%" for name, c in
        sorted(oracle_answers.items(), key=lambda kv: -kv[1])))
    print(f"\n{'method':<9} {'agrees with the oracle':<26} {'false claims':<24} {'runs spent (95% CI)':<22} "
          "agrees with the old rule on all seeds")
    for m in methods:
        runs = np.asarray(spent[m], float)
        half = 1.96 * runs.std(ddof=1) / math.sqrt(len(runs)) if runs.std() > 0 else 0.0
        print(f"{m:<9} {wilson(agree[m], args.replays):<26} {wilson(false[m], args.replays):<24} "
              f"{runs.mean():5.1f} [{runs.mean() - half:.1f}, {runs.mean() + half:.1f}]{'':<6} "
              f"{wilson(agree_old[m], args.replays)}")
    with_recipe = sum(c for name, c in oracle_answers.items() if name is not None)
    print("\nagreement where the oracle answers the baseline / a recipe: " + "; ".join(
        f"{m} {wilson(agree_on[m][False], args.replays - with_recipe).strip()} / "
        f"{wilson(agree_on[m][True], with_recipe).strip()}" for m in methods))
    race_agree, race_false = agree["race"] / args.replays, false["race"] / args.replays
    race_runs, fixed_runs = np.mean(spent["race"]), np.mean(spent["fixed 3"])
    print("\ntargets: race agrees >= 90%: " + ("met" if race_agree >= TARGETS["agreement"] else "MISSED")
          + f" ({100 * race_agree:.1f}%); false claims <= 5%: "
          + ("met" if race_false <= TARGETS["false_claims"] else "MISSED") + f" ({100 * race_false:.1f}%); "
          + f"runs <= fixed 3's: {'met' if race_runs <= fixed_runs else 'MISSED'} ({race_runs:.1f} vs {fixed_runs:.1f}); "
          + f"agrees more than fixed 3: {'met' if agree['race'] > agree['fixed 3'] else 'MISSED'} "
          + f"({100 * race_agree:.1f}% vs {100 * agree['fixed 3'] / args.replays:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
