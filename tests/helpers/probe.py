"""The session's capability probe: run once, at the first test that needs it (tests/conftest.py says when).

Under pytest-xdist the workers share the session's cache (tests/conftest.py) and take turns on a lock: the first
probes, the others read its report (and no probe times instruction sets while another trains beside it).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

_probe_report = None
PROBE_LINES: list[str] = []  # what the session's probe said (tests/probe/test_probe.py reads whether it measured)


def probe_once():
    """The probe's report for this machine's CPU, its runtime settings applied to this process (once a session)."""
    global _probe_report
    if _probe_report is None:
        from boosttune.probe import run_probe  # (must not import MindSpore)
        from boosttune.runtime import apply_runtime_env

        lock = Path(os.environ["BOOSTTUNE_CACHE_DIR"]) / "probe.lock"  # set by tests/conftest.py
        lock.parent.mkdir(parents=True, exist_ok=True)
        with lock.open("a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
            _probe_report = run_probe("CPU", log=PROBE_LINES.append)
        if not apply_runtime_env(_probe_report.runtime_env):
            raise RuntimeError("MindSpore was imported before the probe's runtime settings could be applied")
    return _probe_report


# Collected first (tests/conftest.py), so under ``pytest -n`` the worker that does not run Ray takes it at once: the
# speed calibration of the built-in stand-in lands in the session's cache before the Ray tests' cluster copies that
# cache to its nodes (tests/e2e/test_job_submit.py), and the cluster's smoke main job reads it instead of timing the
# knobs again on the Ray worker, whose chain of tests is the suite's length (86 s of its 250 s, measured alone).
FIRST = ("tests/probe/test_calibrate.py::test_calibration_measures_every_supported_knob_on_this_machine",)
