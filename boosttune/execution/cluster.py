"""Where things run on a Ray cluster: the probe and the model's first build on a worker that holds the trials'
accelerator, trials sized from what the cluster has, and a storage location every node can reach.

The capability probe and the speed calibration run as a Ray task that asks for exactly what one
trial rank asks for (:func:`boosttune.execution.ray.worker_resources`), so they land on the kind of node
the trials will use: a cluster's head is often CPU-only, and a probe there would mark every GPU knob
unsupported. Results are cached per node type (device, CPU model, accelerator model, MindSpore and
boosttune versions) on the node that measured them and, through the driver, on the head, which sends
its cache along so a new node of a known type does not probe again.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Mapping

import ray

from boosttune.config.recipe import parse_recipe
from boosttune.errors import ConfigError
from boosttune.execution.provenance import redact
from boosttune.execution.capacity import placeable_ranks
from boosttune.execution.ray import describe_resources, ray_get, worker_resources
from boosttune.files import write_atomically
from boosttune.probe import ProbeReport, run_probe
from boosttune.probe.calibrate import SpeedReport, run_calibration
from boosttune.probe.report import cache_dir
from boosttune.ray_internals import task_state
from boosttune.runtime import apply_runtime_env
from boosttune.trial.parts import preflight

__all__ = ["WorkerProbe", "check_shared", "check_storage", "default_concurrency", "facts_on_worker",
           "probe_on_worker", "task_options"]


@dataclass(frozen=True)
class WorkerProbe:
    """The probe's and the calibration's findings, and the node they were measured on."""

    report: ProbeReport
    speed: SpeedReport | None
    node_id: str
    node_ip: str
    hostname: str
    lines: tuple[str, ...] = ()  # what the task printed there (Ray forwards it to the driver's output as it goes)


def _cached_files(device_target: str) -> dict[str, str]:
    folder = cache_dir()
    if not folder.is_dir():
        return {}
    prefixes = (f"{device_target.lower()}-", f"speed-{device_target.lower()}-")
    return {p.name: p.read_text() for p in folder.glob("*.json") if p.name.startswith(prefixes)}


def _store_cached(files: Mapping[str, str]) -> None:
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        if not (folder / name).exists():
            write_atomically(folder / name, lambda temp, t=text: temp.write_text(t))


def _probe_here(device_target: str, calibrate: bool, known: dict[str, str], refresh: bool,
                base: dict[str, Any] | None = None) -> dict[str, Any]:
    """Runs in the Ray task: probe (and calibrate on ``base``'s network) this node, with the head's cache of known
    node types."""
    _store_cached(known)
    lines: list[str] = []

    def log(message: str) -> None:
        lines.append(message)
        print(message, flush=True)

    report = run_probe(device_target, refresh=refresh, log=log)
    speed = run_calibration(report, base=base, refresh=refresh, log=log) if calibrate else None
    context = ray.get_runtime_context()
    return {"report": report.to_dict(), "speed": asdict(speed) if speed is not None else None,
            "node_id": context.get_node_id(), "node_ip": ray.util.get_node_ip_address(),
            "hostname": socket.gethostname(), "cache": _cached_files(device_target), "lines": lines}


def probe_on_worker(device_target: str, *, calibrate: bool, refresh: bool = False,
                    accelerator_type: str | None = None, log: Callable[[str], None] = print,
                    wait_note_s: float = 60.0, base: dict[str, Any] | None = None,
                    per_rank: Mapping[str, float] | None = None) -> WorkerProbe:
    """Probe (and calibrate on ``base``'s network, the experiment's base recipe) on a node that holds what a trial
    rank asks for; the findings and the node.

    Until it ends, says every ``wait_note_s`` how long it has taken, and, while it still waits for a node, what it
    waits for and what the cluster has. ``per_rank``: what a trial rank asks for (the device's by default).
    """
    per_rank = per_rank or worker_resources(device_target)
    options = {**task_options(per_rank, accelerator_type), "max_retries": 0}
    task = ray.remote(max_calls=1)(_probe_here).options(**options)  # a fresh process: MindSpore state stays there
    ref = task.remote(device_target, calibrate, _cached_files(device_target), refresh, base)
    asked = describe_resources(per_rank)
    started = time.monotonic()
    while True:
        ready, _ = ray.wait([ref], timeout=wait_note_s)
        if ready:
            break
        elapsed = time.monotonic() - started
        if _task_running(ref):
            log(f"probe: running for {elapsed:.0f} s" + (" (the calibration times each knob between O0 runs)"
                                                         if calibrate else ""))
        else:
            log(f"probe: waiting {elapsed:.0f} s for a node with {asked} "
                f"(the cluster has {describe_resources(ray.available_resources(), only=('CPU', 'GPU', 'NPU'))} free)")
    found = ray_get(ref)
    _store_cached(found["cache"])  # the head learns this node type
    report = ProbeReport.from_dict(found["report"])
    speed = SpeedReport(**found["speed"]) if found["speed"] is not None else None
    log(f"probe: measured on node {found['hostname']} ({found['node_ip']}, {found['node_id'][:8]}), "
        f"which holds {asked} like every trial rank")
    return WorkerProbe(report=report, speed=speed, node_id=found["node_id"], node_ip=found["node_ip"],
                       hostname=found["hostname"], lines=tuple(found["lines"]))


def _facts_here(base: dict[str, Any], workers: int, env: dict[str, str], work_dir: str) -> dict[str, Any]:
    """Runs in the Ray task: the runtime settings first (MindSpore reads them as it is imported), then the build."""
    apply_runtime_env(env)
    return preflight(parse_recipe(base), workers, work_dir)


def facts_on_worker(device_target: str, base: dict[str, Any], workers: int, env: dict[str, str], work_dir: str,
                    accelerator_type: str | None = None, per_rank: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The base recipe's parts built as every rank would, one step trained and one batch evaluated, where MindSpore
    runs (a node that holds what a trial rank asks for): a builder that does not fit is refused before the baseline;
    the steps, parameter tensors and objective the search needs."""
    options = task_options(per_rank or worker_resources(device_target), accelerator_type)
    task = ray.remote(max_calls=1)(_facts_here).options(**options)  # a fresh process: MindSpore state stays there
    return ray_get(task.remote(base, workers, env, work_dir))


def _task_running(ref) -> bool:
    """Whether the task has started on a node (Ray's state API); True when that cannot be told."""
    try:
        state = task_state(ref.task_id().hex())
    except Exception:  # the state API needs the dashboard (ray[default]); without it, say nothing wrong
        return True
    return state not in ("PENDING_ARGS_AVAIL", "PENDING_NODE_ASSIGNMENT", "PENDING_OBJ_STORE_MEM_AVAIL",
                         "PENDING_ARGS_FETCH")


def task_options(per_rank: Mapping[str, float], accelerator_type: str | None = None) -> dict[str, Any]:
    """Ray task options that ask for what one trial rank asks for, so the task lands where trials run."""
    options: dict[str, Any] = {"num_cpus": per_rank.get("CPU", 1.0)}
    if per_rank.get("GPU"):
        options["num_gpus"] = per_rank["GPU"]
    custom = {k: v for k, v in per_rank.items() if k not in ("CPU", "GPU")}
    if accelerator_type:
        custom[f"accelerator_type:{accelerator_type}"] = 0.001  # Ray's label resource for the model
    if custom:
        options["resources"] = custom
    return options


def default_concurrency(nodes: Iterable[Mapping[str, Any]], per_rank: Mapping[str, float], workers: int) -> int:
    """Trials at once when the user does not say: as many as the cluster holds without sharing a node's CPUs.

    On CPU nodes, one trial per node that can hold a whole trial (two trials on one node's cores would skew
    each other's timings). With accelerators, as many trials as the accelerators hold, ``workers`` each.
    """
    counts = placeable_ranks(nodes, per_rank)
    accelerated = any(k != "CPU" for k in per_rank)
    if accelerated:
        return max(1, sum(counts) // max(1, workers))
    return max(1, sum(1 for count in counts if count >= workers))


def check_storage(storage: str) -> str:
    """A storage location every node can reach (a shared path or a bucket URI), checked before anything trains."""
    import pyarrow.fs  # only with --storage

    if "://" not in storage:
        storage = os.path.abspath(os.path.expanduser(storage))
    try:
        filesystem, path = pyarrow.fs.FileSystem.from_uri(storage) if "://" in storage else (
            pyarrow.fs.LocalFileSystem(), storage)
        filesystem.create_dir(path, recursive=True)
        marker = f"{path.rstrip('/')}/.boosttune_storage_check"
        with filesystem.open_output_stream(marker) as stream:
            stream.write(json.dumps({"checked": time.time()}).encode())
        filesystem.delete_file(marker)
    except Exception as e:  # pyarrow raises many kinds for a bad URI, missing credentials or a read-only path
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ConfigError(f"storage: {redact(storage)!r} is not writable ({redact(message)}); allowed: a folder every node "
                          "can write (e.g. an NFS mount) or a bucket URI such as s3://bucket/path") from None
    return storage


def _sees(path: str, token: str) -> dict[str, str | bool]:
    """Runs on one node: whether the file the driver wrote at ``path`` is there with ``token`` in it."""
    try:
        seen = open(path).read() == token
    except OSError:
        seen = False
    return {"seen": seen, "node_ip": ray.util.get_node_ip_address(), "hostname": socket.gethostname()}


def check_shared(storage: str, what: str = "storage") -> None:
    """Refuse, in one line before anything trains, a folder ``storage`` that not every node of the cluster sees: the
    driver writes a file there and a task on each alive node reads it (Ray schedules them by node, at no CPU). A
    bucket URI is every node's by construction, and so is a folder on a local instance's one node.

    Raises:
        ConfigError: naming the folder and the first node that does not see it.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if "://" in storage:
        return
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if len(nodes) < 2:
        return
    token = os.urandom(8).hex()
    marker = os.path.join(storage, f".boosttune_shared_{token}")
    with open(marker, "w") as stream:
        stream.write(token)
    try:
        sees = ray.remote(_sees)
        refs = [sees.options(num_cpus=0, max_retries=0,
                             scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                .remote(marker, token) for n in nodes]
        for node, found in zip(nodes, ray_get(refs)):
            if not found["seen"]:
                raise ConfigError(
                    f"{what}: {redact(storage)!r} is not shared: node {found['hostname']} ({found['node_ip']}, "
                    f"{node['NodeID'][:8]}) does not see the file the driver wrote there; allowed: a folder every "
                    "node mounts (e.g. NFS) or a bucket URI such as s3://bucket/path")
    finally:
        os.remove(marker)
