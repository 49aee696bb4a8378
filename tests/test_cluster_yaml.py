"""The cluster files, checked offline the way ``ray up`` checks them before it contacts a cloud or a host."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ray.autoscaler._private.util import prepare_config, validate_config

REPO = Path(__file__).resolve().parents[1]
FILES = sorted(REPO.glob("cluster*.yaml"))


def _check(config: dict) -> dict:
    prepared = prepare_config(copy.deepcopy(config))  # defaults merged, node types filled in, as `ray up` does
    validate_config(prepared)  # Ray's own schema (ray/autoscaler/ray-schema.json)
    return prepared


def test_there_is_a_cloud_gpu_file_and_an_on_premises_ascend_file():
    assert [p.name for p in FILES] == ["cluster-ascend.yaml", "cluster.yaml"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_cluster_file_passes_ray_ups_offline_checks(path):
    config = yaml.safe_load(path.read_text())
    prepared = _check(config)
    commands = prepared["setup_commands"] + prepared["head_start_ray_commands"]
    assert any("pip install" in c and "boosttune" in c for c in commands)
    assert all(isinstance(c, str) for c in commands)
    assert not _credentials(config)  # credentials come from the user's environment, never from the file
    assert "EDIT" in path.read_text()  # says what a user must change


def _credentials(node, path="") -> list[str]:
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if any(word in str(key).lower() for word in ("password", "secret", "access_key", "private_key", "token")):
                found.append(f"{path}{key}")
            found += _credentials(value, f"{path}{key}.")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _credentials(value, f"{path}{index}.")
    return found


def test_the_gpu_file_gives_each_worker_a_gpu_and_the_head_the_driver_resource():
    nodes = yaml.safe_load((REPO / "cluster.yaml").read_text())["available_node_types"]
    assert nodes["gpu_worker"]["resources"]["GPU"] == 1 and nodes["head"]["resources"]["TRAIN_DRIVER"] > 0


@pytest.mark.parametrize("break_it, message", [
    (lambda c: c["available_node_types"]["gpu_worker"].update(min_workerz=1), "'min_workerz' was unexpected"),
    (lambda c: c.update(head_start_ray_commands=[{"ray start --head --resources='{\"X\"": "1}'"}]),
     "is not of type 'string'"),
])
def test_a_broken_file_is_rejected_with_rays_message(break_it, message):
    from jsonschema import ValidationError

    config = yaml.safe_load((REPO / "cluster.yaml").read_text())
    break_it(config)
    with pytest.raises(ValidationError, match=message):
        _check(config)


def _gpu_capacity() -> int:
    """The GPU ranks cluster.yaml's autoscaler may start, as a run on its head reads them (the file prepared as
    ``ray up`` writes it there for the autoscaler)."""
    from boosttune.execution.capacity import Autoscaler
    from boosttune.execution.ray import worker_resources

    prepared = _check(yaml.safe_load((REPO / "cluster.yaml").read_text()))
    return Autoscaler.from_cluster_config(prepared, "cluster.yaml").most_ranks(worker_resources("GPU"))


def test_the_docs_gpu_commands_fit_the_shipped_cluster_file():
    """A command shown for the GPU cluster (a `ray job submit` or a --device GPU command, outside the Ascend file)
    asks for no more ranks than that cluster can ever hold (one GPU per rank): the flagship command once asked for
    8 of its 4."""
    from tests.helpers.commands import shown

    capacity = _gpu_capacity()
    found = []
    for command in shown():
        words = command.words
        gpu = ("ray", "job", "submit") == words[:3] or "GPU" in words
        if gpu and "--workers" in words and not command.where.startswith("cluster-ascend"):
            found.append((command.where, int(words[words.index("--workers") + 1])))
    assert found and capacity == 4
    assert all(workers <= capacity for _, workers in found), (capacity, found)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_ray_up_from_a_project_installs_boosttune_from_its_checkout_and_the_guide_says_the_same(path):
    """``ray up`` runs where the team's project is (the file copied there): the file mounts boosttune's checkout, not
    the folder it runs in, installs that on every node (not linked: the version mounted), leaves out what the
    checkout's .gitignore lists (its .venv), and ships the project with each job. The guide names the same path."""
    config = yaml.safe_load(path.read_text())
    installs = [c for c in config["setup_commands"] if "pip install" in c]
    assert len(installs) == 1 and " -e " not in installs[0]
    remote = installs[0].split()[-1].replace("~", f"/home/{config['auth']['ssh_user']}")
    local = config["file_mounts"][remote]
    assert local == "~/boosttune" and local != "." and "." not in config["file_mounts"].values()
    assert ".gitignore" in config.get("rsync_filter", [])
    assert "Copy this file into your project's folder" in path.read_text()
    guide = (REPO / "docs" / "clusters-and-devices.md").read_text()
    assert "`~/boosttune`" in guide and "Copy cluster.yaml from boosttune's checkout into this folder" in guide
    from tests.helpers.commands import from_cluster_files

    submits = [c for c in from_cluster_files() if c.where.startswith(path.name) and c.words[:3] == ("ray", "job", "submit")]
    assert submits and all("--working-dir" in c.words for c in submits)


