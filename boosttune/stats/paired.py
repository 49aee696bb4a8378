"""Paired-seed statistics: is a recipe faster than the O0 baseline, and does it keep accuracy?

Recipe and baseline run with the same seed in each round, so per-seed ratios (throughput) and
deltas (accuracy, in percentage points) are analysed as paired samples with Student-t intervals.
Pure: numpy and scipy's t distribution, so it is cheap to test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as _st

from boosttune.config.experiment import RECOMMENDED_SEEDS
from boosttune.errors import ConfigError
from boosttune.objective import ACCURACY, Objective
from boosttune.stats.decisions import VerdictCode

__all__ = ["AccuracyClass", "Interval", "SpeedClass", "Verdict", "mean_interval", "ratio_interval",
           "paired_delta", "paired_ratio", "seeds_to_show_noninferiority", "verdict", "RECOMMENDED_SEEDS"]


class SpeedClass:
    """``Verdict.speed``: the speed-up's interval against 1."""

    FASTER, SLOWER, NOT_SEPARABLE = "faster", "slower", "not separable"


class AccuracyClass:
    """``Verdict.accuracy``: the objective's gain against ``-max_drop``."""

    SHOWN = "non-inferiority shown"
    CONSISTENT = "consistent with non-inferiority"
    TOO_LOSSY = "loses more than the tolerance"
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
    confidence: float = 0.95  # carried so a verdict can say "95% CI" truthfully


@dataclass(frozen=True)
class Verdict:
    """How a recipe compares with the baseline, in codes for programs and one sentence for people."""

    code: str
    speed: str
    accuracy: str
    qualifies: bool
    seeds_needed: int | None
    text: str


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


def seeds_to_show_noninferiority(mean_delta: float, sd: float, max_drop: float, confidence: float = 0.95,
                                 power: float = 0.8, max_n: int = 1000) -> int | None:
    """Smallest n >= 2 with mean_delta + max_drop >= (t_{1-a/2,n-1} + t_{power,n-1}) * sd / sqrt(n).

    None when non-inferiority cannot be shown (mean_delta <= -max_drop) or needs more than max_n seeds.
    """
    mean_delta, sd, max_drop = _finite(mean_delta, "mean_delta"), _finite(sd, "sd"), _finite(max_drop, "max_drop")
    confidence, power = _fraction(confidence, "confidence"), _fraction(power, "power")
    if sd < 0:
        raise ConfigError(f"sd: must be >= 0, got {sd=}")
    if max_drop < 0:
        raise ConfigError(f"max_drop: must be >= 0, got {max_drop=}")
    if isinstance(max_n, bool) or not isinstance(max_n, (int, np.integer)) or max_n < 2:
        raise ConfigError(f"max_n: must be an integer >= 2, got {max_n=}")
    room = mean_delta + max_drop
    if room <= 0:
        return None
    if sd == 0:
        return 2
    n = np.arange(2, int(max_n) + 1)
    need = (_st.t.ppf(0.5 + confidence / 2, n - 1) + _st.t.ppf(power, n - 1)) * sd / np.sqrt(n)
    ok = np.flatnonzero(room >= need)
    return int(n[ok[0]]) if ok.size else None


def _interval_text(iv: Interval, fmt: str, sep: str) -> str:
    """'95% CI a-b' or, with one seed, why there is none."""
    if iv.n < 2:
        return "no CI from a single seed"
    return f"{iv.confidence * 100:g}% CI {iv.low:{fmt}}{sep}{iv.high:{fmt}}"


_FASTER_CODES = {AccuracyClass.SHOWN: VerdictCode.FASTER, AccuracyClass.CONSISTENT: VerdictCode.FASTER_CONSISTENT,
                 AccuracyClass.TOO_LOSSY: VerdictCode.FASTER_TOO_LOSSY}


def verdict(speedup: Interval, delta: Interval, max_drop: float, objective: Objective = ACCURACY) -> Verdict:
    """Classify speed (CI vs 1) and the objective's gain (vs -max_drop, both in its gain units: points for accuracy)
    and say it in one sentence."""
    max_drop = _finite(max_drop, "max_drop")
    if max_drop < 0:
        raise ConfigError(f"max_drop: must be >= 0, got {max_drop=}")
    n, ci = min(speedup.n, delta.n), _interval_text(speedup, ".3f", "-")  # 3 decimals: 0.998 must not read as 1.00
    if speedup.n >= 2 and speedup.low > 1:
        speed, speed_text = SpeedClass.FASTER, f"{speedup.estimate:.2f}x faster ({ci})"
    elif speedup.n >= 2 and speedup.high < 1:
        speed, speed_text = SpeedClass.SLOWER, f"{speedup.estimate:.2f}x the baseline's speed, slower ({ci})"
    else:
        seeds = f"{speedup.n} seed{'s' if speedup.n != 1 else ''}"
        speed = SpeedClass.NOT_SEPARABLE
        speed_text = f"{speedup.estimate:.2f}x, speed not separable from the baseline with {seeds} ({ci})"
    seeds_needed = None
    spec, unit, name = objective.gain_spec, objective.unit, objective.noun
    within = f"{max_drop:g} {unit}" if objective.fraction else f"{max_drop:.3g} {unit}"
    if delta.n >= 2 and delta.low >= -max_drop:
        accuracy, acc_text = AccuracyClass.SHOWN, f"non-inferiority within {within} shown"
    elif delta.estimate >= -max_drop:
        accuracy = AccuracyClass.CONSISTENT
        acc_text = f"non-inferiority within {within} consistent but not shown"
        if delta.n >= 2 and math.isfinite(delta.sd):  # then sd > 0: a constant sample with mean >= -max_drop is "shown"
            seeds_needed = seeds_to_show_noninferiority(delta.estimate, delta.sd, max_drop, delta.confidence)
            acc_text += (f"; about {seeds_needed} seeds would likely show it" if seeds_needed is not None
                         else "; more than 1000 seeds would be needed to show it")
    else:
        accuracy, acc_text = AccuracyClass.TOO_LOSSY, f"loses more than the {within} tolerance"
    code = {SpeedClass.FASTER: _FASTER_CODES[accuracy], SpeedClass.SLOWER: VerdictCode.SLOWER}.get(
        speed, VerdictCode.INCONCLUSIVE if n < 2 else VerdictCode.NOT_FASTER)
    text = f"{speed_text}; {name} {delta.estimate:{spec}} {unit} ({_interval_text(delta, spec, ' to ')}): {acc_text}"
    if n < RECOMMENDED_SEEDS:
        text += f"; {RECOMMENDED_SEEDS} or more seeds are recommended (ran {n})"
    qualifies = speed == SpeedClass.FASTER and delta.estimate >= -max_drop
    return Verdict(code, speed, accuracy, qualifies, seeds_needed, text)
