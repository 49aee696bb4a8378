"""The one-answer check catches each kind of disagreement it exists for (planted in a small, consistent folder)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.helpers.one_answer import disagreements

SUMMARY = pd.DataFrame({
    "recipe": ["O0", "gf"], "verdict": ["baseline", "won"], "job_speedup": [1.0, 1.1603],
    "step_speedup": [1.0, 1.1888], "objective_gain": [0.0, -0.5369]})
ANSWER = ("Use gf: 1.16x per job (a 10-epoch job, compile included; 95% CI 1.07-1.26); 1.19x per step, at -0.54 "
          "accuracy points over 5 paired seeds: shown faster, and accuracy within 1 pt of the baseline's shown.")
REPORT = (f"# run\n\n**{ANSWER}**\n\n| recipe | paired seeds | per job | per step | pays | gain | e2e | decision |\n"
          "|---|---|---|---|---|---|---|---|\n| O0 | 5 | 1 | 1 |  |  |  | the baseline itself |\n"
          "| gf (the answer) | 5 | 1.16x [1.07, 1.26] | 1.19x [1.09, 1.30] | 85 steps | -0.54 [-0.81, -0.27] | 0.85x | "
          "won: faster, within the margin |\n")
CONSOLE = f"gf   5  1.160 [1.072, 1.256]  1.189 [1.087, 1.300]\nanswer: {ANSWER}\n"
BEST = {"confirmed": {"recipe": "gf", "max_drop": 1.0}, "selection": {"fell_back_to_baseline": False},
        "objective": {"name": "acc", "higher_is_better": True, "fraction": True},
        "measured": {"job_speedup": 1.1603, "step_speedup": 1.1888, "objective_gain": -0.5369}}


def _folder(tmp_path, summary=SUMMARY, report=REPORT, best=BEST):
    summary.to_csv(tmp_path / "summary.csv", index=False)
    (tmp_path / "report.md").write_text(report)
    (tmp_path / "best_recipe.json").write_text(json.dumps(best))
    return tmp_path


def test_a_consistent_folder_has_none(tmp_path):
    assert disagreements(_folder(tmp_path), CONSOLE) == []


@pytest.mark.parametrize("plant, expected", [
    (lambda s, r, b, c: (s.assign(job_speedup=[1.0, 1.1703]), r, b, c), "report.md: gf per job 1.17x"),
    (lambda s, r, b, c: (s, r.replace("-0.54 [", "-0.64 ["), b, c), "report.md: gf gain -0.54"),
    (lambda s, r, b, c: (s, r, {**b, "measured": {**b["measured"], "job_speedup": 1.05}}, c), "measured.job_speedup"),
    (lambda s, r, b, c: (s, r, b, c.replace("1.189", "1.134")), "console: gf per step 1.189"),
    (lambda s, r, b, c: (s, r, b, c.replace("answer: Use gf", "answer: Keep O0")), "console: the answer line"),
    (lambda s, r, b, c: (s.assign(verdict=["baseline", "slower"]), r, b, c), "decision"),
], ids=["page per job", "page gain", "file vs summary", "console per step", "console answer", "decision words"])
def test_each_planted_disagreement_is_named(tmp_path, plant, expected):
    summary, report, best, console = plant(SUMMARY.copy(), REPORT, json.loads(json.dumps(BEST)), CONSOLE)
    found = disagreements(_folder(tmp_path, summary, report, best), console)
    assert any(expected in line for line in found), found
