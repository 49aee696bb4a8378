"""One speed, one set of figures (issue 60): a run's every recipe reads the same in the page (its figure's data as
the browser gets it), report.md, summary.csv, best_recipe.json and race.json; the speed-up is per job everywhere,
per step is named so, and O0 sits at 1.0.

:func:`disagreements` reads a finished folder as a user's tools would and names each figure that differs; it is
checked on planted disagreements too, so a pass means something.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from boosttune.finish import finish_run
from boosttune.outputs.judged import read_judged
from tests.helpers.paired_runs import experiment_folder

_CALL = re.compile(r'Plotly\.newPlot\(\s*"(?P<id>[^"]+)",\s*')


def figure_data(page: str) -> dict[str, list[dict]]:
    """Each figure's traces as the page hands them to plotly.js (div id -> data)."""
    found, decoder = {}, json.JSONDecoder()
    for match in _CALL.finditer(page):
        data, _ = decoder.raw_decode(page, match.end())
        found[match.group("id")] = data
    return found


def _close(a: float, b: float, digits: int = 6) -> bool:
    return math.isclose(a, b, rel_tol=10 ** -digits, abs_tol=10 ** -digits)


def disagreements(folder: Path) -> list[str]:
    """Every place where a recipe's figure differs between the run's files, named (empty: they agree)."""
    summary = pd.read_csv(folder / "summary.csv").set_index("recipe")
    recipe = json.loads((folder / "best_recipe.json").read_text())
    race = json.loads((folder / "race.json").read_text())["decision"]
    markdown, page = (folder / "report.md").read_text(), (folder / "report.html").read_text()
    problems = [f"summary.csv has a bare column {c!r}" for c in ("speedup", "p_value", "objective_p_value")
                if c in summary.columns]
    if list(summary.columns[:2]) != ["n_seeds", "job_speedup"]:
        problems.append(f"summary.csv: the speed-up per job is not its first figure ({list(summary.columns[:3])})")
    figures = recipe["confirmed"]["all_recipes"]
    standings = {s["name"]: s for s in race["standings"]}
    scatter = next(data for key, data in figure_data(page).items() if key.startswith("fig-speed-vs-accuracy"))
    answer_rows: dict[str, str] = {}  # the first table of report.md: the answer's
    for line in markdown.splitlines():
        if line.startswith("| ") and " | " in line:
            answer_rows.setdefault(line.split(" | ")[0].lstrip("| ").removesuffix(" (the answer)"), line)
    for name, row in summary.iterrows():
        job = float(row["job_speedup"])
        if not _close(float(figures[name]["job_speedup"]), job):
            problems.append(f"best_recipe.json all_recipes[{name!r}].job_speedup {figures[name]['job_speedup']} "
                            f"!= summary.csv {job}")
        if name in standings and standings[name].get("speed") and row["verdict"] != "baseline":
            decided = math.exp(standings[name]["speed"]["estimate"])
            if not _close(decided, job):
                problems.append(f"race.json {name!r} speed {decided} != summary.csv job_speedup {job}")
        if name != "O0" and f"{job:.2f}x" not in answer_rows.get(name, ""):
            problems.append(f"report.md's answer table: {name!r} does not read {job:.2f}x per job")
        traces = [t for t in scatter if str(t.get("name", "")).startswith(f"{name}")
                  and t.get("mode") == "markers" and t.get("error_x")]
        if name != "O0" and (len(traces) != 1 or not _close(float(traces[0]["x"][0]), job)):
            problems.append(f"report.html's speed figure: {name!r} is not drawn at x = {job} (its job speed-up)")
    if recipe["measured"]["job_speedup"] is not None and not _close(
            float(recipe["measured"]["job_speedup"]), float(summary.at[recipe["confirmed"]["recipe"], "job_speedup"])):
        problems.append("best_recipe.json measured.job_speedup is not the answer's summary.csv job_speedup")
    if "speedup_vs_baseline" in recipe["measured"]:
        problems.append("best_recipe.json measured has a bare per-step 'speedup_vs_baseline'")
    o0 = [t for t in scatter if str(t.get("name", "")).startswith("O0 baseline")]
    if [t["x"] for t in o0] != [[1.0]]:
        problems.append(f"report.html's speed figure draws O0 at {[t['x'] for t in o0]}, not once at 1.0")
    return problems


@pytest.fixture
def finished(tmp_path, search, confirmed_dir) -> Path:
    folder = experiment_folder(tmp_path, search, confirmed_dir)
    finish_run(read_judged(folder), folder)
    return folder


def test_every_figure_of_every_recipe_is_the_same_in_every_file(finished):
    assert disagreements(finished) == []
    summary = pd.read_csv(finished / "summary.csv")
    assert {"job_p_value", "noninferiority_p_value", "step_speedup", "step_ci_low", "job_steps"} <= set(summary)
    assert "x; the planned job, compile included" in (finished / "report.html").read_text()


def test_the_check_names_a_planted_disagreement_in_each_file(finished):
    summary = pd.read_csv(finished / "summary.csv")
    summary.loc[summary["recipe"] == "grad_freeze p=0.5", "job_speedup"] *= 1.1
    summary.to_csv(finished / "summary.csv", index=False)
    found = disagreements(finished)
    assert any(p.startswith("best_recipe.json all_recipes['grad_freeze p=0.5']") for p in found)
    assert any(p.startswith("race.json 'grad_freeze p=0.5'") for p in found)
    assert any(p.startswith("report.html's speed figure: 'grad_freeze p=0.5'") for p in found)
    assert any(p.startswith("report.md's answer table: 'grad_freeze p=0.5'") for p in found)


def test_a_bare_speedup_column_is_named(finished):
    summary = pd.read_csv(finished / "summary.csv")
    summary.rename(columns={"step_speedup": "speedup"}).to_csv(finished / "summary.csv", index=False)
    assert "summary.csv has a bare column 'speedup'" in disagreements(finished)
