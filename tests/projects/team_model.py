"""A team's own model and data, as a user writes them (not installed: imported from this folder)."""
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
    rng = np.random.RandomState(seed)
    x = rng.rand(rows, 8).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 1).astype(np.int32)
    kwargs = {"num_shards": ctx.world_size, "shard_id": ctx.rank} if shard else {}
    data = ds.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=False, **kwargs)
    return data.batch(ctx.batch_size, drop_remainder=True)


def build(ctx):
    k = ctx.kwargs
    return TrialParts(network=Net(k.get("classes", 2)),
                      loss_fn=(nn.MSELoss() if k.get("loss") == "mse"
                               else nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
                      train=_data(k.get("rows", 640), 0, ctx), eval=_data(k.get("eval_rows", 256), 1, ctx, False),
                      metrics={"acc": nn.Accuracy()}, objective="acc")
