"""The path to a cluster, on this machine: a Ray head and a second node started with ``ray start`` on loopback,
and the experiment submitted through Ray's job submission client, ``ray job submit --working-dir .``.

Both nodes share one machine (and so one session folder), as in the report that opened issue 9: the runtime-env
agents of the two nodes unpack and release the same working_dir package under the driver.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import REPO

import psutil

pytestmark = [pytest.mark.slow, pytest.mark.ray]

RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ours(marker: str) -> list[psutil.Process]:
    """Every process of this test's Ray cluster (their command lines carry its temp folder) and their children."""
    found = {}
    for process in psutil.process_iter(["cmdline"]):
        try:
            if marker in " ".join(process.info["cmdline"] or ()):
                found[process.pid] = process
                for child in process.children(recursive=True):
                    found[child.pid] = child
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return list(found.values())


def _stop(marker: str) -> None:
    """Stop this cluster only (``ray stop`` would stop every Ray on the machine, other tests' included)."""
    processes = _ours(marker)
    for process in processes:
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=5)  # as `ray stop` waits, then kills what is left
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)


def _wait_for_job_agent(address: str, env: dict[str, str], timeout_s: float = 120.0) -> None:
    """The head answers before its job agent is up ("No available agent to submit job"): wait until it takes a job."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        done = subprocess.run([RAY, "job", "submit", "--no-wait", "--address", address, "--", "true"], env=env,
                              capture_output=True, text=True, timeout=120)  # accepted: the agent is up
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the head's job agent did not come up in {timeout_s:.0f} s:\n{done.stderr[-2000:]}")
        time.sleep(2)


@pytest.fixture(scope="module")
def two_node_cluster():
    """``ray start --head`` (the trial drivers' TRAIN_DRIVER resource, the dashboard on 127.0.0.1) and a second
    node joining it, one CPU each, in a short temp folder of their own (Unix socket paths are limited)."""
    import secrets

    temp = tempfile.mkdtemp(prefix="btj", dir="/tmp")
    gcs, dashboard = _free_port(), _free_port()
    # Ray 2.60 turns token authentication on for `ray start --head` when ~/.ray/auth_token exists (a local
    # ray.init() writes one); a joining node then needs RAY_AUTH_MODE=token too. This cluster has a token of its own.
    token = Path(temp) / "auth_token"
    token.write_text(secrets.token_hex(32))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("RAY_ADDRESS", None)
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--num-gpus=0", f"--temp-dir={temp}",
              "--disable-usage-stats"]
    try:
        subprocess.run([RAY, "start", "--head", f"--port={gcs}", "--include-dashboard=true",
                        "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}",
                        "--resources={\"TRAIN_DRIVER\": 1000}", *common],
                       env=env, check=True, capture_output=True, text=True, timeout=120)
        subprocess.run([RAY, "start", f"--address=127.0.0.1:{gcs}", *common],
                       env=env, check=True, capture_output=True, text=True, timeout=120)
        _wait_for_job_agent(f"http://127.0.0.1:{dashboard}", env)
        yield {"dashboard": f"http://127.0.0.1:{dashboard}", "gcs": f"127.0.0.1:{gcs}", "env": env, "temp": temp}
    finally:
        _stop(temp)
        shutil.rmtree(temp, ignore_errors=True)
    assert not _ours(temp), "processes of the test cluster were left behind"


def test_the_script_runs_alone_as_ray_submit_runs_it(two_node_cluster, tmp_path):
    """``ray submit cluster.yaml experiments/resnet.py ARGS`` copies only the script to the head and runs it there
    with the installed boosttune, from the home folder, joining the running cluster."""
    home = tmp_path / "home"
    home.mkdir()
    script = home / "resnet.py"
    shutil.copy(REPO / "experiments" / "resnet.py", script)  # the script and nothing else of the project
    env = {**two_node_cluster["env"], "RAY_ADDRESS": two_node_cluster["gcs"]}  # on a head, ray.init() finds it
    env["PYTHONPATH"] = ""
    # One trial at a time: a second warm worker group on the other node costs its start and proves nothing here
    # (both nodes' trials are the team project's test below). Batches of 16: 16 steps, the 10 steady steps a speed
    # figure needs after the warm-up (fewer are refused before Ray starts).
    done = subprocess.run([sys.executable, str(script), "--model", "lenet5", "--data", "digits", "--epochs", "1",
                           "--train-limit", "256", "--val-limit", "128", "--batch-size", "16", "--trials", "2",
                           "--concurrency", "1", "--confirm-seeds", "0", "--no-early-stop", "--keep-slow",
                           "--output", "runs/submitted"],  # --keep-slow: the calibration is tests/probe's
                          cwd=home, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    output = home / "runs" / "submitted"
    assert (output / "best_recipe.json").is_file() and (output / "report.html").is_file()
    assert f"ray: connected to cluster at {two_node_cluster['gcs']}" in done.stdout


def test_a_team_project_outside_the_repository_is_tuned_on_both_nodes(two_node_cluster, tmp_path, custom_example):
    """``ray job submit --working-dir .`` from a team's own folder (not installed, not in the repository): Ray ships
    it to both nodes, every rank there imports the team's builder from it, the probe runs in a Ray task on a
    worker node, and Ray Train and Tune persist to --storage, not to the output folder."""
    from tests.helpers.example_project import copy_example

    project = copy_example(tmp_path, custom_example)
    output = tmp_path / "team-run"  # absolute: a relative folder would land in Ray's copy of the project
    shared = tmp_path / "shared"  # storage: where Ray Train and Tune persist, reachable from every node
    command = [RAY, "job", "submit", "--address", two_node_cluster["dashboard"], "--working-dir", ".", "--",
               str(Path(sys.executable).with_name("boosttune")), "tune", "experiment.yaml", "--set", "num_trials=3",
               "--set", "base.epochs=1", "--set", "base.steps_per_epoch=13", "--set", "confirm_seeds=0",
               "--set", "early_stopping=false", "--set", "prune_slow=false", "--set", f"storage={shared}",
               "--output", str(output)]  # prune_slow off: the calibration on the team's network is test_custom_project's
    # 13 steps: the 10 steady steps a speed figure needs after 3 warm-up steps (fewer are refused before Ray starts)
    env = {**two_node_cluster["env"], "PYTHONPATH": ""}
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=540)
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "succeeded" in log, log[-4000:]
    records = [json.loads(p.read_text()) for p in (output / "trials").glob("*.json")]
    trained = [r for r in records if r["status"] == "completed"]
    assert len(records) == 4 and len(trained) >= 2  # the baseline and 3 trials (one may repeat the baseline's)
    assert len({r["metrics"]["node_id"] for r in trained}) == 2, "the trials did not use both nodes"
    assert all(r["metrics"]["objective"] == "accuracy" for r in trained)
    assert "model: digits_lstm:build built on a worker" in log
    for name in ("results.parquet", "report.html", "best_boost_config.json", "best_recipe.json", "run_info.json"):
        assert (output / name).is_file(), name
    assert (shared / "tune" / "digits-lstm").is_dir() and not (output / "tune").exists()
    # Ray Train's runs: the warm worker groups (one per trial slot), in the storage, not in the output folder
    persisted = {p.name for p in (shared / "train").iterdir()}
    assert persisted and all(name.startswith("warm-") for name in persisted), persisted
    assert not (output / "train").exists()
    info = json.loads((output / "run_info.json").read_text())
    assert info["probed_on"] and info["model"] == "digits_lstm:build"  # probed in a Ray task on a worker node
    assert "probe: measured on node " in log and "a local Ray instance" not in log
    assert "ray: connected to cluster at" in log
