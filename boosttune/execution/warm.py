"""Warm workers: Ray Train worker groups that outlive one run and take the next (on one machine, for one CPU rank,
one Ray actor each: ``one_process``).

A fresh Ray Train run pays, every time, for Ray Train's controller, a placement group, the worker
actors, MindSpore's import and the device (and, with several ranks, the communication group): about
9 s outside the worker and 4-5 s inside it on the 2-core machine, for runs of 30-40 s. The confirm
stage and the multi-fidelity rungs make many short runs by design, so that start-up was a third of
an experiment's wall time.

Why, and what was measured: docs/design/warm-workers.md.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import ray

from boosttune.config.recipe import parse_recipe
from boosttune.execution.ray_train import build_trainer, init_device, rank_facts, train_rank, worker_error_reason
from boosttune.trial.graphs import GraphCache
from boosttune.tables.states import RunStatus

__all__ = ["WarmClient", "WarmPool", "WarmRank", "warm_loop_per_worker"]

_CANCEL_POLL_S = 1.0  # how often a warm worker asks whether its run was cancelled (at a step boundary)
_WAIT_S = 1.0  # a client's long poll
_START_FAILURES = 3  # a slot whose new group fails this many times in a row before taking a run gives up


@dataclass
class _Run:
    payload: dict[str, Any]
    reports: list[dict[str, Any]] = field(default_factory=list)
    done: dict[str, Any] | None = None
    cancelled: bool = False
    decisions: dict[int, bool] = field(default_factory=dict)  # epoch -> stop after it (the same for every rank)


@dataclass
class _Turns:
    """Runs that share a machine and take its epochs in turn: one trains while the others wait, so every run's epoch
    n meets the machine in the state the others' epoch n met (benchmarks/epoch_interleave.py: the speed noise between
    runs made one after another is the machine's drift over tens of seconds). The first turn waits until every run
    of the group has arrived (built its data and network), so no build overlaps another run's epoch."""

    order: list[str]
    arrived: set[str] = field(default_factory=set)
    at: int = 0  # the index in ``order`` of the run whose turn it is

    def mine(self, run_id: str) -> bool:
        return (set(self.order) <= self.arrived and bool(self.order) and self.order[self.at] == run_id)

    def next_after(self, run_id: str) -> None:
        if self.order and self.order[self.at] == run_id:
            self.at = (self.at + 1) % len(self.order)

    def leave(self, run_id: str) -> None:
        if run_id not in self.order:
            return
        index = self.order.index(run_id)
        self.order.remove(run_id)
        self.arrived.discard(run_id)
        if index < self.at or (index == self.at and self.at == len(self.order)):
            self.at = self.at - 1 if index < self.at else 0
        self.at = self.at % len(self.order) if self.order else 0


