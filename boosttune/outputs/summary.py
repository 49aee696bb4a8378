"""Confirmed figures on disk: ``confirm.parquet``/``.csv`` (one row per run) and ``summary.csv`` (per recipe).

:class:`Confirmed` is what the confirm stage and ``boosttune bench`` hand to export and report: the
runs, the per-recipe summary with intervals and verdicts, and the selection made from it. It is
always recomputed from the runs, so ``boosttune export --max-drop`` can re-judge with another ``max_drop``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pandas as pd

from boosttune.config.experiment import MAX_DROP, recorded_prefer_ties
from boosttune.errors import DataError
from boosttune.execution.runs import RunRecord
from boosttune.files import write_atomically
from boosttune.objective import Objective
from boosttune.outputs.results import (
    check_cells,
    finite,
    fmt,
    from_accuracy_schema,
    schema_dtypes,
    with_later_columns,
)
from boosttune.stats.confirmed import (
    BASELINE_NAME,
    ConfirmedSelection,
    confirm_table,
    replay_race,
    select_confirmed,
    summarize,
    with_job_figures,
)
from boosttune.stats.decisions import SHORT, Exit, decision_words
from boosttune.stats.race import Race, RaceRules
from boosttune.stats.select import Tolerance

__all__ = ["CONFIRM_NAME", "SUMMARY_NAME", "Confirmed", "at_planned_epochs", "format_confirmed", "load_confirmed",
           "write_summary", "job_words", "save_confirmed"]

CONFIRM_NAME, SUMMARY_NAME, RACE_NAME = "confirm", "summary.csv", "race.json"
RACE_COLUMNS = ("race_exit", "left_after_round", "race_seeds", "race_why")


@dataclass(frozen=True)
class Confirmed:
    runs: pd.DataFrame
    summary: pd.DataFrame
    selection: ConfirmedSelection
    seeds: tuple[int, ...]
    max_drop: float  # resolved: in the objective's gain units
    summary_path: Path | None = None
    rules: RaceRules | None = None  # a race's rules; None: fixed rounds (bench, or confirm_mode "fixed")
    race: Race | None = None  # the decision, replayed from the runs (None: no candidate ran)


def _confirmed(runs: pd.DataFrame, tolerance: Tolerance, summary_path: Path | None = None,
               rules: RaceRules | None = None, prefer_ties: bool = False, decided: Race | None = None) -> Confirmed:
    """The figures and the decision of ``runs``. ``decided``: the race as it was decided (live, or read from
    race.json), used as it is when it was decided at this margin; at another margin the runs are judged again."""
    max_drop = tolerance.resolved_on(runs)  # against these runs' own baseline: the mean of its paired seeds
    if decided is not None and not math.isclose(decided.max_drop, max_drop, rel_tol=1e-9, abs_tol=1e-12):
        decided = None  # re-judged at another margin (export --max-drop): the runs decide again
    summary, race = _with_race(summarize(runs, max_drop=max_drop), runs, rules, max_drop, tolerance.objective,
                               decided)
    seeds = tuple(int(s) for s in sorted(runs.loc[runs["recipe"] == BASELINE_NAME, "seed"].dropna().unique()))
    selection = select_confirmed(summary, max_drop, race=rules is not None, prefer_ties=prefer_ties)
    return Confirmed(runs, summary, selection, seeds, max_drop, summary_path, rules, race)


def _with_race(summary: pd.DataFrame, runs: pd.DataFrame, rules: RaceRules | None, max_drop: float,
               objective: Objective, decided: Race | None = None) -> tuple[pd.DataFrame, Race | None]:
    """The decision next to the figures: a recipe qualifies only by winning the race (fixed rounds: the same test
    at one look on every round). The ``verdict`` column *is* the decision (a :class:`~boosttune.stats.race.Exit`
    code), so a page that reads it never contradicts the race. The intervals and the seeds likely needed come from
    the decision's own model (recipe + round, noise pooled over the candidates): 95% intervals, and the text names
    the one-sided level the decision was taken at."""
    if not (runs["recipe"].dropna() != BASELINE_NAME).any():
        return summary, None
    race = decided if decided is not None else replay_race(runs, rules, max_drop)
    summary = summary.copy()
    for column in RACE_COLUMNS:
        summary[column] = pd.Series([None] * len(summary), dtype="object")
    for i, name in summary["recipe"].items():
        standing = race.standings.get(name)
        if standing is None or not standing.n:
            continue
        figures = race.figures(name, 0.025)
        if figures is not None:
            speed, gain = figures  # the race decides on the job's speed-up (per step where a run had no job time)
            bound = lambda log: math.exp(log) if math.isfinite(log) else math.nan  # noqa: E731  (one seed: none)
            summary.at[i, "job_speedup"] = math.exp(speed.estimate)
            summary.at[i, "job_ci_low"], summary.at[i, "job_ci_high"] = bound(speed.low), bound(speed.high)
            summary.at[i, "objective_gain"] = gain.estimate
            summary.at[i, "objective_gain_ci_low"], summary.at[i, "objective_gain_ci_high"] = gain.low, gain.high
        decided = race.seeds_to_decide(name) if standing.exit != Exit.WON else None
        summary.at[i, "seeds_to_show"] = decided
        summary.at[i, "race_exit"] = standing.exit
        summary.at[i, "left_after_round"] = standing.left_after_round
        summary.at[i, "race_seeds"] = " ".join(str(s) for s in standing.seeds)
        summary.at[i, "race_why"] = f"{Exit.TEXT[standing.exit]}: {standing.why}"
        summary.at[i, "qualifies"] = standing.exit == Exit.WON
        summary.at[i, "verdict"] = standing.exit
        summary.at[i, "verdict_text"] = _decision_text(summary.loc[i], standing, decided, rules is not None,
                                                       max_drop, objective)
    return summary, race


def _decision_text(row: pd.Series, standing, decided: int | None, raced: bool, max_drop: float,
                   objective: Objective) -> str:
    """One sentence: the figures (95% intervals of the decision's model), then the decision, when and why."""
    spec = objective.gain_spec
    figures = (f"{job_words(row)}, {fmt(row['speedup'], '.2f')}x the baseline's speed per step (95% CI "
               f"{fmt(row['speedup_ci_low'], '.2f')}-{fmt(row['speedup_ci_high'], '.2f')}), "
               f"{objective.noun} {objective.format_gain(row['objective_gain'], spec)}"
               f" (95% CI {fmt(row['objective_gain_ci_low'], spec)} to {fmt(row['objective_gain_ci_high'], spec)})")
    if isinstance(row.get("secondary_text"), str) and row["secondary_text"]:
        figures += f"; {row['secondary_text']}"
    when = (f"after round {standing.left_after_round}, {standing.n} paired seed(s)" if raced
            else f"at one look on {standing.n} paired seed(s)")
    why = "" if standing.exit == Exit.BUDGET else f" ({standing.why})"
    text = f"{figures}; decision: {decision_words(standing.exit, objective, max_drop)} {when}{why}"
    if decided is not None and standing.exit in (Exit.BUDGET, Exit.UNDECIDED, Exit.FUTILE, Exit.RACING):
        text += f"; about {decided} paired seeds would likely show it faster and non-inferior"
    return text


def job_words(row: pd.Series) -> str:
    """The per-job speed-up in words: at what length, compile charged, and after how many steps it pays off."""
    planned = row.get("planned_epochs")
    length = f"a {int(planned)}-epoch job" if finite(planned) else "the job"
    text = (f"{fmt(row.get('job_speedup'), '.2f')}x per job ({length}, compile included; 95% CI "
            f"{fmt(row.get('job_ci_low'), '.2f')}-{fmt(row.get('job_ci_high'), '.2f')})")
    steps = row.get("break_even_steps")
    if isinstance(steps, (int, float)) and not math.isnan(steps):
        text += (", never faster: slower per step" if math.isinf(steps) else
                 f", faster after {math.ceil(steps)} steps" if steps > 0 else ", faster from the first step")
    return text


def save_confirmed(records: Iterable[RunRecord], folder: str | Path, *, max_drop: Tolerance | float | None,
                   default: float = MAX_DROP, ray_version: str = "", rules: RaceRules | None = None,
                   race: Race | None = None, prefer_ties: bool = False) -> Confirmed:
    """Write confirm.parquet, confirm.csv, summary.csv and race.json (the decision) into ``folder``; return what they
    hold. ``race``: the race as it was decided live (:func:`~boosttune.stages.rounds.run_race`), written as it is;
    None: the runs are judged here (fixed rounds: one look at every seed; a race's runs: replayed under ``rules``).

    ``max_drop``: a :class:`~boosttune.stats.select.Tolerance` (an experiment's, on its model's objective),
    or a number in the runs' objective's gain units (points for accuracy); None: ``default`` points, or
    ``default`` percent of the baseline's value for a non-fraction objective."""
    folder = Path(folder)
    runs = confirm_table(list(records), ray_version=ray_version)
    write_atomically(folder / f"{CONFIRM_NAME}.parquet", lambda temp: runs.to_parquet(temp, index=False))
    write_atomically(folder / f"{CONFIRM_NAME}.csv", lambda temp: runs.to_csv(temp, index=False))
    confirmed = _confirmed(runs, Tolerance.coerce(max_drop, default, runs), folder / SUMMARY_NAME, rules, prefer_ties,
                           race)
    return write_summary(confirmed)


def _write_race(confirmed: Confirmed) -> None:
    """race.json: the rules the race ran under (none: fixed rounds) and its decision (:meth:`Race.to_dict`), which
    :func:`load_confirmed` reads back as it is."""
    document = {"rules": None if confirmed.rules is None else confirmed.rules.to_dict(),
                "decision": confirmed.race.to_dict()}
    write_atomically(confirmed.summary_path.parent / RACE_NAME,
                     lambda temp: Path(temp).write_text(json.dumps(document, indent=2) + "\n"))


def write_summary(confirmed: Confirmed) -> Confirmed:
    """Write ``confirmed``'s summary.csv and its decision (race.json) where they belong (a re-judged decision
    replaces the old one whole)."""
    if confirmed.summary_path is not None:
        if confirmed.race is not None:
            _write_race(confirmed)
        write_atomically(confirmed.summary_path, lambda temp: confirmed.summary.to_csv(temp, index=False))
    return confirmed


def load_confirmed(folder: str | Path, *, max_drop: float | None, default: float = MAX_DROP) -> Confirmed | None:
    """The confirmed figures of a results folder, judged at ``max_drop`` (see :func:`save_confirmed`) and with the
    experiment's ``prefer_ties``; None when it has no confirm runs."""
    path = Path(folder) / f"{CONFIRM_NAME}.parquet"
    if not path.is_file():
        return None
    try:
        runs = pd.read_parquet(path)
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: cannot read the confirm runs: {str(e).splitlines()[0]}") from e
    runs = from_accuracy_schema(runs)
    missing = [c for c in ("recipe", "round", "status", "throughput_sps", "objective_value", "curve_json") if c not in runs]
    if missing:
        raise DataError(f"{path}: missing column {missing[0]!r}; not a boosttune confirm table")
    check_cells(runs, str(path), {**schema_dtypes(), "round": "Int64", "job_s": "float64"})
    rules, decided = read_race(Path(folder) / RACE_NAME)
    runs = with_job_figures(with_later_columns(runs))
    return _confirmed(runs, Tolerance.from_table(runs, max_drop, default), Path(folder) / SUMMARY_NAME, rules,
                      recorded_prefer_ties(folder), decided)


def at_planned_epochs(confirmed: Confirmed, planned: int) -> Confirmed:
    """``confirmed``'s figures with every run's job at ``planned`` epochs (its steps and compile, as measured), judged
    again by its rules at its margin: what the race predicts for a job of that length. Written nowhere."""
    runs = confirmed.runs.copy()
    runs["recipe_json"] = [json.dumps({**json.loads(text), "planned_epochs": int(planned)})
                           if isinstance(text, str) else text for text in runs["recipe_json"]]
    runs = with_job_figures(runs)
    return _confirmed(runs, Tolerance.coerce(confirmed.max_drop, MAX_DROP, runs), None, confirmed.rules)


def read_race(path: Path) -> tuple[RaceRules | None, Race | None]:
    """race.json's rules and decision (none of either: fixed rounds, or a folder from before decisions were
    written, which :func:`load_confirmed` judges from its runs)."""
    if not path.is_file():
        return None, None
    try:
        document = json.loads(path.read_text())
        rules = None if document.get("rules") is None else RaceRules.from_dict(document["rules"])
        decided = None if document.get("decision") is None else Race.from_dict(document["decision"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise DataError(f"{path}: cannot read the race: {str(e).splitlines()[0]}") from e
    return rules, decided



def format_confirmed(summary: pd.DataFrame) -> str:
    """The summary as the terminal shows it: one line per recipe, intervals in brackets, the decision in words, then
    each recipe's sentence."""
    name, unit = _named(summary, "objective", "val_acc"), _named(summary, "gain_unit", "pt")
    spec = "+.2f" if unit == "pt" else "+.3g"
    lines = [f"{'recipe':<24}{'seeds':>6}  {'per job [95% CI]':<26}{'per step [95% CI]':<26}{'e2e':>7}  "
             f"{f'Δ {name} {unit} [95% CI]':<26}  decision"]
    for row in summary.itertuples():
        job = (f"{fmt(getattr(row, 'job_speedup', None), '.3f')} [{fmt(getattr(row, 'job_ci_low', None), '.3f')}, "
               f"{fmt(getattr(row, 'job_ci_high', None), '.3f')}]")
        speed = f"{fmt(row.speedup, '.3f')} [{fmt(row.speedup_ci_low, '.3f')}, {fmt(row.speedup_ci_high, '.3f')}]"
        delta = (f"{fmt(row.objective_gain, spec)} [{fmt(row.objective_gain_ci_low, spec)}, "
                 f"{fmt(row.objective_gain_ci_high, spec)}]")
        lines.append(f"{str(row.recipe)[:23]:<24}{int(row.n_seeds):>6}  {job:<26}{speed:<26}"
                     f"{fmt(row.e2e_speedup, '.2f'):>7}  {delta:<26}  {SHORT.get(str(row.verdict), str(row.verdict))}")
    lines.append("")
    lines += [f"{row.recipe}: {row.verdict_text}" for row in summary.itertuples() if row.recipe != BASELINE_NAME]
    planned = [int(x) for x in summary.get("planned_epochs", pd.Series(dtype=float)) if finite(x)]
    length = f"{planned[0]} epochs" if planned else "the planned length"
    return (f"confirmed over paired seeds (per job: the baseline's training time over the recipe's at {length}, "
            "compile included, the decision's speed; per step: geometric mean of per-round throughput ratios; e2e, "
            f"secondary: time to the target {name}; Δ: better than the baseline by, in {unit}):\n" + "\n".join(lines))


def _named(summary: pd.DataFrame, column: str, default: str) -> str:
    """The summary's objective name or gain unit (a summary.csv written before they were columns: accuracy)."""
    if column not in summary.columns:
        return default
    values = summary[column].dropna()
    return str(values.iloc[0]) if len(values) else default
