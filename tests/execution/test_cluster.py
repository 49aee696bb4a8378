"""Accelerators and placement on a real multi-node Ray cluster whose nodes advertise GPUs and Ascend NPUs.

No GPU or NPU exists here: ``ray.cluster_utils.Cluster`` starts real raylets on one machine, one node
declaring ``GPU: 2`` and one Ray's native ``NPU: 2``. Ray assigns those devices and sets the visibility
variables exactly as on real hardware; what runs on them cannot be MindSpore on a real device, so the
tests check the plumbing (resources requested, the environment each rank gets, where the probe runs, the
exclusion reasons) and that MindSpore's own refusal reaches the user.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import ray

from boosttune.errors import ConfigError, describe_error  # noqa: E402
from boosttune.execution.cluster import check_storage, default_concurrency, probe_on_worker, task_options  # noqa: E402
from boosttune.execution.capacity import check_placeable, placeable_ranks  # noqa: E402
from boosttune.execution.ray import worker_resources  # noqa: E402
from boosttune.execution.ray_train import build_trainer, device_id_for  # noqa: E402

# --- pure logic -------------------------------------------------------------------------------------------


def test_each_rank_asks_for_one_accelerator_of_its_device():
    assert worker_resources("CPU") == {"CPU": 1.0}
    assert worker_resources("GPU") == {"CPU": 1.0, "GPU": 1.0}
    assert worker_resources("Ascend") == {"CPU": 1.0, "NPU": 1.0}  # Ray's native NPU resource
    assert task_options(worker_resources("GPU")) == {"num_cpus": 1.0, "num_gpus": 1.0}
    assert task_options(worker_resources("Ascend"), "Ascend910B") == {
        "num_cpus": 1.0, "resources": {"NPU": 1.0, "accelerator_type:Ascend910B": 0.001}}


def test_trainer_scaling_config_per_device():
    for device, use_gpu, resources in (("CPU", False, {"CPU": 1.0}), ("GPU", True, {"CPU": 1.0, "GPU": 1.0}),
                                       ("Ascend", False, {"CPU": 1.0, "NPU": 1.0})):
        trainer = build_trainer({"device_target": device}, num_workers=4, accelerator_type=None)
        scaling = trainer.scaling_config
        assert scaling.num_workers == 4 and scaling.use_gpu is use_gpu
        assert scaling.resources_per_worker == resources
        assert trainer.backend_config.device_target == device


def test_device_id_is_the_ranks_own_accelerator_as_the_process_sees_it():
    # Ray restricts visibility to the rank's own device: MindSpore sees it as device 0.
    assert device_id_for("GPU", {"CUDA_VISIBLE_DEVICES": "3"}, {"GPU": ["3"]}) == 0
    assert device_id_for("Ascend", {"ASCEND_RT_VISIBLE_DEVICES": "5"}, {"NPU": ["5"]}) == 0
    # Several visible (shared visibility): its index in the list.
    assert device_id_for("GPU", {"CUDA_VISIBLE_DEVICES": "2,3"}, {"GPU": ["3"]}) == 1
    # Visibility not restricted (RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES): the physical id.
    assert device_id_for("Ascend", {}, {"NPU": ["6"]}) == 6
    assert device_id_for("CPU", {"CUDA_VISIBLE_DEVICES": "1"}, {"GPU": ["1"]}) == 0


NODES = [
    {"Alive": True, "Resources": {"CPU": 8.0}},  # a CPU-only head
    {"Alive": True, "Resources": {"CPU": 16.0, "GPU": 4.0}},
    {"Alive": True, "Resources": {"CPU": 16.0, "GPU": 4.0}},
    {"Alive": False, "Resources": {"CPU": 16.0, "GPU": 4.0}},
]


def test_trials_size_themselves_from_the_cluster():
    gpu = worker_resources("GPU")
    assert placeable_ranks(NODES, gpu) == [0, 4, 4]
    assert default_concurrency(NODES, gpu, workers=2) == 4  # 8 GPUs, 2 ranks per trial
    assert default_concurrency(NODES, gpu, workers=8) == 1
    # On CPU nodes one trial per node that holds a whole trial: trials would skew each other's timings.
    assert default_concurrency(NODES, worker_resources("CPU"), workers=1) == 3
    assert default_concurrency(NODES, worker_resources("CPU"), workers=10) == 2
    check_placeable(NODES, gpu, workers=8)
    with pytest.raises(ConfigError, match=r"^workers_per_trial: 9 ranks of \(CPU 1, GPU 1\) each cannot be placed; "
                                          r"the cluster holds 8 such rank\(s\) \(3 node\(s\)\); allowed: 1 to 8$"):
        check_placeable(NODES, gpu, workers=9)
    with pytest.raises(ConfigError, match=r"holds 0 such rank\(s\) \(3 node\(s\)\); no node has CPU 1, NPU 1: add one"):
        check_placeable(NODES, worker_resources("Ascend"), workers=1)


def test_storage_is_checked_before_anything_trains(tmp_path):
    assert check_storage(str(tmp_path / "shared")) == str(tmp_path / "shared")
    assert (tmp_path / "shared").is_dir() and not any((tmp_path / "shared").iterdir())
    blocked = tmp_path / "file"
    blocked.write_text("x")
    with pytest.raises(ConfigError, match=r"^storage: '.*file/sub' is not writable .*; allowed: a folder every node"):
        check_storage(str(blocked / "sub"))
    with pytest.raises(ConfigError, match=r"^storage: 'nosuchscheme://bucket/x' is not writable"):
        check_storage("nosuchscheme://bucket/x")


def test_errors_from_libraries_name_what_failed(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    here = os.getcwd()
    os.chdir(gone)
    gone.rmdir()
    try:
        os.path.relpath("/a/b")
    except OSError as e:
        text = describe_error(e)
    finally:
        os.chdir(here)
    assert text.startswith("FileNotFoundError: [Errno 2] No such file or directory, raised at ")
    assert "posixpath" in text


# --- a real multi-node cluster with GPU and NPU nodes (slow: three raylets start) ---------------------------------


@pytest.fixture(scope="module")
def accelerator_cluster(tmp_path_factory):
    """A head with no CPUs for work, a node with 2 GPUs and a node with 2 of Ray's native NPUs; each node its own probe cache."""
    from ray.cluster_utils import Cluster

    root = tmp_path_factory.mktemp("cluster")
    if ray.is_initialized():
        ray.shutdown()
    before = os.environ.get("BOOSTTUNE_CACHE_DIR")
    os.environ["BOOSTTUNE_CACHE_DIR"] = str(root / "head-cache")  # the driver's (head's) cache
    session_cache = before or str(Path.home() / ".cache" / "boosttune")  # what the session's probe filled
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})  # a head that runs no work
    cluster.add_node(num_cpus=2, num_gpus=2, env_vars={"BOOSTTUNE_CACHE_DIR": str(root / "gpu-cache")})
    cluster.add_node(num_cpus=2, resources={"NPU": 2}, env_vars={"BOOSTTUNE_CACHE_DIR": str(root / "npu-cache")})
    ray.init(address=cluster.address)
    ids = {kind: next(n["NodeID"] for n in ray.nodes() if n["Resources"].get(kind)) for kind in ("GPU", "NPU")}
    try:
        yield {"root": root, "gpu": ids["GPU"], "npu": ids["NPU"], "session_cache": session_cache}
    finally:
        ray.shutdown()
        cluster.shutdown()
        if before is None:
            os.environ.pop("BOOSTTUNE_CACHE_DIR", None)
        else:
            os.environ["BOOSTTUNE_CACHE_DIR"] = before


