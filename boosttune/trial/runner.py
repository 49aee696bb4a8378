"""One training trial of MindSpore with a boost recipe: the module that owns MindSpore.

``run_trial`` is written to run unchanged inside a Ray Train worker: it takes the worker's rank
(``shard_id`` of ``num_shards``), calls the recipe's builder for that rank's network and data
(:mod:`boosttune.builder`; the built-in models are one builder among others), and sends its
per-epoch metrics to a ``reporter``.
"""

from __future__ import annotations

import copy
import platform
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from boosttune import algorithms
from boosttune.algorithms.base import TrialPrep
from boosttune.algorithms.mindspore_state import reset_boost_state
from boosttune.builder import TrialContext
from boosttune.builtin import parts_from_splits
from boosttune.builtin.data import DataSplits
from boosttune.config.recipe import TrialRecipe
from boosttune.errors import BoosttuneError, ConfigError, TrialError
from boosttune.runtime import current_runtime_env
from boosttune.trial.graphs import GraphCache, graph_key
from boosttune.trial.messages import first_line
from boosttune.trial.parts import build_parts, dataset_batches, parts_objective
from boosttune.tables.states import RunStatus

__all__ = ["TrialResult", "observed_boost", "run_trial"]


@dataclass
class TrialResult:
    status: str  # a RunStatus: completed, stopped (NaN loss) or target_reached
    reason: str | None
    metrics: dict[str, Any]
    epochs: list[dict[str, Any]]
    recipe: dict[str, Any]
    boost_config_dict: dict[str, Any]
    applied_boost: dict[str, bool]
    observed_boost: dict[str, Any]
    environment: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def observed_boost(model) -> dict[str, Any]:
    """What MindSpore actually built: read back from the Model, not from the config (each algorithm reads its own)."""
    observed: dict[str, Any] = {}
    for algorithm in algorithms.listed():
        if algorithm.observe is not None:
            observed.update(algorithm.observe(model))
    observed["train_cell"] = type(model._train_network).__name__
    observed["optimizer"] = type(model._optimizer).__name__
    return observed


def _tie_boost_dict(recipe: TrialRecipe, total_steps: int) -> dict[str, Any]:
    """The canonical boost_config_dict, each section sized to the real step count where its algorithm asks
    (``Algorithm.sized_to_run``)."""
    boost = recipe.boost
    canonical = boost.to_boost_config_dict()
    for algorithm in algorithms.registry():
        if algorithm.sized_to_run is not None and algorithm.name in canonical:
            given = getattr(boost.config, algorithm.name, None)
            algorithm.sized_to_run(canonical[algorithm.name],
                                   frozenset(given.model_fields_set) if given is not None else frozenset(), total_steps)
    return canonical


def _environment(device_target: str) -> dict[str, Any]:
    import mindspore as ms

    from boosttune import __version__

    return {
        "device_target": device_target,
        "cpu": platform.processor() or platform.machine(),
        "mindspore_version": ms.__version__,
        "boosttune_version": __version__,
        "runtime_env": current_runtime_env(),
    }


def run_trial(
    recipe: TrialRecipe,
    *,
    reporter: Callable[[dict[str, Any]], None] | None = None,
    work_dir: str | Path | None = None,
    num_shards: int = 1,
    shard_id: int = 0,
    data: DataSplits | None = None,
    extra_callbacks: Sequence[Any] = (),
    log: Callable[[str], None] = print,
    evaluate: bool = True,
    graph_cache: GraphCache | None = None,
) -> TrialResult:
    """Train and evaluate one recipe on the parts its builder returns; return its metrics.

    ``data``: splits already read, for a built-in model (tests read a data set once for many trials).
    ``evaluate``: False skips every evaluation (the speed calibration times training alone).
    ``graph_cache``: a warm worker's compiled Models; a run that differs from a kept one by its seed alone trains the
    kept graph (:mod:`boosttune.trial.graphs`) and says so (``graph_cached``).

    Raises:
        ConfigError, DataError, BuilderError: bad input or a builder whose parts do not fit, before training.
        TrialError: MindSpore failed; the message carries its reason.
    """
    wall_start = time.perf_counter()
    effective = recipe.boost.effective()
    work_dir = Path(work_dir) if work_dir is not None else Path(tempfile.gettempdir()) / "boosttune"
    _start_process_state(recipe)
    make_parts = _parts_maker(recipe, work_dir, num_shards, shard_id, data)
    built = _build(recipe, make_parts, log)
    boost_dict = _tie_boost_dict(recipe, built.steps_per_epoch * recipe.epochs)
    prep = TrialPrep(recipe=recipe, parts=built.parts, make_parts=make_parts, train_dataset=built.train_ds,
                     boost_dict=boost_dict, work_dir=work_dir, num_shards=num_shards, shard_id=shard_id, log=log)
    stage1_s = _prepare_algorithms(effective.applied, prep)
    if graph_cache is not None and (blocker := _graph_state(recipe, effective.applied, num_shards)):
        log(f"graph: compiled for this run alone ({blocker})")
        graph_cache = None
    cache = graph_cache, graph_key(recipe.to_dict(), world_size=num_shards, steps_per_epoch=built.steps_per_epoch)
    callback, observed, cached = _train(recipe, built, boost_dict, reporter, extra_callbacks, log, evaluate, cache)
    final = _final_metrics(callback, built, recipe, num_shards, wall_start=wall_start, stage1_s=stage1_s)
    final["graph_cached"] = cached
    _check_observed(effective.applied, observed, log)
    return TrialResult(
        status=_status(callback),
        reason=callback.stop_reason,
        metrics=final,
        epochs=callback.records,
        recipe=recipe.to_dict(),
        boost_config_dict=boost_dict,
        applied_boost=dict(effective.applied),
        observed_boost=observed,
        environment=_environment(recipe.device_target),
    )


