"""The one owner of Ray: connecting to it, the local instance's defaults, what one rank asks for, and a task's
errors unwrapped (whether a cluster can place a trial: :mod:`boosttune.execution.capacity`).

Everything else reaches Ray through this module; Ray Train's backend (:mod:`boosttune.execution.ray_train`)
and Ray Tune's search (:mod:`boosttune.search.tune`) build on it.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import ray

from boosttune.config.experiment import ExperimentConfig
from boosttune.devices import ACCELERATOR_RESOURCES
from boosttune.errors import BoosttuneError, ConfigError
from boosttune.execution.provenance import redact
from boosttune.ray_internals import bootstrap_address, state_nodes

__all__ = ["DASHBOARD_PORT", "DRIVER_RESOURCE", "LOCAL_TRAIN_ENV", "cluster_address", "cluster_nodes",
           "code_runtime_env", "connect_ray", "describe_code", "describe_resources", "free_port", "job_working_dir",
           "local_train_defaults", "own_instance_env", "ray_get", "running_cluster", "trial_driver_resources",
           "worker_resources"]

DRIVER_RESOURCE = "TRAIN_DRIVER"  # trial drivers take no CPU: the CPUs go to the Train workers


# Ray Train settings for a local instance, each a default the environment overrides. Its controller polls the
# workers every 2 s (so a finished run was noticed up to 2 s late) and starts a preemption watcher per run,
# which only a cluster whose nodes can be preempted needs: together about 4 s of a 17 s LeNet trial here.
LOCAL_TRAIN_ENV = {"RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.5", "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0"}


# --- connecting -------------------------------------------------------------------------------------------


def connect_ray(log: Callable[[str], None], runtime_env: dict[str, Any] | None = None) -> str:
    """Join the cluster in RAY_ADDRESS (``ray job submit`` sets it) or the one ``ray start`` runs on this machine
    (``ray submit`` runs the script on the head), else start a local one (the embedded default).

    ``runtime_env`` (:func:`code_runtime_env`): the user's code, which Ray ships to every worker of this job.
    """
    # Ctrl-C is a KeyboardInterrupt, as in any Python program. Tune's own handler would end the search
    # "gracefully" and return from fit() as if it were done, so the confirm stage would start on a partial
    # search; Ray Train's fit() runs a Tune loop too. The command line turns the interrupt into the exact
    # command that resumes; what finished is on disk already.
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
    if ray.is_initialized():
        if runtime_env:
            log(f"ray: already initialised in this process, so {describe_code(runtime_env)} is not shipped by "
                "boosttune; pass it to your own ray.init(runtime_env=...) if the workers cannot import it")
        return "already connected"
    address = cluster_address()
    shipped = {"runtime_env": copy.deepcopy(runtime_env)} if runtime_env else {}  # ray.init rewrites it
    if address:
        ray.init(address=address, log_to_driver=True, **shipped)
        where = f"cluster at {address}"
    else:
        local_train_defaults()
        port = free_port(DASHBOARD_PORT)
        own = own_instance_env(port)
        shipped["runtime_env"] = {**shipped.get("runtime_env", {}),
                                  "env_vars": {**(shipped.get("runtime_env") or {}).get("env_vars", {}), **own}}
        with _ctrl_c_for_the_driver_alone():
            ray.init(resources={DRIVER_RESOURCE: 1000}, log_to_driver=True, dashboard_port=port, **shipped)
        where = f"a local Ray instance (the embedded default; dashboard at http://127.0.0.1:{port})"
    if runtime_env:
        log(f"ray: {describe_code(runtime_env)} shipped to every worker (Ray runtime environment)")
    log(f"ray: connected to {where}: {ray.cluster_resources().get('CPU', 0):.0f} CPUs, "
        f"{len([n for n in ray.nodes() if n['Alive']])} node(s)")
    return where


DASHBOARD_PORT = 8265  # Ray's default: a local instance takes it when it is free, else the next free port


def free_port(preferred: int) -> int:
    """``preferred`` when nothing listens on it here, else a port the system has free now."""
    import socket

    for port in (preferred, 0):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise BoosttuneError("no free TCP port on 127.0.0.1 for the local Ray instance's dashboard")


def own_instance_env(dashboard_port: int) -> dict[str, str]:
    """What every process of a local instance is told of its own address, so that it never goes looking for one.

    Ray's State API (Ray Train's placement-group cleaner asks it whether the controller still lives) finds the
    cluster of a worker that was given no address by listing the GCS servers running on the machine; with a second
    local instance there (a colleague's run, the tests) it raises "Found multiple active Ray instances" in the
    other run's workers. Its address variable, pointed at this instance's dashboard, keeps each run to its own.
    """
    return {"RAY_API_SERVER_ADDRESS": f"http://127.0.0.1:{dashboard_port}"}


@contextmanager
def _ctrl_c_for_the_driver_alone() -> Iterator[None]:
    """Start the local instance's processes with Ctrl-C ignored: a terminal sends it to the whole foreground process
    group, and the dashboard's modules it killed left Ray Train's controller waiting ~10 s on the State API before
    the driver could exit. The driver still gets KeyboardInterrupt and shuts Ray down itself."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # inherited through fork and exec
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def cluster_address() -> str | None:
    """The cluster :func:`connect_ray` would join (RAY_ADDRESS, or the one ``ray start`` runs here), or None: it
    would start a local instance."""
    return os.environ.get("RAY_ADDRESS") or running_cluster()


def cluster_nodes(address: str) -> list[dict[str, Any]]:
    """The nodes of the cluster at ``address`` as :func:`ray.nodes` gives them (``Alive``, ``Resources``,
    ``NodeManagerAddress``), read through Ray's State API without joining it: a driver joins once, with the runtime
    environment it ships, which a connection cannot change once made."""
    return [{"Alive": alive, "NodeManagerAddress": ip, "Resources": resources}
            for alive, ip, resources in state_nodes(address)]


def running_cluster() -> str | None:
    """The address of the cluster ``ray start`` last started on this machine, if one runs (as ``ray.init()`` finds it)."""
    try:
        return bootstrap_address()
    except Exception:  # a private API: without it, RAY_ADDRESS still works
        return None


def local_train_defaults() -> None:
    """Apply :data:`LOCAL_TRAIN_ENV` where unset; call before a local Ray starts (its processes inherit it)."""
    for key, value in LOCAL_TRAIN_ENV.items():
        os.environ.setdefault(key, value)


def trial_driver_resources() -> dict[str, float]:
    """What a search trial's driver asks for: the local instance's own driver resource (:func:`connect_ray` makes
    it), else, on a cluster, a sliver of a CPU."""
    return {DRIVER_RESOURCE: 1} if ray.cluster_resources().get(DRIVER_RESOURCE) else {"CPU": 0.01}


def code_runtime_env(config: ExperimentConfig | Any, start_dir: Path, output: Path | None = None) -> dict[str, Any] | None:
    """What of the user's code Ray ships to every node: ``working_dir`` and ``py_modules``, absolute.

    ``config``: an experiment, or anything with a ``recipe`` (a bench: its folder only, no fields to name others).

    By default, for a builder of the user's own (``base.model.entry``), the folder the command was started from,
    as ``ray job submit --working-dir .`` would ship it (Ray leaves out what ``.gitignore``/``.rayignore`` list).
    Nothing inside a Ray job that shipped a working_dir already (the job's workers have it), and nothing for the
    built-in models unless asked. The run's ``output`` folder, when it lies inside the working_dir, is left out
    (a project's runs/ would otherwise travel with every later run).

    Raises:
        ConfigError: a folder or module that does not exist.
    """
    in_job = job_working_dir() is not None
    working_dir = getattr(config, "working_dir", None)
    if working_dir is None and not config.recipe.builtin and not in_job:
        working_dir = "."
    env: dict[str, Any] = {}
    if working_dir is not None:
        folder = (start_dir / working_dir).resolve()
        if not folder.is_dir():
            raise ConfigError(f"working_dir: {str(folder)!r} is not a folder; allowed: the folder of the project "
                              "that holds the model builder")
        env["working_dir"] = str(folder)
        excludes = ["__pycache__/"]
        for inside in (output, (start_dir / "runs").resolve()):  # runs/: where boosttune writes by default
            if inside is not None and inside.is_relative_to(folder) and inside != folder:
                excludes.append("/" + inside.relative_to(folder).as_posix() + "/")
        env["excludes"] = sorted(set(excludes))
    modules = []
    for module in getattr(config, "py_modules", ()):
        path = (start_dir / module).resolve()
        if not path.exists():
            raise ConfigError(f"py_modules: {str(path)!r} does not exist; allowed: a package folder or a .py file")
        modules.append(str(path))
    if modules:
        env["py_modules"] = modules
    return env or None


def job_working_dir() -> str | None:
    """The working_dir of the Ray job this driver runs in (``ray job submit --working-dir``), or None. Ray unpacks it
    into a temporary folder and deletes it when the job ends."""
    job = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR") or "{}")
    return (job.get("runtime_env") or {}).get("working_dir") or None


def describe_code(runtime_env: dict[str, Any]) -> str:
    parts = []
    if runtime_env.get("working_dir"):
        parts.append(f"working_dir {redact(runtime_env['working_dir'])}")
    if runtime_env.get("py_modules"):
        parts.append("py_modules " + ", ".join(redact(m) for m in runtime_env["py_modules"]))
    return " and ".join(parts)


# --- what a rank asks for, and whether the cluster holds it ----------------------------------------------


def worker_resources(device_target: str) -> dict[str, float]:
    """What one MindSpore rank asks Ray for: a CPU, and one accelerator of the device's kind."""
    resources = {"CPU": 1.0}
    if device_target in ACCELERATOR_RESOURCES:
        resources[ACCELERATOR_RESOURCES[device_target][0]] = 1.0
    return resources


def describe_resources(resources: Mapping[str, float], only: tuple[str, ...] | None = None) -> str:
    """``CPU 1, GPU 1``: resources as the user reads them (``only`` those kinds)."""
    shown = [(k, v) for k, v in resources.items() if only is None or k in only]
    return ", ".join(f"{k} {v:g}" for k, v in shown) or "nothing"


# --- a task's errors ---------------------------------------------------------------------------------------


def ray_get(refs, **kwargs):
    """``ray.get``, re-raising a boosttune error a task raised as itself (one line), not as Ray's traceback."""
    try:
        return ray.get(refs, **kwargs)
    except ray.exceptions.RayTaskError as e:
        if isinstance(e.cause, BoosttuneError):
            raise e.cause from None
        raise
