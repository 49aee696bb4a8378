"""Warm workers on a real local Ray and real MindSpore: one process takes run after run without leaking, a run
that fails or a worker that is killed costs that worker only, a cancelled run stops, two ranks keep their group."""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
import psutil
import pytest
import ray

from boosttune.execution.capacity import rank_threads
from boosttune.execution.ray import worker_resources
from boosttune.execution.ray_train import train_run
from boosttune.execution.runs import RunSpec  # noqa: E402
from boosttune.execution.warm import WarmPool  # noqa: E402
from boosttune.runtime import cpu_threads_env

pytestmark = [pytest.mark.slow, pytest.mark.ray]

BASE = {"model": "lenet5", "epochs": 1, "batch_size": 32, "steps_per_epoch": 12, "warmup_steps": 2, "seed": 3,
        "data": {"name": "digits"}}


def _manual(**switches):
    return {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": False, **switches}}


# The recipes of tests/trial/test_runner.py's 10 alternating trials, and what MindSpore must have built for each.
CYCLE = [
    ("O0", {}, {"grad_freeze": False, "less_bn": False, "grad_accumulation_step": 1, "train_cell": "TrainOneStepCell"}),
    ("O1", {"boost_level": "O1", "boost_config_dict": {"less_bn": {"gc_flag": False}}},
     {"grad_freeze": True, "less_bn": True, "grad_accumulation_step": 1}),
    ("freeze", {"boost_level": "O1", "boost_config_dict": {**_manual(grad_freeze=True), "grad_freeze": {"param_groups": 2}}},
     {"grad_freeze": True, "less_bn": False, "grad_accumulation_step": 1}),
    ("accumulate", {"boost_level": "O1", "boost_config_dict": {
        **_manual(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 3}}},
     {"grad_freeze": False, "less_bn": False, "grad_accumulation": True, "grad_accumulation_step": 3}),
    ("less_bn", {"boost_level": "O2", "boost_config_dict": {**_manual(less_bn=True), "less_bn": {"gc_flag": False}}},
     {"grad_freeze": False, "less_bn": True, "grad_accumulation_step": 1}),
]


def _train(pool: WarmPool, run_id: str, recipe: dict, tmp_path, **kwargs):
    return train_run(RunSpec(run_id=run_id, role="bench", recipe=recipe), output=tmp_path, pool=pool.client(),
                     **kwargs)


def _train_workers() -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"])
            if any(name in " ".join(p.info["cmdline"] or []) for name in ("RayTrainWorker", "WarmRank"))]


def test_one_warm_worker_takes_20_alternating_recipes_and_a_cancelled_run_and_none_leaks(local_ray, tmp_path):
    """O0 / O1 / manual recipes in turn through one warm process: each built what its own recipe says (observed from
    the Model MindSpore built), and the same recipe trained again gives the same figures to the last digit. Then a
    run cancelled after its first epoch stops, and the same worker takes the next."""
    with WarmPool(slots=1, env=local_ray, storage_path=str(tmp_path / "ray")) as pool:
        records, reports = [], []
        for index in range(20):
            name, fields, expected = CYCLE[index % len(CYCLE)]
            record = _train(pool, f"run{index}", {**BASE, **fields}, tmp_path, on_report=reports.append)
            assert record.status == "completed", record.reason
            observed = record.observed_boost
            assert {key: observed[key] for key in expected} == expected, f"run {index} ({name})"
            records.append(record)
        assert pool.replaced == 0
        nxt = _cancel_after_the_first_epoch(pool, tmp_path)
    assert len({r.metrics["pid"] for r in records}) == 1  # one process took them all
    assert [r.metrics["warm_run"] for r in records] == list(range(1, 21))
    assert records[0].metrics["comm_init_s"] > 0 and all(r.metrics["comm_init_s"] == 0 for r in records[1:])
    # O0 and LessBN train again on the graph their first run compiled; the others' algorithms keep state outside their
    # parameters (boosttune.trial.graphs) and compile every run
    assert [r.metrics["graph_cached"] for r in records] == [
        index >= len(CYCLE) and CYCLE[index % len(CYCLE)][0] in ("O0", "less_bn") for index in range(20)]
    for first, again in zip(records[:5], records[5:10]):  # the same recipe and seed, five runs apart
        assert first.metrics["train_loss"] == again.metrics["train_loss"], first.label
        assert first.metrics["objective_value"] == again.metrics["objective_value"], first.label
    assert len(reports) == 40 and sum(bool(r.get("final")) for r in reports) == 20  # an epoch and the end, each
    assert nxt.metrics["pid"] == records[0].metrics["pid"] and nxt.metrics["warm_run"] == 22  # the cancelled run: 21


