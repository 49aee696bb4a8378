"""A run's start-up (boosttune/execution/start.py); every kind of run takes it end to end in tests/e2e and
tests/test_bench.py, tests/test_experiment.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from boosttune.errors import ConfigError
from boosttune.execution.start import output_folder


def test_a_relative_output_is_refused_inside_a_ray_job(monkeypatch, tmp_path):
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps({"runtime_env": {"working_dir": "gcs://_ray_pkg.zip"}}))
    with pytest.raises(ConfigError, match=r"^--output: 'runs/x' is relative, so under `ray job submit --working-dir`"):
        output_folder("runs/x")
    assert output_folder(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR")
    assert output_folder("runs/x") == Path("runs/x").resolve()
