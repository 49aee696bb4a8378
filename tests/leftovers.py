"""What a run leaves behind on this machine: Ray and MindSpore processes, and listening TCP ports.

A run's footprint is compared with the one taken before it: whatever it started must be gone once it
has ended (normally, by failing, by Ctrl-C or by its driver being killed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil

from boosttune.ray_train import SCHEDULER_MARKER

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


def footprint() -> Footprint:
    processes = set()
    for process in psutil.process_iter(["pid", "create_time", "cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if any(marker in cmdline for marker in MARKERS):
            processes.add((process.info["pid"], process.info["create_time"], cmdline[:160]))
    ports = {c.laddr.port for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
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
        time.sleep(1.0)
