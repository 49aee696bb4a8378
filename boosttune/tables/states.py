"""The one vocabulary of a run's state, as Optuna's ``TrialState`` is for a trial: every run record, results row and
confirm row carries one of these in its ``status``, and every module compares against these names, not bare strings.

A :class:`RunStatus` is a ``str`` (``StrEnum``), so a table read from disk (plain strings) compares equal to it and
``table["status"].isin(FINISHED)`` reads as it did.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FINISHED", "STATUSES", "RunStatus"]


class RunStatus(StrEnum):
    """What a run ended as."""

    COMPLETED = "completed"  # trained its epochs
    STOPPED = "stopped"  # stopped early: a scheduler's decision or a loss that is not a number
    TARGET_REACHED = "target_reached"  # reached its target objective before its last epoch
    FAILED = "failed"  # raised, or its worker was lost
    DUPLICATE = "duplicate"  # an equivalent configuration was trained already; the record repeats its figures


STATUSES: tuple[RunStatus, ...] = tuple(RunStatus)
# Trained to the end (or to the target): their figures are comparable.
FINISHED: tuple[RunStatus, ...] = (RunStatus.COMPLETED, RunStatus.TARGET_REACHED)
