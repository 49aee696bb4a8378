"""The device's noise record: keyed by how runs are made, forgetting old races, reading files from before both."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from boosttune.stats import race as race_module
from boosttune.stages.noise import KEEP_RACES, RunMode, noise_record
from boosttune.stats.race import Race, RaceRules

WARM, FRESH = RunMode(True, True), RunMode(False, False)


def _race(sd: float, seed: int, rules: RaceRules | None = None) -> Race:
    rng = np.random.default_rng(seed)
    ratios = {n: np.exp(rng.normal(0.1, sd, 6)) for n in ("a", "b", "c")}
    gains = {n: rng.normal(0.0, 0.4, 6) for n in ("a", "b", "c")}
    race = Race.one_look(ratios, gains, 0.05, 1.0)
    if rules is not None:
        race.rules = rules
    return race


def test_modes_are_kept_apart_and_old_races_are_forgotten(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOSTTUNE_CACHE_DIR", str(tmp_path))
    warm, fresh = noise_record("CPU", "w", WARM), noise_record("CPU", "w", FRESH)
    assert warm.path != fresh.path != noise_record("CPU", "w").path
    for i in range(KEEP_RACES + 3):  # a noisy past, then quiet races
        warm.add(_race(0.3 if i < 3 else 0.05, i), race_id=f"/r{i}", mode=WARM)
    assert fresh.noise() is race_module.REFERENCE_NOISE
    noise = warm.noise()
    assert noise.speed_sd < 0.1 and f"last {KEEP_RACES} earlier races" in noise.source and "warm" in noise.source


def test_a_race_that_disagrees_with_the_record_restarts_its_history(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOSTTUNE_CACHE_DIR", str(tmp_path))
    record = noise_record("CPU", "w", WARM)
    for i in range(3):
        record.add(_race(0.02, i), race_id=f"/r{i}", mode=WARM)
    quiet = record.noise()
    loud = _race(0.3, 9, RaceRules.with_noise(quiet, min_seeds=2, max_seeds=6))
    assert loud.checks()[0].state == "disagrees" and "disagrees" in loud.record_note()
    record.add(loud, race_id="/loud", mode=WARM)
    assert len(json.loads(record.path.read_text())["history"]) == 1
    assert record.noise().speed_sd > 3 * quiet.speed_sd


@pytest.mark.parametrize("content", [{"device": "cpu", "races": 2, "speed_ss": 0.5, "speed_df": 10, "gain_ss": 2.0,
                                      "gain_df": 10, "race_ids": ["/old"]}, {"speed_ss": "x"}, [], "not json"])
def test_a_record_file_from_before_modes_and_history_still_loads(tmp_path, monkeypatch, content):
    monkeypatch.setenv("BOOSTTUNE_CACHE_DIR", str(tmp_path))
    record = noise_record("CPU", "w")
    record.path.parent.mkdir(parents=True, exist_ok=True)
    record.path.write_text(content if isinstance(content, str) else json.dumps(content))
    noise = record.noise()
    if isinstance(content, dict) and content.get("speed_df"):
        assert noise.speed_sd == pytest.approx(math.sqrt(2 * 0.5 / 10)) and noise.df == 10
    else:
        assert noise is race_module.REFERENCE_NOISE
    record.add(_race(0.05, 1), race_id="/new")  # and takes a race on top
    assert record.noise().df > 0
