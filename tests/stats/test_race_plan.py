"""What a race can show (boosttune.stats.race_plan): the design's power against a simulation of the shipped race, the
budget a noisy network needs, and the lead an undecided race leaves with its chance and the command that decides it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from boosttune.stats.decisions import Exit
from boosttune.stats.race import Race, RaceRules
from boosttune.stats.race_plan import after_race, before_race, first_claim_level, largest_noise, lead, plan, power, race_plan

MARGIN = 1.0


def test_power_rises_with_seeds_and_falls_with_noise():
    assert power(2, 1.0, 1.0, 0.0125, 3, -2.0) == 0.0  # no look before min_seeds
    by_seeds = [power(n, 1.22, 1.0, 0.0125, 3, -2.0) for n in (3, 6, 10, 15)]
    assert by_seeds == sorted(by_seeds) and by_seeds[0] < 0.25 and by_seeds[-1] > 0.7
    assert power(10, 0.38, 1.0, 0.0125, 3, -2.0) > 0.999 > power(10, 2.0, 1.0, 0.0125, 3, -2.0)


def test_the_team_workloads_noise_needs_more_than_its_budget_and_the_main_jobs_does_not():
    team = Race(["a", "b", "c"], RaceRules(max_runs=21), MARGIN)
    p = race_plan(team, 1.22)
    assert p.short and p.cap == 9 and p.seeds is not None and p.seeds > 9 and p.runs > 21
    assert f"--set confirm_budget_runs={p.runs}" in p.text("21 runs", "pt")
    main = Race(["a", "b", "c"], RaceRules(max_runs=35), MARGIN)
    assert not race_plan(main, 0.38).short
    assert 0.38 < largest_noise(main) and largest_noise(team) < 1.22
    alpha, cap = first_claim_level(team)
    assert cap == 9 and power(cap, largest_noise(team), MARGIN, alpha, 3, -2.0) == pytest.approx(0.8, abs=0.01)


def test_the_plan_matches_the_shipped_race_on_a_lone_lossless_candidate():
    """A lone lossless, clearly faster recipe at 1.22 pt: the plan's power at the race's cap against how often the
    shipped race (t statistics, estimated noise) shows it; the plan's normal approximation reads a little high."""
    rules = RaceRules(max_seeds=12, speed_noise=0.06, gain_noise=1.22, noise_df=20, futility=False)  # no look past the cap
    rng, shown, races = np.random.default_rng(3), 0, 300
    for _ in range(races):
        race = Race(["a"], rules, MARGIN)
        while race.racing:
            race.observe(race.rounds, {"a": (1.3 * math.exp(rng.normal(0, 0.06)), rng.normal(0, 1.22))})
        shown += race.standings["a"].exit == Exit.WON
    planned = race_plan(Race(["a"], rules, MARGIN), 1.22).power
    assert planned - 0.12 <= shown / races <= planned + 0.05


def _undecided_race(gains, speed=1.2) -> Race:
    race = Race(["lead", "other"], RaceRules(max_runs=14, gain_noise=1.2, noise_df=0, futility=False), MARGIN)
    for r, g in enumerate(gains):
        race.observe(r, {n: (speed * math.exp(0.02 * (-1) ** r), g + (0.8 if n == "other" else 0.0) * (-1) ** r - (
            1.0 if n == "other" else 0.0)) for n in race.racing})
        if not race.racing:
            break
    race.out_of_budget()
    return race


def test_an_undecided_race_names_its_lead_its_chance_and_the_seeds_that_decide_it():
    race = _undecided_race([0.9, -1.4, 1.3, -1.1, 0.8])
    assert race.answer() is None
    best = lead(race)
    assert best is not None and best.name == "lead" and 0.3 < best.chance < 1.0
    assert best.speedup[1] < best.speedup[0] < best.speedup[2] and best.gain[1] < best.gain[0] < best.gain[2]
    assert best.seeds is not None and best.seeds > best.n
    assert "at this network's objective noise as the race measured it" in after_race(race, "pt")
    said = before_race(Race(["lead", "other"], race.rules, MARGIN), None, 0, "pt")
    assert said.startswith("this network's objective noise is not measured yet") and "pt per paired seed" in said
    assert before_race(Race(["a"], RaceRules(max_runs=35), MARGIN), 0.38, 20, "pt") == ""


def test_a_race_with_a_winner_or_only_drops_names_no_lead():
    race = Race(["fast", "slow"], RaceRules(max_runs=40, gain_noise=0.4, noise_df=20), MARGIN)
    for r in range(10):
        race.observe(r, {n: ((1.3 if n == "fast" else 0.5) * math.exp(0.01 * (-1) ** r), 0.1 * (-1) ** r)
                         for n in race.racing})
        if not race.racing:
            break
    assert race.answer() == "fast" and lead(race) is None