def _cancel_after_the_first_epoch(pool: WarmPool, tmp_path):
    """A long run cancelled after its first epoch, from another thread (as Tune's callback does when a scheduler stops
    a trial), then the next run on the same worker (none replaced): its record."""
    client = pool.client()
    epochs = []

    def cancel_after_the_first_epoch(report: dict) -> None:
        epochs.append(report)
        if len(epochs) == 1:
            threading.Thread(target=client.cancel, args=("long",)).start()

    long = _train(pool, "long", {**BASE, "epochs": 200}, tmp_path, on_report=cancel_after_the_first_epoch)
    assert long.status == "failed" and long.reason == "cancelled"
    assert 1 <= len(epochs) < 20  # it stopped within a second or so of the cancel, at a step boundary
    nxt = _train(pool, "next", BASE, tmp_path)
    assert nxt.status == "completed" and pool.replaced == 0
    return nxt


@pytest.mark.parametrize("one_process", [False, True], ids=["ray-train-group", "one-actor"])
def test_a_failed_run_or_a_killed_worker_costs_that_worker_only(local_ray, tmp_path, one_process):
    with WarmPool(slots=1, env=local_ray, storage_path=str(tmp_path / "ray"), one_process=one_process) as pool:
        first = _train(pool, "first", BASE, tmp_path)
        # LessBN's gradient centralisation has no CPU kernel: MindSpore raises inside the run
        bad = _train(pool, "bad", {**BASE, "boost_level": "O1",
                                   "boost_config_dict": {"less_bn": {"gc_flag": True}}}, tmp_path)
        assert bad.status == "failed" and "Centralization" in bad.reason, bad.reason
        after = _train(pool, "after", BASE, tmp_path)
        assert after.status == "completed" and after.metrics["warm_run"] == 1
        assert after.metrics["pid"] != first.metrics["pid"]
        assert after.metrics["objective_value"] == first.metrics["objective_value"]

        killer = threading.Timer(4.0, lambda: [p.send_signal(signal.SIGKILL) for p in _train_workers()])
        killer.start()
        killed = _train(pool, "killed", {**BASE, "epochs": 200}, tmp_path)
        killer.join()
        assert killed.status == "failed" and "died" in killed.reason, killed.reason
        last = _train(pool, "last", BASE, tmp_path)
        assert last.status == "completed" and last.metrics["objective_value"] == first.metrics["objective_value"]
        assert pool.replaced == 2


def test_two_ranks_keep_their_group_from_run_to_run(local_ray, tmp_path):
    """Data parallel on two warm ranks: the second run joins no group again, and both ranks end with the same
    weights (their gradients were averaged at every step, through the group the first run formed)."""
    # The run decides its ranks' CPU threads (this machine's 2 cores over 2 ranks: 1 each), and each rank sets them.
    threads = rank_threads(ray.nodes(), worker_resources("CPU"), 2)
    with WarmPool(slots=1, num_workers=2, env={**local_ray, **cpu_threads_env(threads.threads)},
                  storage_path=str(tmp_path / "ray")) as pool:
        runs = [_train(pool, f"dp{i}", {**BASE, "epochs": 2, "seed": i}, tmp_path) for i in range(2)]
    assert all(r.status == "completed" and r.metrics["world_size"] == 2 for r in runs), [r.reason for r in runs]
    assert threads.threads == 1 and all(r.metrics["cpu_threads"] == 1 for r in runs)
    assert runs[0].metrics["pid"] == runs[1].metrics["pid"] and runs[1].metrics["comm_init_s"] == 0
    for run in runs:
        ranks = [np.load(tmp_path / "artifacts" / run.run_id / f"rank{r}.npz") for r in (0, 1)]
        assert set(ranks[0].files) == set(ranks[1].files)
        for name in ranks[0].files:
            np.testing.assert_allclose(ranks[0][name], ranks[1][name], rtol=1e-5, atol=1e-6)
    assert runs[0].metrics["train_loss"] != runs[1].metrics["train_loss"]  # two seeds, two runs


