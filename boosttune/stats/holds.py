"""Whether a tuning run's answer holds at the team's planned job: what its race predicted beside what a verification
(the answer and O0 trained at the planned length, on fresh paired seeds) measured.

The answer *holds* when the verification's own estimates lead to the same answer: for a recipe, faster per job by
more than the tie (:data:`~boosttune.stats.job.TIE`) with its objective within the margin; for "keep O0", the fastest
recipe the race dropped is not. It is *shown* when the 95% intervals say so too (a few seeds rarely can). The
prediction *agrees* when the race's per-job speed-up is within :data:`AGREE` of the measured one and its objective
change lies inside the measured interval. Pure: no pandas, no Ray, no MindSpore.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from boosttune.objective import Objective
from boosttune.stats.job import TIE

__all__ = ["AGREE", "HOLDS", "NOT_HELD", "UNKNOWN", "JobFigures", "Verification", "judge_verification"]

AGREE = 0.05  # the race's per-job speed-up agrees with the measured one when within 5% of it
HOLDS, NOT_HELD, UNKNOWN = "holds", "does_not_hold", "unknown"


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number if math.isfinite(number) else math.nan


@dataclass(frozen=True)
class JobFigures:
    """A recipe against O0 at one job length: the per-job speed-up and the objective's gain, each with its 95%
    interval (NaN where the runs cannot tell), over ``seeds`` paired seeds."""

    speedup: float
    speedup_low: float
    speedup_high: float
    gain: float
    gain_low: float
    gain_high: float
    seeds: int
    planned_epochs: int | None = None

    @classmethod
    def from_summary(cls, row: Mapping[str, Any]) -> JobFigures:
        """From a summary.csv row (the confirm stage's or a bench's)."""
        planned, seeds = _number(row.get("planned_epochs")), _number(row.get("n_seeds"))
        return cls(*(_number(row.get(c)) for c in ("job_speedup", "job_ci_low", "job_ci_high", "objective_gain",
                                                   "objective_gain_ci_low", "objective_gain_ci_high")),
                   seeds=int(seeds) if math.isfinite(seeds) else 0,
                   planned_epochs=int(planned) if math.isfinite(planned) else None)

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> JobFigures:
        values = {name: document.get(name) for name in cls.__dataclass_fields__}
        return cls(**{k: (_number(v) if k not in ("seeds", "planned_epochs") else v) for k, v in values.items()})

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}

    @property
    def known(self) -> bool:
        return math.isfinite(self.speedup) and math.isfinite(self.gain)

    def qualifies(self, max_drop: float) -> bool:
        """The answer these estimates give: faster per job by more than the tie, and within the margin."""
        return self.speedup >= 1.0 + TIE and self.gain >= -max_drop

    def shown(self, max_drop: float) -> bool:
        """The intervals show it faster and within the margin."""
        return self.speedup_low > 1.0 and self.gain_low >= -max_drop

    def words(self, objective: Objective) -> str:
        spec = objective.gain_spec
        return (f"{_fmt(self.speedup, '.2f')}x per job [{_fmt(self.speedup_low, '.2f')}, "
                f"{_fmt(self.speedup_high, '.2f')}], {objective.format_gain(self.gain, spec)} "
                f"[{_fmt(self.gain_low, spec)}, {_fmt(self.gain_high, spec)}]")


def _fmt(value: float, spec: str) -> str:
    return format(value, spec) if math.isfinite(value) else "n/a"


@dataclass(frozen=True)
class Verification:
    """The verdict on one answer at the planned job (verify.json holds :meth:`to_dict`)."""

    answer: str  # the run's answer: a recipe's name, or O0 (keep O0)
    recipe: str  # the recipe trained against O0: the answer, or for keep O0 the fastest recipe the race dropped
    planned_epochs: int
    max_drop: float
    predicted: JobFigures
    measured: JobFigures
    outcome: str  # HOLDS, NOT_HELD or UNKNOWN
    shown: bool  # the measured intervals show the outcome too
    speed_agrees: bool | None  # predicted per-job speed-up within AGREE of the measured one (None: cannot tell)
    gain_agrees: bool | None  # predicted objective change inside the measured interval
    line: str  # the one line the terminal prints

    def to_dict(self) -> dict[str, Any]:
        document = asdict(self)
        document["predicted"], document["measured"] = self.predicted.to_dict(), self.measured.to_dict()
        return document

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Verification:
        fields = {name: document.get(name) for name in cls.__dataclass_fields__}
        fields["predicted"] = JobFigures.from_dict(document["predicted"])
        fields["measured"] = JobFigures.from_dict(document["measured"])
        return cls(**fields)


def judge_verification(answer: str, recipe: str, predicted: JobFigures, measured: JobFigures, *, max_drop: float,
                       planned_epochs: int, objective: Objective, baseline: str = "O0",
                       seeds_to_show: int | None = None) -> Verification:
    """Whether ``answer`` holds at the planned job, from ``measured`` (``recipe`` against O0 there), beside
    ``predicted`` (the tuning run's race at that length). ``seeds_to_show``: the paired seeds the measurement's own
    model says would likely show the recipe faster and within the margin (named when the seeds could not)."""
    keep = answer == baseline
    if not measured.known or measured.seeds < 2:  # an interval needs two paired seeds: a failed run leaves fewer
        outcome, shown = UNKNOWN, False
    else:
        qualifies = measured.qualifies(max_drop)
        outcome = HOLDS if qualifies != keep else NOT_HELD
        shown = measured.shown(max_drop) if qualifies else _shown_not(measured, max_drop)
    speed_agrees = (abs(predicted.speedup / measured.speedup - 1.0) <= AGREE
                    if math.isfinite(predicted.speedup) and math.isfinite(measured.speedup) else None)
    gain_agrees = (measured.gain_low <= predicted.gain <= measured.gain_high
                   if all(math.isfinite(v) for v in (predicted.gain, measured.gain_low, measured.gain_high)) else None)
    line = _line(answer, recipe, keep, outcome, shown, measured, planned_epochs, max_drop, objective, seeds_to_show)
    return Verification(answer, recipe, planned_epochs, max_drop, predicted, measured, outcome, shown, speed_agrees,
                        gain_agrees, line)


def _shown_not(measured: JobFigures, max_drop: float) -> bool:
    """The intervals show the recipe does not qualify: not faster by the tie, or beyond the margin."""
    return measured.speedup_high < 1.0 + TIE or measured.gain_high < -max_drop


def _line(answer: str, recipe: str, keep: bool, outcome: str, shown: bool, measured: JobFigures, planned: int,
          max_drop: float, objective: Objective, seeds_to_show: int | None = None) -> str:
    job = f"the {planned}-epoch job"
    margin = objective.format_gain(max_drop, ".3g").lstrip("+")
    if outcome == UNKNOWN:
        return (f"cannot tell whether {'keep O0' if keep else answer} holds at {job}: {measured.seeds} paired seed(s) "
                f"of {recipe} and O0 gave a per-job figure, and an interval needs two (the failed runs are in the "
                "report); run verify again with a new --output")
    more = (f"about {seeds_to_show} would (--seeds {seeds_to_show})"
            if seeds_to_show and seeds_to_show > measured.seeds and outcome == HOLDS and not keep
            else "more (--seeds) would tell")
    sure = "the intervals show it" if shown else f"{measured.seeds} paired seed(s) cannot show it; {more}"
    if keep:
        if outcome == HOLDS:
            return (f"holds: keep O0 at {job}; the fastest recipe the race dropped, {recipe}, is not faster per job "
                    f"by more than {100 * TIE:.0f}% within {margin} ({measured.words(objective)}; {sure})")
        return (f"does not hold: at {job}, {recipe} (dropped by the race) reads faster per job within {margin} "
                f"({measured.words(objective)}; {sure})")
    if outcome == HOLDS:
        return f"holds: {answer} at {job}: {measured.words(objective)}, within {margin} ({sure})"
    why = (f"a tie or slower (its per-job speed-up under {1 + TIE:.2f}x)" if measured.speedup < 1.0 + TIE
           else f"beyond the margin of {margin}")
    return f"does not hold: {answer} at {job} is {why}: {measured.words(objective)} ({sure})"
