"""Group-sequential boundaries: the nominal level of each look of a one-sided test, by alpha spending.

Lan-DeMets spending of ``alpha`` over looks at increasing sample sizes, each look's boundary found with the
correlation between looks used (``Z_n`` and ``Z_m`` share ``min(n, m)`` seeds), by the recursive numerical
integration of Armitage, McPherson and Rowe, as gsDesign computes it; the spending function is Hwang, Shih and
DeCani's ``alpha (1 - exp(-gamma t)) / (1 - exp(-gamma))`` (``gamma = 1`` early like Pocock, ``-4`` late like
O'Brien-Fleming). Our own because scipy and statsmodels have none and the Python ports of gsDesign-style designs
are written for thousands of samples, not one-sided looks at 3-20 paired seeds.

Why, the references, and how the race uses it: docs/design/race.md ("Group-sequential looks").
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import optimize
from scipy import stats as _st

__all__ = ["boundaries", "crossing_probabilities", "many_to_one", "nominal_levels", "spending"]

GRID = 401  # points of the score's density on the continuation region
WIDTH = 9.0  # the grid reaches this many sd below the look's mean (the mass past it is below 1e-18)


@lru_cache(maxsize=256)
def many_to_one(alpha: float, k: int, rho: float = 0.5) -> float:
    """The one-sided level each of ``k`` comparisons with one shared control may be tested at so that the chance any
    of them crosses under the null is ``alpha``: Dunnett's many-to-one, the statistics equicorrelated at ``rho`` (0.5:
    each candidate's paired figure and the others' share the control's run, at equal noise). Exact for equal
    correlation, by one integral over the shared part: ``P(max Z <= z) = E_u[Phi((z - sqrt(rho) u) / sqrt(1 - rho))^k]``
    (Dunnett, 1955). ``k`` 1: ``alpha``; above Bonferroni's ``alpha / k`` for ``k`` > 1."""
    if k <= 1:
        return alpha
    u = np.linspace(-WIDTH, WIDTH, 2001)
    weight = _st.norm.pdf(u) * (u[1] - u[0])

    def below(z: float) -> float:
        return float(weight @ _st.norm.cdf((z - math.sqrt(rho) * u) / math.sqrt(1 - rho)) ** k)

    z = optimize.brentq(lambda z: below(z) - (1 - alpha), 0.0, 10.0, xtol=1e-10)
    return float(_st.norm.sf(z))


def spending(t: float, alpha: float, gamma: float) -> float:
    """The alpha the Hwang-Shih-DeCani function with parameter ``gamma`` has spent by information fraction ``t``."""
    t = min(max(t, 0.0), 1.0)
    if abs(gamma) < 1e-9:
        return alpha * t
    return alpha * (1.0 - math.exp(-gamma * t)) / (1.0 - math.exp(-gamma))


def _propagate(grid: np.ndarray, density: np.ndarray, step: float, to: np.ndarray) -> np.ndarray:
    """The density at ``to`` of the score after ``step`` more unit-variance increments, from ``density`` on ``grid``."""
    weights = np.full(grid.size, grid[1] - grid[0])
    weights[[0, -1]] /= 2  # the trapezoid rule
    kernel = _st.norm.pdf((to[:, None] - grid[None, :]) / math.sqrt(step)) / math.sqrt(step)
    return kernel @ (density * weights)


def _crossing(grid: np.ndarray, density: np.ndarray, step: float, bound: float) -> float:
    """The chance the score, continuing from ``density`` on ``grid``, is at or above ``bound`` after ``step``."""
    weights = np.full(grid.size, grid[1] - grid[0])
    weights[[0, -1]] /= 2
    return float(np.sum(density * weights * _st.norm.sf((bound - grid) / math.sqrt(step))))


@lru_cache(maxsize=256)
def boundaries(looks: tuple[int, ...], alpha: float, gamma: float) -> tuple[float, ...]:
    """Each look's boundary on the standardized statistic ``Z_k = S_k / sqrt(n_k)``, for looks after ``looks`` (an
    increasing tuple of sample sizes; the last is ``n_max``) and one-sided ``alpha`` spent by ``gamma``'s function.
    A look that is spent nothing gets an infinite boundary."""
    if not looks or any(b <= a for a, b in zip(looks, looks[1:])) or looks[0] <= 0:
        raise ValueError(f"looks must be increasing positive sample sizes, got {looks!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    n_max = looks[-1]
    result: list[float] = []
    grid, density = None, None  # the score's density on the continuation region after the previous look
    previous, spent = 0, 0.0
    for n in looks:
        target = spending(n / n_max, alpha, gamma) - spent
        step = n - previous
        if grid is None:
            def cross(b: float) -> float:
                return float(_st.norm.sf(b / math.sqrt(n)))
        else:
            def cross(b: float, grid=grid, density=density, step=step) -> float:
                return _crossing(grid, density, step, b)
        sd = math.sqrt(n)
        if target <= 1e-15:
            bound = math.inf
        else:
            bound = optimize.brentq(lambda b: cross(b) - target, -WIDTH * sd, WIDTH * sd, xtol=1e-10)
        result.append(bound / sd)
        spent += cross(bound) if math.isfinite(bound) else 0.0
        top = bound if math.isfinite(bound) else WIDTH * sd
        new_grid = np.linspace(-WIDTH * sd, top, GRID)
        if grid is None:
            density = _st.norm.pdf(new_grid / sd) / sd
        else:
            density = _propagate(grid, density, step, new_grid)
        grid, previous = new_grid, n
    return tuple(result)


def nominal_levels(looks: tuple[int, ...], alpha: float, gamma: float) -> tuple[float, ...]:
    """Each look's nominal one-sided level, ``1 - Phi(c_k)``: a look's p-value at or below it crosses."""
    return tuple(float(_st.norm.sf(c)) for c in boundaries(tuple(looks), float(alpha), float(gamma)))


def crossing_probabilities(looks: tuple[int, ...], bounds: tuple[float, ...], drift: float = 0.0) -> tuple[float, ...]:
    """The chance of first crossing at each look, with ``Z`` boundaries ``bounds`` and a true effect of ``drift`` per
    unit of score (``S_n`` has mean ``drift * n``): the null's spending at ``drift = 0``, the power otherwise. The
    check of :func:`boundaries`, and a design's power for a planned effect."""
    out, grid, density, previous = [], None, None, 0
    for n, c in zip(looks, bounds):
        sd, step = math.sqrt(n), n - previous
        bound = c * sd
        if grid is None:
            p = float(_st.norm.sf((bound - drift * n) / sd)) if math.isfinite(bound) else 0.0
        else:
            shifted = grid + drift * step
            p = _crossing(shifted, density, step, bound) if math.isfinite(bound) else 0.0
        out.append(p)
        top = bound if math.isfinite(bound) else drift * n + WIDTH * sd
        new_grid = np.linspace(drift * n - WIDTH * sd, top, GRID)
        if grid is None:
            density = _st.norm.pdf((new_grid - drift * n) / sd) / sd
        else:
            density = _propagate(grid + drift * step, density, step, new_grid)
        grid, previous = new_grid, n
    return tuple(out)