@dataclass(frozen=True)
class _Built:
    """This rank's parts from the builder, the training data cut to the recipe's steps, and the objective."""

    parts: Any
    train_ds: Any
    steps_per_epoch: int
    objective: Any


def _start_process_state(recipe: TrialRecipe) -> None:
    """MindSpore's context, a clean boost state, and the seeds."""
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE, device_target=recipe.device_target)
    reset_boost_state()
    ms.set_seed(recipe.seed)
    np.random.seed(recipe.seed)  # GradientFreeze's interval schedule draws from the global generator


def _build(recipe: TrialRecipe, make_parts: Callable[[], Any], log: Callable[[str], None]) -> _Built:
    """Call the builder, check its data sets, and cut the training set to ``steps_per_epoch``."""
    building = time.perf_counter()
    parts = make_parts()
    train_ds = parts.train
    steps_per_epoch = dataset_batches(train_ds, "train", recipe.entry.entry)
    dataset_batches(parts.eval, "eval", recipe.entry.entry)
    if parts.final_eval is not None:
        dataset_batches(parts.final_eval, "final_eval", recipe.entry.entry)
    objective = parts_objective(parts)
    log(f"build: {recipe.entry.entry} gave {steps_per_epoch} training batches of {recipe.batch_size} in "
        f"{time.perf_counter() - building:.1f} s; objective {objective.describe()}")
    if recipe.steps_per_epoch is not None and recipe.steps_per_epoch < steps_per_epoch:
        steps_per_epoch = recipe.steps_per_epoch
        train_ds = train_ds.take(steps_per_epoch)
    return _Built(parts, train_ds, steps_per_epoch, objective)


def _graph_state(recipe: TrialRecipe, applied: Mapping[str, bool], world_size: int) -> str | None:
    """Why this run may not train on a kept, compiled Model (the first algorithm that says so), or None. An algorithm
    that does nothing with this many ranks (AdaSum below its rank rule) has no say."""
    for algorithm in algorithms.registry():
        idle = algorithm.ranks_rule is not None and algorithm.ranks_rule(world_size) is not None
        if algorithm.graph_state is not None and (algorithm.kind == "knob" or applied.get(algorithm.name)) and not idle:
            reason = algorithm.graph_state(recipe)
            if reason:
                return reason
    return None


def _prepare_algorithms(applied: Mapping[str, bool], prep: TrialPrep) -> float:
    """Each applied algorithm's preparation before the Model is built (DimReduce's stage 1); its seconds."""
    seconds = 0.0
    for algorithm in algorithms.registry():
        if algorithm.prepare is not None and applied.get(algorithm.name):
            seconds += algorithm.prepare(prep)
    return seconds


def _train(recipe: TrialRecipe, built: _Built, boost_dict: dict[str, Any],
           reporter: Callable[[dict[str, Any]], None] | None, extra_callbacks: Sequence[Any],
           log: Callable[[str], None], evaluate: bool, cache: tuple[GraphCache | None, str] = (None, "")):
    """Build the Model, train it with the metrics callback; return the callback, what MindSpore built and whether the
    graph was a cached one (``cache``: a graph cache and this run's key in it)."""
    from boosttune.trial.callback import MetricsCallback  # deferred: imports MindSpore

    graph_cache, key = cache
    cached = False
    try:
        model = _build_model(recipe, built.parts, boost_dict, built.steps_per_epoch)
        if graph_cache is not None:
            model, cached = graph_cache.adopt(key, model, log)
        observed = observed_boost(model)
        callback = MetricsCallback(model, built.parts.eval, recipe.batch_size, recipe.warmup_steps, recipe.target,
                                   reporter, evaluate and recipe.eval_every_epoch, log, objective=built.objective)
        log(f"training: {recipe.epochs} epoch(s) of {built.steps_per_epoch} steps; the first step compiles the graph")
        model.train(recipe.epochs, built.train_ds, callbacks=[callback, *extra_callbacks],
                    dataset_sink_mode=False)
        final_eval = built.parts.final_eval
        if evaluate and not recipe.eval_every_epoch and final_eval is None and callback.stop_reason is None:
            callback.records[-1] = {**callback.records[-1], **callback.evaluate_now()}
        if evaluate and final_eval is not None and callback.stop_reason is None and callback.records:
            callback.final_figures = callback.evaluate_now(final_eval)  # the one evaluation without curves
    except BoosttuneError:
        raise
    except Exception as e:  # MindSpore raises RuntimeError/ValueError/TypeError with C++ context
        raise TrialError(f"trial failed in MindSpore: {first_line(e)}") from e
    finally:
        reset_boost_state()
    if not callback.records:
        raise TrialError(callback.stop_reason or "trial ended before its first epoch finished")
    return callback, observed, cached


