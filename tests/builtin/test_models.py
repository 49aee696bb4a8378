"""Every network builds fresh and runs forward on the shapes trials feed it."""

from __future__ import annotations

import numpy as np
import pytest

import mindspore as ms

from boosttune.builtin.models import build_network, default_image_size  # noqa: E402
from boosttune.errors import ConfigError  # noqa: E402


@pytest.mark.parametrize("model, channels, size", [
    ("lenet5", 1, 32), ("lenet5", 3, 28), ("resnet8", 1, 32), ("resnet20", 3, 32),
    ("resnet18", 3, 64), ("resnet50", 3, 64),
])
def test_forward_shape(model, channels, size):
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    try:
        net = build_network(model, num_classes=7, channels=channels, image_size=size)
        x = ms.Tensor(np.random.RandomState(0).randn(2, channels, size, size).astype(np.float32))
        assert net(x).shape == (2, 7)
    finally:
        ms.set_context(mode=ms.GRAPH_MODE)


def test_networks_are_built_fresh():
    a = build_network("resnet8", 10, 1, 32)
    b = build_network("resnet8", 10, 1, 32)
    assert a is not b
    assert all(pa is not pb for pa, pb in zip(a.trainable_params(), b.trainable_params()))


def test_resnets_carry_batchnorm_and_a_final_dense():
    from mindspore import nn

    for model in ("resnet8", "resnet18", "resnet50"):
        cells = [cell for _, cell in build_network(model, 10, 3, default_image_size(model)).cells_and_names()]
        assert any(isinstance(c, nn.BatchNorm2d) for c in cells)
        assert isinstance(cells[-1], nn.Dense)


def test_lenet_rejects_too_small_images():
    with pytest.raises(ConfigError, match="image_size"):
        build_network("lenet5", 10, 1, 8)
