"""Paired-seed figures: how a recipe's speed and accuracy compare with the O0 baseline's, seed for seed.

Recipe and baseline run with the same seed in each round, so per-seed ratios (throughput) and
deltas (accuracy, in percentage points) are analysed as paired samples with Student-t intervals: figures for the
tables, not a decision (the decision is the race's, :func:`boosttune.stats.decide.decide`). Pure: numpy and scipy's
t distribution, so it is cheap to test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as _st

from boosttune.errors import ConfigError

__all__ = ["Interval", "mean_interval", "paired_delta", "paired_ratio", "ratio_interval"]

_NAN = float("nan")


@dataclass(frozen=True)
class Interval:
    """A point estimate, its two-sided t-interval and the p-value against the null (nan when n < 2)."""

    estimate: float
    low: float
    high: float
    n: int
    sd: float  # sample sd (ddof=1) of the analysed values: log ratios for ratio intervals
    p_value: float
    confidence: float = 0.95  # carried so a sentence can say "95% CI" truthfully



def _finite(x: float, name: str) -> float:
    """A finite float, or a ConfigError naming the argument."""
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected a finite number, got {name}={x!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{name}: expected a finite number, got {name}={x!r}")
    return value


def _fraction(x: float, name: str) -> float:
    """A probability strictly between 0 and 1 (a confidence level or a power)."""
    value = _finite(x, name)
    if not 0.0 < value < 1.0:
        raise ConfigError(f"{name}: must be strictly between 0 and 1, got {name}={x!r}")
    return value


def _values(values: Sequence[float], name: str) -> np.ndarray:
    """A non-empty 1-D float array of finite values."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected a sequence of numbers, got {name}={values!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ConfigError(f"{name}: expected a non-empty 1-D sequence of numbers, got {name}={values!r}")
    if not np.all(np.isfinite(arr)):
        raise ConfigError(f"{name}: every value must be finite, got {name}={arr.tolist()!r}")
    return arr


def _positive(values: Sequence[float], name: str) -> np.ndarray:
    """Finite values that are all > 0 (ratios, throughputs): logs must exist."""
    arr = _values(values, name)
    if np.any(arr <= 0):
        raise ConfigError(f"{name}: every value must be > 0, got {name}={arr.tolist()!r}")
    return arr


def _interval(x: np.ndarray, confidence: float, null: float) -> Interval:
    """The t-interval and t-test of validated values; constant samples get sd 0 exactly."""
    n, mean = int(x.size), float(np.mean(x))
    if n < 2:
        return Interval(mean, _NAN, _NAN, n, _NAN, _NAN, confidence)
    if np.ptp(x) == 0:  # exact zero, not float noise of np.std, so p is exactly 0 or 1
        return Interval(mean, mean, mean, n, 0.0, 1.0 if mean == null else 0.0, confidence)
    sd = float(np.std(x, ddof=1))
    sem = sd / math.sqrt(n)
    half = float(_st.t.ppf(0.5 + confidence / 2, n - 1)) * sem
    p = float(2 * _st.t.sf(abs(mean - null) / sem, n - 1))
    return Interval(mean, mean - half, mean + half, n, sd, p, confidence)


def mean_interval(values: Sequence[float], confidence: float = 0.95, null: float = 0.0) -> Interval:
    """Student-t interval of the mean and the two-sided p-value of H0: mean == null."""
    return _interval(_values(values, "values"), _fraction(confidence, "confidence"), _finite(null, "null"))


def _exp(iv: Interval) -> Interval:
    """Back from log space: geometric mean and exponentiated bounds; sd stays that of the logs."""
    return Interval(math.exp(iv.estimate), math.exp(iv.low), math.exp(iv.high), iv.n, iv.sd, iv.p_value,
                    iv.confidence)


def ratio_interval(ratios: Sequence[float], confidence: float = 0.95) -> Interval:
    """Geometric mean of ratios with a t-interval on their logs (symmetric for x and 1/x); H0: ratio == 1."""
    logs = np.log(_positive(ratios, "ratios"))
    return _exp(_interval(logs, _fraction(confidence, "confidence"), 0.0))


def _pair(treatment: Sequence[float], control: Sequence[float], positive: bool) -> tuple[np.ndarray, np.ndarray]:
    """Validated paired samples of equal length."""
    check = _positive if positive else _values
    t, c = check(treatment, "treatment"), check(control, "control")
    if t.size != c.size:
        raise ConfigError(f"treatment, control: paired samples need equal lengths, got {t.size=} and {c.size=}")
    return t, c


def paired_delta(treatment: Sequence[float], control: Sequence[float], scale: float = 1.0,
                 confidence: float = 0.95) -> Interval:
    """Interval of the mean of scale*(treatment - control) per seed; scale=100 turns accuracies into pt."""
    t, c = _pair(treatment, control, positive=False)
    return _interval(_finite(scale, "scale") * (t - c), _fraction(confidence, "confidence"), 0.0)


def paired_ratio(treatment: Sequence[float], control: Sequence[float], confidence: float = 0.95) -> Interval:
    """Geometric-mean interval of treatment/control per seed (e.g. throughput speed-up)."""
    t, c = _pair(treatment, control, positive=True)
    return _exp(_interval(np.log(t) - np.log(c), _fraction(confidence, "confidence"), 0.0))
