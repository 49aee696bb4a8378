"""A MindSpore backend for Ray Train (V2) and the per-worker training loop.

Ray has no MindSpore backend. ``MindSporeConfig`` starts MindSpore's dynamic-cluster scheduler as
a child of rank 0's worker, sets ``MS_ROLE``/``MS_SCHED_HOST``/``MS_SCHED_PORT``/``MS_WORKER_NUM``/
``MS_NODE_ID`` on every worker so that ``mindspore.communication.init()`` forms one data-parallel
group, and kills the scheduler when the worker group shuts down (and, through ``PR_SET_PDEATHSIG``,
whenever rank 0's process dies). Ray world rank == MindSpore rank.

This is the one module that owns Ray Train; it imports MindSpore only inside worker processes (MindSpore is
heavy, and the driver never needs it: those imports stay inside the functions that run there).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import ray
from ray.train.backend import Backend, BackendConfig

from boosttune.config.recipe import parse_recipe
from boosttune.devices import ACCELERATOR_RESOURCES, DEVICES
from boosttune.execution.ray import connect_ray, worker_resources
from boosttune.execution.runs import CURVE_KEYS, RunRecord, RunSpec
from boosttune.files import write_json
from boosttune.ray_internals import address_and_port, data_parallel_trainer, train_context_file
from boosttune.runtime import apply_cpu_threads
from boosttune.trial.runner import run_trial
from boosttune.tables.states import RunStatus

__all__ = ["SCHEDULER_MARKER", "MindSporeConfig", "build_trainer", "device_id_for", "init_device", "rank_facts",
           "run_on_ray", "scheduler_host", "train_in_turns", "train_loop_per_worker", "train_rank", "train_run",
           "worker_error_reason"]

# Appears in the scheduler's command line, so tests (and people) can find orphans.
SCHEDULER_MARKER = "boosttune-mindspore-scheduler"
_scheduler: subprocess.Popen | None = None  # in rank 0's worker process

def device_id_for(device_target: str, environ: Mapping[str, str], accelerator_ids: Mapping[str, list[str]]) -> int:
    """The ``device_id`` MindSpore must use in this rank: its own accelerator, as the process sees it.

    Ray restricts each rank's visibility to the accelerator it assigned (``CUDA_VISIBLE_DEVICES`` /
    ``ASCEND_RT_VISIBLE_DEVICES``), so the process sees it at an index of that list, usually 0. If
    visibility is not restricted (``RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES``), the physical id.
    """
    if device_target not in ACCELERATOR_RESOURCES:
        return 0
    resource, variable = ACCELERATOR_RESOURCES[device_target]
    own = list(accelerator_ids.get(resource, []))
    visible = [v.strip() for v in environ.get(variable, "").split(",") if v.strip()]
    if not own:
        return 0
    if visible:
        return visible.index(own[0]) if own[0] in visible else 0
    return int(own[0])


@dataclass
class MindSporeConfig(BackendConfig):
    """Ray Train backend for MindSpore data parallelism.

    Args:
        device_target: "CPU", "GPU" (one ``GPU`` per worker) or "Ascend" (one of Ray's native ``NPU``
            per worker); :func:`~boosttune.execution.ray.worker_resources` is what each rank asks for.
        env: environment set on every worker before MindSpore is imported, e.g. the probe's
            ``{"ONEDNN_MAX_CPU_ISA": "AVX2"}``.
        start_timeout_s: how long a worker waits in ``communication.init()`` for the others.
    """

    device_target: str = "CPU"
    env: dict[str, str] = field(default_factory=dict)
    start_timeout_s: int = 120

    @property
    def backend_cls(self):
        return _MindSporeBackend


def _merge_env(target, env: dict[str, str]) -> None:
    """Apply ``env`` to a mapping; the value "default" removes the variable (the library decides)."""
    for key, value in env.items():
        if value == "default":
            target.pop(key, None)
        else:
            target[key] = value


def _set_env(env: dict[str, str]) -> None:
    _merge_env(os.environ, env)


def _die_with_parent() -> None:
    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass  # not Linux: on_shutdown still kills it


def _start_scheduler(host: str, port: int, world_size: int, device_target: str, env: dict[str, str]) -> int:
    global _scheduler
    child_env = dict(os.environ, MS_ROLE="MS_SCHED", MS_SCHED_HOST=host, MS_SCHED_PORT=str(port),
                     MS_WORKER_NUM=str(world_size), GLOG_v=os.environ.get("GLOG_v", "3"))
    _merge_env(child_env, env)
    code = ("import sys, mindspore as ms; from mindspore.communication import init; "
            f"ms.set_context(device_target={device_target!r}); init()")
    _scheduler = subprocess.Popen([sys.executable, "-c", code, SCHEDULER_MARKER], env=child_env,
                                  preexec_fn=_die_with_parent, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    return _scheduler.pid


def _stop_scheduler() -> None:
    global _scheduler
    if _scheduler is None:
        return
    if _scheduler.poll() is None:
        _scheduler.terminate()
        try:
            _scheduler.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _scheduler.kill()
            _scheduler.wait(timeout=5)
    _scheduler = None


def _worker_env(host: str, port: int, world_size: int, rank: int) -> None:
    os.environ.update(MS_ROLE="MS_WORKER", MS_SCHED_HOST=host, MS_SCHED_PORT=str(port),
                      MS_WORKER_NUM=str(world_size), MS_NODE_ID=str(rank))


class _MindSporeBackend(Backend):
    def on_start(self, worker_group, backend_config: MindSporeConfig) -> None:

        env = {"GLOG_v": os.environ.get("GLOG_v", "3"), **backend_config.env,
               "BOOSTTUNE_DEVICE_TARGET": backend_config.device_target,
               "BOOSTTUNE_START_TIMEOUT_S": str(backend_config.start_timeout_s)}
        ray.get(worker_group.execute_async(_set_env, env))
        world_size = len(worker_group)
        if world_size == 1:
            return  # one process needs no MindSpore cluster (and saves its start-up time)
        host, port = worker_group.execute_single(0, address_and_port)
        host = scheduler_host(host, worker_group.execute(_node_id))
        worker_group.execute_single(0, _start_scheduler, host, port, world_size, backend_config.device_target,
                                    backend_config.env)
        ray.get([worker_group.execute_single_async(rank, _worker_env, host, port, world_size, rank)
                 for rank in range(world_size)])

    def on_shutdown(self, worker_group, backend_config: MindSporeConfig) -> None:
        if len(worker_group) > 1:
            try:
                worker_group.execute_single(0, _stop_scheduler)
            except Exception:  # rank 0 is gone: PR_SET_PDEATHSIG has killed its scheduler
                pass


def _node_id() -> str:
    return ray.get_runtime_context().get_node_id()


def scheduler_host(rank0_address: str, node_ids: list[str]) -> str:
    """Where MindSpore's scheduler listens: loopback when every rank runs on rank 0's node, else its address."""
    return "127.0.0.1" if len(set(node_ids)) == 1 else rank0_address


def init_device(device_target: str, world_size: int) -> dict[str, Any]:
    """Set MindSpore's device (the rank's own accelerator) and join the data-parallel group; what it got."""
    import mindspore as ms

    ids = ray.get_runtime_context().get_accelerator_ids()
    device_id = device_id_for(device_target, os.environ, ids)
    ms.set_context(mode=ms.GRAPH_MODE, device_target=device_target, device_id=device_id)
    threads = apply_cpu_threads()
    if world_size > 1:
        from mindspore.communication import init

        init()
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True,
                                     device_num=world_size)
    placed = {"device_id": device_id, "cpu_threads": threads}
    if device_target in ACCELERATOR_RESOURCES:
        resource, variable = ACCELERATOR_RESOURCES[device_target]
        placed.update(accelerator_ids=",".join(ids.get(resource, [])), visible_devices=os.environ.get(variable, ""))
    return placed


def _worker_log(rank: int) -> Callable[[str], None]:
    """Print a worker's progress once.

    Ray Train patches ``print`` in its workers to tee into its logger as well, which reaches the driver
    twice; and it logs every ``ray.train.report`` call in full at INFO. Write to the process's own
    stdout instead (Ray forwards it to the driver) and keep Ray Train's report log for warnings.
    """
    import logging

    try:  # its logger is named after its file (Ray 2.60)
        logging.getLogger(train_context_file()).setLevel(logging.WARNING)
    except ImportError:
        pass

    def log(message: str) -> None:
        sys.__stdout__.write(f"[rank {rank}] {message}\n")
        sys.__stdout__.flush()

    return log


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """One rank of a trial: its shard of the data, metrics to ``ray.train.report`` every epoch."""
    import ray.train

    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    recipe = parse_recipe(config["recipe"])
    start = time.perf_counter()
    placed = init_device(recipe.device_target, world_size)
    extra = rank_facts(rank, placed, comm_init_s=time.perf_counter() - start)
    checkpoint_dir = None
    callbacks = []
    if config.get("keep_checkpoint") and rank == 0:  # identical weights on every rank: one copy is enough
        checkpoint_dir = Path(tempfile.mkdtemp(prefix="boosttune_ckpt_"))
        callbacks.append(_save_checkpoint(checkpoint_dir / "model.ckpt"))
    summary = train_rank(recipe, config, rank=rank, world_size=world_size, extra=extra,
                         report=lambda metrics: ray.train.report(metrics), callbacks=callbacks)
    checkpoint = ray.train.Checkpoint.from_directory(str(checkpoint_dir)) if checkpoint_dir else None
    ray.train.report(summary, checkpoint=checkpoint)


def rank_facts(rank: int, placed: dict[str, Any], *, comm_init_s: float) -> dict[str, Any]:
    """What every report of this rank carries: where it runs and what joining the group cost."""
    return {"world_rank": rank, "node_id": ray.get_runtime_context().get_node_id(),
            "node_ip": ray.util.get_node_ip_address(), "comm_init_s": comm_init_s, "pid": os.getpid(), **placed}


def train_rank(recipe, config: dict[str, Any], *, rank: int, world_size: int, extra: dict[str, Any],
               report: Callable[[dict[str, Any]], None], callbacks: list[Any] = (),
               graph_cache: Any = None) -> dict[str, Any]:
    """Train this rank's part of one run (the device already set); every epoch's metrics to ``report``; the
    run's summary (also written as ``rank<N>.json`` under ``config["artifacts_dir"]``). ``graph_cache``: a warm
    worker's :class:`~boosttune.trial.graphs.GraphCache`."""

    def reporter(metrics: dict[str, Any]) -> None:
        report({**metrics, **extra, "final": False})

    callbacks = list(callbacks)
    artifacts = Path(config["artifacts_dir"]) if config.get("artifacts_dir") else None
    if artifacts is not None:
        callbacks.append(_save_weights(artifacts / f"rank{rank}.npz"))
    work_dir = config.get("work_dir") or os.path.join(tempfile.gettempdir(), "boosttune")
    result = run_trial(recipe, reporter=reporter, work_dir=work_dir, num_shards=world_size, shard_id=rank,
                       extra_callbacks=callbacks, log=_worker_log(rank), graph_cache=graph_cache)
    final = {k: v for k, v in result.metrics.items() if isinstance(v, (int, float, str, bool)) or v is None}
    curve = [{key: epoch.get(key) for key in CURVE_KEYS} for epoch in result.epochs]
    summary = {**final, **extra, "final": True, "status": result.status, "reason": result.reason or "",
               "observed_boost": result.observed_boost, "boost_config_dict": result.boost_config_dict,
               "environment": result.environment, "curve": curve}
    if artifacts is not None:
        write_json(artifacts / f"rank{rank}.json", summary)
    return summary


