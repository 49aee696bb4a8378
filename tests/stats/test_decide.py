"""The decision made once (boosttune.stats.decide): every figure beside a verdict from the race's one model, the
deciding tests' p-values, and how the answer is chosen among several winners."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from boosttune.objective import ACCURACY
from boosttune.stats.decide import select_confirmed
from boosttune.stats.margin import Margin
from boosttune.stats.race import Race, RaceRules

ONE_PT = Margin(ACCURACY, 1.0)


def _race(rng: np.random.Generator, seeds: int = 6) -> tuple[Race, list[dict[str, float]]]:
    """A fixed race of two candidates (1.25x at -0.2 pt; 1.02x at -0.1 pt) over ``seeds`` paired seeds, one look; and
    the per-step log ratios of the same cells (1.30x and 1.05x, their own noise)."""
    rules = RaceRules(alpha=0.05, min_seeds=2, max_seeds=seeds, futility=False)
    race = Race(["fast", "tie"], rules, 1.0)
    steps = []
    truth = {"fast": (1.25, -0.2, 1.30), "tie": (1.02, -0.1, 1.05)}
    for seed in range(seeds):
        racing = race.racing
        if not racing:
            break
        race.observe(seed, {n: (truth[n][0] * math.exp(rng.normal(0, 0.04)), truth[n][1] + rng.normal(0, 0.3))
                            for n in racing})
        steps.append({n: math.log(truth[n][2]) + rng.normal(0, 0.04) for n in racing})
    return race, steps


def test_per_step_figures_come_from_the_race_model_on_the_same_cells():
    race, steps = _race(np.random.default_rng(3))
    figures = race.speed_figures(steps, 0.025)
    assert math.exp(figures["fast"].estimate) == pytest.approx(1.30, rel=0.05)
    assert figures["fast"].low < figures["fast"].estimate < figures["fast"].high
    # fed the race's own per-job cells, the same model gives back the race's own figures
    own = race.speed_figures([{n: v for n, v in r.items()} for r in race._speed_rounds], 0.025)  # noqa: SLF001
    decided, _ = race.figures("fast", 0.025)
    assert (own["fast"].estimate, own["fast"].low, own["fast"].high) == pytest.approx(
        (decided.estimate, decided.low, decided.high))


def test_the_p_values_are_the_deciding_tests_and_agree_with_their_bounds():
    for seed in range(20):
        race, _ = _race(np.random.default_rng(seed))
        for name in ("fast", "tie"):
            p_faster, p_within = race.p_values(name)
            speed, gain = race.figures(name, 0.025)
            assert (p_faster < 0.025) == (speed.low > 0)  # one-sided at the same level: the same claim
            assert (p_within < 0.025) == (gain.low > -race.max_drop)
    assert race.p_values("nobody") == (pytest.approx(math.nan, nan_ok=True),) * 2


def _summary(*rows: tuple[str, float, float]) -> pd.DataFrame:
    base = {"recipe": "O0", "job_speedup": 1.0, "step_speedup": 1.0, "objective_gain": 0.0, "qualifies": False,
            "verdict": "baseline", "verdict_text": "the O0 baseline"}
    return pd.DataFrame([base] + [{"recipe": n, "job_speedup": job, "step_speedup": job, "objective_gain": gain,
                                   "qualifies": True, "verdict": "won", "verdict_text": f"{n} won"}
                                  for n, job, gain in rows])


def test_several_winners_say_how_the_answer_was_chosen():
    chosen = select_confirmed(_summary(("a", 1.24, -0.49), ("b", 1.08, -0.45)), ONE_PT, race=True)
    assert chosen.recipe == "a"
    assert chosen.why_chosen == "2 recipes won; the answer is the fastest per job, then b (1.08x, -0.45 pt)."
    close = select_confirmed(_summary(("a", 1.24, -0.49), ("b", 1.21, -0.10)), ONE_PT, race=True)
    assert close.recipe == "a" and close.why_chosen.endswith(
        "then b (1.21x, -0.10 pt), within 5% per job (a tie on speed) and more accurate: prefer it if accuracy "
        "matters more to you.")
    lossier = select_confirmed(_summary(("a", 1.24, -0.49), ("b", 1.21, -0.80)), ONE_PT, race=True)
    assert lossier.why_chosen.endswith("within 5% per job (a tie on speed) and less accurate.")
    alone = select_confirmed(_summary(("a", 1.24, -0.49)), ONE_PT, race=True)
    assert alone.why_chosen == ""


def test_when_no_recipe_won_the_answer_names_each_in_a_few_words_with_its_estimates():
    """Session 20: the bench's "answer:" line repeated every candidate's full verdict sentence (hundreds of words)."""
    summary = _summary(("p=0.5", 1.21, -0.67), ("O1", 0.84, -1.89)).assign(qualifies=False)
    summary["verdict"] = ["baseline", "undecided", "slower"]
    summary["verdict_text"] = ["the O0 baseline", "a long sentence " * 40, "another long sentence " * 40]
    chosen = select_confirmed(summary, ONE_PT, race=True)
    assert chosen.recipe == "O0" and "long sentence" not in chosen.reason
    assert chosen.reason.endswith("so the answer is the baseline (p=0.5: not decided at the seed cap (1.21x per job, "
                                  "-0.67 pt); O1: dropped: likely slower than the baseline (0.84x per job, -1.89 pt))")


def test_job_words_say_when_a_recipe_pays_its_compile_back_and_when_not_within_the_job():
    """A recipe faster per step whose compile is paid back only after the job's last step is not "faster after 177 of
    the job's 48 steps" (a smoke run printed that)."""
    from boosttune.report.render import _break_even
    from boosttune.stats.decide import job_words

    row = {"job_speedup": 0.98, "job_ci_low": 0.81, "job_ci_high": 1.19, "planned_epochs": 3, "job_steps": 48}
    beyond = job_words(pd.Series({**row, "break_even_steps": 176.2}))
    assert beyond.endswith("faster per step but not within the job (its compile paid back after 177 steps, the job "
                           "has 48)") and "of the job's" not in beyond
    assert job_words(pd.Series({**row, "break_even_steps": 20.5})).endswith(", faster after 21 of the job's 48 steps")
    assert job_words(pd.Series({**row, "break_even_steps": math.inf})).endswith(", never faster: slower per step")
    assert job_words(pd.Series({**row, "break_even_steps": 0.0})).endswith(", faster from the first step")
    assert _break_even(176.2, 48) == "beyond the job (177 steps; it has 48)" and _break_even(20.5, 48) == "21 of 48 steps"
