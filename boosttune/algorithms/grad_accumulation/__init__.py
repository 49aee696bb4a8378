"""GradientAccumulation: one optimizer update per k batches. MindSpore 2.10 cannot combine it with freeze."""

from __future__ import annotations

from typing import Any, Mapping

from boosttune.algorithms import manual
from boosttune.algorithms.base import Algorithm, ProbeCheck, alone_in_bench
from boosttune.algorithms.grad_accumulation.fragment import FRAGMENT
from boosttune.algorithms.grad_accumulation.notes import NOTE
from boosttune.algorithms.grad_accumulation.section import GradAccumulationSection, rule


def observe(model) -> dict[str, Any]:
    train_net = model._train_network
    return {
        "grad_accumulation": bool(getattr(train_net, "use_grad_accumulation", False)),
        "grad_accumulation_step": int(getattr(train_net, "max_accumulation_step", 1)),
    }


def steps_per_update(boost_dict: Mapping[str, Any]) -> int:
    """Accumulation over k batches updates the optimizer (and steps its LR schedule) once per k batches."""
    return int((boost_dict.get("grad_accumulation") or {}).get("grad_accumulation_step", 1))


ALGORITHM = Algorithm(
    name="grad_accumulation",
    graph_state=lambda recipe: ("a kept accumulation Model, every parameter reset, trained a second seed to other figures "
                                "than a fresh Model (tests/trial/test_graphs.py)"),
    kind="boost",
    fragment=FRAGMENT,
    section=GradAccumulationSection,
    off_params=lambda ctx, base: {"boost.grad_accumulation": False},
    probe_checks=(ProbeCheck("boost.grad_accumulation", switches=("grad_accumulation",),
                             sections={"grad_accumulation": {"grad_accumulation_step": 2}}),),
    calibration={"boost.grad_accumulation": {"boost.grad_accumulation": True,
                                             "grad_accumulation.grad_accumulation_step": 4}},
    # MindSpore's default step is 1, which switches accumulation off: 4 is the smallest telling value.
    bench=lambda report, world_size: alone_in_bench("grad_accumulation", report, {
        **manual(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 4}}),
    rule=rule,
    observe=observe,
    steps_per_update=steps_per_update,
    label=lambda knobs: (f"grad_accumulation x{knobs['grad_accumulation_step']}"
                         if "grad_accumulation_step" in knobs else None),
    notes=(NOTE,),
)
