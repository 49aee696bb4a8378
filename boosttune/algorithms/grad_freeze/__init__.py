"""GradientFreeze: train only some parameter groups on some steps. Its schedule spans the real steps."""

from __future__ import annotations

from typing import Any

from boosttune.algorithms import manual
from boosttune.algorithms.base import (
    Algorithm,
    InformedPoint,
    OptimizerRebuild,
    ProbeCheck,
    SpaceContext,
    alone_in_bench,
    short_value,
)
from boosttune.algorithms.grad_freeze.fragment import FRAGMENT, PARAM_GROUPS
from boosttune.algorithms.grad_freeze.notes import NOTE
from boosttune.algorithms.grad_freeze.section import GradFreezeSection, rule

DEFAULT_GROUPS = GradFreezeSection.model_fields["param_groups"].default  # MindSpore's, and the presets'


def observe(model) -> dict[str, Any]:
    # Deferred: MindSpore is heavy and only a trial's worker has it loaded.
    from mindspore.boost.grad_freeze import FreezeOpt

    return {"grad_freeze": isinstance(model._optimizer, FreezeOpt)}


def sized_to_run(section: dict[str, Any], given: frozenset[str], total_steps: int) -> None:
    """The freezing schedule spans the run's real steps, unless the recipe set its own length."""
    if "total_steps" not in given:
        section["total_steps"] = total_steps


def label(knobs: dict[str, Any]) -> str | None:
    """"grad_freeze p=0.5", with its parameter groups when not MindSpore's 10 ("... on 2 groups"): each group
    compiles a graph of its own, so the groups tell two recipes of one freeze_p apart in speed per job."""
    if "freeze_p" not in knobs:
        return None
    groups = knobs.get("param_groups", DEFAULT_GROUPS)
    on_groups = f" on {groups} groups" if groups != DEFAULT_GROUPS else ""
    return f"grad_freeze p={short_value(knobs['freeze_p'])}{on_groups}"


def _preset_params(ctx: SpaceContext) -> dict[str, Any]:
    return {"boost.grad_freeze": True, "grad_freeze.freeze_type": 1, "grad_freeze.param_groups": DEFAULT_GROUPS,
            "grad_freeze.freeze_p": 0.7}


def informed(ctx: SpaceContext) -> tuple[InformedPoint, ...]:
    """Alone at a middle, a high and a low freeze_p, in that order (a lower freeze_p freezes more steps, faster and
    lossier, so the higher one is the likelier to stay within a tight margin), each with the fewest parameter groups
    the search draws: every group is a graph compiled on its first use, which a job pays whatever its length (the
    main job, 2026-11-27: 3.9 s of compile with O1's 10 groups, 1.8 s with 2, on 24-27 s jobs: 1.05x against 1.14x
    per job at 1.18-1.20x per step). After LessBN alone, the O1 preset (LessBN with it) at a lower freeze_p."""
    groups = PARAM_GROUPS[0]
    alone = tuple(InformedPoint(label({"freeze_p": p, "param_groups": groups}),
                                {**_preset_params(ctx), "grad_freeze.freeze_p": p, "grad_freeze.param_groups": groups})
                  for p in (0.5, 0.7, 0.3))
    return alone + tuple(InformedPoint(f"O1-equivalent p={p}", {"grad_freeze.freeze_p": p}, over="O1")
                         for p in (0.3, 0.5))


def _rebuild(optimizer: Any, network: Any, params: list) -> Any:
    from boosttune.algorithms.grad_freeze.optimizer_rebuild import freeze_rebuild  # MindSpore: a trial's process only

    return freeze_rebuild(optimizer, network, params)


ALGORITHM = Algorithm(
    name="grad_freeze",
    graph_state=lambda recipe: ("GradientFreeze keeps a train cell and an optimizer per group in plain tuples, whose "
                                "moments no parameter list reaches"),
    kind="boost",
    fragment=FRAGMENT,
    section=GradFreezeSection,
    presets=("O1", "O2"),
    off_params=lambda ctx, base: {"boost.grad_freeze": False},
    preset_params=_preset_params,
    informed=informed,
    rebuilds=(OptimizerRebuild("boost.grad_freeze", "GradientFreeze", _rebuild),),
    probe_checks=(ProbeCheck("boost.grad_freeze", switches=("grad_freeze",),
                             sections={"grad_freeze": {"param_groups": 2, "total_steps": 4}}),),
    calibration={"boost.grad_freeze": {"boost.grad_freeze": True, "grad_freeze.freeze_type": 1,
                                       "grad_freeze.param_groups": 10, "grad_freeze.freeze_p": 0.5}},
    bench=lambda report, world_size: alone_in_bench("grad_freeze", report, manual(grad_freeze=True)),
    rule=rule,
    observe=observe,
    sized_to_run=sized_to_run,
    label=label,
    notes=(NOTE,),
)