def _report_placement(config):
    """A stand-in training loop: what this rank was given, written where the test reads it."""
    import ray.train

    context = ray.train.get_context()
    rank = context.get_world_rank()
    device = os.environ["BOOSTTUNE_DEVICE_TARGET"]
    ids = ray.get_runtime_context().get_accelerator_ids()
    seen = {"rank": rank, "world_size": context.get_world_size(), "node_id": ray.get_runtime_context().get_node_id(),
            "ids": {k: v for k, v in ids.items() if v}, "device_id": device_id_for(device, os.environ, ids),
            "env": {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
                                                   "BOOSTTUNE_DEVICE_TARGET", "MS_ROLE", "MS_WORKER_NUM",
                                                   "MS_NODE_ID", "MS_SCHED_PORT")}}
    Path(config["out"], f"rank{rank}.json").write_text(json.dumps(seen))
    ray.train.report({"rank": rank})


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.parametrize("device, resource, variable, node", [
    ("GPU", "GPU", "CUDA_VISIBLE_DEVICES", "gpu"),
    ("Ascend", "NPU", "ASCEND_RT_VISIBLE_DEVICES", "npu"),
])
def test_each_rank_gets_its_own_accelerator_on_the_node_that_has_it(accelerator_cluster, tmp_path, device, resource,
                                                                    variable, node):
    import sys

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests/
    out = tmp_path / "ranks"
    out.mkdir()
    trainer = build_trainer({"device_target": device}, num_workers=2, storage_path=str(tmp_path / "ray"),
                            name=f"placement-{device}", extra_config={"out": str(out)}, train_loop=_report_placement)
    trainer.fit()
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert {r["node_id"] for r in ranks} == {accelerator_cluster[node]}  # only that node has the resource
    owned = [r["ids"][resource] for r in ranks]
    assert all(len(ids) == 1 for ids in owned) and owned[0] != owned[1]  # one device each, not the same one
    for seen in ranks:
        assert seen["env"][variable] == seen["ids"][resource][0]  # Ray restricted visibility to it
        assert seen["device_id"] == 0  # so MindSpore's device_id is 0 in every rank
        assert seen["env"]["BOOSTTUNE_DEVICE_TARGET"] == device
        assert seen["env"]["MS_ROLE"] == "MS_WORKER" and seen["env"]["MS_WORKER_NUM"] == "2"
        assert seen["env"]["MS_NODE_ID"] == str(seen["rank"])
    assert ranks[0]["env"]["MS_SCHED_PORT"] == ranks[1]["env"]["MS_SCHED_PORT"]


