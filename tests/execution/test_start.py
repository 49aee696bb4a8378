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


def test_a_job_with_no_output_writes_on_the_heads_home_and_says_how_to_fetch_it(monkeypatch, tmp_path):
    """Under `ray job submit --working-dir`, the job's copy of the folder is deleted when it ends: the default output
    is a folder on the head that outlives it, said in one line; elsewhere, runs/<name>-<time> where it started."""
    from boosttune.execution.start import default_output

    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR", raising=False)
    lines = []
    here = default_output("resnet8", lines.append)
    assert here.parts[0] == "runs" and here.name.startswith("resnet8-") and lines == []
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", json.dumps({"runtime_env": {"working_dir": "gcs://_ray_pkg.zip"}}))
    there = default_output("resnet8", lines.append)
    assert there.parent == tmp_path / "boosttune-runs" and there.name.startswith("resnet8-")
    assert lines == [f"output: {there} on the head (no --output given, and the job's working_dir is deleted when it "
                     f"ends); fetch it with `ray rsync-down CLUSTER.yaml {there} .` where you ran `ray up`, or scp "
                     "from the head"]
    assert output_folder(there) == there  # absolute: taken as it is
