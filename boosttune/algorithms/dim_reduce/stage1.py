"""DimReduce's stage 1: the checkpoints its PCA is computed from, made once and reused.

MindSpore's DimReduce (stage 2) refuses to start without ``weight_load_dir``: a folder of
checkpoints of the same network from ordinary training. It computes a PCA of them, writes
``pca_mat_temp.npy`` into that folder and can reuse it through ``pca_mat_path``. This module runs
stage 1 (plain training, no boost, a checkpoint every step) into a folder keyed by everything
that shapes those weights, so trials that share it share the checkpoints and the PCA.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from boosttune.errors import ConfigError, TrialError
from boosttune.files import write_atomically, write_json

__all__ = ["DimReduceInputs", "prepare_dim_reduce"]

_SAFE_PATH = re.compile(r"^[_A-Za-z0-9/.\-]+$")
PCA_FILE = "pca_mat_temp.npy"
_DONE = "stage1.json"


@dataclass(frozen=True)
class DimReduceInputs:
    weight_load_dir: str
    pca_mat_path: str | None
    init_checkpoint: str
    stage1_s: float
    reused: bool


def _stage1_key(recipe: Any, steps: int) -> str:
    shaping = {
        "model": recipe.entry.model_dump(mode="json"), "batch_size": recipe.batch_size,
        "seed": recipe.seed, "optimizer": recipe.optimizer.model_dump(), "steps": steps,
    }
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:16]


def _safe_root(work_dir: Path) -> Path:
    """MindSpore accepts only [_A-Za-z0-9/.-] here (Ray trial folders like ``lr=0.1,n=8`` fail)."""
    resolved = work_dir.resolve()
    if _SAFE_PATH.fullmatch(str(resolved)):
        return resolved
    return Path(tempfile.gettempdir()) / "boosttune-dim-reduce"


def prepare_dim_reduce(recipe: Any, make_parts: Callable[[], Any], train_dataset, n_components: int,
                       work_dir: Path, log: Callable[[str], None]) -> DimReduceInputs:
    """Stage 1's checkpoints (made, or found from an earlier trial); ``make_parts`` gives a fresh network and loss
    from the recipe's builder. ``recipe``: the trial's ``TrialRecipe`` (boosttune.config.recipe, a later stage, so
    not named here, as :class:`~boosttune.algorithms.base.TrialPrep` holds it)."""
    steps = recipe.dim_reduce_stage1_steps or n_components + 2
    if steps < n_components:
        raise ConfigError(
            f"dim_reduce_stage1_steps: {steps} is invalid; DimReduce's PCA needs at least "
            f"n_components={n_components} checkpoints"
        )
    folder = _safe_root(work_dir) / "dim_reduce" / _stage1_key(recipe, steps)
    ckpt_dir = folder / "ckpt"
    done = folder / _DONE
    if done.is_file():
        meta = json.loads(done.read_text())
        pca = ckpt_dir / PCA_FILE
        log(f"dim_reduce: reusing stage-1 checkpoints in {ckpt_dir}" + (" and their PCA" if pca.is_file() else ""))
        return DimReduceInputs(str(ckpt_dir), str(pca) if pca.is_file() else None, meta["init_checkpoint"],
                               0.0, True)

    # Deferred: MindSpore is heavy and only a trial's worker has it loaded.
    import mindspore as ms
    from mindspore import nn
    from mindspore.train.callback import CheckpointConfig, ModelCheckpoint

    log(f"dim_reduce: stage 1, {steps} plain training steps with a checkpoint each, into {ckpt_dir}")
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    for stale in ckpt_dir.iterdir():
        stale.unlink()
    parts = make_parts()
    network = parts.network
    optimizer = nn.Momentum(network.trainable_params(), recipe.optimizer.learning_rate,
                            recipe.optimizer.momentum)
    model = ms.Model(network, parts.loss_fn, optimizer)
    checkpoints = ModelCheckpoint(
        prefix="stage1", directory=str(ckpt_dir),
        config=CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=steps + 1, saved_network=network),
    )
    start = time.perf_counter()
    model.train(1, train_dataset.take(steps), callbacks=[checkpoints], dataset_sink_mode=False)
    stage1_s = time.perf_counter() - start
    for meta_file in ckpt_dir.glob("*.meta"):
        meta_file.unlink()  # graph files are not weights
    saved = sorted(ckpt_dir.glob("*.ckpt"), key=lambda p: p.stat().st_mtime)
    if len(saved) < n_components:
        raise TrialError(f"dim_reduce stage 1 wrote {len(saved)} checkpoints, fewer than n_components={n_components}"
                         " (the training set is too small for that many steps)")
    init_checkpoint = folder / "init.ckpt"
    write_atomically(init_checkpoint, lambda temp: temp.write_bytes(saved[-1].read_bytes()))
    write_json(done, {"init_checkpoint": str(init_checkpoint), "steps": steps, "stage1_s": stage1_s})
    log(f"dim_reduce: stage 1 done in {stage1_s:.1f} s ({len(saved)} checkpoints); MindSpore computes their PCA "
        f"({n_components} components) when stage 2 builds its graph")
    return DimReduceInputs(str(ckpt_dir), None, str(init_checkpoint), stage1_s, False)
