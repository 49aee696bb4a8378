"""Test session set-up: trials run with the runtime settings the capability probe chose.

The probe runs in child processes (cached per device/CPU/MindSpore version), and its choice of
``ONEDNN_MAX_CPU_ISA`` is applied here, before any test imports MindSpore.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ warnings drown pytest's output

from boosttune.execution.ray import local_train_defaults  # noqa: E402
from boosttune.probe import run_probe  # noqa: E402  (must not import MindSpore)
from boosttune.runtime import apply_runtime_env  # noqa: E402

_REPORT = run_probe("CPU", log=lambda message: None)
apply_runtime_env(_REPORT.runtime_env)
local_train_defaults()  # the fixtures start local Ray (and ray start clusters) themselves, as connect_ray would


@pytest.fixture(scope="session")
def probe_report():
    return _REPORT


@pytest.fixture(scope="session")
def custom_example(tmp_path_factory):
    """experiments/custom with its data prepared (``python prepare.py``, a MindSpore import), once a session: the
    tests that tune, calibrate or submit the team's project each copy it (test_custom_project.copy_example)."""
    from test_custom_project import prepare_example

    return prepare_example(tmp_path_factory.mktemp("custom-example"))
