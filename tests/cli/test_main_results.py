"""``boosttune export`` and ``boosttune report`` on a saved results table, in-process."""

from __future__ import annotations

import json

import pytest

from boosttune.cli.main import main
from boosttune.tables.results import build_results_table, save_results
from tests.helpers.records import RAY_VERSION, sample_records


@pytest.fixture
def results_dir(tmp_path):
    save_results(build_results_table(sample_records(), ray_version=RAY_VERSION), tmp_path / "exp")
    return tmp_path / "exp"


def test_export_defaults_to_the_results_folder(results_dir, capsys):
    assert main(["export", str(results_dir)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("selected: trial t_00002 is the fastest within 1 pt")  # no run config: the default
    assert out[1] == f"boost_config_dict written to {results_dir / 'best_boost_config.json'}"
    assert out[2] == f"recipe written to {results_dir / 'best_recipe.json'}"
    recipe = json.loads((results_dir / "best_recipe.json").read_text())
    assert recipe["provenance"]["experiment_path"] == str(results_dir.resolve())


def test_export_and_report_judge_a_folder_at_the_max_drop_its_run_recorded(results_dir, capsys):
    (results_dir / "experiment.json").write_text(json.dumps({"name": "x", "max_drop": 2.0}))
    assert main(["export", str(results_dir)]) == 0
    assert capsys.readouterr().out.startswith("selected: trial t_00003 is the fastest within 2 pt")
    recipe = json.loads((results_dir / "best_recipe.json").read_text())
    assert recipe["selection"]["tolerance"] == 2.0
    from boosttune.report import load_report_inputs

    assert load_report_inputs(results_dir).max_drop == 2.0


def test_a_folder_that_left_max_drop_unset_is_judged_at_the_default_of_its_time(results_dir, capsys):
    """One default today (1 point), recorded in run_info.json; a folder from before it, whose experiment file left
    max_drop unset, was judged at 0.5 point by its run, and is re-judged so."""
    from boosttune.config.experiment import MAX_DROP, recorded_max_drop
    from boosttune.execution.provenance import record_run_info

    (results_dir / "experiment.json").write_text(json.dumps({"name": "x", "max_drop": None}))
    assert recorded_max_drop(results_dir) == (None, 0.5)
    record_run_info(results_dir, max_drop_default=MAX_DROP)
    assert recorded_max_drop(results_dir) == (None, 1.0) and MAX_DROP == 1.0
    assert main(["export", str(results_dir)]) == 0
    assert capsys.readouterr().out.startswith("selected: trial t_00002 is the fastest within 1 pt")
    record_run_info(results_dir, max_drop_resolved=0.25)  # what a run resolved once: read as the run's own
    assert recorded_max_drop(results_dir) == (0.25, 1.0)


def test_export_from_a_csv_file_with_max_drop_and_output(results_dir, tmp_path, capsys):
    out_dir = tmp_path / "best"
    assert main(["export", str(results_dir / "results.csv"), "--max-drop", "0.1", "--output", str(out_dir)]) == 0
    assert "falling back to the baseline (trial t_00000)" in capsys.readouterr().out
    baseline = sample_records()[0]["boost_config_dict"]  # less common.device_number, which nothing reads on 1 rank
    assert json.loads((out_dir / "best_boost_config.json").read_text()) == {"boost": baseline["boost"]}


@pytest.mark.parametrize("command", ["export", "report"])
def test_tolerance_is_a_deprecated_alias_of_max_drop_that_says_so(results_dir, tmp_path, capsys, command):
    out_dir = tmp_path / "out"
    assert main([command, str(results_dir), "--tolerance", "0.1", "--output", str(out_dir)]) == 0
    err = capsys.readouterr().err
    assert err == f"boosttune {command}: --tolerance is a deprecated alias of --max-drop; use --max-drop\n"
    if command == "export":
        assert json.loads((out_dir / "best_recipe.json").read_text())["selection"]["tolerance"] == 0.1
    else:
        assert "within 0.1 pt of O0" in (out_dir / "report.html").read_text()


def test_report_defaults_to_the_results_folder(results_dir, capsys):
    assert main(["report", str(results_dir / "results.parquet"), "--max-drop", "1"]) == 0
    path = results_dir / "report.html"
    assert capsys.readouterr().out.strip() == f"report written to {path} (tables also in report.md)"
    assert "within 1 pt of O0" in path.read_text() and (results_dir / "report.md").is_file()


def test_report_output_flag(results_dir, tmp_path, capsys):
    target = tmp_path / "html"
    assert main(["report", str(results_dir), "--output", str(target)]) == 0
    assert (target / "report.html").is_file() and (target / "report.md").is_file()


@pytest.mark.parametrize("argv, fragment", [
    (["export", "{dir}", "--max-drop", "-1"], "max_drop: -1.0 is invalid"),
    (["report", "{dir}", "--max-drop", "-1"], "max_drop: -1.0 is invalid"),
    (["export", "{dir}/nothing.parquet"], "no such results file"),
    (["report", "{dir}/results.txt"], "expected a results folder"),
])
def test_errors_are_one_line_exit_2(results_dir, capsys, argv, fragment):
    argv = [arg.format(dir=results_dir) for arg in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("boosttune: error: ") and fragment in err and "\n" not in err


def test_missing_column_is_one_line_exit_2(results_dir, capsys):
    import pandas as pd

    pd.read_csv(results_dir / "results.csv").drop(columns=["speedup_vs_baseline"]).to_csv(
        results_dir / "broken.csv", index=False)
    assert main(["export", str(results_dir / "broken.csv")]) == 2
    assert capsys.readouterr().err.strip() == (f"boosttune: error: {results_dir / 'broken.csv'}: missing column "
                                               "'speedup_vs_baseline'; not a boosttune results table (it says schema "
                                               "version 4; this boosttune reads versions 1 to 4)")


def test_a_max_drop_re_export_changes_the_answer_in_every_file_at_once(tmp_path, search, confirmed, confirmed_dir, capsys):
    """Re-judged in place: best_recipe.json, best_boost_config.json, summary.csv, the report and what a later
    `boosttune report` reads all move to the new margin together."""
    import pandas as pd

    from tests.helpers.paired_runs import experiment_folder

    folder = experiment_folder(tmp_path, search, confirmed_dir)
    assert main(["export", str(folder)]) == 0 and main(["report", str(folder)]) == 0
    assert json.loads((folder / "best_recipe.json").read_text())["confirmed"]["recipe"] == "grad_freeze p=0.5"
    assert "**Use grad_freeze p=0.5" in (folder / "report.md").read_text()
    capsys.readouterr()

    assert main(["export", str(folder), "--max-drop", "0"]) == 0  # its -0.2 pt no longer fits
    out = capsys.readouterr().out
    assert "summary written to" in out and "report written to" in out
    best = json.loads((folder / "best_recipe.json").read_text())
    assert best["selection"]["fell_back_to_baseline"] and best["confirmed"]["max_drop"] == 0
    summary = pd.read_csv(folder / "summary.csv")
    assert set(summary["margin"]) == {0} and "won" not in set(summary["verdict"])
    report = (folder / "report.md").read_text()
    assert "**Use grad_freeze" not in report and "**Keep O0" in report
    assert main(["report", str(folder)]) == 0  # a later report, without the flag, keeps the re-judged margin
    assert "**Keep O0" in (folder / "report.md").read_text()


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
@pytest.mark.parametrize("command", ["report", "export"])
def test_a_damaged_baseline_cell_is_refused_by_every_command_that_reads_the_folder(results_dir, capsys, command,
                                                                                    suffix):
    """The issue-46 case: the O0 row's throughput_sps 'fast' and val_acc 'n/a'. One line naming the file, the row,
    the column and the value; exit 2; nothing written."""
    import pandas as pd

    for other in ("csv", "parquet"):
        if other != suffix:
            (results_dir / f"results.{other}").unlink()
    path = results_dir / f"results.{suffix}"
    raw = pd.read_csv(path, dtype=str) if suffix == "csv" else pd.read_parquet(path)
    for column, value in (("throughput_sps", "fast"), ("objective_value", "n/a")):
        raw[column] = raw[column].map(lambda v: None if pd.isna(v) else str(v))
        raw.loc[raw["trial_id"] == "t_00000", column] = value
    raw.to_csv(path, index=False) if suffix == "csv" else raw.to_parquet(path, index=False)
    before = sorted(p.name for p in results_dir.iterdir())
    assert main([command, str(results_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"boosttune: error: {path}: row 1 (trial t_00000), column 'throughput_sps': 'fast' is not a number"]
    assert sorted(p.name for p in results_dir.iterdir()) == before  # no report, no best_recipe.json


def test_a_damaged_cell_of_the_confirm_runs_is_refused_too(tmp_path, search, confirmed_dir, capsys):
    import pandas as pd

    from tests.helpers.paired_runs import experiment_folder

    folder = experiment_folder(tmp_path, search, confirmed_dir)
    runs = pd.read_parquet(folder / "confirm.parquet")
    runs["throughput_sps"] = runs["throughput_sps"].map(lambda v: None if pd.isna(v) else str(v))
    runs.loc[3, "throughput_sps"] = "1,5e3"
    runs.to_parquet(folder / "confirm.parquet", index=False)
    for command in ("report", "export"):
        assert main([command, str(folder)]) == 2
        assert "column 'throughput_sps': '1,5e3' is not a number" in capsys.readouterr().err
