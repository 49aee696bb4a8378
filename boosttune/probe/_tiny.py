"""The probe's network: BatchNorm (for LessBN) and a final Dense, at module level (amp O1 reads
a network's class source)."""

from mindspore import nn


class Tiny(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="same", has_bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(4 * 8 * 8, 16)
        self.fc2 = nn.Dense(16, 3)

    def construct(self, x):
        x = self.flatten(self.relu(self.bn(self.conv(x))))
        return self.fc2(self.relu(self.fc1(x)))
