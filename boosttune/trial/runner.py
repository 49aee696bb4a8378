"""One training trial of MindSpore with a boost recipe: the module that owns MindSpore.

``run_trial`` is written to run unchanged inside a Ray Train worker: it takes the worker's shard
(``num_shards``, ``shard_id``) and a ``reporter`` for its per-epoch metrics.
"""

from __future__ import annotations

import copy
import platform
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from boosttune.config.recipe import TrialRecipe
from boosttune.data import ArraySplit, DataSplits, load_dataset
from boosttune.errors import BoosttuneError, TrialError
from boosttune.runtime import current_runtime_env

__all__ = ["TrialResult", "observed_boost", "run_trial"]


@dataclass
class TrialResult:
    status: str  # "completed", "stopped" (NaN loss) or "target_reached"
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


def _make_dataset(split, batch_size: int, shuffle: bool, seed: int):
    import mindspore.dataset as ds

    if isinstance(split, ArraySplit):
        source = ds.NumpySlicesDataset((split.images, split.labels), column_names=["image", "label"],
                                       shuffle=shuffle)
    else:
        source = ds.GeneratorDataset(split, column_names=["image", "label"], shuffle=shuffle)
    if shuffle:
        ds.config.set_seed(seed)
    return source.batch(batch_size, drop_remainder=True)


def observed_boost(model) -> dict[str, Any]:
    """What MindSpore actually built: read back from the Model, not from the config."""
    from mindspore.boost.grad_freeze import FreezeOpt
    from mindspore.boost.less_batch_normalization import LessBN

    from mindspore import nn

    train_net = model._train_network
    from mindspore.boost.less_batch_normalization import CommonHeadLastFN

    cells = [cell for _, cell in model._network.cells_and_names()]
    return {
        "batchnorm_layers": sum(isinstance(cell, nn.BatchNorm2d) for cell in cells),
        # LessBN (MindSpore 2.10) keeps BatchNorm; with fn_flag it swaps the last Dense for this head.
        "fn_heads": sum(isinstance(cell, CommonHeadLastFN) for cell in cells),
        "less_bn": isinstance(model._network, LessBN),
        "grad_freeze": isinstance(model._optimizer, FreezeOpt),
        "grad_accumulation": bool(getattr(train_net, "use_grad_accumulation", False)),
        "grad_accumulation_step": int(getattr(train_net, "max_accumulation_step", 1)),
        "dim_reduce": bool(getattr(train_net, "enable_dim_reduce", False)),
        "adasum": bool(getattr(train_net, "enable_adasum", False)),
        "train_cell": type(train_net).__name__,
        "optimizer": type(model._optimizer).__name__,
    }


