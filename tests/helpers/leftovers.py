"""What a run leaves behind on this machine: Ray and MindSpore processes, and listening TCP ports.

A run's footprint is compared with the one taken before it: whatever it started must be gone once it
has ended (normally, by failing, by Ctrl-C or by its driver being killed). Under pytest-xdist a footprint leaves
out what another worker started (its processes carry that worker's ``PYTEST_XDIST_WORKER``).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import psutil

from boosttune.execution.ray_train import SCHEDULER_MARKER

# Command-line fragments of the processes a local Ray instance and a MindSpore trial start.
MARKERS = ("raylet", "gcs_server", "ray::", "default_worker.py", "ray/dashboard", "log_monitor.py",
           "runtime_env/agent", "ray/autoscaler", "monitor.py", SCHEDULER_MARKER)


@dataclass(frozen=True)
class Footprint:
    processes: frozenset[tuple[int, float, str]]  # (pid, start time, command line)
    ports: frozenset[int]  # listening TCP ports

    def beyond(self, before: Footprint) -> tuple[list[str], list[int]]:
        """What this footprint holds that ``before`` did not."""
        return (sorted(cmd for *_, cmd in self.processes - before.processes),
                sorted(self.ports - before.ports))


def _another_workers(pid: int | None) -> bool:
    """Whether the process was started under another pytest-xdist worker than this one: its own environment says
    so, or, when Ray started it with an environment of its own (the dashboard agent), its nearest ancestor's does."""
    if pid is None:
        return False
    try:
        process = psutil.Process(pid)
        for one in (process, *process.parents()[:4]):
            worker = one.environ().get("PYTEST_XDIST_WORKER")
            if worker is not None:
                return worker != os.environ.get("PYTEST_XDIST_WORKER")
    except psutil.Error:  # gone, or not ours to read: counted
        return False
    return False


def footprint() -> Footprint:
    processes = set()
    for process in psutil.process_iter(["pid", "create_time", "cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if any(marker in cmdline for marker in MARKERS) and not _another_workers(process.info["pid"]):
            processes.add((process.info["pid"], process.info["create_time"], cmdline[:160]))
    ports = {c.laddr.port for c in psutil.net_connections(kind="tcp")
             if c.status == psutil.CONN_LISTEN and not _another_workers(c.pid)}
    return Footprint(frozenset(processes), frozenset(ports))


def assert_nothing_left(before: Footprint, timeout_s: float = 60.0) -> None:
    """Wait until everything started since ``before`` is gone; fail naming what is still there."""
    deadline = time.time() + timeout_s
    while True:
        processes, ports = footprint().beyond(before)
        if not processes and not ports:
            return
        if time.time() > deadline:
            raise AssertionError(f"left behind after {timeout_s:.0f} s: processes {processes}, ports {ports}")
        time.sleep(0.2)  # a footprint takes about 50 ms; Ray's processes end within seconds


class DriverGrowth:
    """This process's resident memory and open files, sampled each time a run record lands in one of ``folders``.

    ``with DriverGrowth(output / "trials") as growth: run_experiment(...)``, then ``growth.since(k)``: how much
    both grew from the k-th record (once imports and caches have settled) to the last. benchmarks/soak.py uses it
    over 50 trials.
    """

    def __init__(self, *folders, log=None) -> None:
        self.folders, self.log = folders, log
        self.samples: list[tuple[int, float, int]] = []  # (records landed, RSS in MB, open fds)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> DriverGrowth:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        time.sleep(1.0)  # the last record's sample
        self._done.set()
        self._thread.join()

    def _sample(self) -> None:
        me, seen = psutil.Process(), 0
        while not self._done.is_set():
            count = sum(len(list(folder.glob("*.json"))) for folder in self.folders if folder.is_dir())
            if count > seen:
                seen = count
                self.samples.append((count, me.memory_info().rss / 2**20, me.num_fds()))
                if self.log:
                    self.log(f"{count} records, driver RSS {self.samples[-1][1]:.0f} MB, {self.samples[-1][2]} open fds")
            time.sleep(0.2)

    def since(self, record: int) -> tuple[float, int, int, int]:
        """(RSS growth in MB, open-fd growth, from record, to record): from the first sample at or after
        ``record`` to the last."""
        start = next(s for s in self.samples if s[0] >= record)
        end = self.samples[-1]
        return end[1] - start[1], end[2] - start[2], start[0], end[0]
