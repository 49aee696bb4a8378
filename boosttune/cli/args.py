"""The argument parser of every boosttune command line: one-line errors, no abbreviated flags.

argparse's own parser prints a usage block of a dozen lines before the one line that matters, and
takes ``--epoch`` as ``--epochs`` (any unambiguous prefix). Here a mistake is one line that names the
flag and what is allowed, with exit code 2, and a flag is read only as it is spelled.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import NoReturn

__all__ = ["ArgumentParser", "DefaultsFormatter", "interrupted", "quiet_mindspore", "resume_command"]


def resume_command(argv: list[str], output: str | Path) -> str:
    """The command line that continues the run: ``argv`` without its --output/--resume, plus both, filled in."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--output":
            skip = True
        elif arg != "--resume" and not arg.startswith("--output="):
            kept.append(arg)
    return shlex.join([*kept, "--resume", "--output", str(Path(output).absolute())])


def interrupted(prog: str, argv: list[str], output: str | Path | None, marker: str) -> int:
    """After Ctrl-C: one line with the exact command that resumes (when the run had claimed its folder); 130."""
    folder = Path(output).absolute() if output is not None else None
    if folder is not None and (folder / marker).is_file():
        sys.stderr.write(f"\n{prog}: interrupted; what finished is kept in {folder}; resume with: "
                         f"{resume_command(argv, folder)}\n")
    else:
        sys.stderr.write(f"\n{prog}: interrupted before anything was written; run the same command again\n")
    return 130


def quiet_mindspore() -> None:
    """MindSpore's C++ log at errors only (``GLOG_v=3``) unless the user set it: its warnings are not ours to
    print, and they would bury boosttune's one-line errors. ``GLOG_v=2`` brings them back."""
    os.environ.setdefault("GLOG_v", "3")


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser with ``allow_abbrev=False`` and a one-line :meth:`error`."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """``PROG: error: MESSAGE (PROG --help lists the flags)`` on one line, exit code 2."""
        message = " ".join(message.split())
        if message.startswith("unrecognized arguments:"):
            message += "; flags are read as spelled, never abbreviated"
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        sys.exit(status)


class DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each flag's default, except where there is none (the help text says what happens then)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)
