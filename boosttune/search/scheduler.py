"""Successive halving on two objectives: stop a recipe early once it is beaten on both by the front.

Ray Tune's schedulers (ASHA, HyperBand, median stopping) rank trials by one metric; in the default
Pareto mode (throughput and validation accuracy) nothing stopped a hopeless trial. This is the
multi-objective asynchronous successive halving of Schmucker et al. (2021, "Multi-objective
Asynchronous Successive Halving", MO-ASHA) with NSGA-II's ordering, judging early accuracy against O0's own
curve with its noise, so a slow starter is not stopped.

Why, and what was measured: docs/design/early-stopping.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Literal, Mapping, Sequence

from boosttune.pareto import dominates, nondominated_fronts

__all__ = ["BaselineCurve", "MultiObjectiveASHA", "RungLadder", "crowding_distances", "nondominated_fronts", "promote", "rungs"]

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


Verdict = Literal["within", "closing", "behind", "hopeless", "unknown"]

# The rule against the baseline's curve, in the accuracy's units: see the module docstring for where they come from.
NOISE_FLOOR_PT, NOISE_SLOPE, NOISE_Z, CLOSING_SHARE = 0.5, 0.7, 3.0, 0.5


@dataclass(frozen=True)
class BaselineCurve:
    """O0's accuracy per epoch (``by_epoch``, ``final``), and how far below it a trial may sit at a rung.

    All in the accuracy's units, higher is better (gain units in the search, a fraction in the benchmark).
    ``noise_by_epoch`` (a measured spread, e.g. of several O0 seeds) replaces the noise model where it has the epoch.
    """

    by_epoch: Mapping[int, float]
    final: float
    max_drop: float
    noise_floor: float
    noise_slope: float = NOISE_SLOPE
    z: float = NOISE_Z
    closing: float = CLOSING_SHARE
    noise_by_epoch: Mapping[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("max_drop", "noise_floor", "noise_slope", "z"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"BaselineCurve.{name}: {value!r} must be a finite number >= 0")
        if not 0 < self.closing <= 1:
            raise ValueError(f"BaselineCurve.closing: {self.closing!r} must be in (0, 1] (the share of the gap made up)")

    def noise(self, epoch: int) -> float:
        """The noise of a reading at ``epoch``: measured if given, else ``floor + slope * (final - O0 at epoch)``."""
        if epoch in self.noise_by_epoch:
            return float(self.noise_by_epoch[epoch])
        return self.noise_floor + self.noise_slope * max(0.0, self.final - self.by_epoch[epoch])

    def allowed(self, epoch: int) -> float:
        """How far below O0 at ``epoch`` a trial may be and still count as within reach."""
        return self.max_drop + self.z * self.noise(epoch)

    def beaten_by(self, epoch: int) -> float:
        """How much more accurate another trial must be at ``epoch`` to stop one within reach: two noisy readings."""
        return self.max_drop + self.z * math.sqrt(2.0) * self.noise(epoch)

    def gap(self, epoch: int, value: float | None) -> float:
        """``value`` minus O0's at ``epoch``; -inf for a missing or non-finite value or an epoch O0's curve lacks."""
        if value is None or not math.isfinite(value) or epoch not in self.by_epoch:
            return -math.inf
        return value - self.by_epoch[epoch]

    def reading(self, epoch: int, value: float, before: tuple[int, float] | None = None) -> float:
        """The accuracy a trial is judged by at ``epoch``: ``value``, or its reading an epoch earlier (``before``) moved
        to this epoch along O0's curve where that is closer to O0: one epoch's dip does not stop a trial (a diverged
        run, its value not finite, is judged by that value)."""
        if before is None or not math.isfinite(self.gap(epoch, value)) or self.gap(*before) <= self.gap(epoch, value):
            return value
        return self.by_epoch[epoch] + self.gap(*before)

    def verdict(self, value: float | None, epoch: int, previous: tuple[int, float] | None = None) -> Verdict:
        """``within`` reach of O0 at ``epoch``; else ``closing`` if it made up at least ``closing`` of its gap at the
        previous rung (``previous``: that rung's epoch and value), ``behind`` at a trial's first rung (one reading
        tells no trend: epoch-1 readings 30-40 points behind O0 end within the margin in the committed table), else
        ``hopeless``. ``unknown`` where O0's curve lacks the epoch; a missing or non-finite value (a diverged run) is
        hopeless."""
        if epoch not in self.by_epoch:
            return "unknown"
        if value is None or not math.isfinite(value):
            return "hopeless"
        gap = self.gap(epoch, value)
        if gap >= -self.allowed(epoch):
            return "within"
        if previous is None:
            return "behind"
        earlier = self.gap(*previous)
        if math.isfinite(earlier) and earlier < 0 and gap - earlier >= -self.closing * earlier:
            return "closing"
        return "hopeless"


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
    first time and answers whether it goes on; a stopped trial's rung is in ``stopped_at``. With a
    ``baseline`` (the last objective is the accuracy), a hopeless trial stops and one that is not stops only
    when beaten by more than :meth:`BaselineCurve.allowed` (``margin`` then applies to the other objectives).
    """

    grace_period: int
    reduction_factor: float
    max_t: int
    keep_front: bool = True
    margin: tuple[float, ...] | None = None
    baseline: BaselineCurve | None = None
    recorded: dict[int, dict[Hashable, tuple[float, ...]]] = field(default_factory=dict)
    stopped_at: dict[Hashable, int] = field(default_factory=dict)
    last_read: dict[Hashable, tuple[int, float]] = field(default_factory=dict)  # (epoch, accuracy) reported last

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
        read, self.last_read[trial] = self.last_read.get(trial), (epoch, objectives[-1])
        before = read if read is not None and read[0] == epoch - 1 else None
        for milestone in self.milestones:
            rung = self.recorded[milestone]
            if epoch < milestone or trial in rung:
                continue
            others = list(rung.values())
            point = tuple(objectives)
            if self.baseline is not None:
                point = point[:-1] + (self.baseline.reading(milestone, point[-1], before),)
            rung[trial] = point
            if not self._goes_on(trial, milestone, point, others):
                self.stopped_at[trial] = milestone
                return False
        return True

    def _goes_on(self, trial: Hashable, milestone: int, objectives: tuple[float, ...],
                 others: list[tuple[float, ...]]) -> bool:
        verdict = "unknown" if self.baseline is None else self.baseline.verdict(
            objectives[-1], milestone, self._previous(trial, milestone))
        if verdict == "hopeless":
            return False
        if verdict == "unknown":
            return promote(objectives, others, self.reduction_factor, keep_front=self.keep_front,
                           margin=self.margin_at(milestone))
        rest = tuple(self.margin[:-1]) if self.margin is not None else (0.0,) * (len(objectives) - 1)
        return promote(objectives, others, self.reduction_factor, keep_front=True,
                       margin=rest + (self.baseline.beaten_by(milestone),))

    def _previous(self, trial: Hashable, milestone: int) -> tuple[int, float] | None:
        """The trial's rung before ``milestone`` and its accuracy there, if it was recorded there."""
        before = [m for m in self.milestones if m < milestone and trial in self.recorded[m]]
        return (before[-1], self.recorded[before[-1]][trial][-1]) if before else None


def _scheduler_base():
    from ray.tune.schedulers import FIFOScheduler

    return FIFOScheduler


class MultiObjectiveASHA(_scheduler_base()):
    """A Ray Tune scheduler: MO-ASHA on ``metrics`` (all maximised), one rung ladder for all trials; with a
    ``baseline`` curve, the last metric (the accuracy, in its units) is judged against it (:class:`RungLadder`).

    ``on_stop(trial, rung, history, reason)`` is called once for each trial it stops, with the results the trial
    reported so far and why (None: the rung ladder's rule), so the caller can record it (Tune only marks it
    terminated). ``too_slow(trial, result)``, asked at each rung before the ladder, stops a trial by another rule
    (the search's speed floor, :mod:`boosttune.search.speed`): the reason it stops, or None.
    """

    def __init__(self, metrics: Sequence[str], *, time_attr: str = "epoch", max_t: int, grace_period: int = 1,
                 reduction_factor: float = 3, keep_front: bool = True, margin: Sequence[float] | None = None,
                 baseline: BaselineCurve | None = None,
                 on_stop: Callable[[Any, int, list[dict[str, Any]], str | None], None] | None = None,
                 too_slow: Callable[[Any, dict[str, Any]], str | None] | None = None):
        super().__init__()
        self.metrics = tuple(metrics)
        self.time_attr = time_attr
        self.ladder = RungLadder(grace_period, reduction_factor, max_t, keep_front,
                                 tuple(margin) if margin is not None else None, baseline)
        self.on_stop = on_stop
        self.too_slow = too_slow
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.too_slow_at: set[str] = set()  # the trials ``too_slow`` stopped

    def set_search_properties(self, metric, mode, **spec) -> bool:
        return True  # it ranks by its own metrics, whatever the Tuner's single metric is

    def on_trial_result(self, tune_controller, trial, result: dict[str, Any]) -> str:
        if result.get("replayed") or result.get("duplicate_of"):
            return self.CONTINUE  # figures of a run trained before, reported at once: not a live epoch
        self.history.setdefault(trial.trial_id, []).append(dict(result))
        epoch = result.get(self.time_attr)
        if epoch is None or any(m not in result for m in self.metrics):
            return self.CONTINUE
        if trial.trial_id in self.too_slow_at:
            return self.STOP
        reason = self.too_slow(trial, result) if self.too_slow is not None and int(epoch) in self.ladder.milestones \
            else None
        if reason is not None:
            self.too_slow_at.add(trial.trial_id)
            rung = int(epoch)
        elif self.ladder.report(trial.trial_id, int(epoch), [result[m] for m in self.metrics]):
            return self.CONTINUE
        else:
            rung = self.ladder.stopped_at[trial.trial_id]
        if self.on_stop is not None:
            self.on_stop(trial, rung, self.history[trial.trial_id], reason)
        return self.STOP

    def debug_string(self) -> str:
        counts = ", ".join(f"epoch {m}: {len(r)}" for m, r in self.ladder.recorded.items())
        return (f"MultiObjectiveASHA on {', '.join(self.metrics)} (rungs {counts}; "
                f"{len(self.ladder.stopped_at) + len(self.too_slow_at)} stopped)")
