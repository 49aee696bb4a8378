"""The search's start points: O0 and MindSpore's presets as this device runs them (each trained once, by its
equivalence key), then, with ``informed_start``, the variations a person would try first; with
``remeasure_baseline``, O0 first of them (it trains again there: the search's speed reference is timed in the search,
as its trials are, and every later trial's live speed-up and speed floor read it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from boosttune.config.experiment import ExperimentConfig
from boosttune.execution.provenance import record_run_info
from boosttune.probe.presets import device_presets
from boosttune.space import (
    SpaceContext,
    equivalence_key,
    informed_points,
    preset_params,
    recipe_from_params,
    searchable,
)

__all__ = ["StartPoints", "plan_start", "start_points"]


@dataclass
class StartPoints:
    """The search's first trials: the presets, then the variations a person would try first."""

    presets: dict[str, str] = field(default_factory=dict)  # equivalence key -> preset name
    labels: dict[str, str] = field(default_factory=dict)  # equivalence key -> label, for every start point
    points: list[dict[str, Any]] = field(default_factory=list)  # the searched space can draw them: modelled
    outside: list[dict[str, Any]] = field(default_factory=list)  # it cannot (a slow knob): trained only
    labels_in_order: list[str] = field(default_factory=list)
    outside_labels: list[str] = field(default_factory=list)
    same_as: dict[str, str] = field(default_factory=dict)  # preset -> why it is not trained apart


def start_points(report, ctx, base: dict[str, Any], config: ExperimentConfig,
                 speed: Mapping[str, float | None] | None = None) -> StartPoints:
    """O0 and each preset that trains differently here (by equivalence key), then, with ``informed_start``,
    the informed variations the searched space can draw, up to half the trial budget in all, ranked by ``speed``
    (the calibration on the team's network: knob -> throughput over O0's) where it was measured."""
    start = StartPoints()
    presets = device_presets(report, config.workers_per_trial)
    candidates = [(p.name, preset_params(p.name, ctx, base), True) for p in presets]
    notes = {p.name: "; ".join(p.notes) for p in presets}
    if config.informed_start:
        candidates += [(label, params, False) for label, params in informed_points(ctx, base, speed)
                       if searchable(params, ctx, base)]
    budget = max(sum(preset for *_, preset in candidates), config.num_trials // 2)
    for label, params, preset in candidates:
        key = equivalence_key(recipe_from_params(params, ctx, base))
        if key in start.labels and preset:
            start.same_as[label] = f"trains the same as {start.labels[key]} on this device ({notes[label]})"
        if key in start.labels or (not preset and len(start.labels) >= budget):
            continue
        start.labels[key] = label
        start.labels_in_order.append(label)
        if preset:
            start.presets[key] = label
        if searchable(params, ctx, base):
            start.points.append(params)
        else:
            start.outside.append(params)
            start.outside_labels.append(label)
    return start


def plan_start(config: ExperimentConfig, output: Path, report: Any, ctx: SpaceContext, base: dict[str, Any],
               slow: dict[str, str], log: Callable[[str], None],
               speed: Mapping[str, float | None] | None = None) -> StartPoints:
    """The search's start points, and why a preset is not trained apart (in run_info.json); ``speed``: the
    calibration's ratios on the team's network, which rank the informed start."""
    start = start_points(report, ctx, base, config, speed)
    ranked = {k: v for k, v in (speed or {}).items() if k.count(".") == 1 and k.startswith("boost.")
              and isinstance(v, (int, float))}
    if config.informed_start and ranked:
        log("search: informed start ranked by the calibration on this network: " + ", ".join(
            f"{k.removeprefix('boost.')} {v:.2f}x" for k, v in sorted(ranked.items(), key=lambda kv: -kv[1])))
    if start.same_as:  # MindSpore's claims are judged per preset: say why one of them is not trained apart
        record_run_info(output, left_out={**slow, **start.same_as})
    log(f"search: starts from {', '.join(start.labels_in_order) or 'nothing fixed'}"
        + (f" ({', '.join(start.outside_labels)} outside the searched space: trained, not modelled)"
           if start.outside_labels else ""))
    return start
