"""A run's start-up, the one path every kind of run takes (the experiment, the bench).

In this order, so that bad input is refused before Ray starts and a folder is written only once it is: the output
folder checked -> room for a trial's ranks -> the kind's preflight -> the shipped code and the storage -> the folder
claimed and its run facts recorded -> the driver moved into it -> Ray -> the probe. The kind then checks what only
the probe can show, and opens the warm workers when it is ready to train (:meth:`StartedRun.warm_pool`). A new kind
of run describes itself in a :class:`RunRequest` and trains through :meth:`StartedRun.train`.

Why, step by step: docs/design/start-up.md.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import ray

from boosttune.config.experiment import MAX_DROP
from boosttune.errors import ConfigError
from boosttune.execution.capacity import RankThreads, check_capacity, check_local_capacity, rank_threads
from boosttune.execution.cluster import (
    WorkerProbe,
    check_shared,
    check_storage,
    default_concurrency,
    probe_on_worker,
)
from boosttune.execution.provenance import record_run_info
from boosttune.execution.ray import (
    code_runtime_env,
    connect_ray,
    describe_code,
    job_working_dir,
    worker_resources,
)
from boosttune.execution.ray_train import train_in_turns, train_on_slots, train_run
from boosttune.execution.runs import RunRecord, RunSpec
from boosttune.execution.warm import WarmClient, WarmPool
from boosttune.files import check_folder, claim_folder
from boosttune.runtime import cpu_threads_env

__all__ = ["JOB_RUNS", "ROUNDS_ACROSS_SLOTS", "ROUNDS_IN_TURN", "ROUNDS_ONE_BY_ONE", "TURN_CPUS", "RunRequest",
           "StartedRun", "default_output", "output_folder", "start_run"]

TURN_CPUS = 0.125  # what a warm slot whose runs take turns asks Ray for: one trains at a time, the rest wait
# How a results folder's paired rounds were trained (run_info.json ``rounds``, read by the report).
ROUNDS_IN_TURN = "a round's runs at once, taking the machine's epochs in turn"
ROUNDS_ONE_BY_ONE = "a round's runs one after another"
ROUNDS_ACROSS_SLOTS = "a round's runs at once across the slots, each recipe on another slot from round to round"


@dataclass(frozen=True)
class RunRequest:
    """What a kind of run asks the start-up for.

    ``what`` names it in messages and its folder's marker (``<what>.json``, holding ``document``, which
    ``--resume`` compares); ``project`` is what :func:`~boosttune.execution.ray.code_runtime_env` reads to ship the
    user's code; ``calibrate`` times each knob on ``base``'s network during the probe.
    """

    what: str
    document: dict[str, Any]
    device_target: str
    workers: int
    project: Any
    accelerator_type: str | None = None
    storage: str | None = None
    warm_workers: bool = True
    cache_graphs: bool = True
    calibrate: bool = False
    base: dict[str, Any] | None = None
    run_info: dict[str, Any] = field(default_factory=dict)  # recorded in run_info.json as the folder is claimed

    @property
    def marker(self) -> str:
        return f"{self.what}.json"


@dataclass
class StartedRun:
    """A started run: its folder, what a rank asks Ray for, the probe's findings, and (once opened) its warm pool."""

    launch: RunRequest
    output: Path
    per_rank: dict[str, float]
    storage: str | None
    local: bool  # a local Ray instance: it never grows
    placed: WorkerProbe
    probe_s: float = 0.0  # connecting to Ray and probing, seconds
    checked: Any = None  # what the kind's preflight returned
    pool: WarmPool | None = None
    client: WarmClient | None = None
    turns: bool = False  # the open pool trains a round's runs at once, their epochs in turn
    threads: RankThreads | None = None  # a rank's CPU threads (None: MindSpore's default on each node)

    @property
    def report(self):
        return self.placed.report

    @property
    def env(self) -> dict[str, str]:
        """A rank's environment: the runtime settings the probe chose for this device (MindSpore reads them as it is
        imported) and the CPU threads the run decided (:func:`~boosttune.execution.capacity.rank_threads`)."""
        return {**self.placed.report.runtime_env,
                **cpu_threads_env(self.threads.threads if self.threads is not None else None)}

    def train(self, spec: RunSpec) -> RunRecord:
        """Train one run on Ray (through the warm pool when it is open) and return its record."""
        return train_run(spec, output=self.output, num_workers=self.launch.workers, env=self.env,
                         storage=self.storage, accelerator_type=self.launch.accelerator_type, pool=self.client)

    @property
    def one_process(self) -> bool:
        """Whether a warm slot is one Ray actor rather than a Ray Train group: one CPU rank a run, on a one-node
        cluster (:mod:`boosttune.execution.warm`)."""
        launch = self.launch
        return (launch.workers == 1 and launch.device_target == "CPU"
                and sum(1 for node in ray.nodes() if node.get("Alive")) == 1)

    def interleaves(self, setting: str) -> bool:
        """Whether paired rounds take their epochs in turn: ``setting`` "epochs" or "runs", or "auto": on a one-node CPU
        cluster with warm workers and one rank per run (runs that take turns must share one machine)."""
        if setting != "auto":
            return setting == "epochs"
        launch = self.launch
        return (launch.warm_workers and launch.workers == 1 and launch.device_target == "CPU"
                and sum(1 for node in ray.nodes() if node.get("Alive")) == 1)

    def round_slots(self, concurrency: int | None = None) -> int:
        """Warm slots a paired round trains on at once when its runs do not take turns: ``concurrency``, else what
        the cluster holds (one per CPU node, or per accelerator: the search's default); 1 without warm workers."""
        if not self.launch.warm_workers:
            return 1
        return concurrency or default_concurrency(ray.nodes(), self.per_rank, self.launch.workers)

    def train_round(self, specs: list[RunSpec]) -> list[RunRecord]:
        """Train a round of paired runs: at once, their epochs in turn, when the open pool takes turns (a slot for
        each); at once across the open pool's slots when it has several (:func:`train_on_slots`); else one after
        another."""
        if self.pool is not None and self.client is not None and len(specs) > 1:
            if self.turns:  # a slot for each run, and no idle group beside them (WarmPool.shrink)
                self.pool.ensure(len(specs))
                self.pool.shrink(len(specs))
                return train_in_turns(specs, output=self.output, pool=self.client)
            if self.pool.slots > 1:
                return train_on_slots(specs, output=self.output, pool=self.client, slots=self.pool.indices)
        return [self.train(spec) for spec in specs]

    @contextmanager
    def warm_pool(self, log: Callable[[str], None], *, turns: bool = False,
                  slots: int = 1) -> Iterator[WarmPool | None]:
        """The run's warm workers (``slots`` of them; :meth:`WarmPool.ensure` adds more), or None with
        ``warm_workers`` off. ``turns``: :meth:`train_round` trains a round's runs at once, their epochs in turn (the
        slots share a CPU: one trains while the others wait); else, with several slots, at once across them."""
        launch = self.launch
        if not launch.warm_workers:
            yield None
            return
        one_process = self.one_process
        log((f"workers: warm Ray actors of one CPU rank take run after run (MindSpore imported and the device set up "
             "once per actor; one process each: on one machine a rank needs no Ray Train group)" if one_process else
             f"workers: warm Ray Train worker groups of {launch.workers} rank(s) take run after run "
             "(MindSpore imported and the device set up once per group)")
            + ("; a round's runs train at once, taking their epochs in turn" if turns else
               f"; a round's runs train at once on {slots} slots, each recipe on another slot from round to round"
               if slots > 1 else ""))
        storage = f"{self.storage.rstrip('/')}/train" if self.storage else str(self.output / "train")
        with WarmPool(slots=1 if turns else slots, num_workers=launch.workers, device_target=launch.device_target,
                      env=self.env,
                      storage_path=storage, accelerator_type=launch.accelerator_type,
                      cache_graphs=launch.cache_graphs, cpus_per_rank=TURN_CPUS if turns else None,
                      one_process=one_process, log=log) as pool:
            self.pool, self.client, self.turns = pool, pool.client(), turns
            try:
                yield pool
            finally:
                self.pool = self.client = None
                self.turns = False
        if pool.replaced:
            log(f"workers: {pool.replaced} warm worker group(s) replaced after a run failed or a worker died")


