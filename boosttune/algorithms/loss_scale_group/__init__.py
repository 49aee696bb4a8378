"""Group loss scale: boost's loss_scale_group switch with a GroupLossScaleManager (the loss_scale fragment's
kind "group" switches it on)."""

from __future__ import annotations

from typing import Any

from boosttune.algorithms import manual
from boosttune.algorithms.base import Algorithm, ProbeCheck, Resolution, _Section
from boosttune.algorithms.loss_scale_group.notes import NOTE
from boosttune.errors import ConfigError


class LossScaleGroupSection(_Section):
    """AutoBoost reads no keys here: the groups come from ``GroupLossScaleManager``."""


def rule(state: Resolution) -> None:
    if state.applied["loss_scale_group"]:
        state.notes.append("loss_scale_group needs a GroupLossScaleManager (GPU/Ascend only)")


def _probe(device: str, kit: Any) -> None:
    # Deferred: MindSpore is heavy and only the probe's child process loads it.
    from mindspore.boost import GroupLossScaleManager

    net = kit.network()
    params = net.trainable_params()
    manager = GroupLossScaleManager(2.0**10, [params[:2], params[2:]])
    kit.train(device, boost_level="O1", boost_config_dict=manual(loss_scale_group=True), loss_scale=manager,
              network=net)


_BY_LOSS_SCALE = "the loss_scale fragment switches it on (loss_scale.kind group)"

def _loss_scale_rule(recipe: Any, applied: bool) -> None:
    """The switch and a group loss scale come together, or not at all."""
    kind = recipe.loss_scale.kind
    if applied and kind != "group":
        raise ConfigError(f"loss_scale.kind: {kind!r} is invalid with boost loss_scale_group on; allowed: 'group'")
    if kind == "group" and not applied:
        raise ConfigError("loss_scale.kind: 'group' needs boost_config_dict boost.loss_scale_group: true "
                          "with boost_level O1 or O2 and mode manual")


ALGORITHM = Algorithm(
    name="loss_scale_group",
    graph_state=lambda recipe: "the group loss scale manager's state is not proven reset",
    kind="boost",
    section=LossScaleGroupSection,
    probe_checks=(ProbeCheck("loss_scale.group", run=_probe),),
    rule=rule,
    recipe_rule=_loss_scale_rule,
    notes=(NOTE,),
    without={"fragment": _BY_LOSS_SCALE, "off_params": _BY_LOSS_SCALE,
             "calibration": "the loss_scale knob's speed is not calibrated",
             "bench": "the default matrix has no group loss scale (GPU/Ascend only)",
             "observe": "MindSpore's Model keeps no trace of it to read back"},
)
