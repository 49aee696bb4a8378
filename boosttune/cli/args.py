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
import textwrap
from pathlib import Path
from typing import Any, Callable, NoReturn

__all__ = ["EXIT_ANSWERED", "EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_NOT_HELD", "ArgumentParser",
           "DefaultsFormatter", "FieldFlags", "FieldsFormatter", "add_deprecated_alias",
           "field_help", "fields_epilog", "interrupted", "quiet_mindspore", "resume_command"]


# The exit codes a job scheduler reads (`ray job submit` shows FAILED for anything but 0): 0 an answer was given (a
# recipe or "keep O0"); 1 the run failed or was aborted (a diverged baseline, too many failed trials, a lost
# cluster); 2 the input was wrong (a flag, a field, a file, a device); 3 (boosttune verify) the answer does not hold at
# the planned job; 130 interrupted (the resume command printed).
EXIT_ANSWERED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_NOT_HELD = 3


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


def quiet_mindspore(level: str = "3") -> None:
    """MindSpore's C++ log at errors only (``GLOG_v=3``) unless the user set it: its warnings are not ours to
    print, and they would bury boosttune's one-line errors. ``GLOG_v=2`` brings them back. ``level`` "4": critical
    only (``boosttune check``, whose every finding is a line of its own: MindSpore's compile-failure dump would
    bury it)."""
    os.environ.setdefault("GLOG_v", level)


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser with ``allow_abbrev=False`` and a one-line :meth:`error`.

    ``epilog_from``: a function that writes the epilog when help is asked for (e.g. :func:`fields_epilog` of a
    config model whose module is slow to import), so that a command that needs no help does not import it.
    """

    def __init__(self, *args, epilog_from: Any = None, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.epilog_from = epilog_from

    def format_help(self) -> str:
        if self.epilog_from is not None:
            self.epilog = self.epilog_from()
        return super().format_help()

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """As argparse's, with a hint for flags the command does not take: a command that sets ``unknown_hint``
        (a function of the unknown arguments) says what they stand for (tune: ``--set FIELD=VALUE``)."""
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            hint = getattr(namespace, "unknown_hint", None)
            said = hint(extras) if callable(hint) else None
            self.error(f"unrecognized arguments: {' '.join(extras)}" + (f"; {said}" if said else ""))
        return namespace

    def error(self, message: str) -> NoReturn:
        """``PROG: error: MESSAGE (PROG --help lists the flags)`` on one line, exit code 2."""
        message = " ".join(message.split())
        if message.startswith("unrecognized arguments:") and "--set " not in message:
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


class FieldsFormatter(argparse.HelpFormatter):
    """Fills each line of a description or epilog as its own paragraph; a line that starts with two spaces is a
    list item, wrapped under itself (the fields of a config file in :func:`fields_epilog`)."""

    def _fill_text(self, text, width, indent):
        lines = []
        for line in text.splitlines():
            if line.startswith("  "):
                lines.append(textwrap.fill(" ".join(line.split()), width, initial_indent=indent + "  ",
                                           subsequent_indent=indent + "    "))
            else:
                lines.append(super()._fill_text(line, width, indent) if line.strip() else "")
        return "\n".join(lines)


def field_help(model: Any, name: str) -> str:
    """The help of a flag that sets the config field ``name``: the field's description (one source)."""
    return model.model_fields[name].description.replace("%", "%%")


def _default(field: Any) -> Any:
    from pydantic_core import PydanticUndefined

    if field.default_factory is not None:
        return field.default_factory()
    return None if field.default is PydanticUndefined else field.default



