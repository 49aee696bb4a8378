"""boosttune.search.resume on folders laid out as Ray Tune 2.60 saves an experiment: a state that reads back whole, one
a killed copy left empty or cut, and what is left to run then. The real search that resumes past such a state is
tests/search/test_tune.py's (test_a_start_point_outside_the_searched_space_...)."""

from __future__ import annotations

import json
import pickle
from datetime import datetime

import pytest

from boosttune.search.resume import (
    SESSION_FORMAT,
    beyond_state,
    left_to_run,
    set_aside,
    state_reads_back,
    trials_in_state,
)

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


def _state_naming(*trial_ids: str) -> bytes:
    """An experiment state as Ray Tune 2.60 writes it: each trial as [its JSON, its run metadata's JSON]."""
    trials = [[json.dumps({"stub": False, "trainable_name": "_trial", "trial_id": t}), json.dumps({})]
              for t in trial_ids]
    return json.dumps({"trial_data": trials, "runner_data": {}, "stats": {}}).encode()


def test_the_trials_a_state_names_are_read_from_the_newest_session(experiment):
    _save(experiment, OLD, _state_naming("aaaa0001"))
    _save(experiment, NEW, _state_naming("aaaa0001", "bbbb0002"))
    assert trials_in_state(str(experiment)) == {"aaaa0001", "bbbb0002"}


def test_a_record_that_landed_after_the_session_began_and_is_not_named_is_beyond_the_state(experiment):
    """The trial added and ended after Tune's last save (the state names it not, its record landed during the
    session); a record of an earlier session, whose state was set aside, is older than the session: not beyond it."""
    _save(experiment, NEW, _state_naming("aaaa0001"))
    began = datetime.strptime(NEW, SESSION_FORMAT).timestamp()
    landed = {"aaaa0001": began + 5, "cccc0003": began + 9, "dddd0004": began - 30}
    assert beyond_state(str(experiment), landed) == ["cccc0003"]
    assert beyond_state(str(experiment), {"aaaa0001": began + 5}) == []
    assert beyond_state(str(experiment.parent), landed) == []  # no state saved: nothing to be beyond
    # Tune's state gives the session's start to the microsecond: a record that landed earlier in the same second
    # belongs to the session before (a search resumed within a second of its last record, as in one process)
    state = json.loads(_state_naming("aaaa0001"))
    (experiment / f"experiment_state-{NEW}.json").write_text(json.dumps({**state, "stats": {"start_time": began + 0.6}}))
    assert beyond_state(str(experiment), {"cccc0003": began + 0.3, "eeee0005": began + 0.7}) == ["eeee0005"]


def test_a_study_trial_left_running_is_told_its_record_or_failed(tmp_path):
    """Real Optuna, real run records: the trial whose run record landed before the driver stopped is told that
    record's figures (and its lossy constraint), as OptunaSearch would have told it; one without a record, or with a
    failed one, is marked FAIL. The study then holds what the results hold."""
    import optuna

    from boosttune.config.experiment import parse_experiment
    from boosttune.execution.runs import RecordStore, RunRecord
    from boosttune.search.lossy import CONSTRAINT
    from boosttune.search.setup import SearchSetup
    from boosttune.search.tune import TUNE_TRIAL_ATTR, _settle_stale_trials
    from boosttune.space import SpaceContext

    base = {"model": "lenet5", "epochs": 1, "batch_size": 32, "steps_per_epoch": 6, "data": {"name": "digits"}}
    config = parse_experiment({"name": "stale", "base": base, "num_trials": 3, "seed": 0, "confirm_seeds": 0})
    setup = SearchSetup(base=base, ctx=SpaceContext(total_steps=6, param_count=10, base_learning_rate=0.05), env={},
                        workers=1, output=str(tmp_path), presets={}, baseline_objective=0.5, max_drop=1.0,
                        target=None, max_concurrent=1, baseline_throughput_sps=1000.0, lossy_drop=3.0)
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'optuna.db'}")
    study = optuna.create_study(study_name="stale", storage=storage, directions=["maximize", "maximize"])
    landed, lossy, unrecorded, failed = (study.ask() for _ in range(4))
    for trial, run_id in ((landed, "aaaa0001"), (lossy, "bbbb0002"), (unrecorded, "cccc0003"), (failed, "dddd0004")):
        trial.set_user_attr(TUNE_TRIAL_ATTR, run_id)
    records = RecordStore(tmp_path / "trials")
    for run_id, accuracy in (("aaaa0001", 0.497), ("bbbb0002", 0.40)):
        records.put(RunRecord(run_id=run_id, role="search", status="completed", recipe=base,
                              metrics={"throughput_sps": 1250.0, "objective_value": accuracy}))
    records.put(RunRecord(run_id="dddd0004", role="search", status="failed", recipe=base, reason="died"))
    lines: list[str] = []
    _settle_stale_trials(storage, config, setup, lines.append)
    trials = optuna.load_study(study_name="stale", storage=storage).trials
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE", "FAIL", "FAIL"]
    assert trials[0].values == [1250.0, 0.497] and trials[1].values == [1250.0, 0.40]
    constraints = [t.constraints[CONSTRAINT] for t in trials[:2]]
    assert constraints[0] <= 0 < constraints[1], constraints  # 0.3 pt below O0: feasible; 10 pt: beyond the 3 pt
    assert any("2 Optuna trial(s)" in line and "told their recorded result" in line for line in lines), lines
    assert any("2 Optuna trial(s) left running" in line for line in lines), lines

