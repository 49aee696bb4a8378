"""Apply an exported ``best_recipe.json`` in a team's own training script, in one line.

``recipe = boosttune.load_best_recipe(path)``; ``recipe.build_optimizer(net, steps_per_epoch=..., epochs=...)`` builds
the trial's optimizer and schedule, and ``Model(net, loss_fn, optimizer=opt, **recipe.model_kwargs(net))`` the
loss-scale manager exactly as a trial did. A team that builds its own optimizer reads ``recipe.optimizer`` and
``recipe.learning_rates(...)`` and passes ``loss_scale=recipe.optimizer_loss_scale``. The file is validated as an
experiment's recipe is; MindSpore is imported only by the methods that build something.

The full example: docs/design/builder.md.
"""

from __future__ import annotations

import copy
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from boosttune import algorithms
from boosttune.config.boost import EffectiveBoost
from boosttune.config.io import load_document
from boosttune.config.recipe import LossScaleConfig, OptimizerConfig, parse_recipe
from boosttune.errors import ConfigError, UnsupportedError

__all__ = ["BestRecipe", "load_best_recipe"]

# What export_best writes that a training script needs (the rest is figures and provenance).
_REQUIRED = ("boost_level", "boost_config_dict", "amp_level", "loss_scale", "optimizer")
# MindSpore 2.10 on CPU takes no manager or a FixedLossScaleManager (STACK.md); Model would refuse the rest later.
_DEVICE_ONLY_LOSS_SCALES = ("dynamic", "group")


