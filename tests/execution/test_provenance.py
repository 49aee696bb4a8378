"""Safe defaults: what boosttune writes for others to read holds no secret and no home path.

A run record, an exported recipe and a report are shared (pull requests, chat, a team's drive); a
study-storage URL with a password or a bucket URI with keys, and the user's home folder, must not
travel with them. YAML is loaded safely (the corpus in tests/e2e/test_bad_input.py feeds it a Python
tag), and every server boosttune starts listens on 127.0.0.1 unless told otherwise
(tests/search/test_dashboard.py).
"""

from __future__ import annotations

import json
import os
import sys

import ray

from boosttune.tables.results import build_results_table, save_results
from boosttune.execution.provenance import record_run_info, redact

SECRET = "hunter2-do-not-leak"


def test_redact_masks_url_passwords_keys_and_the_home_folder(monkeypatch):
    monkeypatch.setenv("HOME", "/home/alice")
    text = redact(f"--study-storage postgresql://bob:{SECRET}@db:5432/optuna --storage "
                  f"s3://bucket/runs?access_key=AKIA&secret_key={SECRET}&region=eu --output /home/alice/runs/x")
    assert SECRET not in text and "AKIA" not in text and "/home/alice" not in text
    assert "postgresql://bob:***@db:5432/optuna" in text and "region=eu" in text and "~/runs/x" in text
    assert redact("/home/alicesmith/x") == "/home/alicesmith/x"  # another user's folder is not this home


def test_run_record_export_and_report_hold_no_secret_and_no_home_path(tmp_path, monkeypatch):
    from boosttune.cli.main import main

    home = tmp_path / "home" / "alice"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home / "project")
    results = tmp_path / "results"  # the results location itself may be named: it is where the files are
    results.mkdir()
    monkeypatch.setattr(sys, "argv", [str(home / "project" / "experiments" / "resnet.py"), "--study-storage",
                                      f"postgresql://bob:{SECRET}@db/optuna", "--output", str(results)])
    (results / "experiment.json").write_text(json.dumps({"name": "x"}))
    record_run_info(results, device="CPU: test")
    save_results(build_results_table([{"trial_id": "b", "preset": "O0", "status": "completed",
                                       "metrics": {"throughput_sps": 100.0, "objective_value": 0.8}}], ray_version=ray.__version__), results)
    assert main(["export", str(results)]) == 0
    assert main(["report", str(results)]) == 0
    for name in ("run_info.json", "best_recipe.json", "best_boost_config.json", "report.html", "report.md"):
        text = (results / name).read_text()
        assert SECRET not in text, name
        assert str(home) not in text, name
    assert "postgresql://bob:***@db/optuna" in (results / "report.md").read_text()
    assert os.getcwd() == str(home / "project")
