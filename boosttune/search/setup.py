"""What the search is given, from what the start-up and the baseline found: the space this device may draw
(:func:`space_context`) and the search's setup (:func:`search_setup`): the start points, the baseline's figures, the
tolerances in the objective's units, and how many trials train at once."""

from __future__ import annotations

from typing import Any, Callable

import ray

from boosttune import algorithms
from boosttune.config.experiment import EARLY_STOP_MARGIN, LOSSY_DROP, ExperimentConfig
from boosttune.execution.cluster import default_concurrency
from boosttune.execution.provenance import record_run_info
from boosttune.execution.runs import RunRecord
from boosttune.execution.start import StartedRun
from boosttune.search.start_points import StartPoints
from boosttune.search.tune import SearchSetup
from boosttune.space import SpaceContext
from boosttune.trial.parts import ModelFacts

__all__ = ["search_setup", "space_context"]


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
