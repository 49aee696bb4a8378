"""Networks for trials, built fresh every time (LessBN rewrites a network in place)."""

from __future__ import annotations

from mindspore import nn, ops

from boosttune.config.recipe import DEFAULT_IMAGE_SIZE as _DEFAULT_SIZE
from boosttune.errors import ConfigError

__all__ = ["build_network", "default_image_size"]


def default_image_size(model: str) -> int:
    return _DEFAULT_SIZE[model]


class LeNet5(nn.Cell):
    """LeNet-5 as in MindSpore's model zoo, for any square input of at least 16 pixels."""

    def __init__(self, num_classes: int, channels: int, image_size: int) -> None:
        super().__init__()
        if image_size < 16:
            raise ConfigError(f"data.image_size: {image_size} is too small for lenet5; must be >= 16")
        self.conv1 = nn.Conv2d(channels, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        side = ((image_size - 4) // 2 - 4) // 2
        self.fc1 = nn.Dense(16 * side * side, 120)
        self.fc2 = nn.Dense(120, 84)
        self.fc3 = nn.Dense(84, num_classes)

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def _conv_bn(cin: int, cout: int, kernel: int, stride: int) -> nn.SequentialCell:
    return nn.SequentialCell([
        nn.Conv2d(cin, cout, kernel, stride=stride, pad_mode="pad" if kernel > 1 else "valid",
                  padding=kernel // 2, has_bias=False),
        nn.BatchNorm2d(cout),
    ])


class BasicBlock(nn.Cell):
    expansion = 1

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * self.expansion
        self.body = nn.SequentialCell([_conv_bn(cin, width, 3, stride), nn.ReLU(), _conv_bn(width, cout, 3, 1)])
        self.shortcut = _conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None
        self.relu = nn.ReLU()

    def construct(self, x):
        identity = x if self.shortcut is None else self.shortcut(x)
        return self.relu(self.body(x) + identity)


class Bottleneck(nn.Cell):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * self.expansion
        self.body = nn.SequentialCell([
            _conv_bn(cin, width, 1, 1), nn.ReLU(),
            _conv_bn(width, width, 3, stride), nn.ReLU(),
            _conv_bn(width, cout, 1, 1),
        ])
        self.shortcut = _conv_bn(cin, cout, 1, stride) if stride != 1 or cin != cout else None
        self.relu = nn.ReLU()

    def construct(self, x):
        identity = x if self.shortcut is None else self.shortcut(x)
        return self.relu(self.body(x) + identity)


class ResNet(nn.Cell):
    """ResNet with BatchNorm; ``stem='cifar'`` is the 3x3 stem for 32-pixel inputs."""

    def __init__(self, block, layers, widths, num_classes: int, channels: int, stem: str) -> None:
        super().__init__()
        first = widths[0]
        if stem == "cifar":
            self.stem = nn.SequentialCell([_conv_bn(channels, first, 3, 1), nn.ReLU()])
        else:
            self.stem = nn.SequentialCell([
                _conv_bn(channels, first, 7, 2), nn.ReLU(),
                nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="same"),
            ])
        stages, cin = [], first
        for index, (count, width) in enumerate(zip(layers, widths)):
            for position in range(count):
                stride = 2 if index > 0 and position == 0 else 1
                stages.append(block(cin, width, stride))
                cin = width * block.expansion
        self.stages = nn.SequentialCell(stages)
        self.mean = ops.ReduceMean(keep_dims=False)
        self.fc = nn.Dense(cin, num_classes)

    def construct(self, x):
        x = self.stages(self.stem(x))
        return self.fc(self.mean(x, (2, 3)))


def build_network(model: str, num_classes: int, channels: int, image_size: int) -> nn.Cell:
    if model == "lenet5":
        return LeNet5(num_classes, channels, image_size)
    if model == "resnet8":
        return ResNet(BasicBlock, [1, 1, 1], [16, 32, 64], num_classes, channels, "cifar")
    if model == "resnet20":
        return ResNet(BasicBlock, [3, 3, 3], [16, 32, 64], num_classes, channels, "cifar")
    if model == "resnet18":
        return ResNet(BasicBlock, [2, 2, 2, 2], [64, 128, 256, 512], num_classes, channels, "imagenet")
    if model == "resnet50":
        return ResNet(Bottleneck, [3, 4, 6, 3], [64, 128, 256, 512], num_classes, channels, "imagenet")
    raise ConfigError(f"model: {model!r} is not a known model; allowed: lenet5, resnet8, resnet20, resnet18, resnet50")