def _at_train_end(action):
    """A MindSpore callback that calls ``action(network)`` once training ends."""
    from mindspore.train.callback import Callback

    class AtTrainEnd(Callback):
        def on_train_end(self, run_context):
            action(run_context.original_args().network)

    return AtTrainEnd()


def _save_weights(path: Path):
    """Every trainable parameter as .npz (tests compare ranks with it)."""

    def save(network) -> None:
        import numpy as np

        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **{p.name: p.asnumpy() for p in network.trainable_params()})

    return _at_train_end(save)


def _save_checkpoint(path: Path):
    """The trained network as a MindSpore checkpoint."""

    def save(network) -> None:
        import mindspore as ms

        ms.save_checkpoint(network, str(path))

    return _at_train_end(save)


def build_trainer(recipe: dict[str, Any], *, num_workers: int = 1, env: dict[str, str] | None = None,
                  storage_path: str | None = None, name: str | None = None, placement_strategy: str = "PACK",
                  accelerator_type: str | None = None, extra_config: dict[str, Any] | None = None,
                  callbacks: list[Any] | None = None, train_loop: Callable[[dict[str, Any]], None] | None = None,
                  cpus_per_rank: float | None = None):
    """A Ray Train DataParallelTrainer that runs one boosttune trial on ``num_workers`` ranks.

    Each rank takes :func:`~boosttune.execution.ray.worker_resources` of the recipe's device: one GPU per rank on GPU, one of
    Ray's native NPUs per rank on Ascend (``accelerator_type``, e.g. "Ascend910B", pins the model); ``cpus_per_rank``
    replaces its one CPU (warm slots whose runs take their epochs in turn share one).
    ``train_loop`` replaces :func:`train_loop_per_worker` (tests look at what each rank was given).
    """
    from ray.train import RunConfig, ScalingConfig
    DataParallelTrainer = data_parallel_trainer()

    # Ray Train moves every worker into the run's storage folder unless told not to (RAY_CHDIR_TO_TRIAL_DIR, read by
    # the controller this process starts): a builder's relative paths ("data/train") then resolve nowhere, while the
    # check, the probe and the calibration found them in the shipped working_dir. Workers stay there, as Ray tasks do.
    os.environ.setdefault("RAY_CHDIR_TO_TRIAL_DIR", "0")
    device_target = recipe.get("device_target", "CPU")
    resources = worker_resources(device_target)
    if cpus_per_rank is not None:
        resources["CPU"] = cpus_per_rank
    scaling = ScalingConfig(num_workers=num_workers, use_gpu=DEVICES[device_target].use_gpu,
                            resources_per_worker=resources,
                            placement_strategy=placement_strategy, accelerator_type=accelerator_type)
    return DataParallelTrainer(
        train_loop or train_loop_per_worker,
        train_loop_config={"recipe": recipe, **(extra_config or {})},
        backend_config=MindSporeConfig(device_target=device_target, env=dict(env or {})),
        scaling_config=scaling,
        run_config=RunConfig(storage_path=storage_path, name=name, callbacks=callbacks),
    )


