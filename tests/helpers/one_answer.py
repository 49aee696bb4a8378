"""One answer, one set of numbers: a finished run's figures read from every place a user reads them.

:func:`disagreements` takes a results folder and the console's text and lists every figure of the decision that
reads differently in summary.csv, report.md, best_recipe.json and the console: each recipe's speed-up per job and
per step and its objective gain (at the precision each place prints), the decision's words, and the answer itself.
The end-to-end tests call it on real runs; tests/test_one_answer.py checks that it catches planted disagreements.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from boosttune.stats.decisions import SHORT, decision_words
from boosttune.objective import Objective


def _objective(best: dict) -> Objective:
    spec = best.get("objective") or {"name": "acc", "higher_is_better": True, "fraction": True}
    return Objective(spec["name"], bool(spec["higher_is_better"]), bool(spec["fraction"]))


def _row_of(report: str, recipe: str) -> str | None:
    rows = [line for line in report.splitlines() if line.startswith(f"| {recipe} |")
            or line.startswith(f"| {recipe} (the answer) |")]
    return rows[0] if rows else None


def disagreements(folder: str | Path, console: str) -> list[str]:
    """Every place the run's figures or answer disagree (empty: one answer, one set of numbers)."""
    folder = Path(folder)
    summary = pd.read_csv(folder / "summary.csv")
    best = json.loads((folder / "best_recipe.json").read_text())
    report = (folder / "report.md").read_text()
    objective = _objective(best)
    margin = float(best["confirmed"]["max_drop"])
    found: list[str] = []
    for row in summary.itertuples():
        recipe = str(row.recipe)
        if row.verdict == "baseline":
            continue
        line = _row_of(report, recipe)
        if line is None:
            found.append(f"report.md: no row for {recipe!r}")
            continue
        for name, value in (("per job", row.job_speedup), ("per step", row.step_speedup)):
            if math.isfinite(value) and f"{value:.2f}x" not in line:
                found.append(f"report.md: {recipe} {name} {value:.2f}x not in its row: {line}")
            if math.isfinite(value) and f"{value:.3f}" not in console:
                found.append(f"console: {recipe} {name} {value:.3f} not printed")
        gain = objective.format_gain(row.objective_gain, objective.gain_spec).split(" ")[0]
        if gain not in line:
            found.append(f"report.md: {recipe} gain {gain} not in its row: {line}")
        words = SHORT.get(str(row.verdict), decision_words(str(row.verdict), objective, margin))  # the first table's
        if words not in line:
            found.append(f"report.md: {recipe} decision {words!r} not in its row: {line}")
    answer = best["confirmed"]["recipe"]
    fell_back = best["selection"]["fell_back_to_baseline"]
    chosen = summary[summary["recipe"] == answer]
    if chosen.empty:
        found.append(f"best_recipe.json: {answer!r} is not a recipe of summary.csv")
    elif not fell_back:
        figures = chosen.iloc[0]
        if str(figures["verdict"]) != "won":
            found.append(f"best_recipe.json names {answer!r}, whose decision in summary.csv is {figures['verdict']}")
        for key, column in (("job_speedup", "job_speedup"), ("step_speedup", "step_speedup"),
                            ("objective_gain", "objective_gain")):
            if not math.isclose(float(best["measured"][key]), float(figures[column]), rel_tol=1e-9):
                found.append(f"best_recipe.json measured.{key} {best['measured'][key]} != summary.csv {column} "
                             f"{figures[column]}")
        if f"**Use {answer}" not in report:
            found.append(f"report.md: the answer does not name {answer!r}")
    elif "**Keep O0" not in report and "**No answer" not in report:
        found.append("report.md: best_recipe.json keeps O0, the page does not say so")
    headline = next((line.strip("*") for line in report.splitlines() if line.startswith("**")), None)
    if headline is None or f"answer: {headline}" not in console:
        found.append(f"console: the answer line is not the page's: {headline!r}")
    return found
