"""benchmarks/search_scale.py on a main-job folder written as the experiment writes it."""

from __future__ import annotations

import sys

import pandas as pd

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import search_scale  # noqa: E402


def test_each_raced_recipe_is_matched_to_its_search_trial_and_the_scale_printed(tmp_path, capsys):
    pd.DataFrame({"trial_id": ["baseline", "ab12cd34", "ef56ab78"], "label": ["O0", "ab12cd34", "grad_freeze p=0.5"],
                  "preset": ["O0", None, None], "speedup_vs_baseline": [1.0, 0.9, 1.1]}).to_parquet(tmp_path / "results.parquet")
    pd.DataFrame({"recipe": ["O0", "less_bn (ab12cd34)", "grad_freeze p=0.5", "not searched"],
                  # summary.csv as save_confirmed writes it (step_speedup: the per-step speed-up)
                  "step_speedup": [1.0, 1.2, 1.1, 1.3]}).to_csv(tmp_path / "summary.csv", index=False)
    assert search_scale.scale_rows(tmp_path) == [("less_bn (ab12cd34)", 0.9, 1.2), ("grad_freeze p=0.5", 1.1, 1.1)]
    assert search_scale.main([str(tmp_path), str(tmp_path / "missing")]) == 0
    out = capsys.readouterr().out
    assert "search over confirmed per step: 0.75 1.00 (geometric mean 0.87)" in out
    assert "missing: no results.parquet and summary.csv" in out
