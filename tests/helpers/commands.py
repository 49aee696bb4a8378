"""Every command a user can copy out of the project, as printed: the fenced shell blocks of the README, docs/,
the example project's README, the method cards and benchmarks/README.md; the usage lines of the cluster files'
headers; the indented usage lines of the scripts' docstrings (experiments/, benchmarks/). Each line (its ``\\``
continuations joined, its comment dropped) is split into the simple commands a shell would run, at ``&&``, ``||``,
``;``, ``|`` and ``&``. tests/test_commands.py runs each as far as this machine allows."""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import REPO

SHELL_BLOCKS = ("bash", "sh", "shell", "console")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SEPARATORS = ("&&", "||", ";", "|", "&")
# A line that starts as a command does, in a block that is not a shell block: it would be copied but never tested.
LOOKS_LIKE_A_COMMAND = re.compile(r"^\s*(\$ )?(boosttune|python3?(\.\d+)?|ray|pip|pytest|cd) [^:]")


@dataclass(frozen=True)
class Shown:
    """One simple command as a page shows it: where (``README.md:42``), the whole line, and its words."""

    where: str
    line: str
    words: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.where}: {' '.join(self.words)}"


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "experiments" / "custom" / "README.md",
            *sorted((REPO / "reports").rglob("*.md")), REPO / "benchmarks" / "README.md"]


def cluster_files() -> list[Path]:
    return sorted(REPO.glob("cluster*.yaml"))


def scripts() -> list[Path]:
    return sorted([*(REPO / "experiments").glob("*.py"), *(REPO / "experiments" / "custom").glob("*.py"),
                   *(REPO / "benchmarks").glob("*.py")])


def split_line(where: str, line: str) -> list[Shown]:
    """The simple commands of one shell line (comments dropped; a line shlex cannot read is one command of its
    raw words, so that the runner names it)."""
    line = line.strip().removeprefix("$ ")
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    found, current, redirected = [], [], False
    for word in [*words, ";"]:
        if redirected:  # the file a redirection names is not an argument
            redirected = False
            continue
        if word in (">", ">>", "<", "2>"):
            redirected = True
            continue
        if word in SEPARATORS:
            if current:
                found.append(Shown(where, line, tuple(current)))
            current = []
        else:
            current.append(word)
    return found


def _lines(text: str) -> list[tuple[int, str]]:
    """(offset of the line in ``text``, the line with its continuations joined)."""
    joined, out, start = "", [], 0
    for number, raw in enumerate(text.splitlines()):
        if not joined:
            start = number
        if raw.rstrip().endswith("\\"):
            joined += raw.rstrip()[:-1] + " "
            continue
        out.append((start, joined + raw))
        joined = ""
    return out


def _fenced() -> list[tuple[str, str, int, str]]:
    """Every fenced block of the pages: (page, its language, the line its body starts on, the body)."""
    blocks = []
    for page in pages():
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            first = text[:match.start(2)].count("\n") + 1
            blocks.append((str(page.relative_to(REPO)), match.group(1), first, match.group(2)))
    return blocks


def from_pages() -> list[Shown]:
    found = []
    for page, language, first, body in _fenced():
        if language not in SHELL_BLOCKS:
            continue
        for offset, line in _lines(body):
            if language == "console" and not line.startswith("$ "):
                continue  # a transcript: what follows a command is its output
            found += split_line(f"{page}:{first + offset}", line)
    return found


def commands_outside_shell_blocks() -> list[str]:
    """Lines that read as commands in a fenced block that is not a shell block (never run by the test)."""
    return [f"{page}:{first + offset}: {line.strip()}" for page, language, first, body in _fenced()
            if language not in (*SHELL_BLOCKS, "python", "yaml", "json", "text")
            for offset, line in enumerate(body.splitlines()) if LOOKS_LIKE_A_COMMAND.match(line)]


USAGE = re.compile(r"^#\s{2,}((ray|boosttune|python3?(\.\d+)?|pip|cd) .*)$")


def from_cluster_files() -> list[Shown]:
    """The usage lines of each cluster file's header comment (``#   ray up cluster.yaml  # ...``)."""
    found = []
    for path in cluster_files():
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.startswith("#"):
                break
            usage = USAGE.match(line)
            if usage:
                found += split_line(f"{path.name}:{number}", usage.group(1))
    return found


def from_docstrings() -> list[Shown]:
    """The indented lines of a script's module docstring that run a program (its usage)."""
    found = []
    for path in scripts():
        module = ast.parse(path.read_text(encoding="utf-8"))
        doc = ast.get_docstring(module, clean=False) or ""
        for offset, line in _lines(doc):
            if line.startswith(" ") and re.match(r"\s+(\$ )?(ray|boosttune|python3?(\.\d+)?|pip|cd) ", line):
                found += split_line(f"{path.relative_to(REPO)}:{module.body[0].lineno + offset}", line)
    return found


def shown() -> list[Shown]:
    return [*from_pages(), *from_cluster_files(), *from_docstrings()]
