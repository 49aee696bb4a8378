"""The results table: schema, ratios to the O0 baseline, parquet/CSV round trip, atomic writes."""

from __future__ import annotations

import copy
import json
import math

import pandas as pd
import pytest

from boosttune.errors import DataError
from boosttune.tables.results import (
    SCHEMA,
    SCHEMA_VERSION,
    build_results_table,
    load_results,
    save_results,
    schema_columns,
    search_reference,
)
from tests.helpers.records import RAY_VERSION, make_record, sample_records


def test_schema_is_declared_with_units_and_dtypes():
    names = schema_columns()
    assert len(names) == len(set(names))
    for required in ("trial_id", "is_baseline", "throughput_sps", "speedup_vs_baseline", "objective_gain",
                     "compile_s", "peak_rss_mb", "ray_version", "onednn_isa", "boost_config_dict_json",
                     "recipe_json", "observed_boost_json"):
        assert required in names
    assert all(column.description for column in SCHEMA)


def test_one_row_per_trial_with_schema_columns_first(table):
    assert list(table["trial_id"]) == [f"t_0000{i}" for i in range(6)]
    assert list(table.columns[:len(SCHEMA)]) == schema_columns()
    assert {"param.boost.grad_freeze", "param.grad_freeze.freeze_p", "param.optimizer.learning_rate"} <= set(table)
    assert table.loc[1, "param.boost.grad_freeze"] is True and pd.isna(table.loc[5, "param.boost.grad_freeze"])


def test_speedup_and_delta_against_the_baseline(table):
    by_id = table.set_index("trial_id")
    assert list(table["is_baseline"]) == [True, False, False, False, False, False]
    assert by_id.loc["t_00000", "speedup_vs_baseline"] == 1.0
    assert by_id.loc["t_00002", "speedup_vs_baseline"] == pytest.approx(1.2)
    assert by_id.loc["t_00003", "speedup_vs_baseline"] == pytest.approx(1.4)
    assert by_id.loc["t_00001", "objective_gain"] == pytest.approx(-3.0)
    assert by_id.loc["t_00002", "objective_gain"] == pytest.approx(-0.3)
    assert by_id.loc["t_00005", "objective_gain"] == pytest.approx(1.0)
    assert math.isnan(by_id.loc["t_00004", "speedup_vs_baseline"])
    assert by_id.loc["t_00004", "reason"] == "trial failed in MindSpore: boom"


def test_a_search_that_trained_o0_again_takes_its_speed_ratios_against_its_own_run(records):
    """Speed is a ratio to O0 timed in the same stage: the search's own O0 run (remeasure_baseline), not the baseline
    stage's, which trained without a Tune trial beside it; the objective pools both (mean); a duplicate answered
    from the baseline is not a third run."""
    again = {**make_record("t_00006", preset="O0", sps=320.0, acc=0.810), "started": 2000.0}
    duplicate = {**make_record("t_00007", preset="O0", sps=500.0, acc=0.800), "status": "duplicate",
                 "duplicate_of": "t_00000"}
    records[0] = {**records[0], "started": 1000.0}
    # The search's O0 record may come first (record files sort by trial id): the baseline is the one started first.
    table = build_results_table([again, *records, duplicate], ray_version=RAY_VERSION).set_index("trial_id")
    reference = search_reference(table.reset_index())
    assert reference.runs == (500.0, 320.0) and reference.pooled == (320.0,)
    assert reference.throughput_sps == 320.0
    assert reference.objective_value == pytest.approx(0.805)
    assert table.index[table["is_baseline"]].tolist() == ["t_00000"]
    assert table.loc["t_00000", "speedup_vs_baseline"] == pytest.approx(500.0 / 320.0)
    assert table.loc["t_00006", "speedup_vs_baseline"] == pytest.approx(1.0)
    assert table.loc["t_00002", "speedup_vs_baseline"] == pytest.approx(600.0 / 320.0)
    assert table.loc["t_00002", "objective_gain"] == pytest.approx(100 * (0.797 - 0.805))
    # Two O0 runs of the search's own pool by geometric mean; the baseline stage's stays out.
    third = {**make_record("t_00008", preset="O0", sps=500.0, acc=0.805), "started": 3000.0}
    both = search_reference(build_results_table([again, third, *records], ray_version=RAY_VERSION))
    assert both.pooled == (320.0, 500.0) and both.throughput_sps == pytest.approx(400.0)


