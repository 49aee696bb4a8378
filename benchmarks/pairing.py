"""What pairing by seed buys on each network boosttune has measured (issue 76, item 3), from committed tables.

The race pairs every candidate's run with O0's run of the same seed (one round, one seed) and fits
``value = recipe + round + noise`` (boosttune.stats.race_model). Pairing removes a seed's shared part from every
comparison (data order, initial weights, the machine's state that round); it costs the round effects' degrees of
freedom (``rounds - 1``). Per table and measure, the two-way analysis of variance over its complete rounds:

- ``F``: the rounds' mean square over the residual's (1: the seed shares nothing; its p-value, the F-test);
- ``seed share``: the seed's variance component over a run's variance (REML for a balanced two-way table, truncated
  at 0): the part of a comparison's variance pairing removes; ``seeds unpaired / paired``: how many more seeds an
  unpaired comparison needs for the same standard error (1 / (1 - share));
- ``df cost``: the residual df the round effects take in a race of one candidate and O0 at 3 and 10 seeds, and the
  one-sided 0.005 t quantile with and without them (the claim level of a candidate early in a race).

Where the seed shares nothing, paired and unpaired comparisons have the same expected variance in the race's complete
rounds (every racing candidate runs every round O0 runs) and pairing costs only those df, which a noise record of tens
of df makes negligible; where it shares a part, pairing is what makes the race's seeds few.

    python benchmarks/pairing.py          # seconds
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
TABLES = {  # name -> (runs file, accuracy column)
    "main job, confirm_table (10 epochs)": (DATA / "confirm_table" / "runs.csv", "val_acc"),
    "main job, confirm_table_2026-11-27": (DATA / "confirm_table_2026-11-27" / "runs.csv", "val_acc"),
    "main job, turns table": (DATA / "confirm_table_2026-11-27_turns" / "runs.csv", "val_acc"),
    "main job at 10 epochs (transfer truth)": (DATA / "transfer" / "main-10ep" / "truth.csv", "objective_value"),
    "main job at 30 epochs (transfer truth)": (DATA / "transfer" / "main-30ep" / "truth.csv", "objective_value"),
    "team LSTM at 12 epochs (2026-12-07)": (DATA / "transfer" / "team-seq-12ep-2026-12-07" / "truth.csv",
                                            "objective_value"),
    "team LSTM at 12 epochs (older truth)": (DATA / "transfer" / "team-seq-12ep" / "truth.csv", "objective_value"),
}


def two_way(table: pd.DataFrame) -> dict[str, float]:
    """The balanced two-way analysis of ``table`` (rows: rounds, columns: recipes)."""
    y = table.to_numpy(float)
    n, k = y.shape
    grand = y.mean()
    ss_rounds = k * ((y.mean(axis=1) - grand) ** 2).sum()
    ss_recipes = n * ((y.mean(axis=0) - grand) ** 2).sum()
    ss_error = ((y - grand) ** 2).sum() - ss_rounds - ss_recipes
    df_rounds, df_error = n - 1, (n - 1) * (k - 1)
    ms_rounds, ms_error = ss_rounds / df_rounds, ss_error / df_error
    seed_var = max(0.0, (ms_rounds - ms_error) / k)
    return {"rounds": n, "recipes": k, "F": ms_rounds / ms_error,
            "p": float(stats.f.sf(ms_rounds / ms_error, df_rounds, df_error)),
            "share": seed_var / (seed_var + ms_error)}


def complete(wide: pd.DataFrame) -> pd.DataFrame:
    """The largest block of rounds that ran the same recipes (a bench may race two sets of recipes in turn)."""
    present = wide.notna()
    patterns = present.apply(tuple, axis=1)
    best = max(set(patterns), key=lambda p: (patterns == p).sum() * sum(p))
    return wide.loc[patterns == best, [c for c, on in zip(wide.columns, best) if on]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="What pairing by seed buys on each committed table (issue 76, "
                                                 "item 3): the seed's share of each measure's variance, and its cost.")
    parser.parse_args(argv)
    print("df cost, one candidate and O0 (t quantile at one-sided 0.005, paired df / unpaired df):")
    for n in (3, 5, 10):
        paired, unpaired = n - 1, 2 * (n - 1)
        t = stats.t.ppf
        print(f"  {n} seeds: {paired} df, t {t(0.995, paired):.2f} / {unpaired} df, t {t(0.995, unpaired):.2f}; "
              f"with a noise record of 54 df: t {t(0.995, paired + 54):.2f} / {t(0.995, unpaired + 54):.2f}")
    for name, (path, accuracy) in TABLES.items():
        if not path.is_file():
            print(f"{name}: {path.relative_to(HERE.parent)} missing")
            continue
        runs = pd.read_csv(path)
        runs = runs[runs["status"] != "failed"]
        for measure, column, transform in (("log speed", "throughput_sps", np.log),
                                           ("accuracy (pt)", accuracy, lambda v: 100 * v)):
            got = two_way(transform(complete(runs.pivot_table(index="round", columns="recipe", values=column,
                                                              aggfunc="first"))))
            more = 1 / (1 - got["share"]) if got["share"] < 1 else math.inf
            print(f"{name}, {measure}: {got['rounds']} rounds x {got['recipes']} recipes; F {got['F']:.2f} "
                  f"(p {got['p']:.3g}); seed share {100 * got['share']:.0f}%; seeds unpaired / paired {more:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