@dataclass(frozen=True)
class BestRecipe:
    """The recipe of a ``best_recipe.json``, validated; build it with :func:`load_best_recipe`."""

    source: str  # the file's path, or "<dict>": every error message starts with it
    boost_level: str
    boost_config_dict: dict[str, Any]
    amp_level: str
    loss_scale: LossScaleConfig
    optimizer: OptimizerConfig  # name, learning_rate, momentum, weight_decay, lr_schedule, warmup and step decay
    boost: EffectiveBoost  # what MindSpore will run: ``boost.applied["grad_freeze"]``, ...
    batch_size: int | None

    def model_kwargs(self, network=None) -> dict[str, Any]:
        """The keyword arguments of ``mindspore.train.Model``: ``boost_level``, ``boost_config_dict`` (a copy),
        ``amp_level`` and, when the trial had one, ``loss_scale_manager``.

        ``network`` is needed for ``loss_scale.kind`` ``group`` (its parameters are split into the groups). Give
        ``Model`` your ``metrics`` (or an ``eval_network``) too: without either MindSpore skips boost, with a
        warning only.

        Raises:
            ConfigError: a field this process cannot honour, named (DimReduce's checkpoint folder is missing).
            UnsupportedError: ``loss_scale.kind`` dynamic or group on a CPU (MindSpore accepts them on GPU/Ascend).
        """
        kind = self.loss_scale.kind
        if kind == "group" and network is None:
            raise ConfigError(f"{self.source}: loss_scale.kind: 'group' splits the network's parameters into "
                              "groups; pass the network: model_kwargs(network)")
        self._check_here()

        import mindspore as ms

        from boosttune.trial.optim import (
            build_loss_scale_manager,  # deferred: imports MindSpore
        )

        if kind in _DEVICE_ONLY_LOSS_SCALES and ms.get_context("device_target") == "CPU":
            raise UnsupportedError(f"{self.source}: loss_scale.kind: {kind!r} cannot run on CPU (MindSpore 2.10 "
                                   "takes only FixedLossScaleManager there); run on GPU or Ascend, or export a "
                                   "recipe tuned on this device")
        kwargs: dict[str, Any] = {"boost_level": self.boost_level,
                                  "boost_config_dict": copy.deepcopy(self.boost_config_dict),
                                  "amp_level": self.amp_level}
        manager = build_loss_scale_manager(self.loss_scale, network, self.boost_level != "O0")
        if manager is not None:
            kwargs["loss_scale_manager"] = manager
        return kwargs

    @property
    def optimizer_loss_scale(self) -> float:
        """The ``loss_scale`` your optimizer must be built with: a fixed scale without overflow checks is divided
        back out by the optimizer, so it must equal the manager's; 1 otherwise."""
        from boosttune.trial.optim import (
            optimizer_loss_scale,  # deferred: the module imports MindSpore
        )

        return optimizer_loss_scale(self.loss_scale)

    def learning_rates(self, steps_per_epoch: int, epochs: int) -> list[float]:
        """The learning rate of every optimizer update of a run of ``epochs`` x ``steps_per_epoch`` batches, as the
        trial scheduled it (warm-up, then constant, cosine or step decay). Gradient accumulation over k batches
        updates once per k batches, so there are that many fewer rates."""
        from boosttune.trial.optim import (
            learning_rates,  # deferred: the module imports MindSpore
        )

        updates, updates_per_epoch = self._updates(steps_per_epoch, epochs)
        return learning_rates(self.optimizer, updates, updates_per_epoch)

    def build_optimizer(self, network, steps_per_epoch: int, epochs: int):
        """The trial's optimizer for ``network``'s trainable parameters: its name, schedule (per update), momentum,
        weight decay and ``optimizer_loss_scale``, built so that boost can rebuild it (GradientFreeze, LessBN)."""
        from boosttune.trial.optim import build_optimizer  # deferred: imports MindSpore

        updates, updates_per_epoch = self._updates(steps_per_epoch, epochs)
        return build_optimizer(self.optimizer, network, self.loss_scale, updates, updates_per_epoch,
                               self.batch_size or 1)

    def _updates(self, steps_per_epoch: int, epochs: int) -> tuple[int, int]:
        """Optimizer updates in all and per epoch: accumulation over k batches advances the optimizer (and its
        schedule) once per k batches (as :func:`boosttune.trial.runner` sizes a trial's schedule)."""
        for name, value in (("steps_per_epoch", steps_per_epoch), ("epochs", epochs)):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name}: {value!r} is invalid: expected a positive integer")
        accumulation = max((a.steps_per_update(self.boost.settings) for a in algorithms.registry()
                            if a.steps_per_update is not None and self.boost.applied.get(a.name)), default=1)
        steps, epochs = int(steps_per_epoch), int(epochs)
        return -(-steps * epochs // accumulation), -(-steps // accumulation)

    def _check_here(self) -> None:
        """What each applied algorithm needs on this machine (``Algorithm.check_here``: DimReduce's checkpoints)."""
        for algorithm in algorithms.registry():
            if algorithm.check_here is not None and self.boost.applied.get(algorithm.name):
                algorithm.check_here(self.boost_config_dict, self.source)


def load_best_recipe(source: str | Path | Mapping[str, Any]) -> BestRecipe:
    """Read a ``best_recipe.json`` (``boosttune tune`` writes it next to ``best_boost_config.json``), or the dict
    loaded from one, and check it as an experiment's recipe is checked.

    Raises:
        ConfigError: one line: a missing or unreadable file, a document that is not a best_recipe.json, or a
            field that is invalid (named, with its value and what is allowed).
    """
    where = "<dict>" if isinstance(source, Mapping) else str(source)
    document = source if isinstance(source, Mapping) else load_document(source)
    if not isinstance(document, Mapping):
        raise ConfigError(f"{where}: holds a {type(document).__name__}; expected a best_recipe.json object")
    missing = [name for name in _REQUIRED if name not in document]
    if missing:
        hint = " (this looks like best_boost_config.json: load best_recipe.json, next to it)" \
            if "boost" in document and "boost_level" not in document else ""
        raise ConfigError(f"{where}: not a best_recipe.json: no {', '.join(missing)}{hint}")
    fields = {name: document[name] for name in _REQUIRED}
    if document.get("batch_size") is not None:
        fields["batch_size"] = document["batch_size"]
    try:
        recipe = parse_recipe(fields)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    return BestRecipe(source=where, boost_level=recipe.boost_level, boost_config_dict=dict(recipe.boost_config_dict),
                      amp_level=recipe.amp_level, loss_scale=recipe.loss_scale, optimizer=recipe.optimizer,
                      boost=recipe.boost.effective(), batch_size=document.get("batch_size"))
