"""The O0 baseline stage: trained first (every speed figure is a ratio to it), then judged before anything is
compared against it: refused when it failed, diverged, or gave no objective or speed figure, and noted when it was
still learning as it stopped."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable

from boosttune.config.experiment import ExperimentConfig
from boosttune.config.recipe import diverged_hint
from boosttune.errors import TrialError
from boosttune.execution.runs import RecordStore, RunRecord, RunSpec
from boosttune.objective import ACCURACY, Objective
from boosttune.space import (
    SpaceContext,
    equivalence_key,
    preset_params,
    recipe_from_params,
)
from boosttune.tables.states import RunStatus

__all__ = ["EXPLODED_LOSS_FACTOR", "baseline_problem", "convergence_note", "judge_baseline", "last_epoch_gain",
           "train_baseline"]


def train_baseline(config: ExperimentConfig, ctx: SpaceContext, base: dict[str, Any], output: Path,
              train: Callable[[RunSpec], RunRecord], log: Callable[[str], None]) -> RunRecord:
    """The O0 baseline, trained first (or kept from an earlier attempt): every speed figure is a ratio to it, and
    the constrained and time-to-accuracy objectives need its objective value."""
    trials, first_of_key = RecordStore(output / "trials"), RecordStore(output / "dedup")
    baseline_recipe = recipe_from_params(preset_params("O0", ctx, base), ctx, base)
    key = equivalence_key(baseline_recipe)
    baseline = trials.get("baseline")
    if baseline is not None:
        log(f"baseline: kept from an earlier attempt ({trials.path('baseline')})")
        return baseline
    log(f"baseline: O0, {config.workers_per_trial} worker(s), {config.recipe.epochs} epoch(s)")
    baseline = train(RunSpec(run_id="baseline", role="baseline", recipe=baseline_recipe.to_dict(),
                             label="O0", preset="O0", key=key))
    trials.put(baseline)
    if baseline.status != RunStatus.FAILED:
        first_of_key.put(baseline, name=key)
    return baseline


def judge_baseline(baseline: RunRecord, objective: Objective, config: ExperimentConfig, steps_per_epoch: int,
                    log: Callable[[str], None]) -> str | None:
    """Refuse a baseline nothing can be compared against (:func:`baseline_problem`); say its speed and objective,
    and whether it had converged (the note)."""
    problem = baseline_problem(baseline, objective, learning_rate=config.recipe.optimizer.learning_rate,
                               steps_per_epoch=steps_per_epoch)
    if problem is not None:
        raise TrialError(problem)
    throughput, rse = baseline.metrics["throughput_sps"], baseline.metrics.get("throughput_rse")
    sure = ", ".join(([f"+-{100 * rse:.1f}% standard error"] if rse else [])
                     + [f"{baseline.metrics.get('steady_steps')} steady steps"])
    log(f"baseline: {throughput:.1f} samples/s ({sure}), {objective.label} "
        f"{objective.format_value(baseline.metrics['objective_value'])}")
    note = convergence_note(baseline.curve, objective)
    if note:
        log(f"baseline: {note}")
    return note


# A finite training loss this many times its first epoch's mean is a divergence, not learning.
EXPLODED_LOSS_FACTOR = 10.0
_STEP = re.compile(r"at step (\d+)")


def baseline_problem(baseline: RunRecord, objective: Objective, *, learning_rate: float,
                     steps_per_epoch: int) -> str | None:
    """Why every comparison against this O0 baseline would be meaningless, in one line that says what happened,
    where, and what to change; None when it can be compared against.

    A baseline that failed, diverged (a non-finite loss, or a training loss that grew more than
    ``EXPLODED_LOSS_FACTOR`` times its first epoch's), gave no value of the objective, or no throughput figure.
    """
    if baseline.status == RunStatus.FAILED:
        return f"the O0 baseline failed, nothing to compare against: {baseline.reason}"
    fix = diverged_hint(learning_rate)
    reason = baseline.reason or ""
    if reason.startswith("non-finite loss"):
        step = _STEP.search(reason)
        where = ""
        if step:
            n = int(step.group(1))
            where = f" (epoch {(n - 1) // max(1, steps_per_epoch) + 1}, step {(n - 1) % max(1, steps_per_epoch) + 1} " \
                    f"of {steps_per_epoch})"
        return f"the O0 baseline diverged: {reason}{where}; {fix}"
    losses = [(int(e["epoch"]), float(e["train_loss"])) for e in baseline.curve
              if e.get("epoch") is not None and e.get("train_loss") is not None]
    if losses and losses[0][1] > 0:
        first = losses[0][1]
        worst_epoch, worst = max(losses, key=lambda pair: pair[1] if math.isfinite(pair[1]) else math.inf)
        if not math.isfinite(worst) or worst > EXPLODED_LOSS_FACTOR * first:
            return (f"the O0 baseline diverged: its training loss rose from {first:.4g} (epoch {losses[0][0]}) to "
                    f"{worst:.4g} (epoch {worst_epoch}); {fix}")
    value = baseline.metrics.get("objective_value")
    if value is None or not math.isfinite(float(value)):
        return (f"the O0 baseline gave no value of the objective {objective.label} (got {value!r}) after "
                f"{len(baseline.curve)} epoch(s) ({baseline.status}{f': {reason}' if reason else ''}): the metric "
                f"{objective.name!r} must return one finite number on the eval set")
    if not baseline.metrics.get("throughput_sps"):
        steady = baseline.metrics.get("steady_steps")
        return (f"the O0 baseline gave no throughput figure ({steady if steady is not None else 'no'} steady steps "
                f"of {steps_per_epoch} per epoch x {len(baseline.curve)} epoch(s)): speed needs steps after the "
                "first (compiling) ones; raise base.epochs or the data's batches per epoch")
    return None


def last_epoch_gain(curve: list[dict[str, Any]], objective: Objective = ACCURACY) -> tuple[float, bool] | None:
    """The baseline's last epoch against the best before it, and whether that gain means it was still learning when
    it stopped (then every recipe is compared too early): more than 0.5 points (0.5% of the value for a
    non-fraction). None with fewer than 3 evaluated epochs."""
    values = [e["objective_value"] for e in curve if e.get("objective_value") is not None]
    if len(values) < 3:
        return None
    best_before = max(values[:-1], key=objective.oriented)
    gain = objective.gain(values[-1], best_before)
    return gain, gain > objective.tolerance(None, 0.5, values[-1])


def convergence_note(curve: list[dict[str, Any]], objective: Objective = ACCURACY,
                     confirmed_at: int | None = None) -> str | None:
    """Whether the baseline was still learning when it stopped (:func:`last_epoch_gain`), in words; ``confirmed_at``:
    the planned job's epochs, when the confirm race trained them for that reason."""
    found = last_epoch_gain(curve, objective)
    if found is None:
        return None
    gain, still = found
    if still and confirmed_at:
        return (f"still improving at the end ({objective.format_gain(gain)} in the last epoch): the confirm race "
                f"trained the planned {confirmed_at} epochs, where the answer's {objective.noun} was judged; the "
                "search's figures are the tuning job's")
    return (f"still improving at the end ({objective.format_gain(gain)} in the last epoch): train longer (--epochs) "
            "so recipes are compared at convergence" if still else
            f"converged (last epoch {objective.format_gain(gain)} vs the best before it)")