def test_o0_timed_before_and_after_the_trials_gives_each_trial_o0_at_its_start(records):
    """The search's O0 at its start (320 samples/s) and at its end (500): the machine drifted. A trial halfway read
    against O0 halfway in log throughput (400), one before the first O0 run against it, one after the last against
    that; the figure the search quotes stays their geometric mean."""
    records[0] = {**records[0], "started": 1000.0}
    first = {**make_record("t_00006", preset="O0", sps=320.0, acc=0.810), "started": 2000.0}
    last = {**make_record("t_00008", preset="O0", sps=500.0, acc=0.805), "started": 3000.0}
    halfway = {**make_record("t_00010", sps=600.0, acc=0.80), "started": 2500.0}
    early = {**make_record("t_00011", sps=600.0, acc=0.80), "started": 1500.0}
    late = {**make_record("t_00012", sps=600.0, acc=0.80), "started": 3500.0}
    table = build_results_table([first, last, halfway, early, late, *records], ray_version=RAY_VERSION)
    reference = search_reference(table)
    assert reference.bracketed and reference.speed_times == (2000.0, 3000.0)
    assert reference.at(2500.0) == pytest.approx(400.0) and reference.throughput_sps == pytest.approx(400.0)
    speedups = table.set_index("trial_id")["speedup_vs_baseline"]
    assert speedups["t_00010"] == pytest.approx(1.5)
    assert speedups["t_00011"] == pytest.approx(600.0 / 320.0) and speedups["t_00012"] == pytest.approx(1.2)
    assert speedups["t_00006"] == pytest.approx(1.0) and speedups["t_00008"] == pytest.approx(1.0)
    # a run without a start time reads the geometric mean; one O0 run of the search's own is no bracket
    assert reference.at(None) == reference.at(float("nan")) == pytest.approx(400.0)
    assert not search_reference(build_results_table([first, *records], ray_version=RAY_VERSION)).bracketed


def test_a_search_that_did_not_train_o0_again_reads_the_baseline_stages_run(records):
    table = build_results_table(records, ray_version=RAY_VERSION)
    reference = search_reference(table)
    assert reference.runs == reference.pooled == (500.0,) and reference.throughput_sps == 500.0


def test_recipe_and_environment_columns(table):
    row = table.set_index("trial_id").loc["t_00005"]
    assert (row["boost_level"], row["optimizer_name"], row["learning_rate"], row["batch_size"]) == \
        ("O0", "momentum", 0.1, 32)
    assert (row["model"], row["dataset"], row["loss_scale_kind"], row["world_size"]) == ("lenet5", "digits", "none", 1)
    assert (row["onednn_isa"], row["ray_version"], row["mindspore_version"]) == ("AVX2", RAY_VERSION, "2.10.0")
    config = json.loads(table.loc[2, "boost_config_dict_json"])
    assert config["grad_accumulation"] == {"grad_accumulation_step": 4}
    assert table.loc[2, "boost_config_dict_json"] == json.dumps(config, sort_keys=True, separators=(",", ":"))


def test_no_finished_baseline_leaves_ratios_missing(records):
    records[0] = {**records[0], "status": "failed", "reason": "boom", "metrics": {}}
    table = build_results_table(records, ray_version=RAY_VERSION)
    assert table["speedup_vs_baseline"].isna().all() and table["objective_gain"].isna().all()
    assert not table["is_baseline"].any()