@pytest.mark.slow
@pytest.mark.ray
def test_the_probe_runs_on_a_node_with_the_trials_accelerator_and_is_cached_per_node_type(accelerator_cluster):
    root = accelerator_cluster["root"]
    lines: list[str] = []
    placed = probe_on_worker("GPU", calibrate=False, log=lines.append)
    assert placed.node_id == accelerator_cluster["gpu"]  # not the CPU-only head the driver runs on
    assert any(line.startswith("probe: measured on node ") and "CPU 1, GPU 1 like every trial rank" in line
               for line in lines)
    # No real GPU here: MindSpore's own reason excludes every knob, and the experiment will refuse the device.
    reason = placed.report.capabilities["optimizer.momentum"].reason
    assert not placed.report.supports("optimizer.momentum") and "Unsupported device target GPU" in reason
    assert not list((root / "gpu-cache").glob("probe/gpu-*.json"))  # a device that cannot train is not cached

    npu = probe_on_worker("Ascend", calibrate=False, log=lines.append)
    assert npu.node_id == accelerator_cluster["npu"] and npu.report.device_target == "Ascend"


@pytest.mark.slow
@pytest.mark.ray
def test_a_known_node_type_is_not_probed_again_on_a_new_node(accelerator_cluster):
    """The head keeps each node type's probe and hands it to the task: a node that never probed reuses it."""
    from importlib.metadata import version

    from boosttune import __version__
    from boosttune.probe.report import cache_path

    root = accelerator_cluster["root"]
    name = cache_path("CPU", version("mindspore"), __version__).name
    head = root / "head-cache" / "probe" / name
    head.parent.mkdir(parents=True, exist_ok=True)
    head.write_text((Path(accelerator_cluster["session_cache"]) / "probe" / name).read_text())
    nodes = {accelerator_cluster["gpu"]: root / "gpu-cache", accelerator_cluster["npu"]: root / "npu-cache"}
    assert not any((folder / "probe" / name).exists() for folder in nodes.values())
    lines: list[str] = []
    placed = probe_on_worker("CPU", calibrate=False, log=lines.append)  # the head has no CPUs for work
    assert (nodes[placed.node_id] / "probe" / name).is_file()  # handed to the node that ran the task
    assert any(line.startswith("probe: cached result") for line in placed.lines)  # so it did not probe again
