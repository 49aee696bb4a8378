"""Taking turns (boosttune.execution.warm._Turns): who trains next, the first turn only once every run is built, a
run that leaves hands the turn on (pure logic)."""

from __future__ import annotations

import pytest

from boosttune.config.experiment import parse_experiment
from boosttune.errors import ConfigError
from boosttune.stages.noise import RunMode
from boosttune.execution.warm import _Turns


def _turns(*order: str) -> _Turns:
    turns = _Turns(list(order))
    turns.arrived.update(order)
    return turns


def test_no_turn_before_every_run_has_arrived_then_the_order_repeats():
    turns = _Turns(["a", "b", "c"])
    turns.arrived.update({"a", "b"})
    assert not turns.mine("a")  # c still builds its data and network: nobody trains beside it
    turns.arrived.add("c")
    seen = []
    for _ in range(7):
        current = next(run for run in "abc" if turns.mine(run))
        seen.append(current)
        turns.next_after(current)
    assert seen == list("abcabca")


def test_a_pass_from_a_run_whose_turn_it_is_not_changes_nothing():
    turns = _turns("a", "b")
    turns.next_after("b")
    assert turns.mine("a")


@pytest.mark.parametrize("at, leaving, then", [
    ("a", "a", "b"), ("b", "b", "c"), ("c", "c", "a"),  # the holder leaves: the next one goes
    ("b", "a", "b"), ("b", "c", "b"), ("c", "a", "c"),  # another leaves: the holder keeps its turn
])
def test_a_run_that_leaves_hands_the_turn_on(at, leaving, then):
    turns = _turns("a", "b", "c")
    while not turns.mine(at):
        turns.next_after(turns.order[turns.at])
    turns.leave(leaving)
    assert turns.mine(then) and leaving not in turns.order
    turns.leave("nobody")
    assert turns.mine(then)


def test_a_run_that_leaves_before_it_arrives_does_not_hold_the_first_turn():
    turns = _Turns(["a", "b"])
    turns.arrived.add("b")
    turns.leave("a")  # failed while building
    assert turns.mine("b")
    turns.leave("b")
    assert turns.order == [] and not turns.mine("b")


def test_the_noise_record_keeps_runs_that_took_turns_apart():
    assert RunMode(True, True).key() != RunMode(True, True, turns=True).key()
    assert RunMode(True, True, turns=True).key().endswith("|epochs in turn")


@pytest.mark.parametrize("fields", [{"workers_per_trial": 2}, {"warm_workers": False}])
def test_epochs_in_turn_need_warm_workers_of_one_rank(fields):
    with pytest.raises(ConfigError, match=r"^confirm_interleave: 'epochs' needs warm_workers true and "
                                          r"workers_per_trial 1 .*allowed here: auto, runs$"):
        parse_experiment({"base": {"model": "lenet5"}, "confirm_interleave": "epochs", **fields})
    assert parse_experiment({"base": {"model": "lenet5"}, "confirm_interleave": "auto", **fields})


@pytest.mark.parametrize("setting, device, workers, warm, nodes, expected", [
    ("auto", "CPU", 1, True, 1, True),
    ("auto", "CPU", 1, True, 2, False),  # runs that take turns must share one machine
    ("auto", "GPU", 1, True, 1, False),
    ("auto", "CPU", 2, True, 1, False),
    ("auto", "CPU", 1, False, 1, False),
    ("epochs", "CPU", 1, True, 2, True),  # asked for: granted (the experiment's check refused what cannot be)
    ("runs", "CPU", 1, True, 1, False),
])
def test_auto_takes_turns_on_a_one_node_cpu_cluster_of_warm_one_rank_workers(monkeypatch, tmp_path, setting, device,
                                                                             workers, warm, nodes, expected):
    import ray

    from boosttune.execution.start import RunRequest, StartedRun

    monkeypatch.setattr(ray, "nodes", lambda: [{"Alive": True}] * nodes + [{"Alive": False}])
    launch = RunRequest(what="bench", document={}, device_target=device, workers=workers, project=None,
                        warm_workers=warm)
    started = StartedRun(launch=launch, output=tmp_path, per_rank={"CPU": 1.0}, storage=None, local=True,
                         placed=None)  # type: ignore[arg-type]
    assert started.interleaves(setting) is expected
