"""Successive halving on two objectives: stop a recipe early once it is beaten on both by the front.

Ray Tune's schedulers (ASHA, HyperBand, median stopping) rank trials by one metric; in the default
Pareto mode (throughput and validation accuracy) nothing stopped a hopeless trial. This is the
multi-objective asynchronous successive halving of Schmucker et al. (2021, "Multi-objective
Asynchronous Successive Halving", MO-ASHA) with NSGA-II's ordering:

- rungs at ``grace_period * reduction_factor**k`` epochs, below ``max_t``;
- when a trial reaches a rung, its objectives there join those of every trial that reached it before;
- it goes on unless an earlier trial at that rung beats it on every objective by more than a margin,
  or if it is among the best ``ceil(n / reduction_factor)`` of the ``n`` trials there by (front,
  crowding distance); else it stops. The margin (accuracy points; none on speed, which is measured
  well from the first epoch) is the noise of an early accuracy: given at the first rung, it shrinks in
  proportion to the epoch at later ones.

So a recipe clearly slower and less accurate than another at epoch 1 does not train to the end, while
the fastest and the most accurate so far always go on. The search's defaults (reduction factor 2, grace
period 1 epoch, margin 5 points) come from benchmarks/search_efficiency.py on measured trials. :func:`promote` is the pure rule (unit-tested on
made-up rung results; the search-efficiency benchmark replays it on measured trials);
:class:`MultiObjectiveASHA` applies it inside Ray Tune.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

from boosttune.pareto import dominates, nondominated_fronts

__all__ = ["MultiObjectiveASHA", "RungLadder", "crowding_distances", "nondominated_fronts", "promote", "rungs"]

Point = Sequence[float]


def crowding_distances(points: Sequence[Point], front: Sequence[int]) -> dict[int, float]:
    """NSGA-II's crowding distance of each index in ``front``: the ends of the front get infinity."""
    distance = {i: 0.0 for i in front}
    if len(front) <= 2:
        return {i: math.inf for i in front}
    for m in range(len(points[front[0]])):
        ordered = sorted(front, key=lambda i: points[i][m])
        low, high = points[ordered[0]][m], points[ordered[-1]][m]
        distance[ordered[0]] = distance[ordered[-1]] = math.inf
        if high == low:
            continue
        for before, here, after in zip(ordered, ordered[1:], ordered[2:]):
            distance[here] += (points[after][m] - points[before][m]) / (high - low)
    return distance


def nsga_order(points: Sequence[Point]) -> list[int]:
    """All indices, best first: by front, then by crowding distance (larger first), then by index."""
    order: list[int] = []
    for front in nondominated_fronts(points):
        crowding = crowding_distances(points, front)
        order += sorted(front, key=lambda i: (-crowding[i], i))
    return order


def promote(candidate: Point, others: Sequence[Point], reduction_factor: float, *, keep_front: bool = True,
            margin: Sequence[float] | None = None) -> bool:
    """Whether a trial with objectives ``candidate`` at a rung goes on, given those recorded there before.

    It goes on if it ranks among the best ``ceil(n / reduction_factor)`` of the ``n`` trials there
    (itself included) by NSGA-II's order, or, with ``keep_front``, if no trial at the rung beats it by
    more than ``margin`` on every objective. Non-finite objectives (a diverged trial) count as the worst.
    """
    if reduction_factor <= 1:
        raise ValueError(f"reduction_factor: {reduction_factor} must be > 1")

    def clean(point: Point) -> tuple[float, ...]:
        return tuple(float(x) if x is not None and math.isfinite(x) else -math.inf for x in point)

    points = [clean(p) for p in others] + [clean(candidate)]
    me = len(points) - 1
    if keep_front and not any(dominates(p, points[me], margin) for p in points[:me]):
        return True
    keep = math.ceil(len(points) / reduction_factor)
    return me in nsga_order(points)[:keep]


