"""The MindSpore backend for Ray Train on a real local Ray cluster: data parallel, failures, 2 nodes."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

import ray

from boosttune.builtin.data import load_dataset, prepared_split  # noqa: E402
from boosttune.config.recipe import parse_recipe  # noqa: E402
from boosttune.execution.ray_train import SCHEDULER_MARKER, run_on_ray  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.ray]

RECIPE = {"model": "lenet5", "epochs": 1, "batch_size": 16, "steps_per_epoch": 8, "shuffle": False,
          "optimizer": {"name": "sgd", "learning_rate": 0.1}, "seed": 3}


def _schedulers() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if SCHEDULER_MARKER in cmdline[1:] and "-c" in cmdline:
            found.append(process)
    return found


def _assert_no_scheduler_left(timeout_s: float = 15.0) -> None:
    deadline = time.time() + timeout_s
    while _schedulers() and time.time() < deadline:
        time.sleep(0.5)
    assert not _schedulers(), "a MindSpore scheduler outlived its trial"


def _watch_scheduler_sockets(stop: threading.Event, listening: set[str]) -> None:
    """The addresses the MindSpore scheduler listens on, polled while it lives."""
    while not stop.is_set():
        for process in _schedulers():
            try:
                listening.update(c.laddr.ip for c in process.net_connections(kind="tcp")
                                 if c.status == psutil.CONN_LISTEN)
            except psutil.Error:
                pass
        time.sleep(0.1)


def test_two_workers_match_averaged_gradient_training(local_ray, tmp_path):
    stop, listening = threading.Event(), set()
    watcher = threading.Thread(target=_watch_scheduler_sockets, args=(stop, listening), daemon=True)
    watcher.start()
    summary = run_on_ray(RECIPE, num_workers=2, env=local_ray, storage_path=str(tmp_path / "ray"),
                         artifacts_dir=str(tmp_path / "dp"), keep_checkpoint=True)
    stop.set()
    watcher.join()
    assert summary["status"] == "completed", summary
    assert listening == {"127.0.0.1"}  # both ranks on this node: MindSpore's scheduler is reachable from it alone
    assert summary["world_size"] == 2 and summary["samples_per_epoch"] == 8 * 16
    rank0 = np.load(tmp_path / "dp" / "rank0.npz")
    rank1 = np.load(tmp_path / "dp" / "rank1.npz")
    assert set(rank0.files) == set(rank1.files)
    for name in rank0.files:
        np.testing.assert_array_equal(rank0[name], rank1[name])
    # The kept checkpoint is reported to Ray Train and holds the trained weights.
    import mindspore as ms

    assert summary["checkpoint_path"]
    kept = ms.load_checkpoint(str(Path(summary["checkpoint_path"]) / "model.ckpt"))
    np.testing.assert_array_equal(kept["fc3.weight"].asnumpy(), rank0["fc3.weight"])

    # The same training in one process on the union of the two ranks' batches (gradients_mean=True).
    from mindspore.train.callback import Callback

    from boosttune.trial.runner import run_trial

    data = load_dataset(parse_recipe(RECIPE).data, 32)
    shards = [data.train.arrays(num_shards=2, shard_id=rank) for rank in (0, 1)]  # what each rank's pipeline yields
    batches = [np.concatenate([images[k * 16:(k + 1) * 16] for images, _ in shards]) for k in range(8)]
    labels = [np.concatenate([ys[k * 16:(k + 1) * 16] for _, ys in shards]) for k in range(8)]
    union = dataclasses.replace(data, train=prepared_split(np.concatenate(batches), np.concatenate(labels)))
    weights, initial = {}, {}

    class Keep(Callback):
        def on_train_begin(self, run_context):
            initial.update({p.name: p.asnumpy().copy() for p in run_context.original_args().network.trainable_params()})

        def on_train_end(self, run_context):
            weights.update({p.name: p.asnumpy().copy() for p in run_context.original_args().network.trainable_params()})

    reference = parse_recipe({**RECIPE, "batch_size": 32})
    run_trial(reference, data=union, extra_callbacks=[Keep()], log=lambda m: None)
    for name in rank0.files:
        np.testing.assert_allclose(rank0[name], weights[name], rtol=1e-4, atol=1e-6)
    # ... and training moved the weights: the match is not between two identical initialisations.
    moved = max(float(np.abs(initial[name] - weights[name]).max()) for name in rank0.files)
    assert moved > 1e-3
    _assert_no_scheduler_left()


def test_worker_failure_is_a_failed_trial_with_the_workers_error(local_ray, tmp_path):
    bad = {**RECIPE, "boost_level": "O1", "boost_config_dict": {"boost": {"mode": "manual"}}}  # gc_flag on CPU
    summary = run_on_ray(bad, num_workers=2, env=local_ray, storage_path=str(tmp_path / "ray"))
    assert summary["status"] == "failed"
    assert "Centralization" in summary["reason"] and "\n" not in summary["reason"]
    _assert_no_scheduler_left()


def test_each_trial_runs_in_fresh_worker_processes(local_ray, tmp_path):
    """Boost state lives in the process (AutoBoost singleton): trials must not share workers."""
    boosted = run_on_ray({**RECIPE, "boost_level": "O1", "boost_config_dict": {"less_bn": {"gc_flag": False}}},
                         num_workers=1, env=local_ray, storage_path=str(tmp_path / "ray"))
    plain = run_on_ray(RECIPE, num_workers=1, env=local_ray, storage_path=str(tmp_path / "ray"))
    assert boosted["pid"] != plain["pid"]
    assert boosted["status"] == plain["status"] == "completed" and boosted["throughput_sps"] > 0
    assert boosted["environment"]["runtime_env"] == {k: v for k, v in local_ray.items()}
    assert boosted["observed_boost"]["grad_freeze"] and boosted["observed_boost"]["less_bn"]
    assert not plain["observed_boost"]["grad_freeze"] and not plain["observed_boost"]["less_bn"]
    assert plain["observed_boost"]["train_cell"] == "TrainOneStepCell"


# Last in the module: it shuts the module's local Ray down for a cluster of its own, so a test after it would
# start another Ray (ray.init's defaults, about 10 s).
def test_two_node_cluster_places_workers_on_both_nodes(tmp_path, probe_report):
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        summary = run_on_ray(RECIPE, num_workers=2, env=probe_report.runtime_env, placement_strategy="STRICT_SPREAD",
                             storage_path=str(tmp_path / "ray"), artifacts_dir=str(tmp_path / "two"))
        assert summary["status"] == "completed", summary
        import json

        nodes = {json.loads((tmp_path / "two" / f"rank{r}.json").read_text())["node_id"] for r in (0, 1)}
        assert len(nodes) == 2
        assert len({n["NodeID"] for n in ray.nodes() if n["Alive"]}) == 2
        _assert_no_scheduler_left()
    finally:
        ray.shutdown()
        cluster.shutdown()
