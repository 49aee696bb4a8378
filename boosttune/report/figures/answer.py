"""The first screen's table and its two lines: every confirmed recipe with its figures and the one decision the
confirm stage made, why the stage stopped (and the one setting that would decide what it left open), and how noisy
this machine was in this run. Data only: :mod:`boosttune.report.render` formats it."""

from __future__ import annotations

import math
from typing import NamedTuple

import pandas as pd

from boosttune.tables.confirm_runs import BASELINE_NAME
from boosttune.stats.job import TIE
from boosttune.stats.decisions import Exit, decision_words
from boosttune.tables.results import finite
from boosttune.report.inputs import ReportInputs

__all__ = ["AnswerInfo", "AnswerRow", "answer_info"]

_OPEN = (Exit.BUDGET, Exit.UNDECIDED, Exit.FUTILE, Exit.RACING)


class AnswerRow(NamedTuple):
    recipe: str
    seeds: int
    job: tuple[float, float, float]  # per job at the planned length, compile charged fairly: the verdict's speed
    speedup: tuple[float, float, float]  # per step: estimate, 95% interval (nan when not measured)
    break_even_steps: float  # steps after which the recipe's job is the shorter (inf: never; nan: not measured)
    e2e: tuple[float, float, float]  # time to the target objective, compile included (secondary)
    gain: tuple[float, float, float]  # the objective's gain over the baseline, its units
    decision: str  # the confirm stage's decision in words (the summary's verdict)
    code: str  # the decision's code (an Exit, "baseline" or "no_data")
    is_answer: bool


class AnswerInfo(NamedTuple):
    rows: tuple[AnswerRow, ...]
    planned_epochs: int | None  # the job length the speed-ups per job are at
    stopped: str  # why the confirm stage stopped, and the setting that would decide what it left open
    noise: str  # how noisy this machine was in this run ("" when nothing was measured)
    job_steps: float = math.nan  # the planned job's training steps (a rank's; nan: not counted)


def answer_info(inputs: ReportInputs) -> AnswerInfo | None:
    """The confirmed recipes, the baseline first; None without a confirm stage (or bench)."""
    confirmed = inputs.confirmed
    if confirmed is None:
        return None
    obj = inputs.objective
    rows = []
    for _, r in confirmed.summary.iterrows():
        code = str(r["verdict"])

        def triple(*columns: str) -> tuple[float, float, float]:
            return tuple(float(r[c]) if c in r and finite(r[c]) else math.nan for c in columns)  # type: ignore[return-value]

        steps = r.get("break_even_steps")
        rows.append(AnswerRow(str(r["recipe"]), int(r["n_seeds"]), triple("job_speedup", "job_ci_low", "job_ci_high"),
                              triple("step_speedup", "step_ci_low", "step_ci_high"),
                              float(steps) if steps is not None and not _missing(steps) else math.nan,
                              triple("e2e_speedup", "e2e_ci_low", "e2e_ci_high"),
                              triple("objective_gain", "objective_gain_ci_low", "objective_gain_ci_high"),
                              decision_words(code, obj, confirmed.max_drop), code,
                              r["recipe"] == inputs.selection.recipe))
    planned = confirmed.summary.get("planned_epochs")
    lengths = [int(x) for x in (planned if planned is not None else []) if finite(x)]
    steps = [float(x) for x in confirmed.summary.get("job_steps", pd.Series(dtype=float)) if finite(x)]
    return AnswerInfo(tuple(rows), lengths[0] if lengths else None, _stopped(inputs), _noise(inputs),
                      steps[0] if steps else math.nan)