def test_a_run_on_the_gpu_clusters_head_waits_for_four_gpu_ranks_and_refuses_more_in_one_line():
    from boosttune.errors import ConfigError
    from boosttune.execution.capacity import Autoscaler, check_capacity
    from boosttune.execution.ray import worker_resources

    gpu = Autoscaler.from_cluster_config(_check(yaml.safe_load((REPO / "cluster.yaml").read_text())), "cluster.yaml")
    head = {"Alive": True, "Resources": {"CPU": 8.0, "TRAIN_DRIVER": 1000.0, "node:__internal_head__": 1.0}}
    lines = []
    check_capacity(worker_resources("GPU"), 4, log=lines.append, nodes=[head], autoscaler=gpu)
    assert lines == ["capacity: a trial's 4 ranks of (CPU 1, GPU 1) wait for the autoscaler: the cluster holds 0 "
                     "now; its autoscaler may add at most 4 (gpu_worker: 1 per node, at most 4; max_workers 4; read "
                     "from cluster.yaml)"]
    with pytest.raises(ConfigError, match=r"^workers_per_trial: 8 ranks of \(CPU 1, GPU 1\) each cannot be placed; "
                                          r"the cluster holds 0 such rank\(s\) \(1 node\(s\)\) and its autoscaler "
                                          r"may add at most 4 .*; allowed: 1 to 4$"):
        check_capacity(worker_resources("GPU"), 8, log=lines.append, nodes=[head], autoscaler=gpu)
    with pytest.raises(ConfigError, match=r"no node has CPU 1, NPU 1: add a node type that holds it"):
        check_capacity(worker_resources("Ascend"), 1, log=lines.append, nodes=[head], autoscaler=gpu)


def test_the_ascend_hosts_are_never_refused_before_they_join():
    """The on-premises file's hosts report their NPUs when they join (Ray fills in no resources for them): a run
    on its head waits for them rather than refusing."""
    from boosttune.execution.capacity import Autoscaler, check_capacity
    from boosttune.execution.ray import worker_resources

    prepared = _check(yaml.safe_load((REPO / "cluster-ascend.yaml").read_text()))
    hosts = Autoscaler.from_cluster_config(prepared, "cluster-ascend.yaml")
    assert hosts.most_ranks(worker_resources("Ascend")) is None
    lines = []
    check_capacity(worker_resources("Ascend"), 16, log=lines.append,
                   nodes=[{"Alive": True, "Resources": {"CPU": 8.0, "node:__internal_head__": 1.0}}], autoscaler=hosts)
    assert len(lines) == 1 and "may add any number" in lines[0]
