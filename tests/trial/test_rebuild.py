"""A team's own optimizer under the boost algorithms that rebuild it (GradientFreeze, LessBN), on real MindSpore.

Each fixed case trains the same network from the same weights on the same batches twice, without boost and with
a boost recipe that does not change the math (GradientFreeze with freeze_p 1 trains every group on every step;
LessBN without its feature-normalised head or gradient centralization only regroups the parameters), and must end
with the same weights: the rebuilt optimizer makes the updates the team's own makes. A case that cannot be
rebuilt is named by :func:`rebuild_problems` with the error MindSpore raises when it is tried.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow

import mindspore as ms
from mindspore import nn  # noqa: E402

from boosttune.algorithms.mindspore_state import reset_boost_state  # noqa: E402
from boosttune.config.recipe import LossScaleConfig, OptimizerConfig  # noqa: E402
from boosttune.trial.optim import build_loss_scale_manager, build_optimizer  # noqa: E402
from boosttune.trial.runner import observed_boost  # noqa: E402
from boosttune.trial.rebuild import (  # noqa: E402
    per_parameter_settings,
    rebuild_problems,
    settings_differences,
)

STEPS = 4
# A per-step schedule (warm-up), so the rebuilt optimizers must carry lists of rates too.
SCHEDULE = OptimizerConfig(learning_rate=0.05, warmup_steps=2)
BOOSTS = {
    "grad_freeze": {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": True},
                    "grad_freeze": {"param_groups": 2, "freeze_type": 1, "freeze_p": 1.0, "total_steps": STEPS}},
    # Both rebuilds in a row, as the O1 preset does: LessBN's optimizer is rebuilt again by GradientFreeze.
    "less_bn+grad_freeze": {"boost": {"mode": "manual", "less_bn": True, "grad_freeze": True},
                            "less_bn": {"fn_flag": False, "gc_flag": False},
                            "grad_freeze": {"param_groups": 2, "freeze_type": 1, "freeze_p": 1.0,
                                            "total_steps": STEPS}},
}


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, has_bias=True)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(4 * 8 * 8, 16)
        self.fc = nn.Dense(16, 10)

    def construct(self, x):
        return self.fc(self.relu(self.fc1(self.flatten(self.relu(self.bn(self.conv(x)))))))


def _scaled(lr, factor):
    return [factor * r for r in lr] if isinstance(lr, list) else factor * lr


def _decay_groups(params, rest_lr=None, decay=0.05):
    """Weight decay on weights, none on BatchNorm and biases (the reported project's groups)."""
    rest = {"params": [p for p in params if not p.name.endswith("weight")], "weight_decay": 0.0}
    if rest_lr is not None:
        rest["lr"] = rest_lr
    return [{"params": [p for p in params if p.name.endswith("weight")], "weight_decay": decay}, rest]


class TeamAdam(nn.Adam):
    """A subclass with its own __init__: MindSpore records nn.Adam's arguments and passes them to it."""

    def __init__(self, params, learning_rate, beta1=0.8):
        super().__init__(params, learning_rate, beta1=beta1, weight_decay=0.01)


class TeamMomentum(nn.Momentum):
    """A subclass whose learning rate is called ``lr``: boost always passes ``learning_rate=``."""

    def __init__(self, params, lr, nesterov=True):
        super().__init__(params, lr, 0.9, use_nesterov=nesterov)


FACTORIES = {
    "adam_groups": lambda params, lr: nn.Adam(_decay_groups(params), lr),
    "adam_weight_decay_groups": lambda params, lr: nn.AdamWeightDecay(_decay_groups(params), lr),
    "momentum_groups_group_lr": lambda params, lr: nn.Momentum(_decay_groups(params, _scaled(lr, 0.5)), lr, 0.9),
    "subclass_own_init": lambda params, lr: TeamAdam(_decay_groups(params), lr),
    # A flat list with weight decay: MindSpore skips gamma and beta; its rebuild (one group) would not.
    "momentum_flat_decay": lambda params, lr: nn.Momentum(params, lr, 0.9, weight_decay=0.05),
    # A group that lies in the first layers only: GradientFreeze's later groups hold none of its parameters.
    "momentum_backbone_lr": lambda params, lr: nn.Momentum(
        [{"params": [p for p in params if p.name.startswith(("conv", "bn"))], "lr": _scaled(lr, 0.1)},
         {"params": [p for p in params if p.name.startswith("fc")]}], lr, 0.9),
}


@pytest.fixture(scope="module")
def batches():
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16 * STEPS, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, size=(16 * STEPS,)).astype(np.int32)
    return x, y


def _built(factory, raw=False):
    """A fresh network (same seed, same weights) and the factory's optimizer as a trial builds it; ``raw``: as
    the factory returned it, without boosttune's changes (what MindSpore alone does)."""
    ms.set_seed(0)
    net = Net()
    if raw:
        lr = [0.025, 0.05, 0.05, 0.05]
        return net, factory(net.trainable_params(), lr)
    return net, build_optimizer(SCHEDULE, net, LossScaleConfig(), STEPS, STEPS, 16, factory=factory)


def _train(batches, factory, boost: dict | None, raw=False) -> list[np.ndarray]:
    """The network's parameters after STEPS steps, in the order the network lists them; with ``boost``, checks
    that MindSpore built what it names, the team's optimizer class rebuilt inside GradientFreeze."""
    import mindspore.dataset as ds

    reset_boost_state()
    net, optimizer = _built(factory, raw)
    params = net.trainable_params()
    x, y = batches
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(16, drop_remainder=True)
    extra = {"boost_level": "O1", "boost_config_dict": boost} if boost else {}
    model = ms.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), optimizer,
                     metrics={"acc": nn.Accuracy()}, **extra,
                     loss_scale_manager=build_loss_scale_manager(LossScaleConfig(), net, boost is not None))
    if boost:
        observed = observed_boost(model)
        assert observed["grad_freeze"] and observed["less_bn"] == boost["boost"]["less_bn"]
        assert [type(o).__name__ for o in model._optimizer.opts] == [type(optimizer).__name__] * 2
    model.train(1, data, dataset_sink_mode=False)
    reset_boost_state()
    return [p.asnumpy().copy() for p in params]


