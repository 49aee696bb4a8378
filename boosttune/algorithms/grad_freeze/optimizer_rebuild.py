"""GradientFreeze's rebuild of a team's optimizer, as MindSpore's boost makes it (``FreezeOpt``: one optimizer per
parameter group), tried without training by :func:`boosttune.trial.rebuild.rebuild_problems`. MindSpore: a trial's
process only."""

from __future__ import annotations

from typing import Any

from mindspore.boost.base import ParameterProcess
from mindspore.boost.grad_freeze import FreezeOpt, GradientFreeze

from boosttune.algorithms.base import RebuildRefused
from boosttune.algorithms.grad_freeze.fragment import PARAM_GROUPS

__all__ = ["freeze_rebuild"]


def freeze_rebuild(optimizer: Any, network: Any, params: list) -> Any:
    """Group 0 holds every parameter and is the one compared; a later group (a suffix of the layers) is built too
    when a team's parameter group has no parameter in it, which MindSpore refuses, for every ``param_groups`` the
    search may draw."""
    origin = optimizer.init_params["params"]  # the AttributeError MindSpore would raise
    empty: dict[int, list] = {}
    for count in PARAM_GROUPS:
        for group in GradientFreeze(count, 1, 0.5, 1).split_parameters_groups(network, count)[1:]:
            groups = ParameterProcess.generate_group_params(group, origin)
            if any(isinstance(g, dict) and "params" in g and not list(g["params"]) for g in groups):
                empty.setdefault(count, groups)
                break
    if empty:
        try:
            FreezeOpt(optimizer, [next(iter(empty.values()))])
        except Exception as e:
            message = next((line.strip() for line in str(e).splitlines() if line.strip()), type(e).__name__)
            raise RebuildRefused(f"with grad_freeze.param_groups {_span(sorted(empty))}: {type(e).__name__}: "
                                 f"{message}") from e
    return FreezeOpt(optimizer, [ParameterProcess.generate_group_params(params, origin)]).opts[0]


def _span(counts: list[int]) -> str:
    """``[3]`` -> "3", ``[3, 4, 5]`` -> "3-5", ``[2, 5]`` -> "2, 5"."""
    if len(counts) > 1 and counts == list(range(counts[0], counts[-1] + 1)):
        return f"{counts[0]}-{counts[-1]}"
    return ", ".join(map(str, counts))
