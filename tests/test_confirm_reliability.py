"""benchmarks/confirm_reliability.py: the replay of the confirm stage on real and constructed tables."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("confirm_reliability", ROOT / "benchmarks" / "confirm_reliability.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def test_a_clear_winner_is_found_by_the_race_and_the_oracle(tmp_path, capsys):
    table = _table(tmp_path, {"fast": (1.6, 0.0), "slow": (0.7, 0.0), "lossy": (1.8, -3.0)})
    assert _module().main(["--table", str(table), "--replays", "200", "--candidates", "3"]) == 0
    out = capsys.readouterr().out
    assert "oracle answers over the replays: fast 100%" in out
    race = re.search(r"^race\s+(\S+)%.*?\s(\S+)%", out, re.M)
    assert float(race.group(1)) >= 90 and float(race.group(2)) == 0  # agrees, and never claims "lossy"
    assert "race agrees >= 90%: met" in out


def test_the_committed_table_replays_with_its_targets_printed(capsys):
    table = ROOT / "benchmarks" / "data" / "confirm_table" / "runs.csv"
    runs = pd.read_csv(table)
    assert runs["recipe"].nunique() >= 10 and runs["round"].nunique() >= 10  # the minimum size
    assert _module().main(["--replays", "300"]) == 0
    out = capsys.readouterr().out
    for method in ("fixed 3", "fixed 5", "race"):
        assert re.search(rf"^{method}\s+\d", out, re.M), method
    targets = out.splitlines()[-1]
    assert targets.startswith("targets: race agrees >= 90%:") and "false claims <= 5%: met" in targets


def test_a_budget_too_small_to_claim_anything_is_refused(capsys):
    with pytest.raises(SystemExit) as exited:
        _module().main(["--budget-runs", "10"])
    assert exited.value.code == 2
    assert "--budget-runs 10: the race needs at least 15 runs" in capsys.readouterr().err
