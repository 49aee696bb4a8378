"""The one exception hierarchy of boosttune.

Every error a user can cause derives from :class:`BoosttuneError`; the CLI prints its message
on one line and exits non-zero, never with a traceback.
"""

from __future__ import annotations

__all__ = [
    "BoosttuneError",
    "ConfigError",
    "DataError",
    "UnsupportedError",
    "TrialError",
]


class BoosttuneError(Exception):
    """Base class of every error boosttune raises on purpose."""


class ConfigError(BoosttuneError, ValueError):
    """A configuration value is invalid; the message names the field, the value and what is allowed."""


class DataError(BoosttuneError, ValueError):
    """A data set is missing or malformed; the message names the path and what was expected."""


class UnsupportedError(BoosttuneError):
    """A knob is not supported on the current device (found by the capability probe)."""


class TrialError(BoosttuneError, RuntimeError):
    """A trial failed while running; the message carries MindSpore's reason."""
