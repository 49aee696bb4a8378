"""A search-space context as the CPU probe leaves it, for the tests of the space and of what draws from it."""

from boosttune.space import SpaceContext

BASE = {"model": "lenet5", "epochs": 1, "optimizer": {"learning_rate": 0.05}}
# What the CPU probe finds unsupported (tests/probe checks the probe itself).
CPU_UNSUPPORTED = {"boost.less_bn.gc_flag", "loss_scale.dynamic", "loss_scale.group", "boost.adasum",
                   "optimizer.lamb", "optimizer.thor", "loss_scale.fixed_drop_overflow"}


def cpu_context(**kw) -> SpaceContext:
    """A small model's context on the CPU (120 steps, 10 parameter tensors); ``kw`` replaces any field."""
    defaults = dict(total_steps=120, param_count=10, unsupported=frozenset(CPU_UNSUPPORTED))
    return SpaceContext(**{**defaults, **kw})