def _final_metrics(callback, built: _Built, recipe: TrialRecipe, num_shards: int, *, wall_start: float,
                   stage1_s: float) -> dict[str, Any]:
    """The last epoch's metrics plus the trial's timings and sizes; the objective from the final evaluation when
    there was one (the last epoch's figure on the per-epoch set kept as ``epoch_objective_value``)."""
    final = dict(callback.records[-1])
    if callback.final_figures:
        final.update(callback.final_figures, epoch_objective_value=final.get("objective_value"),
                     final_eval_samples=_samples(built.parts.final_eval))
    final.update(
        wall_s=time.perf_counter() - wall_start,
        eval_s=callback.eval_s,
        stage1_s=stage1_s,
        samples_per_epoch=built.steps_per_epoch * recipe.batch_size,
        total_steps=len(callback.step_durations),
        world_size=num_shards,
        first_step_at=callback.first_step_at,
        **built.objective.flat(),
    )
    return final


def _samples(dataset) -> int | None:
    """Rows in a batched dataset (the last batch may be short), or None when it cannot say."""
    try:
        return int(dataset.get_dataset_size()) * int(dataset.get_batch_size())
    except Exception:  # a user's dataset of unknown size  # noqa: BLE001
        return None


def _status(callback) -> str:
    if callback.stop_reason and callback.time_to_target_s is None:
        return RunStatus.STOPPED
    if callback.time_to_target_s is not None:
        return RunStatus.TARGET_REACHED
    return RunStatus.COMPLETED


def _parts_maker(recipe: TrialRecipe, work_dir: Path, num_shards: int, shard_id: int,
                 data: DataSplits | None) -> Callable[[], Any]:
    """A function returning this rank's parts from the recipe's builder (fresh ones at every call)."""
    entry = recipe.entry
    ctx = TrialContext(rank=shard_id, world_size=num_shards, seed=recipe.seed, batch_size=recipe.batch_size,
                       epochs=recipe.epochs, device_target=recipe.device_target, work_dir=str(work_dir),
                       kwargs=entry.kwargs)
    builder = None
    if data is not None:
        if not recipe.builtin:
            raise ConfigError(f"data: splits given for {entry.entry!r}, which reads its own data")
        builder = lambda context: parts_from_splits(context, data)  # noqa: E731

    def make_parts():
        work_dir.mkdir(parents=True, exist_ok=True)
        return build_parts(entry.entry, ctx, builder)

    return make_parts


def _build_model(recipe: TrialRecipe, parts, boost_dict: dict[str, Any], steps_per_epoch: int):
    """MindSpore's Model of the parts with the recipe's optimizer, amp, loss scale and boost."""
    import mindspore as ms

    from boosttune.trial.optim import build_loss_scale_manager, build_optimizer  # deferred: imports MindSpore

    # An algorithm that updates once per k batches (accumulation) advances the optimizer and its LR schedule so.
    accumulation = max((a.steps_per_update(boost_dict) for a in algorithms.registry() if a.steps_per_update), default=1)
    updates = -(-steps_per_epoch * recipe.epochs // accumulation)
    optimizer = build_optimizer(recipe.optimizer, parts.network, recipe.loss_scale, updates,
                                -(-steps_per_epoch // accumulation), recipe.batch_size, factory=parts.optimizer)
    common = {"metrics": dict(parts.metrics), "amp_level": recipe.amp_level}
    if parts.eval_network is not None:
        common["eval_network"] = parts.eval_network
        if parts.eval_indexes is not None:
            common["eval_indexes"] = list(parts.eval_indexes)
    if recipe.optimizer.name == "thor":
        # Not ConvertModelUtils: its ModelThor fails in MindSpore 2.10 (outdated _exec_preprocess).
        return ms.Model(parts.network, parts.loss_fn, optimizer, **common)
    return ms.Model(
        parts.network, parts.loss_fn, optimizer, **common,
        boost_level=recipe.boost_level, boost_config_dict=copy.deepcopy(boost_dict),
        loss_scale_manager=build_loss_scale_manager(recipe.loss_scale, parts.network, recipe.boost_level != "O0"),
    )


def _check_observed(applied: Mapping[str, bool], observed: dict[str, Any], log: Callable[[str], None]) -> None:
    # Not an algorithm whose effect depends on the ranks (AdaSum): MindSpore builds it off below its rank rule.
    for algorithm in algorithms.listed():
        name = algorithm.name
        if algorithm.observe is None or algorithm.ranks_rule is not None or name not in observed:
            continue
        if applied[name] != observed[name]:
            log(f"warning: boost {name} expected {'on' if applied[name] else 'off'} but MindSpore built it "
                f"{'on' if observed[name] else 'off'}")
