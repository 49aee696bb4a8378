"""The race's two-way model: a far-off run set aside without setting aside normal ones; the record check."""

from __future__ import annotations

import math

import numpy as np

from boosttune.stats.race_model import check_record, fit, residual_t

SD = 0.04  # per run


def _rounds(rng, effects: dict[str, float], n: int, slow: tuple[int, str] | None = None) -> list[dict[str, float]]:
    rounds = []
    for r in range(n):
        base = rng.normal(0, SD) + (math.log(0.7) if slow == (r, "") else 0.0)
        rounds.append({k: e + rng.normal(0, SD) + (math.log(0.7) if slow == (r, k) else 0.0) - base
                       for k, e in effects.items()})
    return rounds


def test_one_30_percent_slow_run_is_set_aside_and_the_estimate_comes_back():
    rng = np.random.default_rng(0)
    effects = {"a": 0.14, "b": 0.0, "c": -0.1}
    rounds = _rounds(rng, effects, 5, slow=(2, "a"))
    plain, robust = fit(rounds, list(effects)), fit(rounds, list(effects), robust=True, prior_var=SD ** 2, prior_df=20)
    assert plain.set_aside == () and robust.set_aside == ((2, "a"),)
    assert abs(robust.effect["a"] - 0.14) < abs(plain.effect["a"] - 0.14) and robust.df == plain.df - 1
    assert robust.ss < plain.ss / 4


def test_a_slow_runs_residual_is_far_below_the_model_and_a_normal_runs_is_not():
    """The signed, externally studentized residual the race's spared drops read (race.SPARE_T): the 30%-slow run
    is many sds below the model, a normal run of the same candidate within a few of it (either sign)."""
    rng = np.random.default_rng(0)
    effects = {"a": 0.14, "b": 0.0, "c": -0.1}
    rounds = _rounds(rng, effects, 5, slow=(2, "a"))
    assert residual_t(rounds, list(effects), (2, "a"), SD ** 2, 20) < -6
    assert all(abs(residual_t(rounds, list(effects), (r, "a"), SD ** 2, 20)) < 3 for r in (0, 1, 3, 4))
    assert math.isnan(residual_t(rounds[:1], list(effects), (0, "a")))  # one run: no residual df to tell


def test_normal_runs_are_rarely_set_aside():
    rng = np.random.default_rng(1)
    effects = {"a": 0.1, "b": 0.0, "c": 0.05, "d": -0.05}
    races = 300
    flagged = sum(bool(fit(_rounds(rng, effects, 5), list(effects), robust=True, prior_var=SD ** 2,
                           prior_df=20).set_aside) for _ in range(races))
    assert flagged / races <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / races)


def test_a_record_at_half_the_noise_is_found_to_disagree_and_a_right_one_agrees():
    rng = np.random.default_rng(2)
    effects = {"a": 0.1, "b": 0.0, "c": 0.05, "d": -0.05}
    paired = SD * math.sqrt(2)
    states = {"right": [], "half": []}
    for _ in range(200):
        measured = fit(_rounds(rng, effects, 5), list(effects))
        states["right"].append(check_record(measured, paired, 20).state)
        states["half"].append(check_record(measured, paired / 2, 20).state)
    assert states["right"].count("disagrees") <= 10 and states["half"].count("disagrees") >= 100
    thin = fit(_rounds(rng, {"a": 0.1}, 3), ["a"])  # 2 df: too few to check
    assert thin.df < 4 and check_record(thin, paired, 20).state == "unchecked"
    assert check_record(thin, None, 0).state == "none"


def test_a_claim_takes_the_record_degrees_of_freedom_but_never_a_smaller_sd_than_its_own_runs():
    from boosttune.stats.race_model import claim_sd, pooled_sd

    rng = np.random.default_rng(3)
    rounds = [{"a": float(v)} for v in rng.normal(0.1, 0.2, 8)]  # wide: 0.2 per paired seed
    wide = fit(rounds, ["a"])
    own = (wide.ss / wide.df) ** 0.5
    narrow_record = pooled_sd(wide, 0.02, 20)  # a record at a tenth of the noise pulls the pooled sd down
    assert narrow_record[0] < own
    assert claim_sd(wide, 0.02, 20) == (own, narrow_record[1])  # the claim keeps the race's own spread, its df
    wider_record = claim_sd(wide, 1.0, 20)
    assert wider_record == pooled_sd(wide, 1.0, 20) and wider_record[0] > own  # a wider record still widens
    assert claim_sd(fit([{"a": 0.1}], ["a"]), 0.05, 20) == pooled_sd(fit([{"a": 0.1}], ["a"]), 0.05, 20)  # no own df
