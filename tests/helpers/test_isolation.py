"""The isolation tests/conftest.py gives every test process: Ray's cluster address is read from a folder of its own,
and a niceness reaches every thread and what they start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from boosttune.execution.ray import running_cluster
from tests.helpers import REPO


def test_the_cluster_address_ray_would_join_is_read_from_this_processs_own_folder():
    private = Path(os.environ["RAY_TMPDIR"])
    assert private.is_dir() and private != Path("/tmp") and os.environ["BOOSTTUNE_TEST_PROCESS"] == str(os.getpid())
    assert running_cluster() is None  # nothing to join, whatever runs beside this test
    address_file = private / "ray" / "ray_current_cluster"  # where `ray start` writes it under RAY_TMPDIR
    address_file.parent.mkdir(exist_ok=True)
    address_file.write_text("127.0.0.1:1")
    try:
        assert running_cluster() == "127.0.0.1:1"  # Ray reads the address there: that folder is what it consults
    finally:
        address_file.unlink()


_NICE = """
import os, subprocess, sys, threading
from tests.helpers.isolation import set_niceness
started = threading.Event()
thread = threading.Thread(target=lambda: (started.set(), threading.Event().wait(5)), daemon=True)
thread.start(); started.wait()
value = 8 if os.getpriority(os.PRIO_PROCESS, 0) == 7 else 7  # not what this process inherited
set_niceness(value)
threads = sorted({os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task")})
child = subprocess.run([sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"],
                       capture_output=True, text=True).stdout.strip()
print(len(os.listdir("/proc/self/task")), value, threads == [value], child == str(value))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may lower a niceness (tests/conftest.py sets it as root only)")
def test_a_niceness_reaches_every_thread_already_running_and_the_processes_started_after():
    done = subprocess.run([sys.executable, "-c", _NICE], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    count, _, threads_have_it, child_has_it = done.stdout.split()
    assert int(count) >= 2 and threads_have_it == child_has_it == "True", done.stdout
