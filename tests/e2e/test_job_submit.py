"""The path to a cluster, on this machine: a Ray head and two worker nodes started with ``ray start`` on loopback,
that share no disk, and the experiment submitted as a team submits it (``ray job submit --working-dir .``: the
cluster file's own line for the main job, and a team's project). ``ray submit``'s way, the script alone from the
head's home, is tests/test_commands.py's (it runs the script so, up to Ray, for every ``ray submit`` the docs show).

Each worker node runs in a mount namespace of its own with a fresh tmpfs over the runs' root and over boosttune's
cache (:mod:`tests.helpers.ray_cluster`), so nothing a worker writes there is seen on the head: every output the
tests find on the head got there through the driver. The head holds no CPU, so every trial and the probe run on the
worker nodes. Storage for Ray Train and Tune is the one folder all three nodes see. The nodes share one machine
(and so one session folder), as in the report that opened issue 9: the runtime-env agents of the nodes unpack and
release the same working_dir package under the driver.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.helpers.ray_cluster import RAY, can_make_private_nodes, ray_cluster

import psutil

pytestmark = [pytest.mark.slow, pytest.mark.ray,
              pytest.mark.skipif(not can_make_private_nodes(),
                                 reason="nodes that share no disk need root (unshare -m and a tmpfs per node)")]
BOOSTTUNE = str(Path(sys.executable).with_name("boosttune"))


@pytest.fixture(scope="module")
def cluster(probe_report):
    """A head with no CPU and two worker nodes of one CPU each, each with its own runs' root and cache. Every node's
    cache starts with the session's probe of this machine (the nodes share its CPU): a node probed afresh in a Ray
    task is tests/execution/test_cluster.py's, and the probe itself tests/probe's."""
    from boosttune.probe.report import cache_dir

    root = Path(tempfile.mkdtemp(prefix="btr", dir="/tmp"))
    private = [root / "runs", root / "cache"]
    shutil.copytree(cache_dir(), root / "cache" / "probe")  # the head's (and so its drivers') cache
    shutil.copytree(cache_dir(), root / "seed" / "probe")  # each worker node's, copied under its own tmpfs
    try:
        (root / "home").mkdir()  # the head's home: where a job with no --output writes
        with ray_cluster([{"cpus": 0}, {"cpus": 1, "private": private}, {"cpus": 1, "private": private}],
                         env={"BOOSTTUNE_CACHE_DIR": str(root / "cache"), "HOME": str(root / "home")},
                         seed={root / "cache": root / "seed"}) as started:
            yield {**started, "runs": root / "runs", "home": root / "home"}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _records(folder: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}


def _submit(cluster: dict, project: Path, output: Path, *more: str) -> list[str]:
    """``boosttune tune`` of the team's project under ``ray job submit``, at smoke sizes: 13 steps, the 10 steady
    steps a speed figure needs after 3 warm-up steps; the calibration on the team's network is test_custom_project's."""
    return [RAY, "job", "submit", "--address", cluster["dashboard"], "--working-dir", ".", "--", BOOSTTUNE, "tune",
            "experiment.yaml", "--set", "base.epochs=1", "--set", "base.steps_per_epoch=13", "--set", "confirm_seeds=0",
            "--set", "early_stopping=false", "--set", "prune_slow=false", "--output", str(output), *more]


def test_the_cluster_files_own_job_line_runs_the_smoke_main_job_to_a_report_with_nothing_added(cluster):
    """The line cluster.yaml prints, `ray job submit --address http://127.0.0.1:8265 --working-dir . -- python
    experiments/resnet.py --smoke`, run from boosttune's checkout with only the address swapped for this cluster's:
    the repository ships with the job, --device auto finds no GPU or NPU on the nodes and says so, and with no
    --output the run writes to ~/boosttune-runs on the head, says where and how to fetch it, and ends in a report."""
    import re

    from tests.helpers.commands import from_cluster_files

    line = next(c for c in from_cluster_files() if c.where.startswith("cluster.yaml")
                and c.words[:3] == ("ray", "job", "submit") and "experiments/resnet.py" in c.words)
    words = list(line.words)
    assert words[words.index("--address") + 1] == "http://127.0.0.1:8265" and words[-1] == "--smoke"
    words[words.index("--address") + 1] = cluster["dashboard"]
    words[0] = RAY  # the `ray` on the nodes' PATH, this venv's
    done = subprocess.run(words, cwd=REPO, env=cluster["env"], capture_output=True, text=True, timeout=560)
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "succeeded" in log, log[-4000:]
    assert "device: CPU (--device auto: the cluster's 3 node(s) hold no GPU or NPU" in log, log[-4000:]
    said = re.search(r"^output: (\S+) on the head \(no --output given, .*`ray rsync-down CLUSTER.yaml \1 \.`",
                     log, re.MULTILINE)
    assert said, log[-4000:]
    output = Path(said[1])
    assert output.parent == cluster["home"] / "boosttune-runs" and output.name.startswith("resnet8-")
    assert (output / "report.html").is_file() and (output / "best_recipe.json").is_file()
    assert "smoke: " in log and "ray: connected to cluster at" in log
    # Under `ray job submit` as on a local instance: a rank's threads are its node's cores (these nodes hold 1 each).
    assert "threads: each rank runs 1 CPU thread(s)" in log and "node's 1 core(s) over the run's 1 rank(s)" in log


def test_storage_a_node_cannot_see_is_refused_in_one_line_before_anything_trains(cluster, tmp_path, custom_example):
    from tests.helpers.example_project import copy_example

    project = copy_example(tmp_path, custom_example)
    output, storage = cluster["runs"] / "unshared", cluster["runs"] / "storage"  # each node has its own
    done = subprocess.run(_submit(cluster, project, output, "--set", "num_trials=2", "--set", f"storage={storage}"),
                          cwd=project, env={**cluster["env"], "PYTHONPATH": ""}, capture_output=True, text=True,
                          timeout=300)
    log = done.stdout + done.stderr
    assert done.returncode != 0 and "failed" in log.lower(), log[-4000:]
    assert f"storage: '{storage}' is not shared: node " in log and "does not see the file the driver wrote" in log, \
        log[-3000:]
    assert not list((output / "trials").glob("*.json")), "a run trained before its storage was checked"


def _driver(output: Path) -> psutil.Process | None:
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or ())
        if "tune" in command and str(output) in command and "job" not in command:
            return process
    return None


def test_a_team_project_with_dim_reduce_on_nodes_that_share_no_disk_leaves_every_output_on_the_head_and_resumes(
        cluster, tmp_path, custom_example):
    """``ray job submit --working-dir .`` from a team's own folder (not installed, not in the repository), DimReduce in
    its search: Ray ships the folder to the worker nodes, every rank imports the team's builder from it, DimReduce's
    stage 1 is made on the node that trains it, the probe runs in a Ray task on a worker node, and every record, table
    and page is on the head, though each worker wrote to a disk of its own. Ray Train and Tune persist to --storage
    (the folder every node sees), not to the output folder; the driver killed with SIGKILL once a trial is in, the
    job submitted again with --resume finishes, nothing trained twice."""
    from tests.helpers.example_project import copy_example

    project = copy_example(tmp_path, custom_example)
    output, shared = cluster["runs"] / "resumed", tmp_path / "shared"  # output: absolute, and private on each worker
    command = _submit(cluster, project, output, "--set", "num_trials=3", "--set", f"storage={shared}",
                      "--search", "dim_reduce")
    env = {**cluster["env"], "PYTHONPATH": ""}
    job = subprocess.Popen(command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 400
    while len([r for r in _records(output / "trials").values() if r["role"] == "search"]) < 1:
        assert job.poll() is None and time.monotonic() < deadline, "no search trial finished before the kill"
        time.sleep(1)
    driver = _driver(output)
    assert driver is not None
    os.kill(driver.pid, signal.SIGKILL)
    first_log, _ = job.communicate(timeout=120)
    killed = _records(output / "trials")
    done = subprocess.run([*command, "--resume"], cwd=project, env=env, capture_output=True, text=True, timeout=540)
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "succeeded" in log, log[-4000:]
    records = _records(output / "trials")
    trained = [r for r in records.values() if r["status"] == "completed"]
    assert len(records) == 5 and len(trained) >= 2, sorted(records)  # the baseline, 3 trials, O0 closing the search
    for name, record in killed.items():  # finished before the kill: kept, not trained again
        if record["status"] == "completed":
            assert records[name]["metrics"] == record["metrics"], name
    # Which node a search trial lands on is the first free slot's (a slot still starting on the other node may see
    # none): that a round trains on both nodes is the bench's test below, where each run is pinned to its slot.
    reduced = [r for r in trained if ((r["recipe"].get("boost_config_dict") or {}).get("boost") or {}).get("dim_reduce")]
    assert reduced, [r["recipe"].get("boost_config_dict") for r in trained]
    for said in (first_log, log):
        assert "model: digits_lstm:build built on a worker" in said and "ray: connected to cluster at" in said
        assert "probe: measured on node " in said and "a local Ray instance" not in said
    for name in ("results.parquet", "report.html", "best_boost_config.json", "best_recipe.json", "run_info.json"):
        assert (output / name).is_file(), name
    info = json.loads((output / "run_info.json").read_text())
    assert info["probed_on"] and info["model"] == "digits_lstm:build"  # probed in a Ray task on a worker node
    assert (shared / "tune" / "digits-lstm").is_dir() and not (output / "tune").exists()
    # Ray Train's runs: the warm worker groups (one per trial slot), in the storage, not in the output folder
    persisted = {p.name for p in (shared / "train").iterdir()}
    assert persisted and all(name.startswith("warm-") for name in persisted), persisted
    assert not (output / "train").exists()


def test_a_bench_trains_each_round_across_both_nodes_each_recipe_on_another_from_round_to_round(
        cluster, tmp_path, custom_example):
    """Paired rounds on a cluster of two CPU nodes: a round's runs train at once, one per warm slot (one per node),
    and the slot of each recipe rotates from round to round, so that a slower node favours no recipe."""
    from tests.helpers.example_project import copy_example

    project = copy_example(tmp_path, custom_example)
    bench = {"name": "slots", "seeds": [1, 2],
             "base": {"model": {"entry": "digits_lstm:build", "kwargs": {"hidden": 32, "data_dir": "data"}},
                      "epochs": 1, "steps_per_epoch": 13, "batch_size": 32,
                      "optimizer": {"name": "momentum", "learning_rate": 0.1}},
             "recipes": {"O0": {}, "slower_lr": {"optimizer": {"name": "momentum", "learning_rate": 0.05}}}}
    (project / "bench.json").write_text(json.dumps(bench))
    output = cluster["runs"] / "bench"
    done = subprocess.run([RAY, "job", "submit", "--address", cluster["dashboard"], "--working-dir", ".", "--",
                           BOOSTTUNE, "bench", "bench.json", "--output", str(output)],
                          cwd=project, env={**cluster["env"], "PYTHONPATH": ""}, capture_output=True, text=True,
                          timeout=400)
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "succeeded" in log, log[-4000:]
    assert "a round's runs train at once on 2 slots" in log
    runs = [r for r in _records(output / "runs").values() if r["status"] == "completed"]
    assert len(runs) == 4, [r.get("reason") for r in _records(output / "runs").values()]
    for index in (0, 1):
        pair = [r for r in runs if r["round"] == index]
        assert {r["metrics"]["warm_slot"] for r in pair} == {0, 1}, pair
        assert len({r["metrics"]["node_id"] for r in pair}) == 2
    for recipe in ("O0", "slower_lr"):
        assert {r["metrics"]["warm_slot"] for r in runs if r["label"] == recipe} == {0, 1}, recipe
    info = json.loads((output / "run_info.json").read_text())
    assert info["rounds"].endswith("(2)") and (output / "summary.csv").is_file() and (output / "report.html").is_file()
