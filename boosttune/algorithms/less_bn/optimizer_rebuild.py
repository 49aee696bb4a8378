"""LessBN's rebuild of a team's optimizer, as MindSpore's boost makes it (``OptimizerProcess``, with gradient
centralization or without), tried without training by :func:`boosttune.trial.rebuild.rebuild_problems`. MindSpore: a
trial's process only."""

from __future__ import annotations

from typing import Any

from mindspore.boost.base import OptimizerProcess, ParameterProcess

__all__ = ["less_bn_rebuild"]


def less_bn_rebuild(optimizer: Any, network: Any, params: list, centralize: bool) -> Any:
    process = OptimizerProcess(optimizer)
    process.origin_params = ParameterProcess.generate_group_params(params, process.origin_params)
    if centralize:
        process.add_grad_centralization(network)
    return process.generate_new_optimizer()
