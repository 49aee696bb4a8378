"""The race's two-way model of one measure, and the check of the device's noise record against it.

Each run's value is ``recipe + round + noise``, fitted by least squares over every run of the race
(:mod:`boosttune.stats.race`). A run whose externally studentized residual is beyond the Bonferroni bound over
the race's runs (two-sided ``OUTLIER_LEVEL``) is set aside (weight 0, one degree of freedom less), at most one in ten
runs; a noise record whose variance the race's own disagrees with by a two-sided F-test (``check_record``, once the
race has ``CHECK_MIN_DF`` degrees of freedom) is set aside for that race. Pure numpy/scipy.

Why, and what was measured: docs/design/race.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats as _st

__all__ = ["CHECK_MIN_DF", "OUTLIER_LEVEL", "RECORD_LEVEL", "Fit", "RecordCheck", "check_record", "claim_sd", "fit", "pooled_sd",
           "residual_t"]

OUTLIER_LEVEL = 0.01  # two-sided, over all the race's runs (Bonferroni): the chance one normal run is set aside
RECORD_LEVEL = 0.01  # two-sided: the chance a record that fits is set aside in a race
CHECK_MIN_DF = 4  # the race's own degrees of freedom before its residuals can speak against the record


@lru_cache(maxsize=8192)
def t_quantile(p: float, df: int) -> float:
    return float(_st.t.ppf(p, df)) if df > 0 else math.inf


@dataclass(frozen=True)
class Fit:
    """The two-way model of one measure: each candidate's effect and its standard error per unit of noise sd,
    the residual sum of squares and its degrees of freedom, and the runs set aside as ``(round, name)``
    (name "" for the baseline)."""

    effect: dict[str, float]
    unit_se: dict[str, float]
    ss: float
    df: int
    set_aside: tuple[tuple[int, str], ...] = ()


def _design(rounds: list[dict[str, float]], present: list[str]) -> tuple[np.ndarray, np.ndarray, list[tuple[int, str]]]:
    col = {n: i for i, n in enumerate(present)}
    rows, y, cells = [], [], []
    for r, values in enumerate(rounds):
        for name, value in [("", 0.0), *values.items()]:
            x = np.zeros(len(present) + len(rounds))
            if name:
                x[col[name]] = 1.0
            x[len(present) + r] = 1.0
            rows.append(x)
            y.append(value)
            cells.append((r, name))
    return np.asarray(rows), np.asarray(y), cells


def _studentized(X: np.ndarray, Y: np.ndarray, keep: np.ndarray, prior_var: float | None,
                 prior_df: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Each kept run's externally studentized residual (signed) and its degrees of freedom, or None with fewer than 2
    residual df. Its scale: the race's other runs, joined with the prior when that says the noise is larger (never
    smaller: a record too small would make every run look far off)."""
    Xk, Yk = X[keep], Y[keep]
    pinv = np.linalg.pinv(Xk.T @ Xk)
    beta = pinv @ Xk.T @ Yk
    e = Yk - Xk @ beta
    h = np.einsum("ij,jk,ik->i", Xk, pinv, Xk)
    df = int(keep.sum() - np.linalg.matrix_rank(Xk))
    if df < 2:
        return None
    free = 1 - h > 1e-9
    ss_without = np.maximum(e @ e - np.where(free, e ** 2 / np.where(free, 1 - h, 1), 0.0), 0.0)
    own = ss_without / (df - 1)
    var, dof = own, np.full(len(e), df - 1)
    if prior_var is not None and prior_df > 0:
        pooled = (ss_without + prior_df * prior_var) / (df - 1 + prior_df)
        var, dof = np.maximum(own, pooled), np.where(pooled > own, df - 1 + prior_df, df - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(free & (var > 0), e / np.sqrt(var * np.where(free, 1 - h, 1)), 0.0)
    return t, dof


def _outlier(X: np.ndarray, Y: np.ndarray, keep: np.ndarray, prior_var: float | None, prior_df: int) -> int | None:
    """The index of the one kept run beyond the Bonferroni bound of its externally studentized residual, or None."""
    got = _studentized(X, Y, keep, prior_var, prior_df)
    if got is None:
        return None
    t, dof = np.abs(got[0]), got[1]
    worst = int(np.argmax(t))
    bound = t_quantile(1 - OUTLIER_LEVEL / (2 * int(keep.sum())), int(dof[worst]))
    return int(np.flatnonzero(keep)[worst]) if t[worst] > bound else None


def residual_t(rounds: list[dict[str, float]], names: list[str], cell: tuple[int, str], prior_var: float | None = None,
               prior_df: int = 0) -> float:
    """The externally studentized residual of one run (``cell``: its round and name) under the model of every run
    (signed: below 0, the run is under what the model expects of it); nan where the others leave no df to tell."""
    present = [n for n in names if any(n in r for r in rounds)]
    X, Y, cells = _design(rounds, present)
    got = _studentized(X, Y, np.ones(len(Y), bool), prior_var, prior_df)
    return math.nan if got is None else float(got[0][cells.index(cell)])


def fit(rounds: list[dict[str, float]], names: list[str], robust: bool = False, prior_var: float | None = None,
        prior_df: int = 0) -> Fit:
    """Least squares of ``value = recipe + round`` over every run: ``rounds[r][name]`` is the candidate's value
    relative to round r's baseline (the baseline itself is 0; a per-round shift changes no residual). ``robust``:
    runs far off are set aside first (see the module); ``prior_var`` (per run) and ``prior_df`` scale that test."""
    present = [n for n in names if any(n in r for r in rounds)]
    X, Y, cells = _design(rounds, present)
    keep = np.ones(len(Y), bool)
    if robust:
        for _ in range(max(1, len(Y) // 10)):
            out = _outlier(X, Y, keep, prior_var, prior_df)
            if out is None:
                break
            keep[out] = False
    Xk, Yk = X[keep], Y[keep]
    beta, _, rank, _ = np.linalg.lstsq(Xk, Yk, rcond=None)
    residual = Yk - Xk @ beta
    cov = np.linalg.pinv(Xk.T @ Xk)
    df = int(len(Yk) - rank)
    return Fit({n: float(beta[i]) for i, n in enumerate(present)},
               {n: float(math.sqrt(max(cov[i, i], 0.0))) for i, n in enumerate(present)},
               float(residual @ residual) if df > 0 else 0.0, df,
               tuple(cells[i] for i in np.flatnonzero(~keep)))


def claim_sd(fit_: Fit, prior_paired: float | None, prior_df: int) -> tuple[float, int]:
    """:func:`pooled_sd`, never below the race's own sd: a record adds degrees of freedom, but never hides a spread
    the race's own runs show (one slow run that the robust step kept)."""
    sd, df = pooled_sd(fit_, prior_paired, prior_df)
    own = math.sqrt(fit_.ss / fit_.df) if fit_.df > 0 else math.nan
    return (max(sd, own) if math.isfinite(own) else sd), df


def pooled_sd(fit_: Fit, prior_paired: float | None, prior_df: int) -> tuple[float, int]:
    """The pooled per-run noise sd with the prior (per paired seed) joined as ``prior_df`` degrees of freedom, and
    the total df."""
    prior_df = prior_df if prior_paired is not None else 0
    df = fit_.df + prior_df
    if df == 0:
        return math.nan, 0
    prior_ss = prior_df * (prior_paired or 0.0) ** 2 / 2  # per paired seed -> per run (a difference of two runs)
    return math.sqrt((fit_.ss + prior_ss) / df), df


@dataclass(frozen=True)
class RecordCheck:
    """How the race's own residuals compare with the record's noise: ``state`` "none" (no record weighs in a
    claim), "unchecked" (the race has fewer than ``CHECK_MIN_DF`` df), "agrees" or "disagrees"; the race's own
    sd per paired seed and the two-sided p-value when checked."""

    state: str
    own_paired: float = math.nan
    p: float = math.nan

    @property
    def trusted(self) -> bool:
        return self.state == "agrees"


def check_record(fit_: Fit, prior_paired: float | None, prior_df: int, level: float = RECORD_LEVEL) -> RecordCheck:
    """The two-sided F-test of the race's residual variance against the record's (``prior_df`` df)."""
    if prior_paired is None or prior_df <= 0:
        return RecordCheck("none")
    if fit_.df < CHECK_MIN_DF:
        return RecordCheck("unchecked")
    own_var = fit_.ss / fit_.df
    ratio = own_var / (prior_paired ** 2 / 2)
    below = float(_st.f.cdf(ratio, fit_.df, prior_df))
    p = min(1.0, 2 * min(below, 1 - below))
    return RecordCheck("disagrees" if p < level else "agrees", math.sqrt(2 * own_var), p)
