"""The probe's MindSpore side, run in a child process: ``python -m boosttune.probe.checks``.

Each check compiles and trains a tiny BatchNorm network for two steps with one knob switched on,
and prints one JSON line per check. What each check switches on is written in its algorithm's folder
(its ``ProbeCheck``, ``boosttune/algorithms/<name>/__init__.py``). A child process keeps MindSpore's
process-wide state (the boost singleton, oneDNN's ISA, a crash in C++) away from the caller.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any, Callable

import numpy as np

from boosttune import algorithms
from boosttune.algorithms.base import ProbeCheck
from boosttune.algorithms.mindspore_state import reset_boost_state


def _tiny_network():
    # A module-level class (boosttune.probe._tiny): amp O1 rewrites a network from its class source.
    from boosttune.probe._tiny import Tiny

    return Tiny()


def _dataset(steps: int = 2):
    import mindspore.dataset as ds

    rng = np.random.RandomState(0)
    images = rng.randn(4 * steps, 1, 8, 8).astype(np.float32)
    labels = rng.randint(0, 3, size=(4 * steps,)).astype(np.int32)
    return ds.NumpySlicesDataset((images, labels), column_names=["image", "label"], shuffle=False).batch(4)


def _train(device: str, *, optimizer: str = "momentum", amp_level: str = "O0", boost_level: str = "O0",
           boost_config_dict: Any = "", loss_scale: Any = "fixed1", network=None) -> None:
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Accuracy

    ms.set_context(mode=ms.GRAPH_MODE, device_target=device)
    reset_boost_state()
    ms.set_seed(0)
    net = network or _tiny_network()
    params = net.trainable_params()
    scale = 1.0
    if loss_scale == "fixed1":
        manager = ms.FixedLossScaleManager(1.0, drop_overflow_update=False)
    elif loss_scale == "fixed":
        manager, scale = ms.FixedLossScaleManager(128.0, drop_overflow_update=False), 128.0
    elif loss_scale == "fixed_drop":
        manager = ms.FixedLossScaleManager(128.0, drop_overflow_update=True)
    elif loss_scale == "dynamic":
        manager = ms.DynamicLossScaleManager(2.0**10, 2, 50)
    else:
        manager = loss_scale
    if optimizer == "momentum":
        opt = nn.Momentum(params, 0.01, 0.9, loss_scale=scale)
    elif optimizer == "sgd":
        opt = nn.SGD(params, 0.01, loss_scale=scale)
    elif optimizer == "adam":
        opt = nn.Adam(params, 0.001, loss_scale=scale)
    elif optimizer == "lamb":
        opt = nn.Lamb(params, 0.001)
    else:
        raise ValueError(optimizer)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = ms.Model(net, loss, opt, metrics={"acc": Accuracy()}, amp_level=amp_level, boost_level=boost_level,
                     boost_config_dict=boost_config_dict, loss_scale_manager=manager)
    model.train(1, _dataset(), dataset_sink_mode=False)
    reset_boost_state()


class _Kit:
    """What an algorithm's own probe check (``ProbeCheck.run``) gets: the probe's training, network and data."""

    train = staticmethod(_train)
    network = staticmethod(_tiny_network)
    dataset = staticmethod(_dataset)


def _check(spec: ProbeCheck) -> Callable[[str], None]:
    if spec.run is not None:
        return lambda device: spec.run(device, _Kit)
    return lambda device: _train(device, **spec.train_kwargs(algorithms.manual))


def checks() -> dict[str, Callable[[str], None]]:
    """knob -> its check, from every algorithm folder's probe checks."""
    return {spec.knob: _check(spec) for algorithm in algorithms.listed() for spec in algorithm.probe_checks}


CHECKS: dict[str, Callable[[str], None]] = checks()


def conv_seconds(repeats: int = 7) -> float:
    """Median forward time of a 16->16 3x3 convolution on a 32x16x32x32 batch (PyNative)."""
    import mindspore as ms
    from mindspore import nn

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    conv = nn.Conv2d(16, 16, 3, pad_mode="same")
    x = ms.Tensor(np.random.RandomState(0).randn(32, 16, 32, 32).astype(np.float32))
    conv(x).asnumpy()
    conv(x).asnumpy()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        conv(x).asnumpy()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _reason(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip() and not line.startswith("-")]
    reason = lines[0] if lines else type(error).__name__
    return reason.split(", Please confirm whether")[0][:300]


def main(argv: list[str]) -> int:
    device, names = argv[0], argv[1:]
    if names == ["conv"]:
        print(json.dumps({"conv_seconds": conv_seconds()}), flush=True)
        return 0
    for name in names:
        try:
            CHECKS[name](device)
            result = {"knob": name, "supported": True, "reason": ""}
        except Exception as e:  # a failure here is the finding, not a bug
            result = {"knob": name, "supported": False, "reason": _reason(e)}
            if "--debug" in sys.argv:
                traceback.print_exc()
        print("PROBE " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main([a for a in sys.argv[1:] if a != "--debug"]))
