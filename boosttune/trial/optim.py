"""Optimizer, learning-rate schedule and loss-scale manager from a recipe (MindSpore)."""

from __future__ import annotations

import math

import mindspore as ms
from mindspore import nn

from boosttune.config.recipe import LossScaleConfig, OptimizerConfig
from boosttune.errors import BuilderError, ConfigError
from boosttune.trial.messages import user_error
from boosttune.trial.rebuild import make_rebuildable, recording_constructions

__all__ = ["build_loss_scale_manager", "build_optimizer", "check_factory_takes_learning_rate", "learning_rates",
           "optimizer_loss_scale"]


def learning_rates(config: OptimizerConfig, updates: int, updates_per_epoch: int) -> list[float]:
    """Per-update learning rates: linear warm-up, then constant, cosine or step decay."""
    rates = []
    for step in range(updates):
        if step < config.warmup_steps:
            rates.append(config.learning_rate * (step + 1) / config.warmup_steps)
            continue
        if config.lr_schedule == "cosine":
            span = max(1, updates - config.warmup_steps)
            progress = (step - config.warmup_steps) / span
            rates.append(0.5 * config.learning_rate * (1.0 + math.cos(math.pi * progress)))
        elif config.lr_schedule == "step":
            epoch = step // max(1, updates_per_epoch)
            rates.append(config.learning_rate * config.step_gamma ** (epoch // config.step_every_epochs))
        else:
            rates.append(config.learning_rate)
    return rates


def optimizer_loss_scale(config: LossScaleConfig) -> float:
    """With a fixed scale and no overflow check, the optimizer must divide the scale back out."""
    if config.kind == "fixed" and not config.drop_overflow_update:
        return config.loss_scale
    return 1.0


def build_optimizer(config: OptimizerConfig, network: nn.Cell, loss_scale: LossScaleConfig, updates: int,
                    updates_per_epoch: int, batch_size: int, factory=None) -> nn.Optimizer:
    """The recipe's optimizer, or ``factory(params, learning_rate)``'s (a builder's own) with the recipe's rate.

    Either is made rebuildable (:func:`boosttune.trial.rebuild.make_rebuildable`): GradientFreeze and LessBN
    rebuild it from the arguments it was built with; what still cannot be rebuilt, ``rebuild_problems`` names.
    """
    rates = learning_rates(config, max(1, updates), updates_per_epoch)
    lr = rates[0] if config.lr_schedule == "constant" and config.warmup_steps == 0 else rates
    scale = optimizer_loss_scale(loss_scale)
    if factory is not None:
        with recording_constructions() as constructions:
            optimizer = _from_factory(factory, network.trainable_params(), lr, scale)
        return make_rebuildable(optimizer, constructions)
    return make_rebuildable(_recipe_optimizer(config, network, rates, lr, scale, updates, batch_size))


def _recipe_optimizer(config: OptimizerConfig, network: nn.Cell, rates: list[float], lr, scale: float,
                      updates: int, batch_size: int) -> nn.Optimizer:
    params = network.trainable_params()
    if config.name == "momentum":
        return nn.Momentum(params, lr, config.momentum, weight_decay=config.weight_decay, loss_scale=scale)
    if config.name == "sgd":
        return nn.SGD(params, lr, weight_decay=config.weight_decay, loss_scale=scale)
    if config.name == "adam":
        return nn.Adam(params, lr, weight_decay=config.weight_decay, loss_scale=scale)
    if config.name == "lamb":
        if scale != 1.0:
            raise ConfigError(
                f"loss_scale.loss_scale: {scale} is invalid with optimizer lamb (nn.Lamb cannot unscale); "
                "use 1 or drop_overflow_update: true on GPU/Ascend"
            )
        return nn.Lamb(params, lr, weight_decay=config.weight_decay)
    if config.name == "thor":
        lr_tensor = ms.Tensor(rates if isinstance(lr, list) else [lr] * max(1, updates), ms.float32)
        damping = ms.Tensor([0.03] * max(1, updates), ms.float32)
        return nn.thor(network, lr_tensor, damping, config.momentum, weight_decay=config.weight_decay,
                       loss_scale=scale, batch_size=batch_size)
    raise ConfigError(f"optimizer.name: {config.name!r} is not known; allowed: momentum, sgd, adam, lamb, thor")


def _from_factory(factory, params, lr, scale: float) -> nn.Optimizer:

    try:
        optimizer = factory(params, lr)
    except Exception as e:
        raise BuilderError(f"optimizer: the builder's factory raised {user_error(e)} (it is called as factory(params, "
                           "learning_rate), learning_rate a float or a per-step list)") from e
    if not isinstance(optimizer, nn.Optimizer):
        raise BuilderError(f"optimizer: the builder's factory returned a {type(optimizer).__name__}; expected a "
                           "mindspore.nn.Optimizer")
    if scale != 1.0 and float(getattr(optimizer, "loss_scale", 1.0)) != scale:
        raise ConfigError(f"loss_scale.loss_scale: {scale} needs the optimizer to divide it back out, and the "
                          "builder's optimizer has loss_scale 1; allowed with a builder's optimizer: kind none")
    return optimizer


def check_factory_takes_learning_rate(factory, network: nn.Cell) -> None:
    """Refuse a builder's optimizer factory that ignores the learning rate it is given (the recipe's rate and
    schedule would not apply, and the exported recipe would not say what trained): two rates in, the same rates
    out. A factory that derives group rates from the one given passes; a rate schedule cell cannot be told apart
    and passes too."""
    params = network.trainable_params()
    built = [_learning_rates_of(_from_factory(factory, params, rate, 1.0)) for rate in (0.01, 0.02)]
    if built[0] is not None and built[0] == built[1]:
        raise BuilderError(f"optimizer: the builder's factory ignores the learning rate it is given (factory(params, "
                           f"0.01) and factory(params, 0.02) both built rates {built[0]}), so base.optimizer's rate and "
                           "schedule would not apply; pass it on, e.g. nn.Adam(params, learning_rate=learning_rate)")


def _learning_rates_of(optimizer: nn.Optimizer) -> list | None:
    """The optimizer's learning rate(s) as numbers (one per group with group rates), or None for a schedule cell."""
    rates = optimizer.learning_rate
    values = rates if isinstance(rates, (list, tuple, ms.ParameterTuple)) else [rates]
    if not all(isinstance(v, (ms.Parameter, ms.Tensor)) for v in values):
        return None
    return [[round(float(x), 9) for x in v.asnumpy().ravel()] for v in values]


def build_loss_scale_manager(config: LossScaleConfig, network: nn.Cell, boosted: bool):
    """A manager whenever boost is on: without one, boost's train cell returns None as the loss
    (MindSpore 2.10). Without boost, none, so the graph is exactly MindSpore's default one."""
    if config.kind == "none":
        return ms.FixedLossScaleManager(1.0, drop_overflow_update=False) if boosted else None
    if config.kind == "fixed":
        return ms.FixedLossScaleManager(config.loss_scale, drop_overflow_update=config.drop_overflow_update)
    if config.kind == "dynamic":
        return ms.DynamicLossScaleManager(config.init_loss_scale, config.scale_factor, config.scale_window)
    from mindspore.boost import GroupLossScaleManager

    params = network.trainable_params()
    half = max(1, len(params) // 2)
    return GroupLossScaleManager(config.init_loss_scale, [params[:half], params[half:]])
