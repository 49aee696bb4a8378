"""The one way boosttune writes a file: atomically (temp file, fsync, rename), with the umask's mode.

Every record, table, export and report goes through here, so a crash or a kill never leaves half a
file and a resumed run only ever reads whole ones. Pure: no Ray, no MindSpore.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = ["check_folder", "claim_folder", "write_atomically", "write_json"]


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
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # mkstemp makes 0600; results are shared like any written file
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return target


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


def claim_folder(folder: str | Path, marker: str, document: dict[str, Any], *, resume: bool, what: str,
                 command: str | None = None) -> Path:
    """Make ``folder`` this run's own, or check that ``--resume`` continues the same run there.

    ``marker`` (e.g. ``experiment.json``) holds ``document``; a folder that holds another run is never
    written over, and ``--resume`` with other settings is refused rather than mixing two runs.
    """
    folder = check_folder(folder, marker, document, resume=resume, what=what, command=command)
    if not (folder / marker).is_file():
        write_json(folder / marker, document)
    return folder


def check_folder(folder: str | Path, marker: str, document: dict[str, Any], *, resume: bool, what: str,
                 command: str | None = None) -> Path:
    """What :func:`claim_folder` checks, writing nothing: the absolute folder, or a one-line ConfigError."""
    from boosttune.errors import ConfigError

    folder = Path(folder).resolve()
    saved = folder / marker
    if saved.is_file():
        if not resume:
            again = f" ({command} --resume --output {folder})" if command else ""
            raise ConfigError(f"--output: {folder} holds an earlier {what}; pass --resume to continue it{again} "
                              "or choose another folder")
        if json.loads(saved.read_text()) != json.loads(json.dumps(document, default=str)):
            raise ConfigError(f"--resume: {folder} holds a {what} with a different configuration (see {saved}); "
                              "resume with the same settings or choose another folder")
    elif resume:
        raise ConfigError(f"--resume: {folder} holds no {what} to resume")
    return folder
