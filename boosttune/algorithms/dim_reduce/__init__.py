"""DimReduce: second-order training in a PCA subspace of earlier weights. Excludes LessBN/GradientFreeze/AdaSum.

A trial prepares it (:func:`prepare`): stage 1 trains plainly with a checkpoint a step, and the trial's
network starts from the last of them (:mod:`boosttune.algorithms.dim_reduce.stage1`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Mapping

from boosttune.algorithms import manual
from boosttune.algorithms.base import Algorithm, DeviceSupport, ProbeCheck, TrialPrep, alone_in_bench
from boosttune.algorithms.dim_reduce.fragment import FRAGMENT
from boosttune.algorithms.dim_reduce.notes import NOTE
from boosttune.algorithms.dim_reduce.section import DimReduceSection, rule
from boosttune.algorithms.dim_reduce.stage1 import prepare_dim_reduce
from boosttune.algorithms.mindspore_state import reset_boost_state
from boosttune.errors import ConfigError


def bench(report: DeviceSupport, world_size: int) -> tuple[dict[str, dict[str, Any]], list[str]]:
    if report.supports("boost.dim_reduce") and world_size > 1:
        return {}, ["dim_reduce: runs single-rank only here"]
    return alone_in_bench("dim_reduce", report, manual(dim_reduce=True))


def _probe(device: str, kit: Any) -> None:
    # Deferred: MindSpore is heavy and only the probe's child process loads it.
    import mindspore as ms
    import numpy as np

    ms.set_context(mode=ms.GRAPH_MODE, device_target=device)
    folder = tempfile.mkdtemp(prefix="boosttune_probe_dr_")
    net = kit.network()
    rng = np.random.RandomState(0)
    for index in range(4):  # stand-in stage-1 checkpoints: the PCA only needs several weight vectors
        for param in net.trainable_params():
            param.set_data(ms.Tensor(param.asnumpy() + 0.01 * rng.randn(*param.shape).astype(np.float32)))
        ms.save_checkpoint(net, f"{folder}/w{index}.ckpt")
    kit.train(device, optimizer="sgd", boost_level="O1", network=net, boost_config_dict={
        **manual(dim_reduce=True), "dim_reduce": {"n_components": 2, "weight_load_dir": folder, "timeout": 30}})


def prepare(prep: TrialPrep) -> float:
    """DimReduce's checkpoints (stage 1), loaded into ``prep.parts.network``; boost_dict gets their folders."""
    # Deferred: MindSpore is heavy and only a trial's worker has it loaded.
    import mindspore as ms

    # Stage 1 trains data-parallel like the trial (gradients all-reduced), so every rank saves the same
    # weights; each rank writes its own folder, since ranks on one node share work_dir.
    work_dir = Path(prep.work_dir)
    stage1_dir = work_dir / f"rank{prep.shard_id}" if prep.num_shards > 1 else work_dir
    section = prep.boost_dict["dim_reduce"]
    inputs = prepare_dim_reduce(prep.recipe, prep.make_parts, prep.train_dataset, section["n_components"],
                                stage1_dir, prep.log)
    section["weight_load_dir"] = inputs.weight_load_dir
    if inputs.pca_mat_path:
        section["pca_mat_path"] = inputs.pca_mat_path
    ms.load_param_into_net(prep.parts.network, ms.load_checkpoint(inputs.init_checkpoint))
    reset_boost_state()
    return inputs.stage1_s


def observe(model) -> dict[str, Any]:
    return {"dim_reduce": bool(getattr(model._train_network, "enable_dim_reduce", False))}


def _loss_scale_rule(recipe: Any, applied: bool) -> None:
    """Its SGD(learning_rate=1) cannot unscale a loss scale: none, or a fixed scale of 1."""
    kind = recipe.loss_scale.kind
    if applied and kind != "none" and not (kind == "fixed" and recipe.loss_scale.loss_scale == 1.0):
        raise ConfigError(f"loss_scale.kind: {kind!r} is invalid with dim_reduce (its SGD(learning_rate=1) cannot "
                          "unscale); allowed: 'none'")


def check_here(boost_config_dict: Mapping[str, Any], source: str) -> None:
    """A loaded recipe's DimReduce needs checkpoints of the user's network, in a folder that exists here."""
    folder = (boost_config_dict.get("dim_reduce") or {}).get("weight_load_dir")
    if not folder or not Path(folder).is_dir():
        raise ConfigError(f"{source}: boost_config_dict.dim_reduce.weight_load_dir: {folder!r} is not a "
                          "folder here; DimReduce needs checkpoints of your own network from an earlier "
                          "training (at least n_components of them): save them and name their folder there")


ALGORITHM = Algorithm(
    name="dim_reduce",
    graph_state=lambda recipe: ("DimReduce's stage 1 writes this seed's PCA projection, which its Model reads when built: "
                                "not proven reset"),
    kind="boost",
    fragment=FRAGMENT,
    section=DimReduceSection,
    off_params=lambda ctx, base: {"boost.dim_reduce": False},
    probe_checks=(ProbeCheck("boost.dim_reduce", run=_probe),),
    calibration={"boost.dim_reduce": {"boost.dim_reduce": True, "dim_reduce.rho": 0.55, "dim_reduce.gamma": 0.9,
                                      "dim_reduce.alpha": 0.001, "dim_reduce.sigma": 0.4,
                                      "dim_reduce.n_components": 4}},
    bench=bench,
    rule=rule,
    common_keys=("device_number",),
    observe=observe,
    prepare=prepare,
    check_here=check_here,
    recipe_rule=_loss_scale_rule,
    notes=(NOTE,),
)
