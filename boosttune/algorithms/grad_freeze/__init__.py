"""GradientFreeze: train only some parameter groups on some steps. Its schedule spans the real steps."""

from __future__ import annotations

from typing import Any

from boosttune.algorithms import manual
from boosttune.algorithms.base import Algorithm, ProbeCheck, alone_in_bench, short_value
from boosttune.algorithms.grad_freeze.fragment import FRAGMENT
from boosttune.algorithms.grad_freeze.notes import NOTE
from boosttune.algorithms.grad_freeze.section import GradFreezeSection, rule


def observe(model) -> dict[str, Any]:
    # Deferred: MindSpore is heavy and only a trial's worker has it loaded.
    from mindspore.boost.grad_freeze import FreezeOpt

    return {"grad_freeze": isinstance(model._optimizer, FreezeOpt)}


def sized_to_run(section: dict[str, Any], given: frozenset[str], total_steps: int) -> None:
    """The freezing schedule spans the run's real steps, unless the recipe set its own length."""
    if "total_steps" not in given:
        section["total_steps"] = total_steps


ALGORITHM = Algorithm(
    name="grad_freeze",
    graph_state=lambda recipe: ("GradientFreeze keeps a train cell and an optimizer per group in plain tuples, whose "
                                "moments no parameter list reaches"),
    kind="boost",
    registry_order=20,
    probe_order=60,
    fragment=FRAGMENT,
    section=GradFreezeSection,
    presets=("O1", "O2"),
    off_params=lambda ctx, base: {"boost.grad_freeze": False},
    preset_params=lambda ctx: {"boost.grad_freeze": True, "grad_freeze.freeze_type": 1,
                               "grad_freeze.param_groups": 10, "grad_freeze.freeze_p": 0.7},
    probe_checks=(ProbeCheck("boost.grad_freeze", switches=("grad_freeze",),
                             sections={"grad_freeze": {"param_groups": 2, "total_steps": 4}}),),
    calibration={"boost.grad_freeze": {"boost.grad_freeze": True, "grad_freeze.freeze_type": 1,
                                       "grad_freeze.param_groups": 10, "grad_freeze.freeze_p": 0.5}},
    bench=lambda report, world_size: alone_in_bench("grad_freeze", report, manual(grad_freeze=True)),
    rule=rule,
    resolution_order=30,
    observe=observe,
    sized_to_run=sized_to_run,
    label=lambda knobs: f"grad_freeze p={short_value(knobs['freeze_p'])}" if "freeze_p" in knobs else None,
    notes=(NOTE,),
)