JOB_RUNS = "boosttune-runs"  # under the head's home: where a Ray job's runs go when no --output is given


def default_output(name: str, log: Callable[[str], None]) -> Path:
    """Where a run writes when no ``--output`` is given: ``runs/<name>-<time>`` in the folder it starts from; inside
    a Ray job with a working_dir (which Ray deletes when the job ends), ``~/boosttune-runs/<name>-<time>`` on the
    head, said in one line with how to fetch it."""
    folder = f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if job_working_dir() is None:
        return Path("runs") / folder
    output = Path.home() / JOB_RUNS / folder
    log(f"output: {output} on the head (no --output given, and the job's working_dir is deleted when it ends); "
        f"fetch it with `ray rsync-down CLUSTER.yaml {output} .` where you ran `ray up`, or scp from the head")
    return output


def output_folder(output: str | Path) -> Path:
    """The output folder, absolute; refused where it would be lost (relative, inside a Ray job's working_dir)."""
    if not Path(output).is_absolute() and job_working_dir() is not None:
        raise ConfigError(f"--output: {str(output)!r} is relative, so under `ray job submit --working-dir` it would "
                          "land in Ray's temporary copy of the project, deleted when the job ends; allowed: an "
                          "absolute folder on the head (or shared storage), e.g. --output /home/ray/runs/resnet")
    return Path(output).resolve()


