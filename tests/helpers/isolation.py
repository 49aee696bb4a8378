"""What keeps one test process apart from the rest of the machine: a Ray temp folder of its own, and, under
pytest-xdist, the CPU priority that lets the Ray tests (which set the suite's length) go first. tests/conftest.py
applies both."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile


def private_ray_temp() -> str:
    """Point RAY_TMPDIR at a new folder of this process's own (once per process; the processes its tests start
    inherit it). Ray keeps its sessions there, and the address of the cluster ``ray start`` or ``ray.cluster_utils``
    last started, which ``ray.init()`` and ``connect_ray`` join: so no test joins a cluster another pytest-xdist
    worker, another session or a killed test left running on this machine."""
    if os.environ.get("BOOSTTUNE_TEST_PROCESS") != str(os.getpid()):  # a worker inherits its master's environment
        os.environ["BOOSTTUNE_TEST_PROCESS"] = str(os.getpid())
        os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="bt-ray-")  # short: Ray's socket paths live under it
        atexit.register(shutil.rmtree, os.environ["RAY_TMPDIR"], ignore_errors=True)
    return os.environ["RAY_TMPDIR"]


def set_niceness(value: int) -> None:
    """Every thread of this process (MindSpore's pools too), and what it starts from now on, at nice ``value``.

    Ray runs its workers at nice 15 (its ``worker_niceness``): a test beside them at nice 0 takes nearly all of a
    contended core from their trainings, one at 19 only what they leave. Lowering it again needs root."""
    for thread in os.listdir("/proc/self/task"):
        try:
            os.setpriority(os.PRIO_PROCESS, int(thread), value)
        except ProcessLookupError:  # a thread that ended meanwhile
            pass
