"""Recipes that cannot train here: Optuna is told, and the search stops drawing the algorithm that broke them.

Why this exists. README command 1 on 2026-11-25 spent 4 of its 8 trials on DimReduce recipes that lost 25-50
points at epoch 1, so its confirm race had one searched candidate. The causes, in the code:

- The space asks ``boost.dim_reduce`` first, as a yes/no question, and DimReduce switches LessBN, GradientFreeze and
  AdaSum off: half of all random draws (the default sampler, which learns nothing) are DimReduce recipes. The
  informed start points hold none.
- A trial the multi-objective scheduler stops is not lost on Optuna: Ray Tune calls
  ``OptunaSearch.on_trial_complete`` with the stopped trial's last (rung) result, which tells it COMPLETE with its
  epoch-1 figures. But after 4 start points TPE first draws the category it has not seen, and with one trial in its
  "good" group it weighs DimReduce evenly after one bad trial: replayed on ``benchmarks/data/search_table`` with
  DimReduce in the space, TPE drew it in 2.0 of 4 modelled trials, as random search did.
- The speed calibration cannot see it: its 30-step runs lose accuracy for knobs that are fine at the main job's
  length (LessBN -22 pt, gradient accumulation -20, DimReduce -17 there; at 10 epochs only DimReduce stays lossy).

What the search does about it:

1. **A constraint, told to Optuna.** With every finished or stopped trial the search tells Optuna how far its
   objective fell below the O0 baseline's *at the same epoch*, beyond ``LOSSY_DROP`` (20 points for accuracy: tens
   of points, not the lag of a slow first epoch): ``trial.set_constraint("lossy", shortfall - drop)``, Optuna 5's
   way (``constraints_func`` is deprecated). Positive is infeasible. TPE ranks infeasible trials after every feasible
   one, GP models the constraint (log-EHVI with constraints), NSGA-II ranks by constraint dominance; the study (and
   ``boosttune dashboard``) shows which trials were infeasible. Random sampling ignores it.
2. **The algorithm left out.** A boost algorithm is left out of the rest of the search once a lossy trial had it
   on and every other algorithm that trial had on has been *proven* (was on in a trial that was not lossy), and no
   trial with it on was lossy-free: from then on its switch is answered ``False``, whatever the sampler, as
   Optuna's ``PartialFixedSampler`` fixes a parameter. The informed start points prove GradientFreeze and LessBN, so
   a lossy GradientFreeze recipe (a learning rate too high, say) leaves nothing out; a lossy DimReduce recipe
   leaves DimReduce out. The search says so when it happens (``search space: dim_reduce: ...``), and the closing
   summary and the report list it with the knobs the calibration left out. A fragment named in ``search``
   (``--search dim_reduce``) is never left out.

Replayed on the search table with DimReduce in the space (the issue's case), 20 sampler seeds, the main job's
budget: random search drew DimReduce in 2.00 of 4 drawn trials, 1.40 with the rule. It did not raise the number
of viable candidates there (2.30 and 2.25 finished trials faster than O0 within 3 points): the scheduler stopped
most of the other drawn recipes at epoch 1 too.

Pure rules (:func:`shortfall`, :func:`lossy_algorithms`, :func:`describe`), then the two Optuna pieces
(:class:`LossyJudge`, :class:`AvoidLossy`); no Ray here (:mod:`boosttune.search.tune` wires them into Tune).
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

__all__ = ["CONSTRAINT", "AvoidLossy", "LossyJudge", "constrainable", "describe", "lossy_algorithms", "shortfall",
           "switches_on", "told"]

CONSTRAINT = "lossy"  # the Optuna constraint's key: shortfall beyond the lossy drop, > 0 infeasible


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
    """(params, ``lossy`` constraint value) of the study's finished trials that carry it."""
    return [(trial.params, trial.constraints[CONSTRAINT])
            for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if CONSTRAINT in trial.constraints]


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