@ray.remote(num_cpus=0, max_concurrency=1000)
class _Dispatcher:
    """Where runs wait for a warm worker and reports wait for their caller (an async actor: every wait is cheap)."""

    def __init__(self) -> None:
        self._queue: deque[str] = deque()
        self._pinned: dict[str, deque[str]] = {}  # slot index -> runs only that slot takes, in order
        self._runs: dict[str, _Run] = {}
        self._history: dict[str, list[str]] = {}  # slot generation -> the runs its rank 0 took, in order
        self._changed = asyncio.Condition()
        self._closed: str | None = None
        self._workers: list[Any] = []  # every warm rank's actor handle (Ctrl-C ends the groups with them)
        self._turns: dict[str, _Turns] = {}  # run id -> the turn group it takes epochs in (shared by the group)
        self._retired: set[str] = set()  # slot indices whose groups end once idle (:meth:`WarmPool.shrink`)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _end(self, run_id: str, done: dict[str, Any]) -> None:
        """The run ended (trained, failed or cancelled): it leaves its turn group, so no other run waits for it."""
        self._runs[run_id].done = done
        turns = self._turns.pop(run_id, None)
        if turns is not None:
            turns.leave(run_id)

    async def submit(self, run_id: str, payload: dict[str, Any], slot: int | None = None) -> None:
        """Queue a run for the next free slot, or for slot ``slot`` (its index) alone."""
        if self._closed:
            self._runs[run_id] = _Run(payload)
            self._end(run_id, {"status": RunStatus.FAILED, "reason": self._closed})
        else:
            self._runs[run_id] = _Run(payload)
            (self._queue if slot is None else self._pinned.setdefault(str(slot), deque())).append(run_id)
        await self._notify()

    def _waiting(self) -> list[deque[str]]:
        return [self._queue, *self._pinned.values()]

    async def take(self, slot: str, rank: int, index: int) -> tuple[str, dict[str, Any]] | None:
        """The ``index``-th run of ``slot`` (rank 0 draws it from the queue; the other ranks wait for it), or None
        when the pool closes."""
        async with self._changed:
            while True:
                history = self._history.setdefault(slot, [])
                if index < len(history):
                    run_id = history[index]
                    return run_id, self._runs[run_id].payload
                slot_index = slot.split(".")[0]  # whatever its generation
                pinned = self._pinned.get(slot_index)
                if self._closed or (slot_index in self._retired and not pinned):
                    return None
                if rank == 0 and (pinned or self._queue):
                    run_id = (pinned or self._queue).popleft()
                    history.append(run_id)
                    self._changed.notify_all()
                    return run_id, self._runs[run_id].payload
                await self._changed.wait()

    async def report(self, run_id: str, metrics: dict[str, Any]) -> bool:
        """Rank 0's report of an epoch; whether the run was cancelled."""
        run = self._runs.get(run_id)
        if run is None:
            return True
        run.reports.append(metrics)
        await self._notify()
        return run.cancelled

    async def cancelled(self, run_id: str) -> bool:
        run = self._runs.get(run_id)
        return run is None or run.cancelled

    async def stop_after(self, run_id: str, epoch: int) -> bool:
        """Whether every rank stops after ``epoch``: decided when the first rank asks, so the ranks agree."""
        run = self._runs.get(run_id)
        return True if run is None else run.decisions.setdefault(epoch, run.cancelled)

    async def finish(self, run_id: str, summary: dict[str, Any]) -> None:
        run = self._runs.get(run_id)
        if run is not None and run.done is None:
            self._end(run_id, {"status": RunStatus.FAILED, "reason": "cancelled"} if run.cancelled else summary)
        await self._notify()

    async def fail_slot(self, slot: str, reason: str) -> str | None:
        """The slot's group is gone: fail the run it held, if one was unfinished; its id."""
        for run_id in reversed(self._history.get(slot, [])):
            run = self._runs.get(run_id)
            if run is not None and run.done is None:
                self._end(run_id, {"status": RunStatus.FAILED, "reason": reason})
                await self._notify()
                return run_id
        return None

    async def fail_waiting(self, reason: str) -> None:
        """No warm worker can take the queued runs: fail them with ``reason``."""
        for waiting in self._waiting():
            while waiting:
                self._end(waiting.popleft(), {"status": RunStatus.FAILED, "reason": reason})
        await self._notify()

    async def cancel(self, run_id: str) -> None:
        run = self._runs.get(run_id)
        if run is None or run.done is not None:
            return
        run.cancelled = True
        for waiting in self._waiting():
            if run_id in waiting:
                waiting.remove(run_id)
                self._end(run_id, {"status": RunStatus.FAILED, "reason": "cancelled before it started"})
        await self._notify()

    async def cancel_all(self) -> int:
        """Cancel every run not ended (what is left of a search that stopped); how many."""
        live = [run_id for run_id, run in self._runs.items() if run.done is None]
        for run_id in live:
            await self.cancel(run_id)
        return len(live)

    async def wait(self, run_id: str, seen: int, timeout: float) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """Reports after the first ``seen``, and the run's end once it has one (then the run is forgotten)."""
        deadline = time.monotonic() + timeout
        async with self._changed:
            while True:
                run = self._runs.get(run_id)
                if run is None:
                    return [], {"status": RunStatus.FAILED, "reason": f"run {run_id} is not known to the warm pool"}
                if len(run.reports) > seen or run.done is not None or time.monotonic() >= deadline:
                    break
                try:
                    await asyncio.wait_for(self._changed.wait(), max(0.0, deadline - time.monotonic()))
                except asyncio.TimeoutError:
                    pass
        if run.done is not None:
            del self._runs[run_id]
        return run.reports[seen:], run.done

    async def take_turns(self, run_ids: list[str]) -> None:
        """``run_ids`` (submitted next, one rank each) train their epochs in turn, in this order: no epoch starts
        before every one of them is built and waiting (:class:`_Turns`)."""
        turns = _Turns(list(run_ids))
        for run_id in run_ids:
            self._turns[run_id] = turns
        await self._notify()

    async def turn(self, run_id: str) -> None:
        """Wait until ``run_id`` may train its next epoch (at once for a run in no turn group)."""
        async with self._changed:
            turns = self._turns.get(run_id)
            if turns is not None:
                turns.arrived.add(run_id)
                self._changed.notify_all()
            while (turns := self._turns.get(run_id)) is not None and not turns.mine(run_id):
                await self._changed.wait()

    async def pass_turn(self, run_id: str) -> None:
        """``run_id`` trained its epoch: the next run of its group goes."""
        turns = self._turns.get(run_id)
        if turns is not None:
            turns.next_after(run_id)
        await self._notify()

    async def retire(self, indices: list[str]) -> None:
        """The groups of these slot indices end once idle: their next :meth:`take` is None (a run pinned to one of
        them is still taken first)."""
        self._retired.update(indices)
        await self._notify()

    async def close(self, reason: str) -> None:
        self._closed = reason
        await self.fail_waiting(reason)

    async def register(self, worker: Any) -> None:
        self._workers.append(worker)

    async def workers(self) -> list[Any]:
        return list(self._workers)


