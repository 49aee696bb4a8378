"""The optimizer: learning rate, its schedule, and THOR where the device runs it (a knob)."""

from __future__ import annotations

from typing import Any, Mapping

from boosttune.algorithms.base import Algorithm, ProbeCheck, SpaceContext
from boosttune.algorithms.optimizer.fragment import FRAGMENT


def off_params(ctx: SpaceContext, base: Mapping[str, Any]) -> dict[str, Any]:
    """The base recipe's optimizer at the context's learning rate."""
    optimizer = base.get("optimizer", {})
    params = {"optimizer.learning_rate": ctx.base_learning_rate,
              "optimizer.lr_schedule": optimizer.get("lr_schedule", "constant")}
    if ctx.supported("optimizer.thor"):  # the fragment offers THOR there: presets keep the base's optimizer
        params["optimizer.name"] = optimizer.get("name", "momentum")
    return params


def _thor(device: str, kit: Any) -> None:
    # A plain Model: MindSpore 2.10's ConvertModelUtils.convert_to_thor_model returns a ModelThor
    # whose _exec_preprocess has an outdated signature and fails in every mode.
    # Deferred: MindSpore is heavy and only the probe's child process loads it.
    import mindspore as ms
    import numpy as np
    from mindspore import nn

    ms.set_context(mode=ms.GRAPH_MODE, device_target=device)
    net = kit.network()
    lr = ms.Tensor(np.full(4, 0.01, np.float32))
    damping = ms.Tensor(np.full(4, 0.03, np.float32))
    opt = nn.thor(net, lr, damping, 0.9, batch_size=4)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    ms.Model(net, loss, opt, metrics={"acc"}).train(1, kit.dataset(), dataset_sink_mode=False)


ALGORITHM = Algorithm(
    name="optimizer",
    graph_state=lambda recipe: "THOR's state is not proven reset" if recipe.optimizer.name == "thor" else None,
    kind="knob",
    fragment=FRAGMENT,
    off_params=off_params,
    probe_checks=(*(ProbeCheck(f"optimizer.{name}", optimizer=name) for name in ("momentum", "sgd", "adam", "lamb")),
                  ProbeCheck("optimizer.thor", run=_thor)),
    notes=(),
    without={"notes": "the optimizer has no method card: it is the recipe's, not a MindSpore speed-up"},
)
