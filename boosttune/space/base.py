"""What a search-space fragment is, and the context it suggests in. Pure Python (no Ray, no MindSpore)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Fragment", "SpaceContext", "asks", "boost_switches", "switch_on"]


@dataclass(frozen=True)
class SpaceContext:
    """Facts the space depends on.

    total_steps: the trial's real number of training steps (GradientFreeze's schedule is tied to it).
    param_count: trainable parameter tensors of the model (gradient split points are drawn from it).
    unsupported: knobs the capability probe found unsupported, such as "boost.less_bn.gc_flag".
    world_size: ranks per trial (AdaSum needs >= 16; DimReduce runs single-process only on CPU).
    enabled: the fragment names to search (others keep the base recipe's values).
    slow: knobs measured clearly slower than O0 on this device (:mod:`boosttune.probe.calibrate`):
        the search does not draw them; a recipe that sets them (a preset, a replayed trial) still has them.
    device_target: the trials' device ("CPU", "GPU", "Ascend").
    """

    total_steps: int
    param_count: int
    unsupported: frozenset[str] = frozenset()
    world_size: int = 1
    enabled: frozenset[str] = field(default_factory=frozenset)
    base_learning_rate: float = 0.05
    slow: frozenset[str] = frozenset()
    device_target: str = "CPU"

    def supported(self, knob: str) -> bool:
        return knob not in self.unsupported


class Fragment(Protocol):
    """One algorithm's (or knob family's) part of the search space.

    ``suggest`` is define-by-run: it asks the trial only for the knobs that apply given what earlier
    fragments chose (``document`` is the recipe being built, a plain dict it mutates).
    """

    name: str
    order: int
    requires: tuple[str, ...]

    def suggest(self, trial: Any, ctx: SpaceContext, document: dict[str, Any]) -> None: ...


def asks(trial: Any, ctx: SpaceContext, knob: str, param: str) -> bool:
    """Whether a fragment asks ``trial`` for ``param`` (the switch of ``knob``).

    Not for a knob the device does not support. Not for a knob measured slow here, unless ``trial``
    replays a recipe that sets it (its ``fixed_params``, see :class:`boosttune.space.ReplayTrial`).
    """
    if not ctx.supported(knob):
        return False
    return knob not in ctx.slow or param in getattr(trial, "fixed_params", ())


def boost_switches(document: dict[str, Any]) -> dict[str, bool]:
    return document["boost_config_dict"]["boost"]


def switch_on(document: dict[str, Any], name: str) -> bool:
    return bool(boost_switches(document).get(name))