def _missing(value: object) -> bool:
    try:
        return math.isnan(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True


def _setting(inputs: ReportInputs, field: str, value: int) -> str:
    """How to set an experiment field for the next run, in the way this run was started."""
    command = str(inputs.run_info.get("command") or "")
    if command.startswith("boosttune"):
        return f"--set {field}={value}"
    if "experiments/" in command or command.startswith("python"):
        return f"--{field.replace('_', '-')} {value}"
    return f"{field}: {value} in the experiment file"


def _stopped(inputs: ReportInputs) -> str:
    confirmed = inputs.confirmed
    summary = confirmed.summary
    candidates = summary[summary["recipe"] != BASELINE_NAME]
    if candidates.empty:
        return "No candidate ran beside the baseline."
    rules = confirmed.rules
    if rules is None:
        return (f"Fixed rounds: every recipe ran on the same {len(confirmed.seeds)} paired seeds, judged at one look "
                f"with the chance of any false claim held at 0.05 over the candidates.")
    open_ = candidates[candidates["verdict"].isin(_OPEN)]
    spent = len(confirmed.runs)
    head = f"The race spent {spent} runs (budget: {rules.budget_text()})"
    if open_.empty:
        return f"{head} and decided every candidate."
    names = ", ".join(str(n) for n in open_["recipe"])
    why = ("its budget ran out" if (open_["verdict"] == Exit.BUDGET).any()
           else "what the budget and the seed cap left could not decide them" if (open_["verdict"] == Exit.FUTILE).any()
           else f"the design's last look, at {int(open_['n_seeds'].max())} paired seeds, was reached")
    text = f"{head}; it stopped because {why}, with {names} undecided."
    promising = open_[open_["seeds_to_show"].map(finite)].sort_values("job_speedup", ascending=False)
    if promising.empty:
        near = _near_the_margin(open_, confirmed.max_drop)
        if near is not None:
            obj = inputs.objective
            return (text + f" {near['recipe']} points to a win on average ({near['job_speedup']:.2f}x per job, "
                    f"{obj.noun} {obj.format_gain(float(near['objective_gain']))}) but sits too near the margin for "
                    f"this run's noise: more than 100 paired seeds would be needed to show it within "
                    f"{obj.format_gain(confirmed.max_drop, '.3g').lstrip('+')}. Whether it holds at your job: "
                    "`boosttune verify` on it; or a margin (max_drop) your team can accept.")
        return (text + " Their estimates do not point to a win (slower, or beyond the margin, on average): more "
                "seeds would likely not change the answer.")
    best = promising.iloc[0]
    need, have = int(best["seeds_to_show"]), int(best["n_seeds"])
    text += f" About {need} paired seeds would likely decide {best['recipe']} (it has {have})"
    runs = spent + 2 * max(need - have, 1)  # each further round: the candidate and the baseline
    capped = inputs.config.get("confirm_max_seeds") is not None  # the cap follows the budget unless the experiment sets one
    cap = f" and {_setting(inputs, 'confirm_max_seeds', need)}" if capped and need > rules.max_seeds else ""
    return text + f": rerun with {_setting(inputs, 'confirm_budget_runs', runs)}{cap}."


def _near_the_margin(undecided: pd.DataFrame, max_drop: float) -> pd.Series | None:
    """The fastest undecided recipe whose estimates are a win (faster per job by more than the tie, its mean gain
    within the margin) that no reachable number of seeds would show: None when there is none."""
    speed = pd.to_numeric(undecided["job_speedup"], errors="coerce")
    gain = pd.to_numeric(undecided["objective_gain"], errors="coerce")
    near = undecided[(speed >= 1 + TIE) & (gain >= -max_drop)]
    return None if near.empty else near.loc[speed[near.index].idxmax()]


def _noise(inputs: ReportInputs) -> str:
    """The race's own measure of the run-to-run noise, per paired seed, next to what it assumed."""
    confirmed = inputs.confirmed
    race = confirmed.race
    if race is None:
        return ""
    (speed_ss, speed_df), (gain_ss, gain_df) = race.measured()
    if speed_df == 0:
        return "This run measured too few rounds to tell how noisy the machine was."
    obj = inputs.objective
    speed = math.sqrt(2 * speed_ss / speed_df)  # per run -> per paired seed (a difference of two runs)
    text = (f"This machine in this run: a recipe's speed relative to the baseline moved by about {100 * speed:.0f}% "
            f"from one paired seed to the next")
    if gain_df:
        text += f", its {obj.noun} by about {math.sqrt(2 * gain_ss / gain_df):.2g} {obj.unit}"
    text += f" ({speed_df} degrees of freedom)"
    rules = confirmed.rules
    if rules is not None and rules.speed_noise is not None:
        text += (f"; the race assumed {100 * rules.speed_noise:.0f}% ({rules.noise_source}, weighted as "
                 f"{rules.noise_df} df in a claim)")
    note = race.record_note()
    return text + "." + (f" The race: {note}." if note else "")