def _tie_boost_dict(recipe: TrialRecipe, total_steps: int) -> dict[str, Any]:
    """The canonical boost_config_dict, with grad_freeze's schedule sized to the real step count."""
    boost = recipe.boost
    canonical = boost.to_boost_config_dict()
    freeze = boost.config.grad_freeze
    if "grad_freeze" in canonical and (freeze is None or "total_steps" not in freeze.model_fields_set):
        canonical["grad_freeze"]["total_steps"] = total_steps
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
) -> TrialResult:
    """Train and evaluate one recipe; return its metrics.

    Raises:
        ConfigError, DataError: bad input, before any training.
        TrialError: MindSpore failed; the message carries its reason.
    """
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Accuracy, Loss

    from boosttune.models import build_network, default_image_size
    from boosttune.trial.callback import MetricsCallback
    from boosttune.trial.dim_reduce import prepare_dim_reduce
    from boosttune.trial.mindspore_state import reset_boost_state
    from boosttune.trial.optim import build_loss_scale_manager, build_optimizer

    wall_start = time.perf_counter()
    boost = recipe.boost
    effective = boost.effective()
    work_dir = Path(work_dir) if work_dir is not None else Path(tempfile.gettempdir()) / "boosttune"
    ms.set_context(mode=ms.GRAPH_MODE, device_target=recipe.device_target)
    reset_boost_state()
    ms.set_seed(recipe.seed)
    np.random.seed(recipe.seed)  # GradientFreeze's interval schedule draws from the global generator

    image_size = recipe.data.image_size or default_image_size(recipe.model)
    if data is None:
        loading = time.perf_counter()
        log(f"data: loading {recipe.data.name} at {image_size}x{image_size}")
        data = load_dataset(recipe.data, image_size)
        log(f"data: {len(data.train)} training and {len(data.val)} validation images in "
            f"{time.perf_counter() - loading:.1f} s")
    data = data.shard(num_shards, shard_id)
    train_ds = _make_dataset(data.train, recipe.batch_size, shuffle=recipe.shuffle, seed=recipe.seed)
    val_ds = _make_dataset(data.val, recipe.batch_size, shuffle=False, seed=recipe.seed)
    steps_per_epoch = train_ds.get_dataset_size()
    if steps_per_epoch == 0:
        raise TrialError(f"batch_size {recipe.batch_size} exceeds this rank's {len(data.train)} training samples")
    if recipe.steps_per_epoch is not None and recipe.steps_per_epoch < steps_per_epoch:
        steps_per_epoch = recipe.steps_per_epoch
        train_ds = train_ds.take(steps_per_epoch)
    total_steps = steps_per_epoch * recipe.epochs
    boost_dict = _tie_boost_dict(recipe, total_steps)

    def fresh_network():
        return build_network(recipe.model, data.num_classes, data.channels, image_size)

    network = fresh_network()
    stage1_s = 0.0
    if effective.applied["dim_reduce"]:
        # Stage 1 trains data-parallel like the trial (gradients all-reduced), so every rank saves the same
        # weights; each rank writes its own folder, since ranks on one node share work_dir.
        stage1_dir = Path(work_dir) / f"rank{shard_id}" if num_shards > 1 else work_dir
        inputs = prepare_dim_reduce(recipe, fresh_network, train_ds, boost_dict["dim_reduce"]["n_components"],
                                    stage1_dir, log)
        stage1_s = inputs.stage1_s
        boost_dict["dim_reduce"]["weight_load_dir"] = inputs.weight_load_dir
        if inputs.pca_mat_path:
            boost_dict["dim_reduce"]["pca_mat_path"] = inputs.pca_mat_path
        ms.load_param_into_net(network, ms.load_checkpoint(inputs.init_checkpoint))
        reset_boost_state()

    # Accumulation over k batches advances the optimizer (and its LR schedule) once per k steps.
    accumulation = boost_dict.get("grad_accumulation", {}).get("grad_accumulation_step", 1)
    updates = -(-total_steps // accumulation)
    optimizer = build_optimizer(recipe.optimizer, network, recipe.loss_scale, updates,
                                -(-steps_per_epoch // accumulation), recipe.batch_size)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    metrics = {"acc": Accuracy(), "loss": Loss()}
    try:
        if recipe.optimizer.name == "thor":
            # Not ConvertModelUtils: its ModelThor fails in MindSpore 2.10 (outdated _exec_preprocess).
            model = ms.Model(network, loss_fn, optimizer, metrics=metrics, amp_level=recipe.amp_level)
        else:
            model = ms.Model(
                network, loss_fn, optimizer, metrics=metrics, amp_level=recipe.amp_level,
                boost_level=recipe.boost_level, boost_config_dict=copy.deepcopy(boost_dict),
                loss_scale_manager=build_loss_scale_manager(recipe.loss_scale, network, recipe.boost_level != "O0"),
            )
        observed = observed_boost(model)
        callback = MetricsCallback(model, val_ds, recipe.batch_size, recipe.warmup_steps, recipe.target_accuracy,
                                   reporter, recipe.eval_every_epoch, log)
        log(f"training: {recipe.epochs} epoch(s) of {steps_per_epoch} steps; the first step compiles the graph")
        model.train(recipe.epochs, train_ds, callbacks=[callback, *extra_callbacks],
                    dataset_sink_mode=False)
        if not recipe.eval_every_epoch and callback.stop_reason is None:
            callback.records[-1] = {**callback.records[-1], **_final_eval(model, val_ds)}
    except BoosttuneError:
        raise
    except Exception as e:  # MindSpore raises RuntimeError/ValueError/TypeError with C++ context
        raise TrialError(f"trial failed in MindSpore: {_first_line(e)}") from e
    finally:
        reset_boost_state()

    if not callback.records:
        raise TrialError(callback.stop_reason or "trial ended before its first epoch finished")
    final = dict(callback.records[-1])
    final.update(
        wall_s=time.perf_counter() - wall_start,
        eval_s=callback.eval_s,
        stage1_s=stage1_s,
        samples_per_epoch=steps_per_epoch * recipe.batch_size,
        total_steps=len(callback.step_durations),
        world_size=num_shards,
        first_step_at=callback.first_step_at,
    )
    if callback.stop_reason and callback.time_to_target_s is None:
        status = "stopped"
    elif callback.time_to_target_s is not None:
        status = "target_reached"
    else:
        status = "completed"
    _check_observed(effective.applied, observed, log)
    return TrialResult(
        status=status,
        reason=callback.stop_reason,
        metrics=final,
        epochs=callback.records,
        recipe=recipe.to_dict(),
        boost_config_dict=boost_dict,
        applied_boost=dict(effective.applied),
        observed_boost=observed,
        environment=_environment(recipe.device_target),
    )


def _final_eval(model, val_ds) -> dict[str, float]:
    scores = model.eval(val_ds, dataset_sink_mode=False)
    return {"val_acc": float(scores["acc"]), "val_loss": float(scores["loss"])}


def _check_observed(applied: dict[str, bool], observed: dict[str, Any], log: Callable[[str], None]) -> None:
    for name in ("less_bn", "grad_freeze", "grad_accumulation", "dim_reduce"):
        if applied[name] != observed[name]:
            log(f"warning: boost {name} expected {'on' if applied[name] else 'off'} but MindSpore built it "
                f"{'on' if observed[name] else 'off'}")


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("-"):
            return f"{type(error).__name__}: {line}"
    return type(error).__name__
