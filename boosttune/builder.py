"""The contract between boosttune and a team's own model and data: ``build(ctx: TrialContext) -> TrialParts``.

A user's module, importable on every node, exposes ``build``: a fresh network on every call, the data sharded by
``ctx.rank`` and ``ctx.world_size``, the loss, the metrics and which of them is the objective. An experiment names it:
``base.model: {entry: "mypkg.module:build", kwargs: {...}}``. The built-in networks and data sets are one builder
among others (:mod:`boosttune.builtin`). Every trial calls the builder once per rank, in the rank's own process.
Pure: neither Ray nor MindSpore is imported here; the parts are checked against MindSpore's types by
:func:`boosttune.trial.parts.check_parts` in the worker.

An example builder, and why: docs/design/builder.md.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

from boosttune.errors import BuilderError

__all__ = ["BUILTIN_ENTRY", "ENTRY_PATTERN", "TrialContext", "TrialParts", "entry_of", "load_builder"]

BUILTIN_ENTRY = "boosttune.builtin:build"
# module.path:function (the form of a console-script entry point).
ENTRY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"


@dataclass(frozen=True)
class TrialContext:
    """What a builder is told about the trial it builds for (one rank of it).

    Attributes:
        rank: this process's data-parallel rank, 0 to ``world_size - 1``: the ``shard_id`` of its data.
        world_size: the number of ranks: the ``num_shards`` of the training data.
        seed: the trial's seed (MindSpore's global seed is set to it before the builder is called).
        batch_size: the per-rank batch size the recipe trains with: batch the datasets by it.
        epochs: how many epochs the trial trains.
        device_target: "CPU", "GPU" or "Ascend".
        work_dir: a scratch folder of this run, on this node, that exists.
        kwargs: the ``kwargs`` mapping of the experiment's ``base.model`` (read-only).
    """

    rank: int
    world_size: int
    seed: int
    batch_size: int
    epochs: int
    device_target: str
    work_dir: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kwargs", MappingProxyType(dict(self.kwargs)))


@dataclass(frozen=True)
class TrialParts:
    """What a builder returns: the parts of one rank's training, as MindSpore's ``Model`` takes them.

    Attributes:
        network: a fresh ``nn.Cell`` (boost rewrites it in place, so never one shared between calls). With
            ``loss_fn`` None it returns the loss itself, and ``eval_network`` is needed for the metrics.
        train: this rank's shard of the training data, a batched ``mindspore.dataset`` dataset whose columns are
            the network's inputs then the label(s) (``loss_fn(network(*inputs), *labels)``); every rank must have
            the same number of batches (data-parallel ranks step together).
        eval: the held-out data, batched, the same columns: every epoch's ``objective`` is computed on it.
        final_eval: more held-out data (same columns), evaluated once after the last epoch: the run's objective
            then comes from it (the learning curve stays on ``eval``). None: the last epoch's figure on ``eval``.
            The confirm stage judges recipes on it: a larger held-out set is less noisy, and one pass is cheap.
        metrics: name -> ``mindspore.train.Metric`` (``nn.Accuracy()``, ``nn.MAE()``, ``nn.Loss()``, ...).
        objective: which metric the search, the confirm stage, the report and the export judge.
        higher_is_better: the objective's direction (False for a loss, MAE, perplexity).
        loss_fn: an ``nn.Cell`` taking (logits, labels), or None when ``network`` returns its own loss.
        eval_network: with ``loss_fn`` None, the cell ``Model`` evaluates (outputs the metrics read).
        eval_indexes: with ``eval_network``, MindSpore's ``eval_indexes`` ([loss, prediction, label] positions).
        optimizer: a factory ``(params, learning_rate) -> nn.Optimizer`` for a team's own optimizer; the recipe's
            learning rate (a float, or a per-step list for a schedule) goes in. Without it, the recipe's optimizer.
    """

    network: Any
    train: Any
    eval: Any
    metrics: Mapping[str, Any]
    objective: str
    higher_is_better: bool = True
    loss_fn: Any = None
    eval_network: Any = None
    eval_indexes: list[int] | None = None
    optimizer: Callable[[list, Any], Any] | None = None
    final_eval: Any = None


def entry_of(builder: str | Callable[..., Any]) -> str:
    """The ``module:function`` name of a builder, as the Python API takes it: a string, or the function itself
    (which must be importable by that name on every node, i.e. defined at the top level of a module)."""
    if isinstance(builder, str):
        if not re.match(ENTRY_PATTERN, builder):
            raise BuilderError(f"model.entry: {builder!r} is invalid; expected 'package.module:function'")
        return builder
    module, name = getattr(builder, "__module__", None), getattr(builder, "__qualname__", "")
    if not callable(builder) or not module or "." in name or "<" in name:
        raise BuilderError(f"model.entry: {builder!r} cannot be imported by name on other nodes; pass a function "
                           "defined at the top level of an importable module, or its 'module:function' name")
    if module == "__main__":
        raise BuilderError(f"model.entry: {name} is defined in the script being run (__main__), which the workers "
                           "cannot import; move it into a module of the project and pass 'module:function'")
    return f"{module}:{name}"


def load_builder(entry: str) -> Callable[[TrialContext], TrialParts]:
    """Import ``module:function``.

    Raises:
        BuilderError: one line naming the entry and what was wrong (the module does not import, and why; no
            such function; not callable).
    """
    entry_of(entry)
    module_name, function = entry.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise BuilderError(f"model.entry {entry!r}: no module named {e.name!r} on this node (sys.path[0] "
                               f"{sys.path[0]!r}); run from the project's folder, or name it in "
                               "working_dir / py_modules") from None
        raise BuilderError(f"model.entry {entry!r}: importing {module_name} failed: {_one_line(e)}") from None
    except Exception as e:  # the user's module failed as it imported: say where
        raise BuilderError(f"model.entry {entry!r}: importing {module_name} failed: {_one_line(e)}") from None
    builder = getattr(module, function, None)
    if builder is None:
        raise BuilderError(f"model.entry {entry!r}: module {module_name} has no {function!r}")
    if not callable(builder):
        raise BuilderError(f"model.entry {entry!r}: {function} is a {type(builder).__name__}, not a function")
    return builder


def _one_line(error: BaseException) -> str:
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
