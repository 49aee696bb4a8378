"""Pareto dominance, every objective maximised: the one rule the scheduler's rungs and the results' front share.

``a`` dominates ``b`` when it is at least as good on every objective and better on one; with a margin, it
must beat ``b`` by more than the margin on every objective (a lead smaller than the noise of an early
measurement does not count). Equal points do not dominate each other, so ties all stay on the front.
Pure: numpy only. Take an objective in its own direction by negating a minimised one before.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["dominates", "non_dominated", "nondominated_fronts"]

Point = Sequence[float]


def _beats(a: np.ndarray, b: np.ndarray, margin: np.ndarray, axis: int = -1) -> np.ndarray:
    """The dominance rule on arrays of points (the last axis holds the objectives)."""
    return np.all(a >= b + margin, axis=axis) & np.any(a > b + margin, axis=axis)


def dominates(a: Point, b: Point, margin: Sequence[float] | None = None) -> bool:
    """``a`` is at least as good as ``b`` on every objective and better on one (by more than ``margin`` on each)."""
    a_, b_ = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    m = np.zeros_like(a_) if margin is None or len(margin) == 0 else np.asarray(margin, dtype=float)
    return bool(_beats(a_, b_, m))


def non_dominated(*objectives: Sequence[float] | np.ndarray) -> np.ndarray:
    """Mask of the points no other point dominates; ``objectives`` are one array per objective (x, y, ...)."""
    points = np.column_stack([np.asarray(o, dtype=float) for o in objectives])
    # [i, j]: point j dominates point i.
    beaten = _beats(points[None, :, :], points[:, None, :], np.zeros(points.shape[1]))
    return ~np.any(beaten, axis=1)


def nondominated_fronts(points: Sequence[Point]) -> list[list[int]]:
    """Indices of ``points`` by non-dominated front, best first."""
    remaining = list(range(len(points)))
    fronts: list[list[int]] = []
    while remaining:
        mask = non_dominated(*np.asarray([points[i] for i in remaining], dtype=float).T)
        front = [i for i, keep in zip(remaining, mask) if keep]
        fronts.append(front)
        remaining = [i for i, keep in zip(remaining, mask) if not keep]
    return fronts
