"""boosttune.stats.paired against scipy on known data, plus the verdict rules and argument checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from boosttune.errors import ConfigError
from boosttune.stats.paired import (
    Interval,
    mean_interval,
    paired_delta,
    paired_ratio,
    ratio_interval,
    seeds_to_show_noninferiority,
    verdict,
)

# Student (1908), the sleep data: extra hours of sleep for 10 patients under two drugs.
DRUG1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
DRUG2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
SAMPLE = [2.1, 3.4, 1.9, 5.6, 4.2, 3.3, 2.8]


def _scipy_interval(values, confidence):
    values = np.asarray(values, dtype=float)
    return st.t.interval(confidence, values.size - 1, loc=values.mean(), scale=st.sem(values))


# --- mean_interval / paired_delta -----------------------------------------------------------


def test_sleep_data_paired_delta_matches_textbook_and_scipy():
    iv = paired_delta(DRUG1, DRUG2)
    res = st.ttest_rel(DRUG1, DRUG2)
    assert iv.n == 10
    assert iv.estimate == pytest.approx(-1.58)
    assert iv.p_value == pytest.approx(res.pvalue, rel=1e-10)
    assert iv.p_value == pytest.approx(0.00283, abs=1e-5)
    assert (iv.low, iv.high) == pytest.approx((-2.46, -0.70), abs=0.005)
    diffs = np.subtract(DRUG1, DRUG2)
    assert (iv.low, iv.high) == pytest.approx(_scipy_interval(diffs, 0.95), rel=1e-10)
    assert iv.sd == pytest.approx(np.std(diffs, ddof=1))
    t = iv.estimate / (iv.sd / math.sqrt(iv.n))
    assert t == pytest.approx(-4.062, abs=5e-4)


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_mean_interval_matches_scipy(confidence):
    iv = mean_interval(SAMPLE, confidence=confidence, null=3.0)
    assert iv.estimate == pytest.approx(np.mean(SAMPLE))
    assert (iv.low, iv.high) == pytest.approx(_scipy_interval(SAMPLE, confidence), rel=1e-10)
    assert iv.p_value == pytest.approx(st.ttest_1samp(SAMPLE, 3.0).pvalue, rel=1e-10)
    assert iv.confidence == confidence


def test_paired_delta_scale_multiplies_deltas():
    treat, ctrl = [0.91, 0.93, 0.90, 0.92], [0.92, 0.92, 0.91, 0.93]
    iv = paired_delta(treat, ctrl, scale=100)
    diffs = 100 * np.subtract(treat, ctrl)
    assert iv.estimate == pytest.approx(diffs.mean())
    assert (iv.low, iv.high) == pytest.approx(_scipy_interval(diffs, 0.95))
    assert iv.p_value == pytest.approx(st.ttest_rel(treat, ctrl).pvalue)


def test_one_value_gives_nan_bounds():
    iv = mean_interval([1.5])
    assert iv.estimate == 1.5 and iv.n == 1
    assert all(math.isnan(x) for x in (iv.low, iv.high, iv.sd, iv.p_value))
    r = ratio_interval([1.2])
    assert r.estimate == pytest.approx(1.2) and math.isnan(r.low) and math.isnan(r.high) and math.isnan(r.p_value)


def test_zero_variance():
    same = mean_interval([0.1, 0.1, 0.1])
    assert same.sd == 0.0 and same.low == same.high == same.estimate
    assert same.p_value == 0.0
    at_null = mean_interval([0.1, 0.1, 0.1], null=same.estimate)
    assert at_null.p_value == 1.0
    zeros = paired_delta([0.9, 0.8], [0.9, 0.8])
    assert zeros.estimate == 0.0 and zeros.p_value == 1.0 and (zeros.low, zeros.high) == (0.0, 0.0)


# --- ratio_interval / paired_ratio ------------------------------------------------------------


def test_ratio_interval_constant_ratio():
    iv = ratio_interval([2, 2, 2])
    assert iv.estimate == pytest.approx(2.0) and iv.low == pytest.approx(2.0) and iv.high == pytest.approx(2.0)
    assert iv.sd == 0.0 and iv.p_value == 0.0
    assert ratio_interval([1.0, 1.0]).p_value == 1.0


def test_ratio_interval_matches_scipy_in_log_space():
    ratios = [1.12, 1.31, 1.05, 1.22, 1.18]
    iv = ratio_interval(ratios, confidence=0.9)
    logs = np.log(ratios)
    assert iv.estimate == pytest.approx(st.gmean(ratios))
    assert (iv.low, iv.high) == pytest.approx(np.exp(_scipy_interval(logs, 0.9)))
    assert iv.p_value == pytest.approx(st.ttest_1samp(logs, 0.0).pvalue)
    assert iv.sd == pytest.approx(np.std(logs, ddof=1))
    # symmetric in log space: low * high == estimate**2, and inverting the ratios inverts everything
    assert iv.low * iv.high == pytest.approx(iv.estimate**2)
    inv = ratio_interval([1 / r for r in ratios], confidence=0.9)
    assert (inv.estimate, inv.low, inv.high) == pytest.approx((1 / iv.estimate, 1 / iv.high, 1 / iv.low))
    assert inv.p_value == pytest.approx(iv.p_value)


def test_paired_ratio_is_ratio_interval_of_quotients():
    recipe, base = [120.0, 131.0, 118.0, 125.0], [100.0, 104.0, 101.0, 99.0]
    iv = paired_ratio(recipe, base)
    ref = ratio_interval(np.divide(recipe, base))
    assert (iv.estimate, iv.low, iv.high, iv.p_value, iv.sd) == pytest.approx(
        (ref.estimate, ref.low, ref.high, ref.p_value, ref.sd))
    assert iv.p_value == pytest.approx(st.ttest_rel(np.log(recipe), np.log(base)).pvalue)


# --- seeds_to_show_noninferiority -------------------------------------------------------------


def test_seeds_edge_cases():
    assert seeds_to_show_noninferiority(-1.0, 0.5, 1.0) is None  # mean exactly at -max_drop
    assert seeds_to_show_noninferiority(-2.0, 0.5, 1.0) is None
    assert seeds_to_show_noninferiority(0.0, 0.0, 1.0) == 2
    assert seeds_to_show_noninferiority(-0.99, 5.0, 1.0, max_n=50) is None
    assert seeds_to_show_noninferiority(5.0, 0.1, 1.0) == 2


def test_seeds_formula_holds_at_n_and_fails_just_below():
    mean, sd, max_drop = -0.4, 1.2, 1.0
    n = seeds_to_show_noninferiority(mean, sd, max_drop)
    assert n is not None and n > 2

    def need(k):
        return (st.t.ppf(0.975, k - 1) + st.t.ppf(0.8, k - 1)) * sd / math.sqrt(k)

    assert mean + max_drop >= need(n)
    assert mean + max_drop < need(n - 1)


def test_seeds_monotone():
    by_sd = [seeds_to_show_noninferiority(-0.2, sd, 1.0) for sd in (0.3, 0.6, 1.0, 1.5, 2.0)]
    assert by_sd == sorted(by_sd) and by_sd[0] < by_sd[-1]
    by_mean = [seeds_to_show_noninferiority(m, 1.0, 1.0) for m in (0.5, 0.0, -0.3, -0.6, -0.8)]
    assert by_mean == sorted(by_mean) and by_mean[0] < by_mean[-1]
    by_power = [seeds_to_show_noninferiority(-0.3, 1.0, 1.0, power=p) for p in (0.5, 0.8, 0.95)]
    assert by_power == sorted(by_power) and by_power[0] < by_power[-1]


@pytest.mark.parametrize(("mean", "sd", "max_drop"), [(-0.4, 1.2, 1.0), (0.0, 0.8, 0.5), (-0.2, 0.5, 0.5)])
def test_seeds_give_the_requested_power_by_simulation(mean, sd, max_drop):
    n = seeds_to_show_noninferiority(mean, sd, max_drop, power=0.8)
    assert n is not None
    rng = np.random.default_rng(12345)
    deltas = rng.normal(mean, sd, size=(4000, n))
    means, sems = deltas.mean(axis=1), deltas.std(axis=1, ddof=1) / math.sqrt(n)
    lows = means - st.t.ppf(0.975, n - 1) * sems
    power = np.mean(lows > -max_drop)
    assert power >= 0.7
    # and n is not wildly more than needed
    assert power < 0.95


# --- verdict -------------------------------------------------------------------------------------


def _iv(estimate, low, high, n=5, sd=0.5, p=0.01):
    return Interval(estimate, low, high, n, sd, p)


@pytest.mark.parametrize(
    ("speedup", "delta", "code", "speed", "accuracy", "qualifies"),
    [
        (_iv(1.21, 1.08, 1.35), _iv(0.1, -0.3, 0.5), "faster", "faster", "non-inferiority shown", True),
        (_iv(1.21, 1.08, 1.35), _iv(-0.4, -1.1, 0.3), "faster_noninferiority_consistent", "faster",
         "consistent with non-inferiority", True),
        (_iv(1.21, 1.08, 1.35), _iv(-1.5, -2.2, -0.8), "faster_too_lossy", "faster",
         "loses more than the tolerance", False),
        (_iv(1.02, 0.93, 1.12), _iv(0.0, -0.2, 0.2), "not_faster", "not separable", "non-inferiority shown", False),
        (_iv(0.85, 0.80, 0.90), _iv(0.0, -0.2, 0.2), "slower", "slower", "non-inferiority shown", False),
        (_iv(1.3, math.nan, math.nan, n=1, sd=math.nan, p=math.nan),
         _iv(0.2, math.nan, math.nan, n=1, sd=math.nan, p=math.nan), "inconclusive", "not separable",
         "consistent with non-inferiority", False),
    ],
)
def test_verdict_codes(speedup, delta, code, speed, accuracy, qualifies):
    v = verdict(speedup, delta, 1.0)
    assert (v.code, v.speed, v.accuracy, v.qualifies) == (code, speed, accuracy, qualifies)
    assert "\n" not in v.text and v.text
    assert (v.seeds_needed is not None) == (code == "faster_noninferiority_consistent")


def test_verdict_text_consistent_case_names_seeds_needed():
    v = verdict(_iv(1.21, 1.08, 1.35), _iv(-0.4, -1.1, 0.3, sd=0.9), 1.0)
    assert v.seeds_needed == seeds_to_show_noninferiority(-0.4, 0.9, 1.0)
    assert v.text.startswith("1.21x faster (95% CI 1.080-1.350); accuracy -0.40 pt (95% CI -1.10 to +0.30)")
    assert "non-inferiority within 1 pt consistent but not shown" in v.text
    assert f"about {v.seeds_needed} seeds would likely show it" in v.text
    assert "recommended" not in v.text


def test_verdict_text_not_separable_and_few_seeds_from_real_intervals():
    speed = paired_ratio([103.0, 97.0, 110.0], [100.0, 100.0, 100.0])
    delta = paired_delta([0.91, 0.92, 0.90], [0.91, 0.915, 0.905], scale=100)
    v = verdict(speed, delta, 1.0)
    assert v.code == "not_faster"
    assert f"speed not separable from the baseline with 3 seeds (95% CI {speed.low:.3f}-{speed.high:.3f})" in v.text
    assert "5 or more seeds are recommended (ran 3)" in v.text


def test_verdict_single_seed_text():
    v = verdict(ratio_interval([1.3]), mean_interval([-0.2]), 0.5)
    assert v.code == "inconclusive" and v.seeds_needed is None
    assert "with 1 seed (no CI from a single seed)" in v.text
    assert "5 or more seeds are recommended (ran 1)" in v.text


def test_verdict_max_drop_zero_and_other_confidence():
    speed = paired_ratio([130.0, 125.0, 128.0, 131.0, 127.0], [100.0, 101.0, 99.0, 100.0, 102.0], confidence=0.9)
    delta = paired_delta([0.90, 0.91, 0.92, 0.90, 0.91], [0.89, 0.90, 0.91, 0.89, 0.90], scale=100, confidence=0.9)
    v = verdict(speed, delta, 0.0)
    assert v.code == "faster" and "90% CI" in v.text and "recommended" not in v.text


# --- argument errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: mean_interval([]), "values"),
        (lambda: mean_interval([1.0, math.nan]), "values"),
        (lambda: mean_interval([1.0, math.inf]), "values"),
        (lambda: mean_interval([[1.0, 2.0]]), "values"),
        (lambda: mean_interval(["a"]), "values"),
        (lambda: mean_interval([1.0, 2.0], confidence=0.0), "confidence"),
        (lambda: mean_interval([1.0, 2.0], confidence=1.0), "confidence"),
        (lambda: mean_interval([1.0, 2.0], confidence=math.nan), "confidence"),
        (lambda: mean_interval([1.0, 2.0], null=math.inf), "null"),
        (lambda: ratio_interval([]), "ratios"),
        (lambda: ratio_interval([1.0, 0.0]), "ratios"),
        (lambda: ratio_interval([1.0, -2.0]), "ratios"),
        (lambda: ratio_interval([1.0, math.inf]), "ratios"),
        (lambda: ratio_interval([1.0, 2.0], confidence=1.5), "confidence"),
        (lambda: paired_delta([1.0, 2.0], [1.0]), "treatment"),
        (lambda: paired_delta([], []), "treatment"),
        (lambda: paired_delta([1.0], [math.nan]), "control"),
        (lambda: paired_delta([1.0], [1.0], scale=math.nan), "scale"),
        (lambda: paired_delta([1.0, 2.0], [1.0, 2.0], confidence=-0.1), "confidence"),
        (lambda: paired_ratio([1.0, 2.0], [1.0]), "control"),
        (lambda: paired_ratio([1.0, 0.0], [1.0, 1.0]), "treatment"),
        (lambda: paired_ratio([1.0, 1.0], [1.0, -1.0]), "control"),
        (lambda: paired_ratio([1.0, 2.0], [1.0, 2.0], confidence=2), "confidence"),
        (lambda: seeds_to_show_noninferiority(0.0, 1.0, -0.1), "max_drop"),
        (lambda: seeds_to_show_noninferiority(0.0, -1.0, 1.0), "sd"),
        (lambda: seeds_to_show_noninferiority(math.nan, 1.0, 1.0), "mean_delta"),
        (lambda: seeds_to_show_noninferiority(0.0, math.inf, 1.0), "sd"),
        (lambda: seeds_to_show_noninferiority(0.0, 1.0, 1.0, confidence=1.0), "confidence"),
        (lambda: seeds_to_show_noninferiority(0.0, 1.0, 1.0, power=0.0), "power"),
        (lambda: seeds_to_show_noninferiority(0.0, 1.0, 1.0, max_n=1), "max_n"),
        (lambda: seeds_to_show_noninferiority(0.0, 1.0, 1.0, max_n=10.5), "max_n"),
        (lambda: verdict(_iv(1.2, 1.1, 1.3), _iv(0.0, -0.1, 0.1), -0.5), "max_drop"),
        (lambda: verdict(_iv(1.2, 1.1, 1.3), _iv(0.0, -0.1, 0.1), math.nan), "max_drop"),
    ],
)
def test_bad_arguments_raise_config_error_naming_them(call, name):
    with pytest.raises(ConfigError) as info:
        call()
    message = str(info.value)
    assert name in message and "\n" not in message
