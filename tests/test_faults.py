"""Faults provoked for real on a real search: a training worker killed mid-epoch, then Ctrl-C.

The run is a real experiment (LeNet-5 on scikit-learn's digits, local Ray, MindSpore on the CPU)
started as a user starts it, in its own process group. What must hold: the fault is recorded with its
reason and the run goes on or stops cleanly; the command printed after Ctrl-C resumes it; nothing that
finished is lost or trained again; the Optuna study holds exactly what the results do; and nothing the
run started (Ray, MindSpore's scheduler, a port) is left behind. The driver killed with SIGKILL is provoked in
test_tune.py (search, confirm stage) and test_bench.py (a bench).
"""

from __future__ import annotations

import collections
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from leftovers import assert_nothing_left, footprint

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
SMALL = ["--data", "digits", "--epochs", "2", "--train-limit", "512", "--val-limit", "128", "--confirm-seeds", "0",
         "--no-early-stop"]


def _records(folder: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}


def _start(cmd: list[str], log: Path) -> subprocess.Popen:
    """As from a terminal: its own process group, Ctrl-C's default action (a job shell may have it ignored)."""
    return subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for(condition, timeout_s: float, what: str) -> None:
    deadline = time.time() + timeout_s
    while not condition():
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.2)


def _train_workers() -> list[psutil.Process]:
    """Ray Train's worker processes (where MindSpore trains a rank)."""
    return [p for p in psutil.process_iter(["cmdline"]) if "RayTrainWorker" in " ".join(p.info["cmdline"] or [])]


def test_a_killed_worker_fails_its_trial_alone_and_ctrl_c_resumes_losing_nothing(tmp_path):
    output = tmp_path / "run"
    log = tmp_path / "driver.log"
    cmd = [sys.executable, "experiments/lenet.py", *SMALL, "--trials", "5", "--output", str(output)]
    before = footprint()
    driver = _start(cmd, log)
    trials = output / "trials"

    # 1. A training worker killed with SIGKILL while it trains the first search trial (the baseline is done).
    _wait_for(lambda: (trials / "baseline.json").is_file(), 240, "the baseline")
    text = log.read_text
    _wait_for(lambda: text().count("training: ") >= 2 and _train_workers(), 120, "the first search trial to train")
    victims = _train_workers()
    for worker in victims:
        worker.send_signal(signal.SIGKILL)

    # 2. Ctrl-C once a further trial has finished after it: the search went on.
    _wait_for(lambda: any(r["status"] == "failed" for r in _records(trials).values()), 120, "the failed record")
    _wait_for(lambda: sum(r["status"] != "failed" for r in _records(trials).values()) >= 3, 240, "another trial")
    os.killpg(driver.pid, signal.SIGINT)
    driver.wait(timeout=90)
    said = log.read_text()
    assert driver.returncode == 130, said[-3000:]
    assert_nothing_left(before)  # no raylet, worker, MindSpore scheduler or port outlives the interrupted driver
    failed = [r for r in _records(trials).values() if r["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["role"] == "search"
    assert re.search(r"died|killed|SIGKILL|exited", failed[0]["reason"], re.IGNORECASE), failed[0]["reason"]
    interrupted = _records(trials)

    # 3. The printed command resumes: the folder filled in, nothing finished trained again, the search completed.
    line = next(line for line in said.splitlines() if "resume with: " in line)
    resume = shlex.split(line.split("resume with: ", 1)[1])
    assert resume[-3:] == ["--resume", "--output", str(output)]
    done = subprocess.run([sys.executable, *resume[1:]], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    after = _records(trials)
    assert len(after) == 6  # the baseline and 5 search trials, the failed one among them
    for trial_id, record in interrupted.items():
        assert after[trial_id]["started"] == record["started"]
    assert_nothing_left(before)

    # 4. The Optuna study holds what the results hold: none left running, a COMPLETE trial per modelled record.
    import optuna

    study = optuna.load_study(study_name="lenet5-search", storage=f"sqlite:///{output / 'optuna.db'}")
    states = collections.Counter(t.state.name for t in study.trials)
    assert not {"RUNNING", "WAITING"} & set(states), states
    outside = set(re.findall(r"\(([^()]*) outside the searched space", said)[0].split(", ")) if "outside" in said \
        else set()
    modelled = [r for r in after.values() if r["role"] == "search" and r["label"] not in outside]
    told = sorted((round(t.values[0], 6), round(t.values[1], 6)) for t in study.trials if t.state.name == "COMPLETE")
    finished = sorted((round(r["metrics"]["throughput_sps"], 6), round(r["metrics"]["val_acc"], 6))
                      for r in modelled if r["status"] != "failed")
    assert told == finished
