"""Every use of Ray that is not its public, documented API, behind one seam.

Ray 2.60 (the version the install pins) keeps these in ``ray._private`` and ``ray.train._internal``: the next
release may move them. Each function here names what it needs; :func:`unknown_layout` lists what this Ray does not
have, and tests/test_ray_internals.py fails with the Ray version and the missing name when the layout changes.
Callers fall back where they can (a missing accelerator detector: checked once Ray runs). Ray is imported inside.
"""

from __future__ import annotations

import os
from typing import Any, Callable

__all__ = ["HEAD_NODE_RESOURCE", "SEARCHER_PRIVATE", "TESTED_RAY", "accelerator_manager", "address_and_port",
           "adopt_search_properties", "autoscaler_config", "bootstrap_address", "data_parallel_trainer", "optuna_study",
           "optuna_told", "optuna_trial", "reported_node_groups", "state_nodes", "storage_fs_and_path", "task_state",
           "train_context_file", "unknown_layout"]

# The resource Ray puts on its head node (ray._private.ray_constants.HEAD_NODE_RESOURCE_NAME)
HEAD_NODE_RESOURCE = "node:__internal_head__"
TESTED_RAY = "2.60.0"  # the Ray whose private layout this module was written against (pyproject.toml pins it)


def accelerator_manager(resource: str) -> Any:
    """Ray's accelerator manager for ``resource`` ("GPU", "NPU"): counts and names the node's accelerators."""
    from ray._private.accelerators import get_accelerator_manager_for_resource

    return get_accelerator_manager_for_resource(resource)


def bootstrap_address() -> str | None:
    """The address of the cluster ``ray start`` last started on this machine, as ``ray.init()`` finds it."""
    from ray._private.services import find_bootstrap_address

    return find_bootstrap_address(None)


def storage_fs_and_path(path: str) -> tuple[Any, str]:
    """The pyarrow filesystem and path Ray Train's storage resolves ``path`` to (a folder or a bucket URI)."""
    from ray.train._internal.storage import get_fs_and_path

    return get_fs_and_path(path)


def address_and_port() -> tuple[str, int]:
    """A free address and port on this worker, as Ray Train's own backends pick their rendezvous."""
    from ray.train._internal.utils import get_address_and_port

    return get_address_and_port()


def train_context_file() -> str:
    """The file of Ray Train's context module, whose logger is named after it (Ray 2.60)."""
    from ray.train.v2._internal.execution import context

    return context.__file__


def data_parallel_trainer() -> Any:
    """Ray Train v2's DataParallelTrainer, from its versioned module (``ray.train.v2``, not yet the default in 2.60)."""
    from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

    return DataParallelTrainer


def task_state(task_id: str) -> str | None:
    """The state Ray's State API (a DeveloperAPI, served by the dashboard) reports for a task ("PENDING_...",
    "RUNNING", ...), None when it holds no such task yet."""
    from ray.util.state import list_tasks

    tasks = list_tasks(filters=[("task_id", "=", task_id)], raise_on_missing_output=False)
    return tasks[0].state if tasks else None


def state_nodes(address: str) -> list[tuple[bool, str, dict[str, float]]]:
    """The nodes of the cluster at ``address`` as Ray's State API (a DeveloperAPI, served by the dashboard) reports
    them, read without joining the cluster: (alive, ip, total resources) each."""
    from ray.util.state import list_nodes

    return [(node.state == "ALIVE", node.node_ip, {k: float(v) for k, v in (node.resources_total or {}).items()})
            for node in list_nodes(address=address, detail=True)]


def reported_node_groups() -> list[tuple[str, dict[str, float], int]] | None:
    """The node groups an autoscaler v2 (KubeRay's, for one) reported to the GCS: name, resources and most nodes
    (-1: no limit); None where none was reported. Needs a connected driver."""
    from ray._private.state import state

    config = state.get_cluster_config()
    if config is None:
        return None
    return [(g.name, {k: float(v) for k, v in g.resources.items()}, int(g.max_count))
            for g in config.node_group_configs]


MONITORS = ("autoscaler/_private/monitor.py", "autoscaler/v2/monitor.py")  # the autoscaler's process, by script


def autoscaler_config(gcs_address: str) -> tuple[str, dict[str, Any] | None] | None:
    """The cluster config the autoscaler of the cluster at ``gcs_address`` runs with, read from the file its monitor
    was started with (``ray start --head --autoscaling-config``, as ``ray up`` starts it): (path, config), or
    (reason, None) where the monitor runs without one (a cluster that does not grow); None where no monitor of that
    cluster runs on this machine (the driver is not on the head)."""
    import psutil
    import yaml

    port = gcs_address.rsplit(":", 1)[-1]
    for process in psutil.process_iter(["cmdline"]):
        try:
            command = process.info["cmdline"] or []
        except psutil.Error:
            continue
        if not any(arg.replace(os.sep, "/").endswith(MONITORS) for arg in command):
            continue
        options = _options(command)
        if options.get("gcs-address", "").rsplit(":", 1)[-1] != port:
            continue  # another cluster's monitor on this machine
        path = options.get("autoscaling-config")
        if not path:
            return "its monitor runs without --autoscaling-config", None
        path = os.path.expanduser(path)
        with open(path) as f:
            return path, yaml.safe_load(f) or {}
    return None


