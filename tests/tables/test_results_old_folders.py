"""Results folders written before the latest schema version (here: before graph_cached, version 4) still report
and export, through the commands a user runs: an experiment folder (results and confirm tables) and a bench folder."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from boosttune.cli.main import main
from boosttune.tables.results import SCHEMA_VERSION, load_results
from boosttune.objective import ACCURACY
from boosttune.outputs.summary import load_confirmed
from boosttune.stats.margin import Margin
from tests.helpers.paired_runs import experiment_folder


def _as_version_3(folder: Path, names: tuple[str, ...]) -> None:
    """Rewrite the folder's tables as version 3 wrote them: no graph_cached column, schema_version 3."""
    assert SCHEMA_VERSION == 4  # a later version: add its columns here too
    for name in names:
        table = pd.read_parquet(folder / f"{name}.parquet")
        assert "graph_cached" in table and set(table["schema_version"]) == {SCHEMA_VERSION}
        old = table.drop(columns=["graph_cached"]).assign(schema_version=3)
        old.to_parquet(folder / f"{name}.parquet", index=False)
        old.to_csv(folder / f"{name}.csv", index=False)


def _report_and_export(folder: Path, capsys) -> dict:
    assert main(["report", str(folder)]) == 0, capsys.readouterr().err
    assert main(["export", str(folder)]) == 0, capsys.readouterr().err
    assert (folder / "report.html").stat().st_size > 0 and (folder / "report.md").is_file()
    assert (folder / "best_boost_config.json").is_file()
    return json.loads((folder / "best_recipe.json").read_text())


def test_an_experiment_folder_of_version_3_reports_and_exports(tmp_path, search, confirmed_dir, capsys):
    folder = experiment_folder(tmp_path, search, confirmed_dir)
    _as_version_3(folder, ("results", "confirm"))
    for path in (folder / "results.parquet", folder / "results.csv"):
        table = load_results(path)
        assert set(table["schema_version"]) == {3} and list(table["graph_cached"]) == [False] * len(table)
    assert not load_confirmed(folder, 1.0).runs["graph_cached"].any()
    recipe = _report_and_export(folder, capsys)
    assert recipe["confirmed"]["recipe"] == "grad_freeze p=0.5"
    assert "How to apply it" in (folder / "report.md").read_text()


@pytest.mark.parametrize("csv_only", [False, True], ids=["parquet", "csv"])
def test_a_results_table_of_version_3_exports_from_either_file(tmp_path, search, capsys, csv_only):
    from boosttune.tables.results import save_results

    save_results(search, tmp_path / "exp")
    _as_version_3(tmp_path / "exp", ("results",))
    source = tmp_path / "exp" / ("results.csv" if csv_only else "results.parquet")
    assert main(["export", str(source), "--output", str(tmp_path / "out")]) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "out" / "best_recipe.json").read_text())["provenance"]["trial_id"]


def test_a_bench_folder_of_version_3_reports_and_exports(tmp_path, confirmed_dir, capsys):
    from boosttune.outputs.summary import save_confirmed
    from boosttune.execution.runs import RunRecord

    folder = tmp_path / "bench"
    records = [RunRecord.from_dict(json.loads(p.read_text()))
               for p in sorted((confirmed_dir / "runs").glob("*.json"))]
    save_confirmed(records, folder, margin=Margin(ACCURACY, 1.0))
    (folder / "bench.json").write_text(json.dumps({"name": "bench-v3", "max_drop": 1.0}))
    _as_version_3(folder, ("confirm",))
    recipe = _report_and_export(folder, capsys)
    assert recipe["confirmed"]["seeds"] == [1, 2, 3, 4, 5]
    assert "boosttune bench: bench-v3" in (folder / "report.html").read_text()
