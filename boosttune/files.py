"""The one way boosttune writes a file: atomically (temp file, fsync, rename), with the umask's mode.

Every record, table, export and report goes through here, so a crash or a kill never leaves half a
file and a resumed run only ever reads whole ones. Pure: no Ray, no MindSpore.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

from boosttune.errors import ConfigError

__all__ = ["OWN_MARKER", "check_folder", "check_new_file", "check_writable_folder", "claim_folder", "claim_output_folder",
           "write_atomically", "write_json"]


def write_atomically(target: str | Path, write: Callable[[Path], object]) -> Path:
    """``write(temp_path)`` next to ``target``, then rename: a crash never leaves a half file."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(handle)
    temp = Path(temp_name)
    try:
        write(temp)
        with open(temp, "rb") as written:
            os.fsync(written.fileno())
        os.chmod(temp, 0o666 & ~_umask())  # mkstemp makes 0600; results are shared like any written file
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return target


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` can only read it by setting it, which races
    with a thread writing a file at the same moment)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        umask = os.umask(0o022)
        os.umask(umask)
    return umask


_UMASK_LOCK = threading.Lock()


def json_safe(value: Any) -> Any:
    """NaN and infinities (a diverged loss, say) as null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def write_json(target: str | Path, document: Any) -> Path:
    """``document`` as indented JSON, atomically; non-finite numbers become null (JSON has none)."""
    text = json.dumps(json_safe(document), indent=2, allow_nan=False, default=str) + "\n"
    return write_atomically(target, lambda temp: temp.write_text(text, encoding="utf-8"))


# Written when a run claims its folder, before anything trains: a folder holding only these is a start
# that failed (bad input found late, a device refused), and the corrected command may take it again.
_START_FILES = {"run_info.json"}
# What makes a folder boosttune's own: an experiment's or a bench's marker, or the one a report, an
# export or method cards leave in a folder they made.
OWN_MARKER = ".boosttune.json"
_MARKERS = ("experiment.json", "bench.json", OWN_MARKER)


def claim_folder(folder: str | Path, marker: str, document: dict[str, Any], *, resume: bool, what: str,
                 command: str | None = None) -> Path:
    """Make ``folder`` this run's own, or check that ``--resume`` continues the same run there.

    ``marker`` (e.g. ``experiment.json``) holds ``document``. boosttune writes only into a folder that
    is new, empty, or its own run's (and then only with ``--resume``): a folder that holds another run,
    or files boosttune did not write, is never written over, and ``--resume`` with other settings is
    refused rather than mixing two runs.
    """
    folder = check_folder(folder, marker, document, resume=resume, what=what, command=command)
    if not resume:  # new, empty, or a start that trained nothing: this run's settings
        folder.mkdir(parents=True, exist_ok=True)
        for name in _START_FILES:
            (folder / name).unlink(missing_ok=True)
        write_json(folder / marker, document)
    return folder


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _same_settings(saved: Path, document: dict[str, Any]) -> bool | None:
    """Whether a folder's marker holds ``document`` (None: unreadable)."""
    try:
        return json.loads(saved.read_text()) == json.loads(json.dumps(document, default=str))
    except (OSError, ValueError):
        return None


def check_folder(folder: str | Path, marker: str, document: dict[str, Any], *, resume: bool, what: str,
                 command: str | None = None) -> Path:
    """What :func:`claim_folder` checks, writing nothing: the absolute folder, or a one-line ConfigError."""

    folder = check_writable_folder(folder)
    saved = folder / marker
    if saved.is_file():
        if not resume:
            if not _started(folder, marker):
                return folder
            if _same_settings(saved, document) is False:  # --resume would be refused too: say the one way out
                raise ConfigError(f"--output: {folder} holds an earlier {what} with other settings (see {saved}); "
                                  "choose another folder")
            again = f" ({command} --resume --output {folder})" if command else ""
            raise ConfigError(f"--output: {folder} holds an earlier {what}; pass --resume to continue it{again} "
                              "or choose another folder")
        try:
            earlier = json.loads(saved.read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"--resume: {saved} is unreadable ({' '.join(str(e).split())}); this folder's "
                              f"{what} cannot be continued: choose another folder") from None
        if earlier != json.loads(json.dumps(document, default=str)):
            raise ConfigError(f"--resume: {folder} holds {_article(what)} {what} with a different configuration (see {saved}); "
                              "resume with the same settings or choose another folder")
    elif resume:
        raise ConfigError(f"--resume: {folder} holds no {what} to resume")
    elif folder.is_dir() and any(folder.iterdir()):
        other = next((name for name in _MARKERS if (folder / name).is_file()), None)
        if other is not None:
            raise ConfigError(f"--output: {folder} holds boosttune's {other}, not a {what}; allowed: a new or empty "
                              "folder")
        _refuse_foreign(folder, "--output")
    return folder


def check_writable_folder(folder: str | Path, flag: str = "--output") -> Path:
    """``folder`` absolute, if it is a folder or can be made one there; else a one-line ConfigError."""

    folder = Path(folder).expanduser().absolute()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{flag}: {folder} is a file, not a folder; allowed: a new or empty folder")
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"{flag}: {existing} is a file, so the folder {folder} cannot be made there")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag}: {existing} is not writable by this user, so {folder} cannot be written")
    return folder.resolve()


def claim_output_folder(folder: str | Path, flag: str, written_by: str) -> Path:
    """A folder for a report, an export or method cards: new, empty or boosttune's own; marked as boosttune's."""
    folder = check_writable_folder(folder, flag)
    _refuse_foreign(folder, flag)
    if not any((folder / name).is_file() for name in _MARKERS):
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / OWN_MARKER, {"written_by": written_by})
    return folder


def check_new_file(path: str | Path, flag: str) -> Path:
    """A file boosttune is about to write: it must not exist (a result is never written over)."""

    path = Path(path).expanduser().absolute()
    if path.is_dir():
        raise ConfigError(f"{flag}: {path} is a folder; allowed: the path of a new file, e.g. {path / 'result.json'}")
    if path.exists():
        raise ConfigError(f"{flag}: {path} exists; boosttune never writes over a file: choose a new name")
    check_writable_folder(path.parent, flag)
    return path


def _started(folder: Path, marker: str) -> bool:
    """Whether anything beyond the start files was written (a run began, so its records matter)."""
    return any(entry.name not in {marker, *_START_FILES} for entry in folder.iterdir())


def _refuse_foreign(folder: Path, flag: str) -> None:
    """Refuse a folder that holds files and is not boosttune's (no marker): they would be mixed in or lost."""

    if not folder.is_dir() or any((folder / name).is_file() for name in _MARKERS):
        return
    entries = sorted(entry.name for entry in folder.iterdir())
    if entries:
        more = f" and {len(entries) - 1} more" if len(entries) > 1 else ""
        raise ConfigError(f"{flag}: {folder} holds files boosttune did not write ({entries[0]}{more}) and is not a "
                          "boosttune folder; allowed: a new or empty folder (nothing there is written over)")
