"""The planned job, verified: each ``boosttune verify`` of the run, what its race predicted beside what the planned
job measured (verify.json, :mod:`boosttune.stats.holds`). A table, not a figure: one or two rows."""

from __future__ import annotations

import json
from typing import NamedTuple

from boosttune.objective import Objective
from boosttune.stats.holds import HOLDS, NOT_HELD, Verification

__all__ = ["VerifiedInfo", "VerifiedRow", "verified_info"]

OUTCOME_WORDS = {HOLDS: "holds", NOT_HELD: "does not hold"}
AGREE_WORDS = {True: "yes", False: "no", None: "n/a"}


class VerifiedRow(NamedTuple):
    job: str  # "20 epochs", with the base fields laid over the run's
    recipe: str
    seeds: str
    predicted: str  # per job [CI], objective change [CI]
    measured: str
    agrees: str  # speed within 5%; objective change inside the measured interval
    outcome: str
    line: str
    folder: str


class VerifiedInfo(NamedTuple):
    rows: tuple[VerifiedRow, ...]


def verified_info(documents: tuple[dict, ...], objective: Objective) -> VerifiedInfo:
    rows = []
    for document in documents:
        verification = Verification.from_dict(document)
        base = document.get("base") or {}
        job = f"{verification.planned_epochs} epochs" + (f", base {json.dumps(base)}" if base else "")
        seeds = document.get("seeds") or []
        rows.append(VerifiedRow(
            job, verification.recipe, " ".join(str(s) for s in seeds),
            verification.predicted.words(objective), verification.measured.words(objective),
            f"speed {AGREE_WORDS[verification.speed_agrees]}, {objective.noun} {AGREE_WORDS[verification.gain_agrees]}",
            OUTCOME_WORDS.get(verification.outcome, "cannot tell"), verification.line, str(document.get("folder", ""))))
    return VerifiedInfo(tuple(rows))
