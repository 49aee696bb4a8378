"""A builder's parts, checked against MindSpore's types and turned into what a trial trains (MindSpore).

The builder contract (:mod:`boosttune.builder`) is pure; this module checks what a builder returned in the
worker, where MindSpore is loaded, so a wrong part is one line naming the entry and the field, not a
traceback from deep inside ``Model``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from boosttune.builder import TrialContext, TrialParts, load_builder
from boosttune.errors import BoosttuneError, BuilderError
from boosttune.objective import FRACTION_METRICS, Objective
from boosttune.trial.messages import first_line, user_error

__all__ = ["ModelFacts", "build_parts", "check_parts", "dataset_batches", "parts_objective", "preflight"]


def build_parts(entry: str, ctx: TrialContext,
                builder: Callable[[TrialContext], TrialParts] | None = None) -> TrialParts:
    """Call the builder ``entry`` names (or ``builder``) for ``ctx`` and check what it returned."""
    builder = builder or load_builder(entry)
    try:
        parts = builder(ctx)
    except BoosttuneError:
        raise
    except Exception as e:  # the user's code failed: one line, with where
        raise BuilderError(f"model.entry {entry!r}: the builder raised {user_error(e)}") from e
    check_parts(parts, entry)
    return parts


def check_parts(parts: Any, entry: str) -> None:
    """Raise BuilderError naming the first part that is not what ``Model`` needs."""
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Metric

    def fail(message: str) -> None:
        raise BuilderError(f"model.entry {entry!r}: {message}")

    if not isinstance(parts, TrialParts):
        fail(f"the builder returned a {type(parts).__name__}; expected boosttune.TrialParts")
    if not isinstance(parts.network, nn.Cell):
        fail(f"network is a {type(parts.network).__name__}; expected a mindspore.nn.Cell")
    if parts.loss_fn is not None and not isinstance(parts.loss_fn, nn.Cell):
        fail(f"loss_fn is a {type(parts.loss_fn).__name__}; expected a mindspore.nn.Cell or None")
    if parts.eval_network is not None and not isinstance(parts.eval_network, nn.Cell):
        fail(f"eval_network is a {type(parts.eval_network).__name__}; expected a mindspore.nn.Cell or None")
    if parts.loss_fn is None and parts.eval_network is None:
        fail("loss_fn is None (the network returns its own loss), so eval_network is needed for the metrics")
    for name in ("train", "eval"):
        value = getattr(parts, name)
        if not isinstance(value, ds.Dataset):
            fail(f"{name} is a {type(value).__name__}; expected a mindspore.dataset dataset, batched")
    if not isinstance(parts.metrics, dict) or not parts.metrics:
        fail("metrics must be a non-empty dict of name -> mindspore.train.Metric, e.g. {'acc': nn.Accuracy()}")
    for name, metric in parts.metrics.items():
        if not isinstance(metric, Metric):
            fail(f"metrics[{name!r}] is a {type(metric).__name__}; expected a mindspore.train.Metric")
    if parts.objective not in parts.metrics:
        fail(f"objective {parts.objective!r} is not among the metrics; allowed: {', '.join(map(str, parts.metrics))}")
    if not isinstance(parts.higher_is_better, bool):
        fail(f"higher_is_better is a {type(parts.higher_is_better).__name__}; expected True or False")
    if parts.optimizer is not None and not callable(parts.optimizer):
        fail(f"optimizer is a {type(parts.optimizer).__name__}; expected a factory (params, learning_rate) -> "
             "nn.Optimizer, or None")


def dataset_batches(dataset: Any, name: str, entry: str) -> int:
    """The number of batches of a dataset; refuses an empty one."""
    batches = int(dataset.get_dataset_size())
    if batches < 1:
        raise BuilderError(f"model.entry {entry!r}: {name} has no batches (is the batch size larger than the data "
                           f"this rank gets?)")
    return batches


@dataclass(frozen=True)
class ModelFacts:
    """What the preflight learnt of a model that the search needs: the training steps per rank (all epochs), the
    trainable parameter tensors, the objective (its direction and units), the metrics the builder names, and the
    knobs a team's optimizer cannot be used under (knob -> why; :func:`boosttune.trial.rebuild.rebuild_problems`)."""

    total_steps: int
    param_count: int
    objective: Objective
    metrics: tuple[str, ...] = ()
    left_out: dict[str, str] = field(default_factory=dict)

    def steps_per_epoch(self, epochs: int) -> int:
        return max(1, self.total_steps // max(1, epochs))


def preflight(recipe: Any, workers: int, work_dir: str) -> ModelFacts:
    """Build the recipe's parts as each of ``workers`` ranks would, train one step and evaluate one batch on rank
    0's, before anything is searched: a builder that fails, parts that do not fit each other, or ranks with
    different numbers of batches are refused here, in one line, not in the baseline.
    """
    import mindspore as ms

    from boosttune.trial.optim import build_optimizer  # deferred: imports MindSpore

    ms.set_context(mode=ms.GRAPH_MODE, device_target=recipe.device_target)
    first, batches = _build_every_rank(recipe, workers, work_dir)
    optimizer = build_optimizer(recipe.optimizer, first.network, recipe.loss_scale, 1, 1, recipe.batch_size,
                                factory=first.optimizer)
    left_out = _team_optimizer_limits(first, optimizer) if first.optimizer is not None else {}
    _step_and_evaluate(recipe.entry.entry, first, optimizer)
    steps = batches if recipe.steps_per_epoch is None else min(batches, recipe.steps_per_epoch)
    return ModelFacts(total_steps=steps * recipe.epochs, param_count=len(first.network.trainable_params()),
                      objective=parts_objective(first), metrics=tuple(sorted(first.metrics)), left_out=left_out)


def _build_every_rank(recipe: Any, workers: int, work_dir: str) -> tuple[Any, int]:
    """Rank 0's parts and its batches per epoch; refused when the ranks' shards differ in batches."""
    import mindspore as ms

    entry = recipe.entry
    batches, first = [], None
    for rank in range(workers):
        ms.set_seed(recipe.seed)
        ctx = TrialContext(rank=rank, world_size=workers, seed=recipe.seed, batch_size=recipe.batch_size,
                           epochs=recipe.epochs, device_target=recipe.device_target, work_dir=work_dir,
                           kwargs=entry.kwargs)
        parts = build_parts(entry.entry, ctx)
        batches.append(dataset_batches(parts.train, "train", entry.entry))
        first = first or parts
    if len(set(batches)) > 1:
        counts = ", ".join(f"rank {rank} {count}" for rank, count in enumerate(batches))
        raise BuilderError(f"model.entry {entry.entry!r}: the ranks' training shards differ in batches ({counts}); "
                           "data-parallel ranks step together: shard with num_shards=ctx.world_size, "
                           "shard_id=ctx.rank and batch with drop_remainder=True")
    dataset_batches(first.eval, "eval", entry.entry)
    if first.final_eval is not None:
        dataset_batches(first.final_eval, "final_eval", entry.entry)
    return first, batches[0]


def _team_optimizer_limits(first: Any, optimizer: Any) -> dict[str, str]:
    """A team's own optimizer factory: it must take the recipe's rate; the knobs it cannot be used under, and why."""
    from boosttune.trial.optim import check_factory_takes_learning_rate
    from boosttune.trial.rebuild import rebuild_problems

    check_factory_takes_learning_rate(first.optimizer, first.network)
    left_out = rebuild_problems(optimizer, first.network)
    left_out["optimizer.thor"] = "the builder's own optimizer factory is used: THOR would replace it"
    left_out["loss_scale.fixed"] = ("the builder's optimizer factory is called as factory(params, learning_rate), "
                                    "so its optimizer cannot divide a fixed loss scale back out (loss_scale 1)")
    return left_out


def _step_and_evaluate(entry: str, first: Any, optimizer: Any) -> None:
    """One training step on the first batch and one evaluated batch, whose objective must be one number."""
    import mindspore as ms

    extra = {"eval_network": first.eval_network} if first.eval_network is not None else {}
    if first.eval_indexes is not None:
        extra["eval_indexes"] = list(first.eval_indexes)
    model = ms.Model(first.network, first.loss_fn, optimizer, metrics=dict(first.metrics), **extra)
    try:
        model.train(1, first.train.take(1), dataset_sink_mode=False)
    except Exception as e:
        raise BuilderError(f"model.entry {entry!r}: one training step on its first batch failed: "
                           f"{first_line(e)}") from e
    try:
        scores = model.eval(first.eval.take(1), dataset_sink_mode=False)
    except Exception as e:
        raise BuilderError(f"model.entry {entry!r}: evaluating its first eval batch failed: "
                           f"{first_line(e)}") from e
    value = scores.get(first.objective)
    try:
        float(value)
    except (TypeError, ValueError):
        raise BuilderError(f"model.entry {entry!r}: objective {first.objective!r} is not a number "
                           f"({type(value).__name__}); choose a metric that returns one value") from None


def parts_objective(parts: Any) -> Objective:
    """The parts' objective: its name, direction, and whether MindSpore's metric class is a fraction (accuracy,
    precision, ...: judged in points) or not (a loss, MAE, a team's own metric: judged in its own units)."""
    metric = parts.metrics[parts.objective]
    fraction = any(cls.__name__ in FRACTION_METRICS and cls.__module__.startswith("mindspore")
                   for cls in type(metric).__mro__)
    return Objective(str(parts.objective), bool(parts.higher_is_better), fraction)
