"""Confirmed figures on disk: ``confirm.parquet``/``.csv`` (one row per run), ``summary.csv`` (per recipe) and
``race.json`` (the race's rules and decision).

A :class:`~boosttune.stats.decide.Decision` is made by :func:`boosttune.stats.decide.decide`; this module writes one
(:func:`write_decision`) and reads one back from a folder (:func:`load_confirmed`: its runs and race.json, decided
again at the margin asked, so ``boosttune export --max-drop`` can re-judge).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

import pandas as pd

from boosttune.config.experiment import recorded_max_drop, recorded_prefer_ties
from boosttune.errors import DataError
from boosttune.execution.runs import RunRecord
from boosttune.files import write_atomically
from boosttune.stats.confirmed import confirm_table, with_job_figures
from boosttune.stats.decide import Decision, decide
from boosttune.stats.decisions import SHORT
from boosttune.stats.margin import Margin
from boosttune.stats.race import Race, RaceRules
from boosttune.tables.confirm_runs import BASELINE_NAME, read_confirm_runs, write_confirm_runs
from boosttune.tables.results import finite, fmt

__all__ = ["RACE_NAME", "SUMMARY_NAME", "format_confirmed", "load_confirmed", "read_race", "save_confirmed",
           "write_decision"]

SUMMARY_NAME, RACE_NAME = "summary.csv", "race.json"


def save_confirmed(records: Iterable[RunRecord], folder: str | Path, *, margin: Margin, ray_version: str = "",
                   rules: RaceRules | None = None, race: Race | None = None, prefer_ties: bool = False) -> Decision:
    """Write confirm.parquet, confirm.csv, summary.csv and race.json (the decision) into ``folder``; return the
    decision. ``race``: the race as it was decided live (:func:`~boosttune.stages.rounds.run_race`), written as it is;
    None: the runs are judged here (fixed rounds: one look at every seed; a race's runs: replayed under ``rules``)."""
    runs = confirm_table(list(records), ray_version=ray_version)
    write_confirm_runs(runs, folder)
    decision = decide(runs, rules, margin, prefer_ties=prefer_ties, decided=race)
    write_decision(decision, folder)
    return decision


def write_decision(decision: Decision, folder: str | Path) -> Path:
    """``decision``'s summary.csv and race.json in ``folder`` (a re-judged decision replaces the old one whole);
    the summary's path."""
    folder = Path(folder)
    if decision.race is not None:
        document = {"rules": None if decision.rules is None else decision.rules.to_dict(),
                    "decision": decision.race.to_dict()}
        write_atomically(folder / RACE_NAME, lambda temp: Path(temp).write_text(json.dumps(document, indent=2) + "\n"))
    path = folder / SUMMARY_NAME
    write_atomically(path, lambda temp: decision.summary.to_csv(temp, index=False))
    return path


def load_confirmed(folder: str | Path, max_drop: float | None = None) -> Decision | None:
    """The decision of a results folder's confirm runs, at ``max_drop`` (the objective's gain units; None: the margin
    the run itself was judged at, from run_info.json) resolved once on its runs, with the experiment's
    ``prefer_ties``; None when it has no confirm runs. A folder read again is an entry point: its margin is resolved
    here, as the experiment and the bench resolve theirs."""
    runs = read_confirm_runs(folder)
    if runs is None:
        return None
    runs = with_job_figures(runs)
    own, default = recorded_max_drop(folder)
    margin = Margin.on(runs, own if max_drop is None else max_drop, default)
    rules, decided = read_race(Path(folder) / RACE_NAME)
    return decide(runs, rules, margin, prefer_ties=recorded_prefer_ties(folder), decided=decided)


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
    lines = [f"{'recipe':<24}{'seeds':>6}  {'speed-up per job [95% CI]':<26}{'per step [95% CI]':<26}{'e2e':>7}  "
             f"{f'Δ {name} {unit} [95% CI]':<26}  decision"]
    for row in summary.itertuples():
        job = f"{fmt(row.job_speedup, '.3f')} [{fmt(row.job_ci_low, '.3f')}, {fmt(row.job_ci_high, '.3f')}]"
        speed = f"{fmt(row.step_speedup, '.3f')} [{fmt(row.step_ci_low, '.3f')}, {fmt(row.step_ci_high, '.3f')}]"
        delta = (f"{fmt(row.objective_gain, spec)} [{fmt(row.objective_gain_ci_low, spec)}, "
                 f"{fmt(row.objective_gain_ci_high, spec)}]")
        lines.append(f"{str(row.recipe)[:23]:<24}{int(row.n_seeds):>6}  {job:<26}{speed:<26}"
                     f"{fmt(row.e2e_speedup, '.2f'):>7}  {delta:<26}  {SHORT.get(str(row.verdict), str(row.verdict))}")
    lines.append("")
    lines += [f"{row.recipe}: {row.verdict_text}" for row in summary.itertuples() if row.recipe != BASELINE_NAME]
    planned = [int(x) for x in summary.get("planned_epochs", pd.Series(dtype=float)) if finite(x)]
    length = f"{planned[0]} epochs" if planned else "the planned length"
    return (f"confirmed over paired seeds (per job: the baseline's training time over the recipe's at {length}, "
            "compile included, the decision's speed; per step: the steady-state throughput ratio, by the same model; e2e, "
            f"secondary: time to the target {name}; Δ: better than the baseline by, in {unit}):\n" + "\n".join(lines))


def _named(summary: pd.DataFrame, column: str, default: str) -> str:
    """The summary's objective name or gain unit (a summary.csv written before they were columns: accuracy)."""
    if column not in summary.columns:
        return default
    values = summary[column].dropna()
    return str(values.iloc[0]) if len(values) else default
