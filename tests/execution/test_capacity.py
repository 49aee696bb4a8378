"""A trial's ranks against what a cluster holds and what its autoscaler may add: the rules, and on a real
autoscaling cluster (Ray's fake multi-node provider, which starts real raylets
here) the way ``ray up`` starts one, its monitor given ``--autoscaling-config``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from boosttune.errors import ConfigError
from boosttune.execution.capacity import Autoscaler, NodeType, check_capacity
from boosttune.execution.ray import worker_resources
from boosttune.ray_internals import _options
from tests.helpers import REPO
from tests.helpers.ray_cluster import ray_cluster

CPU = worker_resources("CPU")
HEAD = {"Alive": True, "Resources": {"CPU": 8.0, "node:__internal_head__": 1.0}}


def test_limits_combine_as_the_autoscaler_applies_them():
    types = (NodeType("big", {"CPU": 4.0}, 3), NodeType("small", {"CPU": 1.0}, None))
    assert Autoscaler(types, None, "t").most_ranks(CPU) is None  # a type without its own limit, none overall
    assert Autoscaler(types, 4, "t").most_ranks(CPU) == 3 * 4 + 1  # the largest nodes first, 4 workers in all
    assert Autoscaler((NodeType("cloud", None, 2),), 2, "t").most_ranks(CPU) is None  # resources filled in at launch
    assert Autoscaler((NodeType("off", {"CPU": 4.0}, 0),), 2, "t").most_ranks(CPU) == 0
    nodes, lines = [HEAD, {"Alive": True, "Resources": {"CPU": 2.0}}], []
    check_capacity(CPU, 10, log=lines.append, nodes=nodes, autoscaler=None)  # held now: nothing to read or say
    assert not lines
    check_capacity(CPU, 11, log=lines.append, nodes=nodes, autoscaler=Autoscaler(types, None, "t"))
    assert "wait for the autoscaler" in lines[0] and "may add any number" in lines[0]
    with pytest.raises(ConfigError, match=r"holds 10 such rank\(s\) \(2 node\(s\)\) and no autoscaler adds nodes "
                                          r"\(its monitor runs without --autoscaling-config\); allowed: 1 to 10$"):
        check_capacity(CPU, 11, log=lines.append, nodes=nodes,
                       autoscaler=Autoscaler((), None, "its monitor runs without --autoscaling-config"))


def test_a_monitors_command_line_is_read_in_both_forms():
    assert _options(["python", "monitor.py", "--gcs-address=1.2.3.4:6379", "--autoscaling-config", "/x.yaml",
                     "--logs-dir=/l"]) == {"gcs-address": "1.2.3.4:6379", "autoscaling-config": "/x.yaml",
                                           "logs-dir": "/l"}


# --- on a real autoscaling cluster ------------------------------------------------------------------------

FAKE = {"cluster_name": "capacity", "max_workers": 2, "provider": {"type": "fake_multinode"},
        "auth": {"ssh_user": "ubuntu"}, "head_node_type": "ray.head.default", "idle_timeout_minutes": 1,
        "upscaling_speed": 1.0, "available_node_types": {
            "ray.head.default": {"resources": {"CPU": 0}, "node_config": {}, "max_workers": 0},
            "cpu_node": {"resources": {"CPU": 1}, "node_config": {}, "min_workers": 0, "max_workers": 2}},
        **{k: [] for k in ("cluster_synced_files", "initialization_commands", "setup_commands", "head_setup_commands",
                           "worker_setup_commands", "head_start_ray_commands", "worker_start_ray_commands")},
        "file_mounts": {}, "file_mounts_sync_continuously": False}

DRIVER = textwrap.dedent("""
    import sys, ray
    from boosttune.execution.capacity import check_capacity, find_autoscaler
    from boosttune.execution.ray import worker_resources
    ray.init(address=sys.argv[1], logging_level="ERROR")
    print("found:", find_autoscaler().describe(worker_resources("CPU")))
    check_capacity(worker_resources("CPU"), 2, log=print)
""")


@pytest.mark.slow
@pytest.mark.ray
def test_an_autoscaling_cluster_is_checked_against_what_its_autoscaler_may_add(tmp_path):
    """Head with no CPU, a node type of 1 CPU up to 2 nodes: a 2-rank trial waits for the autoscaler (said in one
    line), a 3-rank one is refused in one line before anything trains."""
    config = tmp_path / "autoscaling.yaml"
    config.write_text(json.dumps(FAKE))
    with ray_cluster([{"cpus": 0}], head=[f"--autoscaling-config={config}"],
                     env={"RAY_FAKE_CLUSTER": "1", "AUTOSCALER_UPDATE_INTERVAL_S": "1"}) as cluster:
        env = {**cluster["env"], "PYTHONPATH": str(REPO)}
        fits = subprocess.run([sys.executable, "-c", DRIVER, cluster["gcs"]], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        assert fits.returncode == 0, fits.stderr[-3000:]
        assert f"found: its autoscaler may add at most 2 (cpu_node: 1 per node, at most 2; max_workers 2; read " \
               f"from {config})" in fits.stdout
        assert "capacity: a trial's 2 ranks of (CPU 1) wait for the autoscaler: the cluster holds 0 now" in fits.stdout
        output = tmp_path / "refused"
        refused = subprocess.run([sys.executable, str(REPO / "experiments" / "resnet.py"), "--model", "lenet5",
                                  "--data", "digits", "--workers", "3", "--output", str(output)],
                                 env={**env, "RAY_ADDRESS": cluster["gcs"]}, capture_output=True, text=True,
                                 timeout=300, check=False)
        errors = [line for line in refused.stderr.splitlines() if "workers_per_trial" in line]
        assert refused.returncode == 2 and len(errors) == 1, refused.stderr[-3000:]
        assert "workers_per_trial: 3 ranks of (CPU 1) each cannot be placed; the cluster holds 0 such rank(s) " \
               "(1 node(s)) and its autoscaler may add at most 2" in errors[0] and errors[0].endswith("allowed: 1 to 2")
        assert not list(Path(output).glob("trials/*.json"))


# --- --device auto ----------------------------------------------------------------------------------------


def _connected_to(monkeypatch, nodes, autoscaler):
    """pick_device as it runs on a cluster's head: connected, these nodes alive, this autoscaler found."""
    import ray

    from boosttune.execution import capacity

    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "nodes", lambda: nodes)
    monkeypatch.setattr(capacity, "find_autoscaler", lambda gcs_address=None: autoscaler)


