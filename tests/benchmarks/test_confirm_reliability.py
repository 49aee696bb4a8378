"""benchmarks/confirm_reliability.py: the replay of the confirm stage on real and constructed tables."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import REPO
from tests.helpers.benchmark_scripts import load_benchmark


def _module():
    return load_benchmark("confirm_reliability")


def _table(path: Path, recipes: dict[str, tuple[float, float]], rounds: int = 10) -> Path:
    """A runs.csv like build_confirm_table.py's: recipe -> (speed-up, accuracy gain in pt) with seed noise."""
    rng = np.random.default_rng(3)
    rows = []
    for r in range(rounds):
        base_sps, base_acc = 1500 * np.exp(rng.normal(0, 0.05)), 0.85 + rng.normal(0, 0.002)
        rows.append(dict(round=r, seed=r + 1, recipe="O0", status="completed", throughput_sps=base_sps,
                         val_acc=base_acc, epoch_val_acc=base_acc))
        for name, (speed, gain) in recipes.items():
            acc = base_acc + (gain + rng.normal(0, 0.2)) / 100
            rows.append(dict(round=r, seed=r + 1, recipe=name, status="completed",
                             throughput_sps=base_sps * speed * np.exp(rng.normal(0, 0.05)), val_acc=acc,
                             epoch_val_acc=acc))
    pd.DataFrame(rows).to_csv(path / "runs.csv", index=False)
    return path / "runs.csv"


def test_a_clear_winner_is_found_and_the_bad_recipes_are_never_claimed_on_a_constructed_table(tmp_path, capsys):
    table = _table(tmp_path, {"fast": (1.6, 0.0), "slow": (0.7, 0.0), "lossy": (1.8, -3.0), "close": (1.0, 0.0)})
    assert _module().main(["--table", str(table), "--replays", "40", "--budget-runs", "15"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  fast\s+1\.\d+x\s+[+-]\d\.\d+ pt  acceptable", out, re.M)
    assert re.search(r"^  lossy\s+.*bad$", out, re.M) and re.search(r"^  slow\s+.*bad$", out, re.M)
    for method in ("fixed 3", "race, measured noise"):
        row = re.search(rf"^real table\s+{method}\s+(\S+)% \[.*?\]\s+(\S+)%", out, re.M)
        assert float(row.group(1)) >= 90 and float(row.group(2)) == 0, row.group(0)
    baseline = re.search(r"^real table\s+always baseline\s+(\S+)%", out, re.M)
    assert float(baseline.group(1)) == 0


def test_the_committed_table_replays_every_method_with_its_targets_printed(capsys):
    table = REPO / "benchmarks" / "data" / "confirm_table" / "runs.csv"
    runs = pd.read_csv(table)
    assert runs["recipe"].nunique() >= 10 and runs["round"].nunique() >= 10  # the minimum size
    assert _module().main(["--replays", "30", "--budget-runs", "15"]) == 0
    out = capsys.readouterr().out
    for scenario in ("planted 1.30x / 0 pt", "planted 1.15x / -0.3 pt", "planted 2.0x / 0 pt",
                     "nulls at the boundary", "nulls clearly bad", "real table"):
        for method in ("fixed 3", "fixed 5", "race, nothing measured", "race, measured noise", "always baseline"):
            assert re.search(rf"^{re.escape(scenario)}\s+{method}\s", out, re.M), (scenario, method)
    assert "race, measured noise: 1.30x / 0 pt found >= 90%:" in out
    assert "race, nothing measured: false claims at the boundary <= 5%:" in out
    shares = {}
    for handoff in ("old: fastest Pareto within 3 pt", "new: likely acceptable, by family",
                    "fixed {p=0.5, O1, pruned-30}", "fixed {p=0.5, p=0.7, O1, pruned-6}"):
        row = re.search(rf"^{re.escape(handoff)}\s+(\S+)% \[.*?\]\s+(\S+)%", out, re.M)
        assert row, handoff
        shares[handoff] = float(row.group(1)), float(row.group(2))
    # the new rule hands the race an acceptable recipe nearly always, the old one often not (30 replays: coarse)
    assert shares["new: likely acceptable, by family"][1] >= 90 > shares["old: fastest Pareto within 3 pt"][1]
    assert shares["new: likely acceptable, by family"][0] > shares["old: fastest Pareto within 3 pt"][0]
    assert "target: the new handoff answers an acceptable recipe in >= 85% of races" in out


def test_a_budget_too_small_to_claim_anything_is_refused(capsys):
    with pytest.raises(SystemExit) as exited:
        _module().main(["--budget-runs", "8"])
    assert exited.value.code == 2
    assert "--budget-runs 8: the race needs at least 9 runs" in capsys.readouterr().err