# Ray's memory monitor (2.60): "1 worker(s) were killed due to the node running low on memory. Memory on the node
# (IP: ..., ID: ...) was 2.42GB used / 23.54GB limit (0.102677)\nOOM kill reason: Memory usage 2502991872B exceeded
# threshold of 2502330368B (9.9% of 25276063744B limit)".
_RAY_OOM = re.compile(r"running low on memory\. Memory on the node \([^)]*\) was (\S+) used / (\S+) limit")
_RAY_OOM_SHARE = re.compile(r"exceeded threshold of \d+B \(([\d.]+%) of")
# What MindSpore (and Python) say when an allocation fails, on the host or a device.
_ALLOCATION_FAILED = re.compile(r"MemoryError|std::bad_alloc|out of memory|memory not enough|malloc .*memory failed|"
                                r"allocate memory failed", re.IGNORECASE)


def worker_error_reason(error: BaseException) -> str:
    """The worker's own one-line reason out of Ray's multi-rank error report; "out of memory: ..." when it is."""
    text = str(error)
    oom = _RAY_OOM.search(text)
    if oom:
        share = _RAY_OOM_SHARE.search(text)
        return (f"out of memory: Ray's memory monitor stopped the run with the node at {oom[1]} of {oom[2]}, over its "
                f"threshold{f' of {share[1]}' if share else ''} (RAY_memory_usage_threshold)")
    reason = _own_reason(text, error)
    return f"out of memory: {reason}" if _ALLOCATION_FAILED.search(reason) else reason


