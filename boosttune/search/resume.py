"""Whether a stopped search can take Tune's saved state back, and what is left to run when it cannot.

Tune saves its experiment state once a second (``TUNE_GLOBAL_CHECKPOINT_S=1``, set by :mod:`boosttune.search.tune`).
A state a killed driver left cut (:func:`state_reads_back`), or one older than a trial record (:func:`beyond_state`:
a trial added and ended within the saving period), would make Tune draw trials again past ``num_trials``: such a state
is set aside (moved, never deleted) and the search starts afresh for the trials its records do not hold, from the
Optuna study. Tune offers no check of its own.

Why: docs/design/resume.md.
"""

from __future__ import annotations

import fnmatch
import json
from datetime import datetime
from typing import Iterable, Mapping

from boosttune.ray_internals import storage_fs_and_path

# One save of Tune's state: the files it writes for a driver session, named by the session's start time.
_SESSION_FILES = ("experiment_state-{}.json", "search_gen_state-{}.json", "searcher-state-{}.pkl")
_STATE = _SESSION_FILES[0]  # the one Tune picks the newest session by
_TUNER = "tuner.pkl"
SESSION_FORMAT = "%Y-%m-%d_%H-%M-%S"  # a driver session's name: its start, local time (TuneController, Ray 2.60)
SET_ASIDE = "unreadable-state-{}"

__all__ = ["SET_ASIDE", "beyond_state", "left_to_run", "not_recorded", "set_aside", "state_reads_back", "trials_in_state"]


def _fs(experiment_path: str):
    return storage_fs_and_path(experiment_path)


def _names(fs, root: str) -> list[str]:
    import pyarrow.fs

    return [info.base_name for info in fs.get_file_info(pyarrow.fs.FileSelector(root))
            if info.type == pyarrow.fs.FileType.File]


def _state_file_complete(data: bytes) -> bool:
    """Read by what it holds, not by its name: Tune's ``search_gen_state-*.json`` is a pickle."""
    if data.startswith(b"\x80"):  # a pickle (protocol 2 or later) ends with its STOP opcode; one cut short does not
        return data.endswith(b".")
    try:
        json.loads(data)
    except ValueError:  # empty, or cut inside a value
        return False
    return True


def _newest_session(names: Iterable[str]) -> str | None:
    states = fnmatch.filter(names, _STATE.format("*"))
    prefix, suffix = _STATE.split("{}")
    return max(states)[len(prefix):-len(suffix)] if states else None  # as Tune picks the newest


def state_reads_back(experiment_path: str) -> bool:
    """Whether the newest state Tune saved in ``experiment_path`` (and the tuner it restores with) reads back whole."""
    fs, root = _fs(experiment_path)
    names = _names(fs, root)
    session = _newest_session(names)
    if session is None or _TUNER not in names:
        return False
    for name in (_TUNER, *(pattern.format(session) for pattern in _SESSION_FILES)):
        if name in names:
            with fs.open_input_stream(f"{root}/{name}") as stream:
                if not _state_file_complete(stream.readall()):
                    return False
    return True


def _newest_state(experiment_path: str) -> tuple[str, dict] | None:
    """(the session's name, the experiment state Tune saved last in ``experiment_path``); None where none was saved."""
    fs, root = _fs(experiment_path)
    session = _newest_session(_names(fs, root))
    if session is None:
        return None
    with fs.open_input_stream(f"{root}/{_STATE.format(session)}") as stream:
        return session, json.loads(stream.readall())


def _trial_ids(state: dict) -> set[str]:
    ids = set()
    for entry in state.get("trial_data", []):  # [the trial as JSON, its run metadata as JSON] (Ray 2.60)
        trial = entry[0] if isinstance(entry, (list, tuple)) else entry
        ids.add(json.loads(trial)["trial_id"] if isinstance(trial, str) else trial["trial_id"])
    return ids


def trials_in_state(experiment_path: str) -> set[str]:
    """The ids of the trials the newest state Tune saved in ``experiment_path`` holds (one that reads back whole)."""
    newest = _newest_state(experiment_path)
    return _trial_ids(newest[1]) if newest else set()


def beyond_state(experiment_path: str, landed: Mapping[str, float]) -> list[str]:
    """The run ids in ``landed`` (run id -> when its record landed, epoch seconds) that the newest saved state does not
    name although they landed after that state's driver session began: trials added and ended after Tune last saved.
    (Records of an earlier session, one whose state was set aside, are older than the session and not named.)"""
    newest = _newest_state(experiment_path)
    if newest is None:
        return []
    session, state = newest
    began = (state.get("stats") or {}).get("start_time")  # the session's start, epoch seconds (Ray 2.60)
    if not isinstance(began, (int, float)):  # else its name: the start's local second
        began = datetime.strptime(session, SESSION_FORMAT).timestamp()
    known = _trial_ids(state)
    return sorted(run_id for run_id, at in landed.items() if run_id not in known and at >= began)


def set_aside(experiment_path: str) -> str:
    """Move every saved state and the tuner out of Tune's way, into a folder beside them; returns its path."""
    fs, root = _fs(experiment_path)
    names = _names(fs, root)
    folder = f"{root}/{SET_ASIDE.format(_newest_session(names) or 'none')}"
    fs.create_dir(folder)
    for name in names:
        if name == _TUNER or any(fnmatch.fnmatch(name, pattern.format("*")) for pattern in _SESSION_FILES):
            fs.move(f"{root}/{name}", f"{folder}/{name}")
    return folder


def left_to_run(num_trials: int, recorded_keys: list[str | None], points: list[dict], key_of) -> tuple[int, list[dict]]:
    """(trials left, the start points not yet recorded): every search record counts as a trial, finished or failed,
    as Tune counted it; a start point whose recipe (``key_of(point)``) has a record is not drawn again."""
    return max(num_trials - len(recorded_keys), 0), not_recorded(points, recorded_keys, key_of)


def not_recorded(points: list[dict], recorded_keys: list[str | None], key_of) -> list[dict]:
    """The points whose recipe (``key_of(point)``) no record holds."""
    done = set(recorded_keys)
    return [point for point in points if key_of(point) not in done]