@pytest.mark.parametrize("change, fragment", [
    ({"status": "done"}, "records[0].status: 'done' is invalid; allowed: completed, stopped, target_reached, failed"),
    ({"trial_id": ""}, "records[0].trial_id"),
])
def test_bad_records_are_data_errors(records, change, fragment):
    with pytest.raises(DataError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        build_results_table([{**records[0], **change}], ray_version=RAY_VERSION)


def test_duplicate_trial_ids_are_refused(records):
    with pytest.raises(DataError, match="t_00000.*more than once"):
        build_results_table([records[0], copy.deepcopy(records[0])], ray_version=RAY_VERSION)


@pytest.mark.parametrize("which", ["folder", "results.parquet", "results.csv"])
def test_parquet_and_csv_round_trip(table, tmp_path, which):
    parquet, csv = save_results(table, tmp_path / "exp")
    assert (parquet.name, csv.name) == ("results.parquet", "results.csv")
    source = tmp_path / "exp" if which == "folder" else tmp_path / "exp" / which
    loaded = load_results(source)
    pd.testing.assert_frame_equal(loaded[schema_columns()], table[schema_columns()])
    assert loaded.loc[1, "param.grad_freeze.freeze_p"] != loaded.loc[1, "param.grad_freeze.freeze_p"]  # NaN
    assert loaded.loc[3, "param.grad_freeze.freeze_p"] == 0.4


def test_write_is_atomic(table, tmp_path, monkeypatch):
    save_results(table, tmp_path)
    before = (tmp_path / "results.csv").read_bytes()

    def crash(self, path, **kwargs):
        with open(path, "w") as half:
            half.write("trial_id,sta")
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", crash)
    with pytest.raises(OSError, match="disk full"):
        save_results(table.iloc[:2], tmp_path)
    assert (tmp_path / "results.csv").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv", "results.parquet"]


def test_missing_schema_column_is_one_line_data_error(table, tmp_path):
    path = tmp_path / "results.csv"
    table.drop(columns=["objective_gain"]).to_csv(path, index=False)
    with pytest.raises(DataError) as error:
        load_results(path)
    assert str(error.value) == (f"{path}: missing column 'objective_gain'; not a boosttune results table (it says "
                                f"schema version {SCHEMA_VERSION}; this boosttune reads versions 1 to "
                                f"{SCHEMA_VERSION})")


def test_a_table_of_an_older_schema_version_reads_with_its_later_columns_missing(table, tmp_path):
    """A version-1 table (written before label, started_at, curve_json, rung, schema_version, graph_cached) still
    reads."""
    path = tmp_path / "results.csv"
    assert set(table["schema_version"]) == {SCHEMA_VERSION}
    table.drop(columns=["label", "started_at", "curve_json", "rung", "schema_version", "graph_cached"]).to_csv(
        path, index=False)
    old = load_results(path)
    assert set(old["schema_version"]) == {1} and old["rung"].isna().all()
    assert list(old["label"]) == list(table["preset"].fillna(table["trial_id"]))
    assert old["graph_cached"].dtype == "boolean" and not old["graph_cached"].any()


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_version_3_table_reads_without_graph_cached_as_not_cached(table, tmp_path, suffix):
    """graph_cached came with version 4; a table written before it reads with its default, False."""
    path = tmp_path / f"results.{suffix}"
    old = table.drop(columns=["graph_cached"]).assign(schema_version=3)
    old.to_csv(path, index=False) if suffix == "csv" else old.to_parquet(path, index=False)
    read = load_results(path)
    assert list(read["graph_cached"]) == [False] * len(table) and set(read["schema_version"]) == {3}
    others = [c for c in schema_columns() if c not in ("graph_cached", "schema_version")]
    pd.testing.assert_frame_equal(read[others], table[others])


def test_a_column_of_the_tables_own_version_is_not_filled_in(table, tmp_path):
    """A table that says version 4 but lacks graph_cached (or version 3 without label) is damaged, not old."""
    for version, column in ((SCHEMA_VERSION, "graph_cached"), (3, "label")):
        path = tmp_path / f"v{version}.csv"
        table.drop(columns=[column]).assign(schema_version=version).to_csv(path, index=False)
        with pytest.raises(DataError, match=f"missing column '{column}'; not a boosttune results table \\(it says "
                                            f"schema version {version};"):
            load_results(path)


def test_a_table_of_a_newer_schema_version_is_refused_naming_it(table, tmp_path):
    path = tmp_path / "results.csv"
    table.assign(schema_version=99).to_csv(path, index=False)
    with pytest.raises(DataError, match=r"written with results schema version 99, newer than this boosttune reads"):
        load_results(path)


@pytest.mark.parametrize("name, fragment", [("nothing", "no results.parquet or results.csv"),
                                            ("x.txt", "expected a results folder"),
                                            ("gone.parquet", "no such results file")])
def test_missing_or_wrong_file_is_data_error(tmp_path, name, fragment):
    target = tmp_path / name
    if name == "nothing":
        target.mkdir()
    with pytest.raises(DataError, match=fragment):
        load_results(target)


def test_corrupt_parquet_is_data_error(tmp_path):
    (tmp_path / "results.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(DataError, match="cannot read the results table"):
        load_results(tmp_path)


def test_saved_files_follow_the_umask(tmp_path):
    import os
    import stat

    from boosttune.tables.results import build_results_table, save_results

    umask = os.umask(0o022)
    try:
        parquet, csv = save_results(build_results_table(sample_records(), ray_version=RAY_VERSION), tmp_path)
    finally:
        os.umask(umask)
    assert stat.S_IMODE(parquet.stat().st_mode) == 0o644 and stat.S_IMODE(csv.stat().st_mode) == 0o644


_TYPED = [c.name for c in SCHEMA if c.dtype in ("float64", "Int64", "bool", "boolean")]


def _damaged(table, tmp_path, suffix, column, value, row=0):
    """The table saved, then one cell of ``column`` in ``row`` replaced by ``value`` in the file itself."""
    import pandas as pd

    save_results(table, tmp_path)
    path = tmp_path / f"results.{suffix}"
    raw = pd.read_csv(path, dtype=str) if suffix == "csv" else pd.read_parquet(path)
    raw[column] = raw[column].map(lambda v: None if pd.isna(v) else str(v))  # text: a cell parquet can hold too
    raw.loc[row, column] = value
    raw.to_csv(path, index=False) if suffix == "csv" else raw.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
@pytest.mark.parametrize("column", _TYPED)
def test_a_damaged_cell_in_any_typed_column_is_refused_naming_the_file_row_column_and_value(table, tmp_path, suffix,
                                                                                          column):
    path = _damaged(table, tmp_path, suffix, column, "fast")
    with pytest.raises(DataError) as raised:
        load_results(path)
    message = str(raised.value)
    trial = table["trial_id"].iloc[0]
    assert message == (f"{path}: row 1 (trial {trial}), column {column!r}: 'fast' is not "
                       + {"float64": "a number", "Int64": "a whole number"}.get(
                           next(c.dtype for c in SCHEMA if c.name == column), "True or False"))


def test_the_issue_46_baseline_row_is_refused_at_the_damaged_cell_not_reported_as_unfinished(table, tmp_path):
    base = int(table.index[table["is_baseline"]][0])
    path = _damaged(table, tmp_path, "csv", "throughput_sps", "fast", row=base)
    with pytest.raises(DataError, match=r"column 'throughput_sps': 'fast' is not a number"):
        load_results(path)


def test_a_duplicated_row_or_a_second_baseline_is_refused(table, tmp_path):
    import pandas as pd

    save_results(pd.concat([table, table.iloc[[1]]], ignore_index=True), tmp_path / "twice")
    with pytest.raises(DataError, match=r"trial 't_00001' appears in more than one row"):
        load_results(tmp_path / "twice")
    two = table.copy()
    two.loc[1, "is_baseline"] = True
    save_results(two, tmp_path / "two")
    with pytest.raises(DataError, match=r"2 rows are marked is_baseline \(trials t_00000, t_00001\)"):
        load_results(tmp_path / "two")


def test_a_table_without_its_baseline_row_is_refused_naming_it(table, tmp_path):
    save_results(table[table["preset"] != "O0"].reset_index(drop=True), tmp_path / "headless")
    with pytest.raises(DataError, match=r"no O0 baseline row, so no finished O0 baseline to compare with"):
        load_results(tmp_path / "headless")


def test_a_run_stopped_at_a_rung_names_the_boost_config_dict_its_recipe_gave_model():
    """A run stopped before its end sends no summary: its row's boost_config_dict_json is still the one its recipe
    gave Model (CI 2026-12-07: a GradientFreeze trial the speed floor stopped read {} and looked like O0)."""
    from boosttune.execution.runs import RunRecord, RunSpec

    given = {"boost": {"mode": "manual", "grad_freeze": True},
             "grad_freeze": {"param_groups": 2, "freeze_type": 1, "freeze_p": 0.5, "total_steps": 60}}
    spec = RunSpec(run_id="t1", role="search", recipe={"boost_level": "O1", "boost_config_dict": given})
    stopped = RunRecord.stopped_early(spec, rung=1, reason="too slow", metrics={}, curve=[])
    failed = RunRecord.failed(RunSpec(run_id="t2", role="search", recipe={"boost_level": "O0"}), "out of memory")
    table = build_results_table([stopped.to_dict(), failed.to_dict()], ray_version=RAY_VERSION)
    cell = json.loads(table.loc[table["trial_id"] == "t1", "boost_config_dict_json"].item())
    assert cell["boost"]["grad_freeze"] is True and cell["grad_freeze"]["freeze_p"] == 0.5
    assert cell["boost"]["adasum"] is False  # canonical: every switch spelled out, as a finished run's
    o0 = json.loads(table.loc[table["trial_id"] == "t2", "boost_config_dict_json"].item())
    assert o0["boost"] and not any(o0["boost"][k] for k in o0["boost"] if k != "mode")