def _own_reason(text: str, error: BaseException) -> str:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("boosttune.errors."):
            return line.split(": ", 1)[1] if ": " in line else line
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("^")]
    return lines[-1] if lines else type(error).__name__


def run_on_ray(recipe: dict[str, Any], *, num_workers: int = 1, env: dict[str, str] | None = None,
               storage_path: str | None = None, name: str | None = None, placement_strategy: str = "PACK",
               accelerator_type: str | None = None, artifacts_dir: str | None = None, keep_checkpoint: bool = False,
               work_dir: str | None = None, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Run one trial as a Ray Train job and return rank 0's summary.

    The summary is rank 0's last report, which Ray returns to the driver wherever rank 0 ran (its
    ``rank0.json`` under ``artifacts_dir`` lands on rank 0's node, not necessarily the driver's).
    A failure comes back as ``status: failed`` with the worker's one-line reason, not as an exception.
    """
    artifacts = Path(artifacts_dir or tempfile.mkdtemp(prefix="boosttune_ray_"))
    extra = {"artifacts_dir": str(artifacts), "keep_checkpoint": keep_checkpoint}
    if work_dir:
        extra["work_dir"] = work_dir
    trainer = build_trainer(recipe, num_workers=num_workers, env=env, storage_path=storage_path, name=name,
                            placement_strategy=placement_strategy, accelerator_type=accelerator_type,
                            extra_config=extra, callbacks=callbacks)
    try:
        result = _fit_interruptibly(trainer)
    except Exception as e:  # Ray wraps worker failures (WorkerGroupError, TrainingFailedError)
        return {"status": RunStatus.FAILED, "reason": worker_error_reason(e), "artifacts_dir": str(artifacts)}
    if result.metrics and result.metrics.get("final"):
        summary = dict(result.metrics)
    else:
        summary = json.loads((artifacts / "rank0.json").read_text())
    summary["artifacts_dir"] = str(artifacts)
    summary["checkpoint_path"] = result.checkpoint.path if result.checkpoint else None
    return summary


def _fit_interruptibly(trainer: Any) -> Any:
    """``trainer.fit()`` in a helper thread, so that Ctrl-C stays Python's KeyboardInterrupt.

    Called from the main thread, Ray Train 2.60's ``fit`` installs a SIGINT handler that aborts the run
    "gracefully", returns as if it had ended, and is never removed: every later Ctrl-C of the process is
    swallowed by it. From any other thread it installs none (as under Tune), and the main thread, waiting
    here, takes the interrupt.
    """
    import threading

    if not ray.is_initialized():  # what fit() does first itself; Ray must start from the main thread
        connect_ray(lambda message: None)
    outcome: dict[str, Any] = {}

    def fit() -> None:
        try:
            outcome["result"] = trainer.fit()
        except BaseException as e:  # handed to the caller's thread as it is
            outcome["error"] = e

    thread = threading.Thread(target=fit, name="boosttune-train-fit", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.2)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def train_run(spec: RunSpec, *, output: str | Path, num_workers: int = 1, env: dict[str, str] | None = None,
              storage: str | None = None, accelerator_type: str | None = None,
              callbacks: list[Any] | None = None, pool: Any = None,
              on_report: Callable[[dict[str, Any]], None] | None = None) -> RunRecord:
    """Train one run on Ray; its record.

    ``pool``: a :class:`~boosttune.execution.warm.WarmClient`: the run goes to a warm worker of that pool (its
    shape, ranks and environment are the pool's), rank 0's reports to ``on_report``. Without one, a one-off Ray
    Train run, whose reports reach Ray Train ``callbacks``.
    The run's Ray Train folder goes under ``storage`` (a path or bucket URI every node reaches) when given,
    else under ``output``; its artifacts and DimReduce work under ``output``.
    The one path every kind of run takes: the baseline, search trials, confirm and bench runs.
    """
    output = Path(output)
    started = time.time()
    artifacts = output / "artifacts" / spec.run_id
    if pool is not None:
        summary = pool.run(spec.run_id, _payload(spec, output), on_report=on_report)
        summary["artifacts_dir"] = str(artifacts)
        return RunRecord.from_summary(spec, summary, started)
    summary = run_on_ray(spec.recipe, num_workers=num_workers, env=env,
                         storage_path=f"{storage.rstrip('/')}/train" if storage else str(output / "train"),
                         name=spec.run_id, accelerator_type=accelerator_type, artifacts_dir=str(artifacts),
                         work_dir=str(output / "work"), callbacks=callbacks)
    return RunRecord.from_summary(spec, summary, started)


def _payload(spec: RunSpec, output: Path) -> dict[str, Any]:
    return {"recipe": spec.recipe, "artifacts_dir": str(output / "artifacts" / spec.run_id),
            "work_dir": str(output / "work")}


def train_on_slots(specs: list[RunSpec], *, output: str | Path, pool: Any, slots: int | list[int]) -> list[RunRecord]:
    """Train ``specs`` at once on the warm ``pool``'s slots (``slots``: how many, from 0, or the live indices,
    :attr:`~boosttune.execution.warm.WarmPool.indices`), run ``i`` on the ``i % len``-th (a slot's runs one after
    another); their records, in order. The rounds rotate their runs' order, so over the rounds every
    recipe meets every slot as often (a Latin square): a slower node favours none."""
    output, started = Path(output), time.time()
    indices = list(range(slots)) if isinstance(slots, int) else list(slots)  # a pool's live slots (WarmPool.indices)
    summaries = pool.run_on_slots([(spec.run_id, _payload(spec, output), indices[i % len(indices)])
                                   for i, spec in enumerate(specs)])
    return _round_records(specs, summaries, output, started)


def train_in_turns(specs: list[RunSpec], *, output: str | Path, pool: Any) -> list[RunRecord]:
    """Train ``specs`` at once on the warm ``pool`` (a :class:`~boosttune.execution.warm.WarmClient` with a slot for
    each), their epochs taken in turn in this order, so that every run meets the machine as the others do; their
    records, in order. Each run's figures are its own epochs' (the time it waits for its turn is no part of them)."""
    output, started = Path(output), time.time()
    summaries = pool.run_in_turns([(spec.run_id, _payload(spec, output)) for spec in specs])
    return _round_records(specs, summaries, output, started)


def _round_records(specs: list[RunSpec], summaries: list[dict[str, Any]], output: Path,
                   started: float) -> list[RunRecord]:
    """The records of a round's runs trained together, from their summaries, in order."""
    return [RunRecord.from_summary(spec, {**summary, "artifacts_dir": str(output / "artifacts" / spec.run_id)},
                                   started) for spec, summary in zip(specs, summaries)]
