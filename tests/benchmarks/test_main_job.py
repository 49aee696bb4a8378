"""benchmarks/main_job.py: its targets read from run folders (the folder's own writing is checked by
tests/test_experiment.py, on a real experiment)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.benchmark_scripts import load_benchmark


def _folder(root, name, stages, share, answer):
    folder = root / name
    folder.mkdir()
    (folder / "run_info.json").write_text(json.dumps({"stage_s": {**stages, "export and report": 9.0},
                                                      "confirm_training_share": share, "confirm_eval_share": 0.1}))
    (folder / "best_recipe.json").write_text(json.dumps({"selection": {"reason": f"{answer}: 1.21x per job ..."}}))
    return folder


def test_each_target_is_met_or_missed_by_its_amount(tmp_path, capsys):
    bench = load_benchmark("main_job")
    fast = {"probe": 5, "baseline": 30, "search": 200, "confirm": 340}  # 575 s
    slow = {"probe": 5, "baseline": 31, "search": 209, "confirm": 687}  # 932 s
    a = _folder(tmp_path, "a", fast, 0.91, "Use grad_freeze p=0.5 on 2 groups")
    b = _folder(tmp_path, "b", fast, 0.92, "Use grad_freeze p=0.5 on 2 groups")
    c = _folder(tmp_path, "c", slow, 0.81, "Use grad_freeze p=0.7 on 2 groups")
    assert bench.main(["--read", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "stages <= 600 s in every run (the longest 575 s): met" in out
    assert "the same answer in 2 runs of 2: met" in out and "share >= 0.90 (the lowest 0.91): met" in out
    bench.main(["--read", str(a), str(b), str(c)])
    out = capsys.readouterr().out
    assert "(the longest 932 s): MISSED by 332 s" in out and "never above 900 s: MISSED by 32 s" in out
    assert "the same answer in 3 runs of 3: MISSED 2 answers" in out and "(the lowest 0.81): MISSED by 0.09" in out


def test_a_folder_that_is_not_a_finished_run_is_refused_in_one_line(tmp_path):
    bench = load_benchmark("main_job")
    with pytest.raises(SystemExit, match="not a finished run"):
        bench.main(["--read", str(tmp_path)])
    with pytest.raises(SystemExit):
        bench.main([])  # running needs --out