def test_auto_picks_the_gpu_an_autoscaler_may_start_before_any_gpu_node_is_up(monkeypatch):
    """cluster.yaml's head holds no GPU and its GPU workers start as trials ask for them: auto still picks GPU."""
    from boosttune.execution.capacity import pick_device

    head = {"Alive": True, "NodeManagerAddress": "10.0.0.1", "Resources": {"CPU": 8.0, "TRAIN_DRIVER": 1000.0}}
    _connected_to(monkeypatch, [head], Autoscaler((NodeType("gpu_worker", {"CPU": 4.0, "GPU": 1.0}, 4),), 4, "t"))
    lines = []
    assert pick_device(lines.append) == "GPU"
    assert lines == ["device: GPU (--device auto: the autoscaler's node type gpu_worker holds a GPU; --device CPU "
                     "trains on CPUs instead)"]


def test_auto_picks_ascend_where_a_node_holds_npus_and_cpu_where_none_does(monkeypatch):
    from boosttune.execution.capacity import pick_device

    npu = {"Alive": True, "NodeManagerAddress": "192.168.0.11", "Resources": {"CPU": 96.0, "NPU": 8.0}}
    _connected_to(monkeypatch, [HEAD, npu], None)
    lines = []
    assert pick_device(lines.append) == "Ascend" and "node 192.168.0.11 holds an NPU" in lines[0]
    hosts = Autoscaler((NodeType("hosts", None, None),), None, "cluster-ascend.yaml")  # they say when they join
    _connected_to(monkeypatch, [HEAD], hosts)
    lines.clear()
    assert pick_device(lines.append) == "CPU"
    assert lines == ["device: CPU (--device auto: the cluster's 1 node(s) and the node types its autoscaler may start "
                     "hold no GPU or NPU; --device GPU|Ascend chooses one); node type(s) hosts report their devices "
                     "only when they join: give --device GPU|Ascend if they hold one"]


def test_auto_with_no_cluster_to_join_reads_this_machine_as_ray_would(monkeypatch):
    import ray

    from boosttune.execution import capacity

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(capacity, "cluster_address", lambda: None)
    monkeypatch.setattr(capacity, "local_resources", lambda: {"CPU": 2.0, "GPU": 2.0})
    lines = []
    assert capacity.pick_device(lines.append) == "GPU" and "this machine holds a GPU" in lines[0]
    monkeypatch.setattr(capacity, "local_resources", lambda: {"CPU": 2.0})
    lines.clear()
    assert capacity.pick_device(lines.append) == "CPU"
    assert lines == ["device: CPU (--device auto: this machine holds no GPU or NPU, and there is no cluster to join; "
                     "--device GPU|Ascend chooses one)"]


def test_a_ranks_threads_are_its_nodes_cores_over_the_runs_ranks_there_not_the_cpu_ray_reserved():
    """One run per node at a time (boosttune's design): a rank uses the cores the job alone would have there."""
    from boosttune.execution.capacity import rank_threads

    cpu = {"CPU": 1.0}
    node = lambda cpus, alive=True, **more: {"Alive": alive, "Resources": {"CPU": cpus, **more}}  # noqa: E731
    # This machine: 2 cores, one rank -> 2 threads (Ray would set OMP_NUM_THREADS=1 from the one CPU reserved).
    assert rank_threads([node(2)], cpu, 1).threads == 2
    two = rank_threads([node(2)], cpu, 2)
    assert (two.threads, two.node_cpus, two.ranks) == (1, 2, 2)
    # Ranks pack on a node as far as it holds them: 16 cores, 4 ranks -> 4 each; a 3-core node for 2 ranks -> 1.
    assert rank_threads([node(16)], cpu, 4).threads == 4
    assert rank_threads([node(3)], cpu, 2).threads == 1
    # The smallest node that takes a rank decides (the head with no CPUs, a dead node and a GPU node are not it).
    gpu = {"CPU": 1.0, "GPU": 1.0}
    assert rank_threads([node(0), node(8, alive=False), node(32, GPU=4), node(16, GPU=8)], gpu, 2).threads == 8
    assert "each rank runs 8 CPU thread(s)" in rank_threads([node(16, GPU=8)], gpu, 2).describe()
    # No node that takes a rank is up yet (an autoscaling cluster): MindSpore's default, said by the caller.
    assert rank_threads([node(0)], gpu, 1) is None and rank_threads([], cpu, 1) is None
