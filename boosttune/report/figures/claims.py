"""MindSpore's own claims for its presets, judged on this run's figures. A table, not a figure."""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from boosttune.stats.decisions import DROPPED
from boosttune.tables.results import finite, fmt
from boosttune.tables.states import FINISHED
from boosttune.report.inputs import ReportInputs

__all__ = ["CLAIMS", "ClaimInfo", "claims_info", "judge_claim"]

# MindSpore's own claims for its presets (mindspore.boost docs): speed-up and the accuracy loss allowed, points.
CLAIMS = {"O1": (1.20, 0.0, "~20% faster at equal accuracy"), "O2": (1.30, 3.0, "~30% faster at < 3 pt loss")}



class ClaimInfo(NamedTuple):
    preset: str  # O1 / O2
    claim: str
    measured: str  # what this run measured, with intervals
    verdict: str  # holds / does not hold / not separable / not measured


def claims_info(inputs: ReportInputs) -> tuple[ClaimInfo, ...]:
    """MindSpore's O1 (~+20% at equal accuracy) and O2 (~+30% at < 3 pt) claims against this run's figures (for an
    objective other than a fraction, the loss allowed is the run's margin: the claims' points are accuracy's)."""
    out = []
    obj = inputs.objective
    spec = obj.gain_spec
    for level, (speed, loss_pt, claim) in CLAIMS.items():
        row = _summary_row(inputs, f"{level}-equivalent")
        if row is None:
            out.append(_unpaired_claim(inputs, level, claim))
            continue
        measured = (f"{fmt(row['job_speedup'], '.2f')}x per job (95% CI {fmt(row['job_ci_low'], '.2f')}-"
                    f"{fmt(row['job_ci_high'], '.2f')}), {fmt(row['objective_gain'], spec)} {obj.unit} (95% CI "
                    f"{fmt(row['objective_gain_ci_low'], spec)} to {fmt(row['objective_gain_ci_high'], spec)}"
                    f"), {int(row['n_seeds'])} paired seeds")
        allowed = (max(loss_pt, inputs.max_drop) if loss_pt == 0 else loss_pt) if obj.fraction else inputs.max_drop
        judged = judge_claim(row, speed, allowed, obj.unit)
        if str(row.get("verdict")) in DROPPED and not judged.startswith("does not hold"):  # never contradict it
            judged = f"does not hold here: {DROPPED[str(row['verdict'])]}"
        out.append(ClaimInfo(level, claim, measured, judged))
    return tuple(out)


def _unpaired_claim(inputs: ReportInputs, level: str, claim: str) -> ClaimInfo:
    """The claim without paired seeds: the search's one run of the preset, or why it was not run."""
    obj = inputs.objective
    single = _search_row(inputs, f"{level}-equivalent")
    if single is not None:
        job = single.get("job_speedup_vs_baseline")
        speed = f"{fmt(job, '.2f')}x per job" if finite(job) else f"{fmt(single['speedup_vs_baseline'], '.2f')}x per step"
        return ClaimInfo(level, claim, f"{speed}, "
                                       f"{fmt(single['objective_gain'], obj.gain_spec)} {obj.unit} on one seed",
                         "not judged: one seed (run the confirm stage)")
    note = _left_out_note(inputs, level)
    return ClaimInfo(level, claim, "not run", f"not measured{': ' + note if note else ''}")


def judge_claim(row: pd.Series, speed: float, max_drop: float, unit: str = "pt") -> str:
    """Whether a summary row's paired intervals show the claimed speed-up within the loss allowed."""
    low, high, delta = row["job_ci_low"], row["job_ci_high"], row["objective_gain"]
    if not (finite(low) and finite(high)):
        return "not judged: fewer than 2 paired seeds"
    accurate = finite(delta) and delta >= -max_drop
    if high < speed:
        return f"does not hold here: the whole interval is below {speed:.2f}x"
    if not accurate:
        return f"does not hold here: loses more than {max_drop:.3g} {unit}"
    if low >= speed:
        return f"holds here: the whole interval is at or above {speed:.2f}x"
    return f"not separable: the interval includes {speed:.2f}x"


def _summary_row(inputs: ReportInputs, name: str) -> pd.Series | None:
    if inputs.confirmed is None:
        return None
    rows = inputs.confirmed.summary[inputs.confirmed.summary["recipe"] == name]
    return None if rows.empty else rows.iloc[0]


def _search_row(inputs: ReportInputs, preset: str) -> pd.Series | None:
    if inputs.search is None:
        return None
    rows = inputs.search[(inputs.search["preset"] == preset).fillna(False) & inputs.search["status"].isin(FINISHED)]
    return None if rows.empty else rows.iloc[0]


def _left_out_note(inputs: ReportInputs, level: str) -> str | None:
    for name, why in inputs.left_out.items():
        if name.startswith(f"{level}-equivalent") or name == f"boost.{level}":
            return why
    return None
