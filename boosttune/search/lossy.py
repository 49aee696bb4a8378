"""Recipes that cannot train here: Optuna is told, and the search stops drawing the algorithm that broke them.

A recipe that loses most of its objective at the first rung is told to Optuna as failed, and the algorithm that
broke it is no longer drawn, so the search's trials go to recipes that can train here.

Why, and what was measured: docs/design/early-stopping.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from boosttune import algorithms
from boosttune.objective import Objective

__all__ = ["CONSTRAINT", "UNSETTLED", "AvoidLossy", "LossyJudge", "constrainable", "describe", "lossy_algorithms",
           "shortfall", "switches_on", "told"]

CONSTRAINT = "lossy"  # the Optuna constraint's key: shortfall beyond the lossy drop, > 0 infeasible
# An Optuna trial's user attribute: the speed floor stopped it (boosttune.search.speed), a preset at its first rung
# among them. Its reading may prove an algorithm, never convict one: it stopped for its speed, and one epoch's
# accuracy of a LessBN recipe is often 20-40 points behind O0's and ends within a point (the committed search table).
UNSETTLED = "stopped_for_speed"


def shortfall(value: Any, epoch: Any, objective: Objective, baseline_final: float,
              baseline_by_epoch: Mapping[int, float]) -> float:
    """How far ``value``, measured at ``epoch``, lies below the baseline's value at that epoch, in gain units
    (points for accuracy; positive: worse). Without that epoch in the baseline's curve, its final value; a missing
    or non-finite value (a diverged run) counts as the objective's worst."""
    try:
        reference = baseline_by_epoch.get(int(epoch), baseline_final)
    except (TypeError, ValueError):
        reference = baseline_final
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    return -objective.gain(number if math.isfinite(number) else objective.worst, reference)


def switches_on(params: Mapping[str, Any]) -> frozenset[str]:
    """The boost algorithms a trial's params switch on (``boost.<name>``)."""
    return frozenset(name for name in algorithms.boost_names() if params.get(f"boost.{name}") is True)


def lossy_algorithms(trials: Iterable[tuple[Mapping[str, Any], float]],
                     forced: Iterable[str] = ()) -> dict[str, list[float]]:
    """The boost algorithms to leave out, each with the constraint values of the lossy trials that convicted it.

    ``trials``: each told trial's params and its ``lossy`` constraint value (> 0: lossy). An algorithm is proven by a
    trial that had it on and was not lossy; it is convicted by a lossy trial in which it is the only algorithm on
    that is not proven. A proven algorithm, or one in ``forced``, is never left out.
    """
    seen = [(switches_on(params), float(value)) for params, value in trials]
    proven = {name for on, value in seen if value <= 0 for name in on}
    convicted: dict[str, list[float]] = {}
    for on, value in seen:
        suspects = on - proven
        if value > 0 and len(suspects) == 1:
            convicted.setdefault(next(iter(suspects)), []).append(value)
    excluded = set(forced)
    return {name: values for name, values in convicted.items() if name not in excluded}


def describe(name: str, violations: Sequence[float], drop: float, objective: Objective) -> str:
    """The one line the search, the summary and the report give for an algorithm it left out."""
    lost = sorted(v + drop for v in violations)
    figures = " and ".join(f"{v:.3g}" for v in lost[:3]) + (", ..." if len(lost) > 3 else "")
    trials = "a trial" if len(lost) == 1 else f"{len(lost)} trials"
    return (f"{name}: {trials} with it on lost {figures} {objective.unit} of {objective.label} against O0 at the "
            f"same epoch (more than {drop:.3g} {objective.unit}) and none with it on did better: left out of the rest "
            f"of the search; --search {name} to force it")


@dataclass(frozen=True)
class LossyJudge:
    """How far below O0 a trial fell, as Optuna's ``lossy`` constraint: beyond ``drop`` (gain units) is infeasible."""

    objective: Objective
    drop: float
    baseline_final: float
    baseline_by_epoch: Mapping[int, float] = field(default_factory=dict)
    forced: frozenset[str] = frozenset()  # algorithms never left out (the fragments named in ``search``)

    def violation(self, result: Mapping[str, Any]) -> float:
        """The constraint value for a trial's last result: its ``objective_value`` against O0 at its ``epoch`` (a
        run's final figures against O0's final ones); a diverged run's is capped at ten times ``drop`` so that a
        Gaussian process over the values stays well scaled."""
        epoch = None if result.get("final") else result.get("epoch")
        lost = shortfall(result.get("objective_value"), epoch, self.objective, self.baseline_final,
                         self.baseline_by_epoch)
        return min(lost - self.drop, 10.0 * self.drop)

    def left_out(self, study: Study) -> dict[str, str]:
        """``boost.<name>`` -> why, for every algorithm the study's told trials leave out."""
        return {f"boost.{name}": describe(name, values, self.drop, self.objective)
                for name, values in lossy_algorithms(told(study), self.forced).items()}


def told(study: Study) -> list[tuple[dict[str, Any], float]]:
    """(params, ``lossy`` constraint value) of the study's finished trials that carry it; a trial the speed floor
    stopped (:data:`UNSETTLED`) only where it was not lossy (it may prove an algorithm, never convict one)."""
    return [(trial.params, trial.constraints[CONSTRAINT])
            for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if CONSTRAINT in trial.constraints
            and not (trial.user_attrs.get(UNSETTLED) and trial.constraints[CONSTRAINT] > 0)]


def constrainable(study: Study) -> bool:
    """Whether a new trial may carry the constraint: every finished trial does (GP and NSGA-II require the same
    constraints on all of them; a study begun before the constraint existed gets none)."""
    return all(CONSTRAINT in t.constraints for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))


class AvoidLossy(BaseSampler):
    """``base`` with the switch of every left-out algorithm answered ``False`` (as ``PartialFixedSampler`` does).

    Decided once per trial, as it starts (``before_trial``), from the study's finished trials and their ``lossy``
    constraint (:func:`lossy_algorithms`); the switch is taken out of the relative search space so that GP,
    NSGA-II and multivariate TPE do not set it either.
    """

    def __init__(self, base: BaseSampler, forced: Iterable[str] = ()) -> None:
        self.base = base
        self.forced = frozenset(forced)
        self.fixed: dict[str, bool] = {}

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self.fixed = {f"boost.{name}": False for name in lossy_algorithms(told(study), self.forced)}
        self.base.before_trial(study, trial)

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        space = self.base.infer_relative_search_space(study, trial)
        return {name: d for name, d in space.items() if name not in self.fixed}

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self.base.sample_relative(study, trial, search_space)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        if param_name in self.fixed:
            return self.fixed[param_name]
        return self.base.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        self.base.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.base.reseed_rng()
