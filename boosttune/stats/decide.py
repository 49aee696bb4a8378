"""The decision, made once: :func:`decide` turns a confirm (or bench) table into a :class:`Decision`.

Every recipe's exit, the figures of the one model that decided (the race's: per job, gain and their intervals; per
step beside them, as measured), the answer and why it was chosen, in its words. The experiment, the bench, the
export's re-judge and the report all take this one :class:`Decision`: :mod:`boosttune.outputs` writes it to files and
:mod:`boosttune.report` draws it; nothing else sets a verdict (a layout test holds it). The answer is the fastest
recipe per job that won the race; one within :data:`~boosttune.stats.job.TIE` of O0 per job ties, and O0 is kept
unless ``prefer_ties``. Pure: pandas, no Ray, no MindSpore.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd

from boosttune.objective import Objective
from boosttune.stats.confirmed import replay_race, summarize, with_job_figures
from boosttune.stats.decisions import Exit, VerdictCode, decision_words
from boosttune.stats.job import TIE
from boosttune.stats.margin import Margin
from boosttune.stats.race import Race, RaceRules
from boosttune.tables.confirm_runs import BASELINE_NAME
from boosttune.tables.results import finite, fmt

__all__ = ["ConfirmedSelection", "Decision", "RACE_COLUMNS", "at_planned_epochs", "decide", "job_words",
           "select_confirmed"]

RACE_COLUMNS = ("race_exit", "left_after_round", "race_seeds", "race_why")


@dataclass(frozen=True)
class ConfirmedSelection:
    """The recipe the decision answers (the baseline when none), and why."""

    recipe: str
    row: pd.Series
    reason: str
    fell_back_to_baseline: bool
    max_drop: float
    tie: tuple[str, float] | None = None  # a winner less than TIE faster per job, and its job speed-up: O0 kept
    why_chosen: str = ""  # when several recipes won: how the answer was chosen among them, in words


@dataclass(frozen=True)
class Decision:
    """What a confirm stage or a bench decided: its runs, one row per recipe (``verdict`` is the decision's exit),
    the answer, the seeds it rests on, the margin it was judged at, and the race (its rules; None: fixed rounds)."""

    runs: pd.DataFrame
    summary: pd.DataFrame
    selection: ConfirmedSelection
    seeds: tuple[int, ...]
    margin: Margin
    rules: RaceRules | None = None
    race: Race | None = None  # the decision, replayed from the runs or as decided live (None: no candidate ran)

    @property
    def max_drop(self) -> float:
        """The margin in the objective's gain units (points for accuracy)."""
        return self.margin.value


def decide(runs: pd.DataFrame, rules: RaceRules | None, margin: Margin, *, prefer_ties: bool = False,
           decided: Race | None = None) -> Decision:
    """The decision of ``runs`` (a confirm table, :func:`~boosttune.stats.confirmed.confirm_table`) at ``margin``.

    ``rules``: the race's (None: fixed rounds, judged at one look on every seed). ``decided``: the race as it was
    decided (live, or read from race.json), used as it is when it was decided at this margin; at another margin
    the runs are judged again."""
    if decided is not None and not math.isclose(decided.max_drop, margin.value, rel_tol=1e-9, abs_tol=1e-12):
        decided = None  # re-judged at another margin (export --max-drop): the runs decide again
    race = None
    if (runs["recipe"].dropna() != BASELINE_NAME).any():
        race = decided if decided is not None else replay_race(runs, rules, margin.value)
    summary = _verdicts(summarize(runs, margin=margin), race, rules is not None, margin, _step_rounds(runs, race))
    seeds = tuple(int(s) for s in sorted(runs.loc[runs["recipe"] == BASELINE_NAME, "seed"].dropna().unique()))
    selection = select_confirmed(summary, margin, race=rules is not None, prefer_ties=prefer_ties)
    return Decision(runs, summary, selection, seeds, margin, rules, race)


def at_planned_epochs(decision: Decision, planned: int) -> Decision:
    """``decision``'s runs with every job at ``planned`` epochs (its steps and compile, as measured), judged again by
    its rules at its margin: what the race predicts for a job of that length."""
    runs = decision.runs.copy()
    runs["recipe_json"] = [json.dumps({**json.loads(text), "planned_epochs": int(planned)})
                           if isinstance(text, str) else text for text in runs["recipe_json"]]
    return decide(with_job_figures(runs), decision.rules, decision.margin)


def _step_rounds(runs: pd.DataFrame, race: Race | None) -> list[dict[str, float]]:
    """Each recipe's per-step log speed-up in the race's rounds (in the order they ran), where the race saw it: the
    race's own cells, measured per step (throughput ratio to the round's baseline) instead of per job."""
    if race is None:
        return []
    seen = {name: set(s.seeds) for name, s in race.standings.items()}
    if race.single_look:  # one look at every round: the race numbered the rounds that had a baseline run 1, 2, ...
        based = sorted(int(r) for r in runs.loc[runs["recipe"] == BASELINE_NAME, "round"].dropna().unique())
        number = {r: k + 1 for k, r in enumerate(based)}
        runs = runs.assign(seed=[number.get(int(r), -1) if pd.notna(r) else -1 for r in runs["round"]])
    steps = runs[runs["recipe"].isin(list(seen)) & runs["speedup_vs_baseline"].map(finite)]
    rounds = []
    for seed in race.round_seeds:
        cells = steps[steps["seed"] == seed]
        rounds.append({str(r["recipe"]): math.log(float(r["speedup_vs_baseline"])) for _, r in cells.iterrows()
                       if seed in seen[str(r["recipe"])] and r["speedup_vs_baseline"] > 0})
    return rounds


def _verdicts(summary: pd.DataFrame, race: Race | None, raced: bool, margin: Margin,
              step_rounds: list[dict[str, float]]) -> pd.DataFrame:
    """The one place a verdict is set: the baseline's row, a recipe with no paired round, and every raced recipe by
    its exit (a recipe qualifies only by winning). Every figure beside it comes from the race's own model (recipe +
    round, noise pooled over the candidates) at the look that decided it (a recipe that left early keeps the figures
    it left with, as race.json does): per job and the gain as decided, per step the same model on the per-step ratios
    of the same runs; 95% intervals, and the deciding tests' p-values."""
    summary = summary.copy()
    for column in RACE_COLUMNS if race is not None else ():
        summary[column] = pd.Series([None] * len(summary), dtype="object")
    summary["qualifies"] = False
    for column in ("verdict", "verdict_text"):
        summary[column] = summary[column].astype("object")
    summary["seeds_to_show"] = pd.to_numeric(summary["seeds_to_show"]).astype(float)  # seeds likely needed, or NaN
    looks: dict[int, dict] = {}  # per step at each recipe's own last look: the model on the rounds run by then
    for i, name in summary["recipe"].items():
        standing = race.standings.get(name) if race is not None else None
        if name == BASELINE_NAME:
            summary.at[i, "verdict"] = VerdictCode.BASELINE
            summary.at[i, "verdict_text"] = f"the O0 baseline, {int(summary.at[i, 'n_seeds'])} seed(s)"
        elif standing is None or not standing.n:
            summary.at[i, "verdict"] = VerdictCode.NO_DATA
            summary.at[i, "verdict_text"] = "no round where both this recipe and the baseline finished"
        else:
            look = standing.left_after_round or len(step_rounds)
            if look not in looks:
                kept = [r for r in step_rounds[:look] if r]
                looks[look] = race.speed_figures(kept, 0.025) if kept else {}
            _race_row(summary, i, race, standing, raced, margin, looks[look].get(name), look)
    return summary


def _race_row(summary: pd.DataFrame, i, race: Race, standing, raced: bool, margin: Margin, step, look: int) -> None:
    bound = lambda log: math.exp(log) if math.isfinite(log) else math.nan  # noqa: E731  (one seed: none)
    if step is not None:
        summary.at[i, "step_speedup"] = math.exp(step.estimate)
        summary.at[i, "step_ci_low"], summary.at[i, "step_ci_high"] = bound(step.low), bound(step.high)
    summary.at[i, "job_p_value"], summary.at[i, "noninferiority_p_value"] = race.p_values(standing.name, look)
    # the figures of the look that decided (a recipe that left early keeps them: the race's later rounds would move
    # the pooled estimates, and the page would show two figures for one decision)
    figures = (standing.speed95, standing.gain95) if standing.speed95 is not None else race.figures(standing.name,
                                                                                                    0.025)
    if figures is not None and figures[0] is not None:
        speed, gain = figures  # the race decides on the job's speed-up (per step where a run had no job time)
        summary.at[i, "job_speedup"] = math.exp(speed.estimate)
        summary.at[i, "job_ci_low"], summary.at[i, "job_ci_high"] = bound(speed.low), bound(speed.high)
        summary.at[i, "objective_gain"] = gain.estimate
        summary.at[i, "objective_gain_ci_low"], summary.at[i, "objective_gain_ci_high"] = gain.low, gain.high
    needed = race.seeds_to_decide(standing.name) if standing.exit != Exit.WON else None
    summary.at[i, "seeds_to_show"] = needed
    summary.at[i, "race_exit"] = standing.exit
    summary.at[i, "left_after_round"] = standing.left_after_round
    summary.at[i, "race_seeds"] = " ".join(str(s) for s in standing.seeds)
    summary.at[i, "race_why"] = f"{Exit.TEXT[standing.exit]}: {standing.why}"
    summary.at[i, "qualifies"] = standing.exit == Exit.WON
    summary.at[i, "verdict"] = standing.exit
    summary.at[i, "verdict_text"] = _decision_text(summary.loc[i], standing, needed, raced, margin.value,
                                                   margin.objective)


def _decision_text(row: pd.Series, standing, needed: int | None, raced: bool, max_drop: float,
                   objective: Objective) -> str:
    """One sentence: the figures (95% intervals of the decision's model), then the decision, when and why."""
    spec = objective.gain_spec
    figures = (f"{job_words(row)}, {fmt(row['step_speedup'], '.2f')}x the baseline's speed per step (95% CI "
               f"{fmt(row['step_ci_low'], '.2f')}-{fmt(row['step_ci_high'], '.2f')}), "
               f"{objective.noun} {objective.format_gain(row['objective_gain'], spec)}"
               f" (95% CI {fmt(row['objective_gain_ci_low'], spec)} to {fmt(row['objective_gain_ci_high'], spec)})")
    if isinstance(row.get("secondary_text"), str) and row["secondary_text"]:
        figures += f"; {row['secondary_text']}"
    when = (f"after round {standing.left_after_round}, {standing.n} paired seed(s)" if raced
            else f"at one look on {standing.n} paired seed(s)")
    why = "" if standing.exit == Exit.BUDGET else f" ({standing.why})"
    text = f"{figures}; decision: {decision_words(standing.exit, objective, max_drop)} {when}{why}"
    if needed is not None and standing.exit in (Exit.BUDGET, Exit.UNDECIDED, Exit.FUTILE, Exit.RACING):
        text += f"; about {needed} paired seeds would likely show it faster and non-inferior"
    return text


def job_words(row: pd.Series) -> str:
    """The per-job speed-up in words: at what length, compile charged, and after how many steps it pays off."""
    planned = row.get("planned_epochs")
    length = f"a {int(planned)}-epoch job" if finite(planned) else "the job"
    text = (f"{fmt(row.get('job_speedup'), '.2f')}x per job ({length}, compile included; 95% CI "
            f"{fmt(row.get('job_ci_low'), '.2f')}-{fmt(row.get('job_ci_high'), '.2f')})")
    steps, total = row.get("break_even_steps"), row.get("job_steps")
    of = f" of the job's {round(total)}" if finite(total) else ""
    if isinstance(steps, (int, float)) and not math.isnan(steps):
        beyond = finite(total) and math.isfinite(steps) and steps > total  # its compile is not paid back in the job
        text += (", never faster: slower per step" if math.isinf(steps) else
                 f", faster per step but not within the job (its compile paid back after {math.ceil(steps)} steps,"
                 f" the job has {round(total)})" if beyond else
                 f", faster after {math.ceil(steps)}{of} steps" if steps > 0 else ", faster from the first step")
    return text


def _why_chosen(winners: pd.DataFrame, margin: Margin) -> str:
    """How the answer was chosen among several winners (``winners`` sorted fastest per job first, with ``_speed``):
    the fastest per job; a runner-up within TIE of it is a tie on speed, and the more accurate of the two is named."""
    if len(winners) < 2:
        return ""
    obj = margin.objective
    best, second = winners.iloc[0], winners.iloc[1]
    text = (f"{len(winners)} recipes won; the answer is the fastest per job, then {second['recipe']} "
            f"({second['_speed']:.2f}x, {obj.format_gain(float(second['objective_gain']))})")
    if best["_speed"] < (1 + TIE) * second["_speed"]:  # a tie on speed: which of the two keeps more accuracy
        text += (f", within {100 * TIE:.0f}% per job (a tie on speed) and "
                 + ("less accurate" if best["objective_gain"] >= second["objective_gain"]
                    else "more accurate: prefer it if accuracy matters more to you"))
    return text + "."


def select_confirmed(summary: pd.DataFrame, margin: Margin, race: bool = False,
                     prefer_ties: bool = False) -> ConfirmedSelection:
    """The fastest recipe per job that qualifies (won the race: shown faster and non-inferior; fixed rounds: at one
    look); a recipe less than :data:`~boosttune.stats.job.TIE` faster per job ties with the baseline, which is kept
    unless ``prefer_ties``."""
    max_drop = margin.value
    speed = summary["job_speedup"].where(summary["job_speedup"].map(finite), summary["step_speedup"])
    qualifying = summary.assign(_speed=speed)[summary["qualifies"].astype(bool)]
    qualifying = qualifying.sort_values("_speed", ascending=False, kind="stable")
    baseline = summary[summary["recipe"] == BASELINE_NAME].iloc[0]
    if not qualifying.empty and (qualifying["_speed"].iloc[0] >= 1 + TIE or prefer_ties):
        best = qualifying.drop(columns="_speed").iloc[0]
        tied = "" if qualifying["_speed"].iloc[0] >= 1 + TIE else \
            f" (within {100 * TIE:.0f}% of O0 per job, a tie: the answer as prefer_ties asks)"
        return ConfirmedSelection(str(best["recipe"]), best, f"{best['recipe']}{tied}: {best['verdict_text']}", False,
                                  max_drop, why_chosen=_why_chosen(qualifying, margin))
    if not qualifying.empty:  # shown faster, by less than the tie: the job takes about as long, O0 stays
        best = qualifying.iloc[0]
        return ConfirmedSelection(BASELINE_NAME, baseline, (
            f"{best['recipe']} and the O0 baseline are within {100 * TIE:.0f}% per job ({best['_speed']:.3f}x; a gain "
            f"under {100 * TIE:.0f}% is a tie), so the answer keeps the baseline ({best['recipe']}: "
            f"{best['verdict_text']})"), True, max_drop, (str(best["recipe"]), float(best["_speed"])))
    others = summary[summary["recipe"] != BASELINE_NAME]
    why = "; ".join(_in_brief(r, margin) for _, r in others.iterrows()) or "no candidate ran"
    shown = "won the race (shown faster and non-inferior, " if race else "is shown faster than the O0 baseline ("
    reason = (f"no recipe {shown}within {max_drop:.3g} {margin.objective.unit} of its {margin.objective.label}), so "
              f"the answer is the baseline ({why})")
    return ConfirmedSelection(BASELINE_NAME, baseline, reason, True, max_drop)


def _in_brief(row: pd.Series, margin: Margin) -> str:
    """A recipe's decision in a few words with its estimates, for a line that names every candidate (the full
    sentence is its ``verdict_text``, in summary.csv and on the page)."""
    speed = row.get("job_speedup")
    speed = speed if finite(speed) else row.get("step_speedup")
    figures = [f"{float(speed):.2f}x per job"] if finite(speed) else []
    if finite(row.get("objective_gain")):
        figures.append(margin.objective.format_gain(float(row["objective_gain"])))
    said = decision_words(str(row.get("verdict")), margin.objective, margin.value)
    return f"{row['recipe']}: {said}" + (f" ({', '.join(figures)})" if figures else "")
