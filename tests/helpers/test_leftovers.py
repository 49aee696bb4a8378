"""The leftover check itself: under pytest-xdist it counts what this worker started, never another worker's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers.leftovers import assert_nothing_left, footprint

# Stands for a Ray process ("ray::" is one of the markers) and listens on a port, until its stdin closes.
_LISTENER = ("import socket, sys; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
             "print(s.getsockname()[1], flush=True); sys.stdin.read()")


def _start(worker: str):
    env = {**os.environ, "PYTEST_XDIST_WORKER": worker}
    process = subprocess.Popen([sys.executable, "-c", _LISTENER, "ray::Stand-in"], env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return process, int(process.stdout.readline())


def test_a_footprint_counts_this_workers_processes_and_ports_and_leaves_out_another_workers(monkeypatch):
    me = f"gw-{os.getpid()}"
    monkeypatch.setenv("PYTEST_XDIST_WORKER", me)
    before = footprint()
    mine, my_port = _start(me)
    other, other_port = _start(f"{me}-other")
    try:
        processes, ports = footprint().beyond(before)
        assert sum(_LISTENER[:40] in cmd for cmd in processes) == 1  # this worker's; the other's is left out
        assert my_port in ports and other_port not in ports
        with pytest.raises(AssertionError, match="socket.socket"):
            assert_nothing_left(before, timeout_s=0.5)
    finally:
        for process in (mine, other):
            process.stdin.close()
            process.wait(timeout=10)
    assert_nothing_left(before, timeout_s=10)