@contextmanager
def start_run(launch: RunRequest, output: str | Path, *, resume: bool, log: Callable[[str], None],
              command: str | None = None, preflight: Callable[[], Any] | None = None) -> Iterator[StartedRun]:
    """Start a run (see the module's docstring for the order) and yield it, the driver inside its folder.

    ``preflight``: the kind's checks before Ray starts (they may build the model in a fresh process); what it
    returns is :attr:`StartedRun.checked`.
    """
    output = output_folder(output)
    check_folder(output, launch.marker, launch.document, resume=resume, what=launch.what, command=command)
    per_rank = worker_resources(launch.device_target)
    check_local_capacity(per_rank, launch.workers)
    checked = preflight() if preflight is not None else None
    code = code_runtime_env(launch.project, Path.cwd(), output)  # the user's project, shipped to every node
    storage = check_storage(launch.storage) if launch.storage else None  # before anything is written
    output = claim_folder(output, launch.marker, launch.document, resume=resume, what=launch.what, command=command)
    record_run_info(output, resumed=resume, **launch.run_info, max_drop_default=MAX_DROP,
                    shipped=describe_code(code) if code else None)
    with driver_in(output):  # the driver's own folder: its start folder may vanish (a Ray job's working_dir)
        began = time.perf_counter()
        where = connect_ray(log, runtime_env=code)
        local = where.startswith("a local")
        check_capacity(per_rank, launch.workers, log=log, local=local)  # Ray Train would wait forever
        threads = rank_threads(ray.nodes(), per_rank, launch.workers)
        log(f"threads: {threads.describe()}" if threads is not None else
            "threads: MindSpore's default on each node (no node that takes a rank is up yet)")
        if storage is not None and not local:
            check_shared(storage)  # every node persists there: one that cannot see it would lose its runs
        placed = probe_on_worker(launch.device_target, calibrate=launch.calibrate, per_rank=per_rank,
                                 accelerator_type=launch.accelerator_type, log=log, base=launch.base)
        yield StartedRun(launch=launch, output=output, per_rank=per_rank, storage=storage, local=local, placed=placed,
                      probe_s=time.perf_counter() - began, checked=checked, threads=threads)


@contextmanager
def driver_in(folder: Path) -> Iterator[None]:
    """Run the driver inside ``folder``, then go back to where it started if that still exists.

    Ray Tune resolves paths against the working directory (``os.path.relpath`` calls ``os.getcwd``);
    under ``ray job submit --working-dir`` that directory is Ray's unpacked copy of the project, which
    the runtime-env agent may delete and re-create while the job runs.
    """
    try:
        before = os.getcwd()
    except FileNotFoundError:
        before = None
    os.chdir(folder)
    try:
        yield
    finally:
        if before is not None and os.path.isdir(before):
            os.chdir(before)