def rungs(grace_period: int, reduction_factor: float, max_t: int) -> list[int]:
    """The rung milestones in epochs, below ``max_t`` (trials that reach ``max_t`` are finished)."""
    if grace_period < 1:
        raise ValueError(f"grace_period: {grace_period} must be >= 1 epoch")
    milestones, t = [], float(grace_period)
    while round(t) < max_t:
        if not milestones or round(t) > milestones[-1]:
            milestones.append(round(t))
        t *= reduction_factor
    return milestones


@dataclass
class RungLadder:
    """The rung bookkeeping both the Tune scheduler and the benchmark's replay use.

    ``report(trial, epoch, objectives)`` records the trial at every rung it has now reached for the
    first time and answers whether it goes on; a stopped trial's rung is in ``stopped_at``.
    """

    grace_period: int
    reduction_factor: float
    max_t: int
    keep_front: bool = True
    margin: tuple[float, ...] | None = None
    recorded: dict[int, dict[Hashable, tuple[float, ...]]] = field(default_factory=dict)
    stopped_at: dict[Hashable, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.milestones = rungs(self.grace_period, self.reduction_factor, self.max_t)
        self.recorded = {m: {} for m in self.milestones}

    def margin_at(self, milestone: int) -> tuple[float, ...] | None:
        """``margin`` at the first rung, shrinking with the epoch: later measurements are less noisy."""
        if self.margin is None:
            return None
        return tuple(m * self.grace_period / milestone for m in self.margin)

    def report(self, trial: Hashable, epoch: int, objectives: Point) -> bool:
        if trial in self.stopped_at:
            return False
        for milestone in self.milestones:
            rung = self.recorded[milestone]
            if epoch < milestone or trial in rung:
                continue
            others = list(rung.values())
            rung[trial] = tuple(objectives)
            if not promote(objectives, others, self.reduction_factor, keep_front=self.keep_front,
                           margin=self.margin_at(milestone)):
                self.stopped_at[trial] = milestone
                return False
        return True


def _scheduler_base():
    from ray.tune.schedulers import FIFOScheduler

    return FIFOScheduler


class MultiObjectiveASHA(_scheduler_base()):
    """A Ray Tune scheduler: MO-ASHA on ``metrics`` (all maximised), one rung ladder for all trials.

    ``on_stop(trial, rung, history)`` is called once for each trial it stops, with the results the trial
    reported so far, so the caller can record it (Tune only marks it terminated).
    """

    def __init__(self, metrics: Sequence[str], *, time_attr: str = "epoch", max_t: int, grace_period: int = 1,
                 reduction_factor: float = 3, keep_front: bool = True, margin: Sequence[float] | None = None,
                 on_stop: Callable[[Any, int, list[dict[str, Any]]], None] | None = None):
        super().__init__()
        self.metrics = tuple(metrics)
        self.time_attr = time_attr
        self.ladder = RungLadder(grace_period, reduction_factor, max_t, keep_front,
                                 tuple(margin) if margin is not None else None)
        self.on_stop = on_stop
        self.history: dict[str, list[dict[str, Any]]] = {}

    def set_search_properties(self, metric, mode, **spec) -> bool:
        return True  # it ranks by its own metrics, whatever the Tuner's single metric is

    def on_trial_result(self, tune_controller, trial, result: dict[str, Any]) -> str:
        if result.get("replayed") or result.get("duplicate_of"):
            return self.CONTINUE  # figures of a run trained before, reported at once: not a live epoch
        self.history.setdefault(trial.trial_id, []).append(dict(result))
        epoch = result.get(self.time_attr)
        if epoch is None or any(m not in result for m in self.metrics):
            return self.CONTINUE
        if self.ladder.report(trial.trial_id, int(epoch), [result[m] for m in self.metrics]):
            return self.CONTINUE
        if self.on_stop is not None:
            self.on_stop(trial, self.ladder.stopped_at[trial.trial_id], self.history[trial.trial_id])
        return self.STOP

    def debug_string(self) -> str:
        counts = ", ".join(f"epoch {m}: {len(r)}" for m, r in self.ladder.recorded.items())
        return (f"MultiObjectiveASHA on {', '.join(self.metrics)} (rungs {counts}; "
                f"{len(self.ladder.stopped_at)} stopped)")
