"""boosttune.search.resume on folders laid out as Ray Tune 2.60 saves an experiment: a state that reads back whole, one
a killed copy left empty or cut, and what is left to run then. The real search that resumes past such a state is
tests/search/test_tune.py's (test_a_start_point_outside_the_searched_space_...)."""

from __future__ import annotations

import json
import pickle

import pytest

from boosttune.search.resume import left_to_run, set_aside, state_reads_back

OLD, NEW = "2026-11-26_17-39-31", "2026-11-26_17-40-13"


def _save(folder, session: str, state: bytes | None = None, searcher: bytes | None = None) -> None:
    """One save of Tune's state for a driver session, as Tune writes it."""
    (folder / f"experiment_state-{session}.json").write_bytes(
        state if state is not None else json.dumps({"trial_data": [], "runner_data": {}}).encode())
    (folder / f"search_gen_state-{session}.json").write_bytes(pickle.dumps({"counter": 3}))  # a pickle, named .json
    (folder / f"searcher-state-{session}.pkl").write_bytes(
        searcher if searcher is not None else pickle.dumps({"_ot_trials": {"a": 1}}))


@pytest.fixture
def experiment(tmp_path):
    folder = tmp_path / "tune" / "lenet5-search"
    folder.mkdir(parents=True)
    (folder / "tuner.pkl").write_bytes(pickle.dumps({"param_space": {}}))
    (folder / "_trial_c4c24b6f_1_boost=False").mkdir()
    _save(folder, OLD)
    return folder


def test_a_whole_state_reads_back(experiment):
    assert state_reads_back(str(experiment))


@pytest.mark.parametrize("state, searcher", [(b"", None), (b'{"trial_data": [{"id"', None),
                                             (None, b""), (None, pickle.dumps({"_ot_trials": {"a": 1}})[:-3])],
                         ids=["state-empty", "state-cut", "searcher-empty", "searcher-cut"])
def test_the_newest_state_cut_by_a_killed_copy_does_not_read_back(experiment, state, searcher):
    _save(experiment, NEW, state, searcher)
    assert not state_reads_back(str(experiment))


def test_only_the_newest_state_counts_as_tune_restores_from_it(experiment):
    _save(experiment, OLD, b"")
    _save(experiment, NEW)
    assert state_reads_back(str(experiment))


def test_no_state_or_no_tuner_does_not_read_back(tmp_path, experiment):
    assert not state_reads_back(str(tmp_path))
    (experiment / "tuner.pkl").unlink()
    assert not state_reads_back(str(experiment))


def test_a_state_set_aside_is_moved_whole_and_the_trials_stay(experiment):
    _save(experiment, NEW, b"")
    before = {p.name: p.read_bytes() for p in experiment.iterdir() if p.is_file()}
    folder = set_aside(str(experiment))
    assert folder == str(experiment / f"unreadable-state-{NEW}")
    assert {p.name: p.read_bytes() for p in (experiment / f"unreadable-state-{NEW}").iterdir()} == before
    assert sorted(p.name for p in experiment.iterdir()) == ["_trial_c4c24b6f_1_boost=False", f"unreadable-state-{NEW}"]
    assert not state_reads_back(str(experiment))  # a new search starts there


def test_what_is_left_counts_every_record_and_skips_recorded_start_points():
    points = [{"p": "O0"}, {"p": "O1"}, {"p": "gf"}]
    left, rest = left_to_run(5, ["O0", "O1", None], points, key_of=lambda point: point["p"])
    assert left == 2 and rest == [{"p": "gf"}]  # a failed record (no key) counts as a trial, as Tune counted it
    assert left_to_run(2, ["a", "b", "c"], [], key_of=str) == (0, [])
