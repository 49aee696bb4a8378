"""The one exception hierarchy of boosttune.

Every error a user can cause derives from :class:`BoosttuneError`; the CLI prints its message
on one line and exits non-zero, never with a traceback.
"""

from __future__ import annotations

__all__ = [
    "BoosttuneError",
    "BuilderError",
    "ConfigError",
    "DataError",
    "UnsupportedError",
    "TrialError",
    "describe_error",
]


class BoosttuneError(Exception):
    """Base class of every error boosttune raises on purpose."""


class ConfigError(BoosttuneError, ValueError):
    """A configuration value is invalid; the message names the field, the value and what is allowed."""


class BuilderError(ConfigError):
    """A user's model builder cannot be used: it does not import, or returns parts that do not fit; the message
    names the entry (``module:function``) and what was wrong."""


class DataError(BoosttuneError, ValueError):
    """A data set is missing or malformed; the message names the path and what was expected."""


class UnsupportedError(BoosttuneError):
    """A knob is not supported on the current device (found by the capability probe)."""


class TrialError(BoosttuneError, RuntimeError):
    """A trial failed while running; the message carries MindSpore's reason."""


def describe_error(error: BaseException) -> str:
    """One line that names what failed: the exception, its message, where it was raised and which library
    called it (``FileNotFoundError: [Errno 2] No such file or directory, in os.getcwd() at posixpath.py:493
    (relpath), called from ray/tune/analysis/experiment_analysis.py:112 (_get_trial_paths)``).
    """
    import traceback  # only when an error is described: errors is imported by everything, `boosttune --help` too

    frames = traceback.extract_tb(error.__traceback__)
    message = " ".join(str(error).split()) or "(no message)"
    text = f"{type(error).__name__}: {message}"
    if not frames:
        return text
    last = frames[-1]
    text += f", raised at {_short_path(last.filename)}:{last.lineno} ({last.name}: {(last.line or '').strip()})"
    caller = next((f for f in reversed(frames[:-1]) if "site-packages" in f.filename
                   and "/boosttune/" not in f.filename and f.filename != last.filename), None)
    if caller is not None:
        text += f", called from {_short_path(caller.filename)}:{caller.lineno} ({caller.name})"
    return text


def _short_path(filename: str) -> str:
    """A library file from its package down (``ray/tune/tuner.py``); a standard-library file by its name."""
    parts = filename.replace("\\", "/").split("/")
    if "site-packages" in parts:
        return "/".join(parts[parts.index("site-packages") + 1:])
    return parts[-1]

