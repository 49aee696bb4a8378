"""The probe's MindSpore side, run in a child process: ``python -m boosttune.probe.checks``.

Each check compiles and trains a tiny BatchNorm network for two steps with one knob switched on,
and prints one JSON line per check. A child process keeps MindSpore's process-wide state (the
boost singleton, oneDNN's ISA, a crash in C++) away from the caller.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import traceback
from typing import Any, Callable

import numpy as np

CHECKS: dict[str, Callable[[str], None]] = {}
# Reasons MindSpore gives that are about the device, not about the probe's own set-up.
ADASUM_REASON = ("needs >= 16 ranks with ranks/8 a power of two (8 devices per node hard-coded in "
                 "BoostTrainOneStepCell.check_adasum_enable); below that MindSpore runs plain data parallel")


def check(name: str):
    def register(fn):
        CHECKS[name] = fn
        return fn
    return register


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

    from boosttune.trial.mindspore_state import reset_boost_state

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


def _manual(**switches: bool) -> dict[str, Any]:
    base = dict.fromkeys(["less_bn", "grad_freeze", "adasum", "grad_accumulation", "dim_reduce",
                          "loss_scale_group"], False)
    return {"boost": {"mode": "manual", **base, **switches}}


for _name in ("momentum", "sgd", "adam", "lamb"):
    check(f"optimizer.{_name}")(lambda device, _o=_name: _train(device, optimizer=_o))


@check("optimizer.thor")
def _thor(device: str) -> None:
    # A plain Model: MindSpore 2.10's ConvertModelUtils.convert_to_thor_model returns a ModelThor
    # whose _exec_preprocess has an outdated signature and fails in every mode.
    import mindspore as ms
    from mindspore import nn

    ms.set_context(mode=ms.GRAPH_MODE, device_target=device)
    net = _tiny_network()
    lr = ms.Tensor(np.full(4, 0.01, np.float32))
    damping = ms.Tensor(np.full(4, 0.03, np.float32))
    opt = nn.thor(net, lr, damping, 0.9, batch_size=4)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    ms.Model(net, loss, opt, metrics={"acc"}).train(1, _dataset(), dataset_sink_mode=False)


for _level in ("O1", "O2", "O3"):
    check(f"amp.{_level}")(lambda device, _l=_level: _train(device, amp_level=_l))

check("loss_scale.fixed")(lambda device: _train(device, loss_scale="fixed"))
check("loss_scale.fixed_drop_overflow")(lambda device: _train(device, loss_scale="fixed_drop"))
check("loss_scale.dynamic")(lambda device: _train(device, loss_scale="dynamic"))


@check("loss_scale.group")
def _group(device: str) -> None:
    from mindspore.boost import GroupLossScaleManager

    net = _tiny_network()
    params = net.trainable_params()
    manager = GroupLossScaleManager(2.0**10, [params[:2], params[2:]])
    _train(device, boost_level="O1", boost_config_dict=_manual(loss_scale_group=True), loss_scale=manager,
           network=net)


check("boost.less_bn")(lambda device: _train(
    device, boost_level="O1", boost_config_dict={**_manual(less_bn=True), "less_bn": {"gc_flag": False}}))
check("boost.less_bn.gc_flag")(lambda device: _train(
    device, boost_level="O1", boost_config_dict={**_manual(less_bn=True), "less_bn": {"gc_flag": True}}))
check("boost.grad_freeze")(lambda device: _train(
    device, boost_level="O1",
    boost_config_dict={**_manual(grad_freeze=True), "grad_freeze": {"param_groups": 2, "total_steps": 4}}))
check("boost.grad_accumulation")(lambda device: _train(
    device, boost_level="O1",
    boost_config_dict={**_manual(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 2}}))


@check("boost.dim_reduce")
def _dim_reduce(device: str) -> None:
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE, device_target=device)
    folder = tempfile.mkdtemp(prefix="boosttune_probe_dr_")
    net = _tiny_network()
    rng = np.random.RandomState(0)
    for index in range(4):  # stand-in stage-1 checkpoints: the PCA only needs several weight vectors
        for param in net.trainable_params():
            param.set_data(ms.Tensor(param.asnumpy() + 0.01 * rng.randn(*param.shape).astype(np.float32)))
        ms.save_checkpoint(net, f"{folder}/w{index}.ckpt")
    _train(device, optimizer="sgd", boost_level="O1", network=net, boost_config_dict={
        **_manual(dim_reduce=True), "dim_reduce": {"n_components": 2, "weight_load_dir": folder, "timeout": 30}})


@check("boost.adasum")
def _adasum(device: str) -> None:
    raise RuntimeError(ADASUM_REASON)


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