class FieldFlags:
    """Flags that each set one field of a pydantic config: the type, choices, default and help come from the field
    (one source; a list field takes comma-separated values); ``off`` flags switch a field that is on by default off,
    ``switch`` flags one that is off by default on; ``defaults`` replace a field's default where a script's differs;
    ``more_help`` adds to a field's help. :meth:`values` reads the parsed flags back as the fields they set."""

    def __init__(self, model: Any, on: dict[str, str], off: dict[str, str] | None = None,
                 defaults: dict[str, Any] | None = None, switch: dict[str, str] | None = None,
                 more_help: dict[str, Callable[[], str]] | None = None) -> None:
        self.model, self.on, self.off, self.defaults = model, on, dict(off or {}), dict(defaults or {})
        self.switch, self.more_help = dict(switch or {}), dict(more_help or {})

    def add_to(self, parser: argparse.ArgumentParser, *, file_defaults: bool = False, skip: tuple[str, ...] = ()) -> None:
        """The flags on ``parser``; ``file_defaults``: unset unless given, so an experiment file's value stands
        (``boosttune tune``, ``check``); ``skip``: flags the parser defines itself."""
        for flag, name in self.on.items():
            if flag in skip:
                continue
            field = self.model.model_fields[name]
            kind, choices = _flag_type(field.annotation)
            default = None if file_defaults else self.defaults.get(name, _default(field))
            described = field_help(self.model, name)
            described += f": {self.more_help[name]()}" if name in self.more_help else ""
            described += " (default: the file's)" if file_defaults else ""
            parser.add_argument(flag, dest=name, type=None if choices else kind, choices=choices, default=default,
                                help=described)
        for flag, name in self.off.items():
            if flag not in skip:
                parser.add_argument(flag, action="store_true",
                                    help=f"sets {name} false ({name}: {field_help(self.model, name)})")
        for flag, name in self.switch.items():
            if flag not in skip:
                parser.add_argument(flag, action="store_true",
                                    help=f"sets {name} true ({name}: {field_help(self.model, name)})")

    def given(self, args: argparse.Namespace, skip: tuple[str, ...] = ()) -> dict[str, Any]:
        """The fields the flags given on the command line set (flags added with ``file_defaults``)."""
        on = {name: getattr(args, name, None) for flag, name in self.on.items() if flag not in skip}
        off = {name: False for flag, name in self.off.items()
               if flag not in skip and getattr(args, _dest(flag), False)}
        switched = {name: True for flag, name in self.switch.items()
                    if flag not in skip and getattr(args, _dest(flag), False)}
        return {**{name: value for name, value in on.items() if value is not None}, **off, **switched}

    def values(self, args: argparse.Namespace) -> dict[str, Any]:
        on = {name: getattr(args, name) for name in self.on.values()}
        off = {name: not getattr(args, _dest(flag)) for flag, name in self.off.items()}
        return {**on, **off, **{name: bool(getattr(args, _dest(flag))) for flag, name in self.switch.items()}}


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def comma_list(text: str) -> list[str]:
    """A list field's flag value: comma-separated, spaces around an item dropped (``less_bn, grad_freeze``); an
    empty item (``less_bn,,amp``, a trailing comma) is refused, never dropped: it may be a name lost in an edit."""
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"{text!r} has an empty item; expected comma-separated names, e.g. "
                                         "less_bn,grad_freeze")
    return parts


def _flag_type(annotation: Any) -> tuple[Any, list[Any] | None]:
    """The argparse type of a field's annotation (``int | None`` -> int), or the choices of a ``Literal``."""
    import typing

    options = [annotation] if typing.get_origin(annotation) is typing.Literal else \
        [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    first = options[0]
    if typing.get_origin(first) is typing.Literal:
        return str, list(typing.get_args(first))
    if typing.get_origin(first) is list:
        return comma_list, None
    return first, None


def fields_epilog(model: Any, title: str, names: list[str] | None = None, prefix: str = "",
                  defaults: dict[str, str] | None = None) -> str:
    """One line per field of a pydantic config ``model``: its name (after ``prefix``, e.g. ``base.``), description
    and default (for a FILE's help; ``defaults``: a command's own, where it differs from the model's)."""
    lines = [title]
    for name in names or list(model.model_fields):
        field = model.model_fields[name]
        default = (defaults or {}).get(name, _default(field))
        if hasattr(default, "model_dump"):  # a nested config: its own fields are listed under its name
            default = None
        if isinstance(default, bool):
            default = str(default).lower()  # as YAML spells it
        shown = "" if default in (None, [], {}) else f" (default: {default})"
        lines.append(f"  {prefix}{name}: {field.description}{shown}")
    return "\n".join(lines)


class _DeprecatedAlias(argparse.Action):
    """An old flag kept working: it sets the new flag's value and says once, on stderr, to use the new one."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        sys.stderr.write(f"{parser.prog}: {option_string} is a deprecated alias of {self.new}; use {self.new}\n")
        setattr(namespace, self.dest, values)


def add_deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str, **kwargs: Any) -> None:
    """Keep ``old`` as an alias of the flag ``new`` (same dest and type), its help saying so."""
    kwargs.setdefault("dest", new.lstrip("-").replace("-", "_"))
    kwargs.setdefault("metavar", kwargs["dest"].upper())
    parser.add_argument(old, action=_DeprecatedAlias, new=new, default=argparse.SUPPRESS,
                        help=f"deprecated alias of {new}", **kwargs)
