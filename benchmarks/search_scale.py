"""How far a search's one-seed speed-ups sit from what the confirm stage measured, per main job.

For every recipe a main job raced: its speed-up in the search (one seed, against the baseline stage's one O0 run)
over its per-step speed-up confirmed on paired seeds, and their geometric mean. Recipes of one search share one O0
reference, so a mean far from 1 says that reference met another machine than the search's trials did.

    python benchmarks/search_scale.py runs/resnet8-*/          # one line per finished main-job folder
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

_TRIAL_ID = re.compile(r"\(([0-9a-f]{8})\)")


def scale_rows(folder: Path) -> list[tuple[str, float, float]]:
    """(recipe, search speed-up, confirmed per-step speed-up) for every raced recipe the search also ran."""
    search = pd.read_parquet(folder / "results.parquet")
    summary = pd.read_csv(folder / "summary.csv")
    rows = []
    for _, row in summary.iterrows():
        if row["recipe"] == "O0" or not math.isfinite(float(row["step_speedup"])):
            continue
        trial = _TRIAL_ID.search(str(row["recipe"]))
        same = (search["trial_id"] == trial.group(1)) if trial else \
            (search["label"] == row["recipe"]) | (search["preset"] == row["recipe"])
        hit = search[same & search["speedup_vs_baseline"].notna()]
        if len(hit):
            rows.append((str(row["recipe"]), float(hit["speedup_vs_baseline"].iloc[0]), float(row["step_speedup"])))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+", help="finished main-job folders (results.parquet, summary.csv)")
    args = parser.parse_args(argv)
    for folder in args.folders:
        if not (folder / "summary.csv").is_file() or not (folder / "results.parquet").is_file():
            print(f"{folder}: no results.parquet and summary.csv (a main job with a confirm stage writes both)")
            continue
        rows = scale_rows(folder)
        ratios = [searched / confirmed for _, searched, confirmed in rows]
        mean = f"{math.exp(np.mean(np.log(ratios))):.2f}" if ratios else "n/a"
        print(f"{folder}: search over confirmed per step: " + (" ".join(f"{r:.2f}" for r in ratios) or "none")
              + f" (geometric mean {mean})")
        for name, searched, confirmed in rows:
            print(f"    {name}: {searched:.3f}x in the search, {confirmed:.3f}x confirmed per step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