def _options(command: list[str]) -> dict[str, str]:
    """``--name=value`` and ``--name value`` arguments of a command line."""
    options = {}
    for i, arg in enumerate(command):
        if not arg.startswith("--"):
            continue
        name, _, value = arg[2:].partition("=")
        if not value and i + 1 < len(command) and not command[i + 1].startswith("--"):
            value = command[i + 1]
        options[name] = value
    return options


# Attributes of Ray Tune's searchers that boosttune reads or sets (Ray 2.60): OptunaSearch keeps Optuna's trial per
# Tune trial, the trials it has told Optuna, and its study; a Searcher keeps its metric and mode. Nothing outside this
# module names them (tests/test_ray_internals.py checks the package's source).
SEARCHER_PRIVATE = ("_ot_trials", "_completed_trials", "_ot_study", "_metric", "_mode")


def optuna_trial(searcher: Any, trial_id: str) -> Any:
    """The Optuna trial an OptunaSearch opened for Tune's ``trial_id`` (None when it opened none)."""
    return searcher._ot_trials.get(trial_id)


def optuna_told(searcher: Any, trial_id: str) -> bool:
    """Whether an OptunaSearch has already told Optuna how ``trial_id`` ended."""
    return trial_id in searcher._completed_trials


def optuna_study(searcher: Any) -> Any:
    """The Optuna study an OptunaSearch drives (None before Tune set it up)."""
    return searcher._ot_study


def adopt_search_properties(searcher: Any, wrapped: Any) -> None:
    """A wrapping Searcher takes the metric and mode of the one it wraps (Ray sets them only through
    ``set_search_properties``, which a wrapper forwards)."""
    searcher._metric, searcher._mode = wrapped.metric, wrapped.mode


def _searcher_layout() -> None:
    """OptunaSearch and Searcher still keep the attributes SEARCHER_PRIVATE names (AttributeError where one moved)."""
    from ray.tune.search.optuna import OptunaSearch

    searcher = OptunaSearch()
    for name in SEARCHER_PRIVATE:
        getattr(searcher, name)


_USES: dict[str, Callable[[], Any]] = {
    "ray.tune.search.optuna.OptunaSearch (" + ", ".join(SEARCHER_PRIVATE) + ")": _searcher_layout,
    "ray.train.v2.api.data_parallel_trainer.DataParallelTrainer": data_parallel_trainer,
    "ray._private.accelerators.get_accelerator_manager_for_resource": lambda: accelerator_manager,
    "ray._private.services.find_bootstrap_address": lambda: __import__(
        "ray._private.services", fromlist=["find_bootstrap_address"]).find_bootstrap_address,
    "ray.train._internal.storage.get_fs_and_path": lambda: __import__(
        "ray.train._internal.storage", fromlist=["get_fs_and_path"]).get_fs_and_path,
    "ray.train._internal.utils.get_address_and_port": lambda: __import__(
        "ray.train._internal.utils", fromlist=["get_address_and_port"]).get_address_and_port,
    "ray.train.v2._internal.execution.context": train_context_file,
    "ray.util.state.list_tasks": lambda: __import__("ray.util.state", fromlist=["list_tasks"]).list_tasks,
    "ray.util.state.list_nodes": lambda: __import__("ray.util.state", fromlist=["list_nodes"]).list_nodes,
    "ray._private.state.state.get_cluster_config": lambda: __import__(
        "ray._private.state", fromlist=["state"]).state.get_cluster_config,
    "ray/autoscaler/_private/monitor.py": lambda: _exists(MONITORS[0]),
}


def _exists(script: str) -> str:
    """The path of a script of Ray's, which must exist (ImportError where it moved)."""
    import ray

    path = os.path.join(os.path.dirname(ray.__file__), *script.split("/"))
    if not os.path.isfile(path):
        raise ImportError(f"no {script} in this Ray")
    return path


def unknown_layout() -> list[str]:
    """What this process's Ray lacks of what boosttune uses, each as "name (Ray X; written for TESTED_RAY)"."""
    import ray

    missing = []
    for name, use in _USES.items():
        try:
            use()
        except (ImportError, AttributeError) as e:
            missing.append(f"{name} (Ray {ray.__version__}; written for {TESTED_RAY}: {type(e).__name__})")
    return missing
