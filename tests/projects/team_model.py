"""A team's own model and data, as a user writes them (not installed: imported from this folder).

Its data: ``python team_model.py`` writes data/team.npz (two splits of 640 rows, 8 features, a 2-class label)."""
import numpy as np
import mindspore.dataset as ds
from mindspore import nn

from boosttune import TrialParts


class Net(nn.Cell):
    def __init__(self, classes):
        super().__init__()
        self.body = nn.SequentialCell([nn.Dense(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dense(16, classes)])

    def construct(self, x):
        return self.body(x)


def _data(rows, seed, ctx, shard=True):
    """The first ``rows`` of a split of data/team.npz, read by a relative path as teams write them (every rank
    runs in the project's shipped folder)."""
    with np.load("data/team.npz") as data:
        x, y = data[f"x{seed}"][:rows], data[f"y{seed}"][:rows]
    kwargs = {"num_shards": ctx.world_size, "shard_id": ctx.rank} if shard else {}
    data = ds.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False, **kwargs)
    return data.batch(ctx.batch_size, drop_remainder=True)


class TeamMomentum(nn.Momentum):
    """A team's optimizer with its own signature (its rate is called ``lr``)."""

    def __init__(self, params, lr, momentum=0.9):
        super().__init__(params, learning_rate=lr, momentum=momentum)


def _groups(params):
    """Weight decay on weights, none on BatchNorm and biases."""
    return [{"params": [p for p in params if p.name.endswith("weight")], "weight_decay": 1e-4},
            {"params": [p for p in params if not p.name.endswith("weight")], "weight_decay": 0.0}]


OPTIMIZERS = {  # kwargs.optimizer -> the team's factory (params, learning_rate) -> nn.Optimizer
    "adam_groups": lambda params, lr: nn.Adam(_groups(params), learning_rate=lr),
    "adamw_groups": lambda params, lr: nn.AdamWeightDecay(_groups(params), learning_rate=lr),
    "fixed_rate": lambda params, lr: nn.Adam(params, learning_rate=0.001),
    "renamed_rate": lambda params, lr: TeamMomentum(params, lr),
}


def build(ctx):
    k = ctx.kwargs
    return TrialParts(network=Net(k.get("classes", 2)),
                      loss_fn=(nn.MSELoss() if k.get("loss") == "mse"
                               else nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
                      train=_data(k.get("rows", 640), 0, ctx), eval=_data(k.get("eval_rows", 256), 1, ctx, False),
                      metrics={"acc": nn.Accuracy()}, objective="acc", optimizer=OPTIMIZERS.get(k.get("optimizer")))


if __name__ == "__main__":
    import os

    os.makedirs("data", exist_ok=True)
    splits = {}
    for seed in (0, 1):
        x = np.random.RandomState(seed).rand(640, 8).astype(np.float32)
        splits[f"x{seed}"], splits[f"y{seed}"] = x, (x[:, 0] + x[:, 1] > 1).astype(np.int32)
    np.savez("data/team.npz", **splits)
