"""A team's own model and data, the way boosttune takes them: an LSTM that reads a digit row by row, on
MindRecord files read by MindSpore's own MindDataset, sharded per rank.

boosttune calls ``build(ctx)`` in every rank of every trial and trains what it returns.
"""

from __future__ import annotations

from pathlib import Path

import mindspore.dataset as ds
from mindspore import nn

from boosttune import TrialContext, TrialParts


class RowLSTM(nn.Cell):
    """Sequence classifier: 8 rows of 8 pixels in, 10 classes out."""

    def __init__(self, hidden: int = 32, num_classes: int = 10) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_size=8, hidden_size=hidden, batch_first=True)
        self.norm = nn.LayerNorm((hidden,))
        self.head = nn.Dense(hidden, num_classes)

    def construct(self, rows):
        outputs, _ = self.lstm(rows)
        return self.head(self.norm(outputs[:, -1, :]))


def _data(path: Path, ctx: TrialContext, train: bool) -> ds.Dataset:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run python prepare.py first")
    ds.config.set_seed(ctx.seed)  # the same shuffle for every recipe of a paired round
    sharding = {"num_shards": ctx.world_size, "shard_id": ctx.rank} if train else {}
    data = ds.MindDataset(str(path), columns_list=["rows", "label"], shuffle=train, **sharding)
    return data.batch(ctx.batch_size, drop_remainder=True)


def build(ctx: TrialContext) -> TrialParts:
    """kwargs: ``hidden`` (LSTM width), ``data_dir`` (the MindRecord folder), ``objective`` ("accuracy", or
    "loss" to judge recipes by the held-out cross-entropy: lower is better)."""
    objective = ctx.kwargs.get("objective", "accuracy")
    folder = Path(ctx.kwargs.get("data_dir", "data"))
    if not folder.is_absolute():
        folder = Path(__file__).parent / folder  # shipped next to this file to every node
    return TrialParts(
        network=RowLSTM(hidden=int(ctx.kwargs.get("hidden", 32))),
        loss_fn=nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
        train=_data(folder / "train.mindrecord", ctx, train=True),
        eval=_data(folder / "val.mindrecord", ctx, train=False),
        metrics={"accuracy": nn.Accuracy(), "loss": nn.Loss()},
        objective=objective,
        higher_is_better=objective != "loss",
    )