def _max_difference(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b, strict=True))


FIXED = ["adam_groups", "adam_weight_decay_groups", "momentum_groups_group_lr", "subclass_own_init",
         "momentum_flat_decay", "momentum_backbone_lr"]


@pytest.mark.parametrize("case", FIXED)
def test_rebuilt_optimizer_makes_the_same_updates(batches, case):
    factory = FACTORIES[case]
    plain = _train(batches, factory, None)
    start = [p.asnumpy() for p in _built(factory)[0].trainable_params()]
    assert _max_difference(plain, start) > 1e-3  # it trained
    for name, boost in BOOSTS.items():
        boosted = _train(batches, factory, boost)
        assert _max_difference(plain, boosted) < 1e-6, f"{case} under {name}"


@pytest.mark.parametrize("case", FIXED)
def test_check_finds_nothing_to_leave_out(case):
    net, optimizer = _built(FACTORIES[case])
    before = per_parameter_settings(optimizer)
    assert rebuild_problems(optimizer, net) == {}
    assert per_parameter_settings(optimizer) == before  # the check changed nothing
    assert "__new__" not in nn.Optimizer.__dict__  # the recording of the factory's call is undone


ALL_KNOBS = {"boost.less_bn", "boost.less_bn.gc_flag", "boost.grad_freeze"}


@pytest.mark.parametrize(("case", "knobs", "error", "reason"), [
    ("adam_groups", ALL_KNOBS, KeyError, "For 'Adam', invalid keys are passed as kwargs"),
    ("adam_weight_decay_groups", ALL_KNOBS, AttributeError,
     "The 'AdamWeightDecay' object has no attribute 'init_params'"),
    ("subclass_own_init", ALL_KNOBS, TypeError, "TeamAdam.__init__() got an unexpected keyword argument 'beta2'"),
    ("momentum_backbone_lr", {"boost.grad_freeze"}, ValueError, "the argument group `params` must not be empty"),
])
def test_without_boosttune_mindspore_fails_and_the_check_says_why(batches, case, knobs, error, reason):
    """Negative control: the optimizers as the factory returns them, untouched, fail the way the issue reports,
    in the check and in a real boosted Model alike."""
    net, optimizer = _built(FACTORIES[case], raw=True)
    problems = rebuild_problems(optimizer, net)
    assert problems.keys() == knobs
    assert error.__name__ in problems["boost.grad_freeze"] and reason in problems["boost.grad_freeze"]
    with pytest.raises(error) as failure:
        _train(batches, FACTORIES[case], BOOSTS["grad_freeze"], raw=True)
    assert reason in str(failure.value)


def test_mindspore_alone_keeps_a_registered_optimizers_groups():
    """GradientFreeze and LessBN rebuild a team's groups (per-group weight decay and learning rate) from
    ``init_params``: nn.Momentum, whose arguments MindSpore registers, keeps them without boosttune's help."""
    net, optimizer = _built(FACTORIES["momentum_groups_group_lr"], raw=True)
    assert optimizer.is_group_lr
    assert rebuild_problems(optimizer, net) == {}


def test_without_boosttune_a_flat_decay_changes_the_updates(batches):
    """Negative control for the comparison: MindSpore's own rebuild of a flat list with weight decay decays
    BatchNorm's gamma and beta; the check names it, and the weights end elsewhere."""
    net, optimizer = _built(FACTORIES["momentum_flat_decay"], raw=True)
    problems = rebuild_problems(optimizer, net)
    assert "bn.gamma weight decay 0 -> 0.05" in problems["boost.grad_freeze"]
    assert "bn.gamma weight decay 0 -> 0.05" in problems["boost.less_bn"]
    plain = _train(batches, FACTORIES["momentum_flat_decay"], None, raw=True)
    boosted = _train(batches, FACTORIES["momentum_flat_decay"], BOOSTS["grad_freeze"], raw=True)
    assert _max_difference(plain, boosted) > 1e-4


def test_a_subclass_that_renames_learning_rate_is_left_out_with_mindspores_reason(batches):
    factory = lambda params, lr: TeamMomentum(_decay_groups(params), lr)  # noqa: E731
    net, optimizer = _built(factory)
    problems = rebuild_problems(optimizer, net)
    reason = "TypeError: TeamMomentum.__init__() got an unexpected keyword argument 'learning_rate'"
    assert set(problems) == {"boost.less_bn", "boost.less_bn.gc_flag", "boost.grad_freeze"}
    assert all(reason in line for line in problems.values())
    with pytest.raises(TypeError, match="unexpected keyword argument 'learning_rate'"):
        _train(batches, factory, BOOSTS["grad_freeze"])


def test_settings_differences_names_a_changed_group():
    """The comparison itself: a group learning rate and a hyper-parameter that differ are named."""
    ms.set_seed(0)
    params = Net().trainable_params()
    team = nn.Momentum(_decay_groups(params, 0.02), 0.1, 0.9)
    other = nn.Momentum(_decay_groups(params), 0.1, 0.8)
    differences = settings_differences(team, other)
    assert "bn.gamma learning rate 0.02 -> 0.1" in differences
    assert any(d.startswith("momentum 0.9") for d in differences)
    assert settings_differences(team, nn.Momentum(_decay_groups(params, 0.02), 0.1, 0.9)) == []
