"""The runs without comparable figures (failed, stopped early, incomplete), with why. A table, not a figure."""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from boosttune.tables.results import finite
from boosttune.tables.states import FINISHED, RunStatus
from boosttune.report.inputs import ReportInputs
from boosttune.report.recipes import run_name

__all__ = ["FailedRun", "failures_info"]


class FailedRun(NamedTuple):
    run_id: str
    status: str
    reason: str
    name: str = ""  # what the run is, in words (its recipe); the id is for looking it up


def failures_info(inputs: ReportInputs) -> tuple[FailedRun, ...]:
    """Every run of the search and the confirm stage (or bench) without a throughput and an objective value."""
    tables = [t for t in (inputs.search, inputs.confirmed.runs if inputs.confirmed is not None else None)
              if t is not None]
    out = []
    for table in tables:
        comparable = table["status"].isin(FINISHED) & table["throughput_sps"].map(finite) & table["objective_value"].map(finite)
        for _, row in table[~comparable.astype(bool)].iterrows():
            if row["status"] == RunStatus.DUPLICATE:
                continue  # answered by an equivalent run's figures: not a failure
            reason = str(row["reason"]) if pd.notna(row["reason"]) else "no throughput or objective recorded"
            out.append(FailedRun(str(row["trial_id"]), str(row["status"]), reason, run_name(row)))
    return tuple(out)