class WarmClient:
    """What a caller needs to train runs on a pool's warm workers.

    It holds the dispatcher's actor name, not its handle: a trial function gets the client pickled with the
    search's setup, and Tune keeps that setup in its experiment state, which ``--resume`` unpickles in a new
    Ray session where the old handle cannot be rebuilt (a name of a gone actor can).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._handle: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["name"])

    @property
    def dispatcher(self) -> Any:
        if self._handle is None:
            self._handle = ray.get_actor(self.name)
        return self._handle

    def run(self, run_id: str, payload: dict[str, Any],
            on_report: Callable[[dict[str, Any]], None] | None = None, slot: int | None = None) -> dict[str, Any]:
        """Train one run on the next free warm worker (or on slot ``slot`` alone); rank 0's summary, or
        ``status: failed`` with the reason.

        ``payload``: the recipe document and where its artifacts and work go (as a one-off run's train loop config).
        ``on_report``: called with rank 0's report of every epoch, then with the summary of a run that ended.
        If the caller is interrupted, the run is cancelled.
        """
        ray.get(self.dispatcher.submit.remote(run_id, payload, slot))
        seen = 0
        try:
            while True:
                reports, done = ray.get(self.dispatcher.wait.remote(run_id, seen, _WAIT_S))
                seen += len(reports)
                for report in reports:
                    if on_report is not None:
                        on_report(report)
                if done is not None:
                    if on_report is not None and done.get("status") != RunStatus.FAILED:
                        on_report(done)
                    return done
        except BaseException:
            self.cancel(run_id)
            raise

    def run_on_slots(self, runs: list[tuple[str, dict[str, Any], int]]) -> list[dict[str, Any]]:
        """Train ``runs`` (run id, payload, slot index) at once, each on its slot alone (a slot's runs one after
        another); each run's summary, in order. If the caller is interrupted, every run is cancelled."""
        return self._run_together(runs)

    def run_in_turns(self, runs: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Train ``runs`` (run id, payload) at once on as many warm workers, their epochs in turn in this order
        (:class:`_Turns`); each run's summary, in order. The pool must have a free slot for each, or the group waits
        for one. If the caller is interrupted, every run is cancelled."""
        ray.get(self.dispatcher.take_turns.remote([run_id for run_id, _ in runs]))
        return self._run_together([(run_id, {**payload, "turns": True}, None) for run_id, payload in runs])

    def _run_together(self, runs: list[tuple[str, dict[str, Any], int | None]]) -> list[dict[str, Any]]:
        """:meth:`run` each of ``runs`` (run id, payload, slot or None) at once, a thread each; the summaries in
        order; every run cancelled if the caller is interrupted."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="boosttune-round") as threads:
            futures = [threads.submit(self.run, run_id, payload, None, slot) for run_id, payload, slot in runs]
            try:
                return [future.result() for future in futures]
            except BaseException:
                for run_id, _, _ in runs:
                    self.cancel(run_id)
                raise

    def cancel_all(self) -> int:
        """Cancel every run not ended (a search's runs whose trials Tune dropped as it stopped); how many."""
        return ray.get(self.dispatcher.cancel_all.remote())

    def cancel(self, run_id: str) -> None:
        """Stop ``run_id`` wherever it is (queued or training); nothing if it has ended."""
        try:
            self.dispatcher.cancel.remote(run_id)
        except Exception:  # the pool is gone already  # noqa: BLE001
            pass


class WarmPool:
    """``slots`` warm Ray Train worker groups of one shape (ranks per run, device, environment).

    Use as a context manager; runs go through :meth:`client`. Each slot's group starts when the pool does
    and serves runs until :meth:`close`.
    """

    def __init__(self, *, slots: int, num_workers: int = 1, device_target: str = "CPU",
                 env: dict[str, str] | None = None, storage_path: str | None = None,
                 accelerator_type: str | None = None, cache_graphs: bool = True, cpus_per_rank: float | None = None,
                 one_process: bool = False, log: Callable[[str], None] = print) -> None:
        if one_process and (num_workers != 1 or device_target != "CPU"):
            raise ValueError("one_process: a slot of one CPU rank only (Ray Train places ranks and accelerators)")
        self.one_process = one_process  # each slot one Ray actor, not a Ray Train group (see the module docstring)
        self.num_workers = num_workers
        self.cpus_per_rank = cpus_per_rank  # None: the device's (one); less lets slots that take turns share a CPU
        self.cache_graphs = cache_graphs
        self.device_target = device_target
        self.env = dict(env or {})
        self.storage_path = storage_path
        self.accelerator_type = accelerator_type
        self.log = log
        self._id = uuid.uuid4().hex[:8]
        self._name = f"boosttune-warm-{self._id}"
        self._dispatcher = _Dispatcher.options(name=self._name).remote()
        self._closing = threading.Event()
        self._threads: dict[int, threading.Thread] = {}  # slot index -> the thread that keeps its group
        self._ended: list[threading.Thread] = []  # the threads of groups retired by :meth:`shrink`
        self._next_index = 0
        self.replaced = 0  # groups started again after a run failed or a worker died
        self.ensure(slots)

    @property
    def slots(self) -> int:
        return len(self._threads)

    @property
    def indices(self) -> list[int]:
        """The live groups' slot indices, in order (after :meth:`shrink` and :meth:`ensure` they need not run from
        0: a run pinned to a slot names one of these)."""
        return sorted(self._threads)

    def ensure(self, slots: int) -> None:
        """At least ``slots`` warm groups (more trials at once)."""
        while len(self._threads) < slots:
            index, self._next_index = self._next_index, self._next_index + 1
            thread = threading.Thread(target=self._keep_slot, args=(index,), name=f"boosttune-warm-{index}",
                                      daemon=True)
            self._threads[index] = thread
            thread.start()

    def shrink(self, slots: int) -> int:
        """Keep the first ``slots`` groups; the others end once idle (after the run they hold, if any). How many end.

        An idle group is not free: each of its processes (the rank and Ray Train's controller, placement-group
        cleaner, dataset manager and synchronization actor) wakes a hundred times a second, and on the 2-core machine
        30 idle Ray processes cost a training run beside them 18% of its throughput (docs/benchmarks.md, "Idle warm
        groups"). A race's rounds shrink as candidates leave, so the groups its first round needed would otherwise
        slow every later round."""
        gone = sorted(self._threads)[max(slots, 0):]
        if not gone:
            return 0
        ray.get(self._dispatcher.retire.remote([str(index) for index in gone]))
        for index in gone:
            self._ended.append(self._threads.pop(index))
        self.log(f"workers: {len(gone)} idle warm worker group(s) closed, {len(self._threads)} kept (an idle group's "
                 "processes slow the runs that train)")
        return len(gone)

    def client(self) -> WarmClient:
        return WarmClient(self._name)

    def _keep_slot(self, index: int) -> None:
        generation, failed_starts = 0, 0
        while not self._closing.is_set() and index in self._threads:  # not retired by :meth:`shrink`
            slot = f"{index}.{generation}"
            config = {"dispatcher": self._dispatcher, "slot": slot, "cache_graphs": self.cache_graphs}
            try:
                self._serve(slot, config)
                return  # the pool closed
            except Exception as e:  # noqa: BLE001  Ray's report of a run that failed or a worker that died
                reason = worker_error_reason(e)
            if self._closing.is_set():
                return
            failed = ray.get(self._dispatcher.fail_slot.remote(slot, reason))
            if index not in self._threads:  # retired: its run, if it held one, is failed; no group starts again
                return
            failed_starts = 0 if failed else failed_starts + 1
            if failed_starts >= _START_FAILURES:
                self.log(f"warm workers: slot {index} could not start {failed_starts} times: {reason}")
                ray.get(self._dispatcher.fail_waiting.remote(f"no warm worker could start: {reason}"))
                return
            self.replaced += 1
            generation += 1

    def _serve(self, slot: str, config: dict[str, Any]) -> None:
        """One slot's worker (a Ray Train group, or one actor with ``one_process``) until the pool closes; raises
        when a run failed or a worker died."""
        if not self.one_process:
            build_trainer({"device_target": self.device_target}, num_workers=self.num_workers, env=self.env,
                          storage_path=self.storage_path, name=f"warm-{self._id}-slot{slot}",
                          accelerator_type=self.accelerator_type, cpus_per_rank=self.cpus_per_rank,
                          extra_config=config, train_loop=warm_loop_per_worker).fit()
            return
        rank = WarmRank.options(num_cpus=self.cpus_per_rank if self.cpus_per_rank is not None else 1.0,
                                name=f"boosttune-warm-{self._id}-slot{slot}").remote()
        try:
            ray.get(rank.serve.remote(config, {**self.env, "BOOSTTUNE_DEVICE_TARGET": self.device_target}))
        finally:
            ray.kill(rank)  # a run that raised leaves the process alive: the next generation starts afresh

    def close(self, timeout: float = 30.0, *, interrupted: bool = False) -> None:
        """Let every worker group end (a run waiting for a worker is failed); wait up to ``timeout`` seconds for them.

        ``interrupted`` (Ctrl-C): kill the groups' workers now (waiting for a run to end could take its whole length)
        and tell no run anything: the dispatcher and the trials waiting on it end with Ray, as when the driver is
        killed. A Tune trial told of its run's end while the search stops leaves a record or an error file that
        --resume reads wrong (seen in tests/e2e/test_faults.py: a trial lost, an empty error file).
        """
        if self._closing.is_set():
            return
        self._closing.set()
        try:
            if interrupted:
                for worker in ray.get(self._dispatcher.workers.remote(), timeout=timeout):
                    ray.kill(worker)
            else:
                ray.get(self._dispatcher.close.remote("the warm pool closed"), timeout=timeout)
        except Exception:  # noqa: BLE001  Ray is going away too
            return
        deadline = time.monotonic() + timeout
        for thread in [*self._threads.values(), *self._ended]:
            thread.join(max(0.0, deadline - time.monotonic()))
        if not interrupted:
            ray.kill(self._dispatcher)

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        # On Ctrl-C too, the groups end before this returns: a slot's thread still inside Ray Train's fit() when the
        # interpreter exits and Ray shuts down makes Ray's core worker end the process with status 1, not 130
        # (seen in tests/e2e/test_faults.py).
        self.close(timeout=10.0 if kind is KeyboardInterrupt else 30.0, interrupted=kind is KeyboardInterrupt)


@ray.remote(num_cpus=1)
class WarmRank:
    """A warm slot's one rank as one Ray actor (``WarmPool(one_process=True)``): the rank's environment, then
    :func:`warm_loop_per_worker` as rank 0 of 1."""

    def serve(self, config: dict[str, Any], env: dict[str, str]) -> None:
        import os

        from boosttune.execution.ray_train import _merge_env

        _merge_env(os.environ, {"GLOG_v": os.environ.get("GLOG_v", "3"), **env})  # before MindSpore loads
        warm_loop_per_worker(config, rank=0, world_size=1)


def warm_loop_per_worker(config: dict[str, Any], rank: int | None = None, world_size: int | None = None) -> None:
    """A warm rank: set the device up once, then train every run the dispatcher hands this slot, until it closes.
    ``rank``/``world_size``: given for a one-process slot; else Ray Train's context says them."""
    if rank is None or world_size is None:
        from ray import train as ray_train

        context = ray_train.get_context()
        rank, world_size = context.get_world_rank(), context.get_world_size()
    dispatcher, slot = config["dispatcher"], config["slot"]
    graphs = GraphCache() if config.get("cache_graphs", True) else None
    ray.get(dispatcher.register.remote(ray.get_runtime_context().current_actor))
    placed = None
    index = 0
    while True:
        job = ray.get(dispatcher.take.remote(slot, rank, index))
        if job is None:
            return
        run_id, payload = job
        recipe = parse_recipe(payload["recipe"])
        if placed is None:
            started = time.perf_counter()
            placed = init_device(recipe.device_target, world_size)
            comm_init_s = time.perf_counter() - started
        else:
            comm_init_s = 0.0
        index += 1
        extra = {**rank_facts(rank, placed, comm_init_s=comm_init_s), "warm_run": index,
                 "warm_slot": int(slot.split(".")[0])}

        def report(metrics: dict[str, Any], run_id: str = run_id) -> None:
            if rank == 0:
                ray.get(dispatcher.report.remote(run_id, metrics))

        callbacks = [_cancel_watch(dispatcher, run_id, world_size)]
        if payload.get("turns"):
            callbacks.append(_take_turns(dispatcher, run_id))
            extra["epochs_in_turn"] = True
        summary = train_rank(recipe, payload, rank=rank, world_size=world_size, extra=extra, report=report,
                             callbacks=callbacks, graph_cache=graphs)
        if rank == 0:
            ray.get(dispatcher.finish.remote(run_id, summary))


def _take_turns(dispatcher, run_id: str):
    """A MindSpore callback that trains each epoch in the run's turn (:class:`_Turns`). It comes after the metrics
    callback, so an epoch's evaluation is in its turn too; after the last epoch it waits for one more turn, which
    the final evaluation takes before the run leaves the group (``finish``)."""
    from mindspore.train.callback import Callback

    class TakeTurns(Callback):
        def on_train_begin(self, run_context) -> None:
            ray.get(dispatcher.turn.remote(run_id))

        def on_train_epoch_end(self, run_context) -> None:
            ray.get(dispatcher.pass_turn.remote(run_id))
            ray.get(dispatcher.turn.remote(run_id))

    return TakeTurns()


def _cancel_watch(dispatcher, run_id: str, world_size: int):
    """A MindSpore callback that stops the run once its caller cancelled it.

    One rank: at the next step boundary (asked once a second). Several ranks: after the epoch the dispatcher
    names for all of them alike, since a rank that stopped alone would leave the others waiting in AllReduce.
    """
    from mindspore.train.callback import Callback

    class CancelWatch(Callback):
        def __init__(self) -> None:
            super().__init__()
            self.asked = time.monotonic()

        def on_train_step_end(self, run_context) -> None:
            if world_size > 1 or time.monotonic() - self.asked < _CANCEL_POLL_S:
                return
            self.asked = time.monotonic()
            if ray.get(dispatcher.cancelled.remote(run_id)):
                run_context.request_stop()

        def on_train_epoch_end(self, run_context) -> None:
            epoch = run_context.original_args().cur_epoch_num
            if world_size > 1 and ray.get(dispatcher.stop_after.remote(run_id, epoch)):
                run_context.request_stop()

    return CancelWatch()
