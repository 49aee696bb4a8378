"""boosttune.stats.paired against scipy on known data, plus its argument checks (the decision is the race's)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from boosttune.errors import ConfigError
from boosttune.stats.paired import (
    mean_interval,
    paired_delta,
    paired_ratio,
    ratio_interval,
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
    ],
)
def test_bad_arguments_raise_config_error_naming_them(call, name):
    with pytest.raises(ConfigError) as info:
        call()
    message = str(info.value)
    assert name in message and "\n" not in message
