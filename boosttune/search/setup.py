"""What the search is given, from what the start-up and the baseline found: the space this device may draw
(:func:`space_context`) and the search's setup (:class:`SearchSetup`, made by :func:`search_setup`): the start
points, the baseline's figures, the tolerances in the objective's units, and how many trials train at once."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import ray

from boosttune import algorithms
from boosttune.config.experiment import EARLY_STOP_MARGIN, LOSSY_DROP, ExperimentConfig
from boosttune.execution.cluster import default_concurrency
from boosttune.execution.provenance import record_run_info
from boosttune.errors import TrialError
from boosttune.execution.runs import RecordStore, RunRecord, RunSpec
from boosttune.execution.start import StartedRun
from boosttune.search.start_points import StartPoints
from boosttune.objective import ACCURACY, Objective
from boosttune.search.lossy import LossyJudge
from boosttune.search.speed import SpeedFloor
from boosttune.space import SpaceContext, equivalence_key, recipe_from_params
from boosttune.trial.parts import ModelFacts

__all__ = ["CLOSING_RUN", "SearchSetup", "search_setup", "space_context"]

# The mark on the config of the O0 run that closes the search (its speed reference timed again at the end): a Tune
# config key, never a param of the space, never told to Optuna.
CLOSING_RUN = "closing_reference_run"


@dataclass(frozen=True)
class SearchSetup:
    """What the experiment hands the search: the base recipe, the device's limits, the baseline's figures."""

    base: dict[str, Any]
    ctx: SpaceContext
    env: dict[str, str]
    workers: int
    output: str
    presets: dict[str, str]  # equivalence key -> preset name
    baseline_objective: float
    max_drop: float  # the allowed drop, in the objective's gain units (points for accuracy)
    target: float | None  # the objective's value a trial stops at (time_to_accuracy)
    max_concurrent: int
    baseline_throughput_sps: float  # every speed-up is a ratio to it
    labels: dict[str, str] = field(default_factory=dict)  # equivalence key -> start point label
    outside: list[dict[str, Any]] = field(default_factory=list)  # start points the search cannot draw (slow knobs)
    objective: Objective = ACCURACY
    early_stop_margin: float = 5.0  # the multi-objective scheduler's margin, in the objective's gain units
    storage: str | None = None  # Ray's storage every node reaches (--storage); None: the output folder
    accelerator_type: str | None = None
    pool: Any = None  # a WarmClient: trials train on the experiment's warm workers; None: a fresh Ray Train run each
    baseline_by_epoch: dict[int, float] = field(default_factory=dict)  # the baseline's objective at each epoch
    lossy_drop: float | None = None  # more than this below O0 at an epoch (gain units) is lossy; None: no such rule
    remeasure_baseline: bool = False  # O0 trains again, first and last of the search: its speed reference, bracketed
    speed_floor: SpeedFloor | None = None  # a trial too slow for the confirm stage to race stops at its rung; None: no

    def __post_init__(self) -> None:
        # Every trial is scored against the baseline: a missing figure is refused here, by name, not in a trial.
        for name, value in (("baseline_objective", self.baseline_objective),
                            ("baseline_throughput_sps", self.baseline_throughput_sps)):
            if not isinstance(value, (int, float)) or not math.isfinite(value) or (
                    name == "baseline_throughput_sps" and value <= 0):
                raise TrialError(f"search: the O0 baseline's {name} is {value!r}; every trial is scored against it, "
                                 "so the search cannot start (train a baseline that gives both figures)")

    @property
    def lossy(self) -> LossyJudge | None:
        """How the search judges a lossy trial (:mod:`boosttune.search.lossy`); None without ``lossy_drop``."""
        if self.lossy_drop is None:
            return None
        return LossyJudge(self.objective, self.lossy_drop, self.baseline_objective, dict(self.baseline_by_epoch),
                          forced=frozenset(self.ctx.enabled))

    def spec(self, trial_id: str, params: dict[str, Any]) -> RunSpec:
        """The run a trial with these params trains (the closing O0 run's mark, :data:`CLOSING_RUN`, kept in its
        params, not in its recipe)."""
        recipe = recipe_from_params({name: value for name, value in params.items() if name != CLOSING_RUN},
                                    self.ctx, self.base)
        if self.target is not None:
            recipe = recipe.model_copy(update={"target": self.target})
        key = equivalence_key(recipe)
        label = self.presets.get(key) or self.labels.get(key) or trial_id
        return RunSpec(run_id=trial_id, role="search", recipe=recipe.to_dict(), label=label,
                       preset=self.presets.get(key), key=key, params=dict(params))

    @property
    def records(self) -> RecordStore:
        return RecordStore(Path(self.output) / "trials")

    @property
    def first_of_key(self) -> RecordStore:
        """The first trained record of each equivalence key: equivalent recipes are trained once."""
        return RecordStore(Path(self.output) / "dedup")


def space_context(config: ExperimentConfig, started: StartedRun, facts: ModelFacts, slow: dict[str, str],
                  log: Callable[[str], None]) -> SpaceContext:
    """What the search space may draw here: the knobs this device supports and does not run slow, sized to the model."""
    report = started.report
    unsupported = {c.knob: c.reason for c in report.unsupported()}
    unsupported.update(facts.left_out)  # the model's own limits (its optimizer under boost)
    for algorithm in algorithms.registry():  # a rank rule the probe's one rank fails and the trials' ranks pass
        if algorithm.ranks_rule is not None and algorithm.ranks_rule(config.workers_per_trial) is None:
            unsupported.pop(f"boost.{algorithm.name}", None)
    record_run_info(started.output, device=f"{report.device_target}: {report.cpu}", left_out=slow,
                    probed_on=f"{started.placed.hostname} ({started.placed.node_ip})", unsupported=unsupported)
    for why in slow.values():
        log(f"search space: {why}")
    return SpaceContext(unsupported=frozenset(unsupported), total_steps=facts.total_steps,
                        param_count=facts.param_count, world_size=config.workers_per_trial,
                        enabled=frozenset(config.search or ()),
                        base_learning_rate=config.recipe.optimizer.learning_rate, slow=frozenset(slow),
                        device_target=config.recipe.device_target)


def search_setup(config: ExperimentConfig, started: StartedRun, facts: ModelFacts, ctx: SpaceContext,
                 base: dict[str, Any], baseline: RunRecord, start: StartPoints, max_drop: float,
                 log: Callable[[str], None]) -> SearchSetup:
    """What the search needs: the start points, the baseline's figures, the allowed drop (``max_drop``: the run's one
    tolerance, resolved where the experiment starts, in the objective's gain units), trials at once."""
    objective = facts.objective
    base_value = baseline.metrics["objective_value"]
    drop = max_drop
    return SearchSetup(
        base=base, ctx=ctx, env=started.env, workers=config.workers_per_trial, output=str(started.output),
        presets=start.presets, labels=start.labels, outside=start.outside, objective=objective,
        baseline_objective=base_value, max_drop=drop,
        early_stop_margin=objective.tolerance(config.early_stop_margin, EARLY_STOP_MARGIN, base_value),
        baseline_throughput_sps=baseline.metrics.get("throughput_sps"),
        baseline_by_epoch={int(e["epoch"]): float(e["objective_value"]) for e in baseline.curve
                           if e.get("epoch") is not None and e.get("objective_value") is not None},
        lossy_drop=objective.tolerance(None, LOSSY_DROP, base_value),
        target=(objective.shifted(base_value, -drop) if config.objective == "time_to_accuracy" else None),
        max_concurrent=config.max_concurrent_trials or default_concurrency(ray.nodes(), started.per_rank,
                                                                            config.workers_per_trial),
        storage=started.storage, accelerator_type=config.accelerator_type,
        remeasure_baseline=config.remeasure_baseline,
    )
