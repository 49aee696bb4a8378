"""boosttune's own networks and data sets, as one builder among others (``boosttune.builtin:build``).

A recipe that names a built-in model (``model: resnet8``, ``data: {name: digits}``) is trained through this
builder, down the same path as a team's own (:mod:`boosttune.builder`): the trial calls ``build(ctx)`` and
trains the parts it returns. Its kwargs are the recipe's ``model`` name, ``data`` section and ``shuffle``.
"""

from __future__ import annotations

from boosttune.builder import TrialContext, TrialParts
from boosttune.builtin.data import DataSplits, default_workers, load_dataset
from boosttune.config.recipe import DataConfig

__all__ = ["build", "parts_from_splits"]


def build(ctx: TrialContext) -> TrialParts:
    """The built-in model on the built-in data set its kwargs name, this rank's shard of it."""
    from boosttune.builtin.models import default_image_size

    config = DataConfig.model_validate(ctx.kwargs["data"])
    data = load_dataset(config, config.image_size or default_image_size(ctx.kwargs["model"]))
    return parts_from_splits(ctx, data)


def parts_from_splits(ctx: TrialContext, data: DataSplits) -> TrialParts:
    """The parts of one rank from splits already described (tests describe a data set once for many trials).

    The rank trains on its shard of the training split and evaluates on the whole validation split.
    """
    from mindspore import nn
    from mindspore.train import Accuracy, Loss

    from boosttune.builtin.models import build_network

    shuffle = bool(ctx.kwargs.get("shuffle", True))
    return TrialParts(
        network=build_network(ctx.kwargs["model"], data.num_classes, data.channels, data.image_size),
        loss_fn=nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
        train=data.train.dataset(ctx.batch_size, num_shards=ctx.world_size, shard_id=ctx.rank, shuffle=shuffle,
                                 seed=ctx.seed),
        eval=data.val.dataset(ctx.batch_size, workers=default_workers(ctx.world_size)),  # not sharded
        final_eval=(None if data.final_val is None
                    else data.final_val.dataset(ctx.batch_size, workers=default_workers(ctx.world_size))),
        metrics={"acc": Accuracy(), "loss": Loss()},
        objective="acc",
        higher_is_better=True,
    )