def test_runs_that_take_turns_train_their_epochs_one_after_another_and_a_failed_one_leaves_the_turn(
        local_ray, tmp_path):
    """A round's runs at once on slots that share a CPU: each epoch ends before the next run's starts, in the round's
    order (from the epochs' own clocks), every run's figures are its own, and a run that fails in its turn (LessBN's
    gradient centralisation has no CPU kernel) hands the turn on instead of leaving the others waiting."""
    from boosttune.execution.ray_train import train_in_turns
    from boosttune.execution.start import TURN_CPUS

    recipes = {"a": {**BASE, "epochs": 3}, "bad": {**BASE, "boost_level": "O1",
                                                     "boost_config_dict": {"less_bn": {"gc_flag": True}}},
               "b": {**BASE, "epochs": 3, "seed": 4, **CYCLE[2][1]}}
    with WarmPool(slots=3, env=local_ray, storage_path=str(tmp_path / "ray"), cpus_per_rank=TURN_CPUS) as pool:
        specs = [RunSpec(run_id=name, role="bench", recipe=recipe) for name, recipe in recipes.items()]
        records = dict(zip(recipes, train_in_turns(specs, output=tmp_path, pool=pool.client())))
        alone = _train(pool, "alone", {**BASE, "epochs": 3}, tmp_path)
    assert records["bad"].status == "failed" and "Centralization" in records["bad"].reason
    good = [records[name] for name in ("a", "b")]
    assert all(r.status == "completed" and r.metrics["epochs_in_turn"] for r in good), [r.reason for r in good]
    assert len({r.metrics["pid"] for r in good}) == 2  # two processes at once, two recipes
    ends = sorted((epoch["ended_unix"], record.run_id) for record in good for epoch in record.curve)
    assert [run_id for _, run_id in ends] == ["a", "b"] * 3
    assert records["a"].metrics["objective_value"] == alone.metrics["objective_value"]  # the same run, trained alone
    assert "epochs_in_turn" not in alone.metrics


def _ray_processes(kind: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if f"ray::{kind}" in " ".join(p.info["cmdline"] or [])]


def test_a_shrunk_pool_ends_the_idle_groups_and_the_kept_ones_train_on(local_ray, tmp_path):
    """What the confirm race does as candidates leave: a round of three runs in turn, then a round of two on a pool
    shrunk to two groups. The third group's processes end (its rank and Ray Train's controller), the two kept groups
    train the next round in turn in the same processes, and a pool grown again trains on a new group."""
    from boosttune.execution.ray_train import train_in_turns, train_on_slots
    from boosttune.execution.start import TURN_CPUS

    def round_of(names: str, seed: int) -> list:
        specs = [RunSpec(run_id=f"{name}{seed}", role="bench", recipe={**BASE, "seed": seed, "warmup_steps": 2 + k})
                 for k, name in enumerate(names)]
        records = train_in_turns(specs, output=tmp_path, pool=pool.client())
        assert all(r.status == "completed" and r.metrics["epochs_in_turn"] for r in records), [r.reason for r in records]
        return records

    logged: list[str] = []
    with WarmPool(slots=3, env=local_ray, storage_path=str(tmp_path / "ray"), cpus_per_rank=TURN_CPUS,
                  log=logged.append) as pool:
        first = round_of("abc", 1)
        assert len(_train_workers()) == 3 and len(_ray_processes("TrainController")) >= 3
        assert pool.shrink(3) == 0 and pool.shrink(2) == 1 and pool.slots == 2
        assert logged[-1].startswith("workers: 1 idle warm worker group(s) closed, 2 kept")
        deadline = time.monotonic() + 60
        while (len(_train_workers()), len(_ray_processes("TrainController"))) != (2, 2):
            assert time.monotonic() < deadline, (_train_workers(), _ray_processes("TrainController"))
            time.sleep(0.5)
        second = round_of("ab", 2)
        assert {r.metrics["pid"] for r in second} < {r.metrics["pid"] for r in first}  # the kept groups' processes
        pool.ensure(3)
        assert pool.indices == [0, 1, 3]  # a new index: the retired one's group may still be ending
        third = round_of("abc", 3)
        assert len({r.metrics["pid"] for r in third} - {r.metrics["pid"] for r in first}) == 1  # one new group
        pinned = train_on_slots([RunSpec(run_id="pinned", role="bench", recipe=BASE)], output=tmp_path,
                                pool=pool.client(), slots=pool.indices[2:])  # a run pinned to the new slot
        assert pinned[0].status == "completed" and pinned[0].metrics["warm_slot"] == 3
