"""Where a run came from: the command that reproduces it, the versions and the machine, in ``run_info.json``.

Written when an experiment or a bench claims its folder and updated as stages learn more (the
device's name, the knobs the search left out); the report's header reads it. Pure: no Ray, no MindSpore.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

from boosttune.files import write_json

__all__ = ["RUN_INFO_NAME", "command_line", "load_run_info", "package_versions", "record_run_info"]

RUN_INFO_NAME = "run_info.json"
_PACKAGES = ("boosttune", "mindspore", "ray", "optuna", "pandas", "plotly", "numpy")


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as a user would type it again: ``boosttune ...`` or ``python script.py ...``, shell-quoted."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return ""
    program = Path(argv[0])
    run_as_module = program.name == "main.py" and program.parent.name == "cli" and program.parent.parent.name == "boosttune"
    if program.name == "boosttune" or run_as_module:  # the console script, or python -m boosttune.cli.main
        head = ["boosttune"]
    elif program.suffix == ".py":
        try:
            shown = str(program.resolve().relative_to(Path.cwd()))
        except (ValueError, OSError):  # elsewhere, or the working directory is gone
            shown = str(program)
        head = ["python", shown]
    else:
        head = [program.name]
    return shlex.join(head + argv[1:])


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/@\s]*):(?P<secret>[^@/\s]+)@")
_SECRET_PARAMS = re.compile(r"(?i)(?P<key>[?&](?:[a-z_]*(?:secret|password|passwd|token|access_key|"
                            r"session_token|credential)[a-z_]*)=)(?P<value>[^&\s'\"]+)")


def redact(text: str) -> str:
    """``text`` with the secrets a URL may carry masked (``postgresql://u:***@host``, ``?secret_key=***``) and
    the user's home folder written ``~``: a run record, an export or a report is shared; these are not."""
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    text = _SECRET_PARAMS.sub(lambda m: f"{m['key']}***", text)
    home = os.path.expanduser("~")
    if home not in ("", "/", "~"):
        text = re.sub(rf"{re.escape(home)}(?=/|\b|$)", "~", text)
    return text


def package_versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on (read from metadata: nothing is imported)."""
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # deleted underneath the process (a Ray job's working_dir)
        return None


def record_run_info(folder: str | Path, **fields: Any) -> Path:
    """Merge ``fields`` into ``folder/run_info.json``; the first call also records command, versions and host."""
    path = Path(folder) / RUN_INFO_NAME
    info = load_run_info(folder)
    resumed = fields.pop("resumed", False)
    if not info:  # the command that reproduces the run from scratch: without --resume
        cwd = _cwd()
        info = {"command": redact(command_line([a for a in sys.argv if a != "--resume"])),
                "cwd": redact(cwd) if cwd else None, "host": platform.node(),
                "platform": platform.platform(), "cpu_count": os.cpu_count(),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "versions": package_versions()}
    elif resumed:
        info.setdefault("resumed", []).append({"command": redact(command_line()),
                                               "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    info.update(fields)
    return write_json(path, info)


def load_run_info(folder: str | Path) -> dict[str, Any]:
    """What ``run_info.json`` holds; empty for a folder written before it existed or unreadable."""
    path = Path(folder) / RUN_INFO_NAME
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}
