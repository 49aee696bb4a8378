"""The objective is the user's: a lower-is-better metric in its own units through the results table, the
selection, the Pareto front, the confirm stage's verdicts and the report (pure; the end-to-end run on real Ray,
Optuna and MindSpore is tests/e2e/test_custom_project.py)."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd
import pytest

from boosttune.stages.rounds import Candidate, pick_candidates, run_paired
from boosttune.stats.confirmed import confirm_table
from boosttune.stats.decide import decide
from boosttune.stats.decisions import Exit
from boosttune.stats.margin import Margin
from boosttune.tables.results import build_results_table, load_results, table_objective, save_results
from boosttune.stats.select import pareto_front, select_best
from boosttune.execution.runs import RecordStore, RunRecord, RunSpec
from boosttune.objective import ACCURACY, Objective
from boosttune.tables.confirm_runs import BASELINE_NAME
from tests.helpers.records import RAY_VERSION, make_record

MAE = Objective("mae", higher_is_better=False, fraction=False)
MAE_KEYS = MAE.flat()


def test_gain_is_signed_so_that_positive_is_better_in_the_objectives_units():
    assert ACCURACY.gain(0.82, 0.80) == pytest.approx(2.0)  # points
    assert MAE.gain(0.30, 0.40) == pytest.approx(0.10)  # a lower MAE is a positive gain, in MAE units
    assert MAE.gain(0.45, 0.40) == pytest.approx(-0.05)
    assert MAE.shifted(0.40, -0.05) == pytest.approx(0.45)  # the floor: 0.05 worse than the baseline
    assert ACCURACY.shifted(0.80, -1.0) == pytest.approx(0.79)
    assert MAE.reached(0.39, 0.40) and not MAE.reached(0.41, 0.40)
    assert MAE.oriented(0.3) > MAE.oriented(0.4)
    assert MAE.worst > 1e29 and ACCURACY.worst == 0.0
    assert (MAE.sense, ACCURACY.sense) == ("min", "max")


def test_an_unset_tolerance_is_points_for_a_fraction_and_percent_of_the_baseline_otherwise():
    assert ACCURACY.tolerance(None, 0.5, 0.8) == 0.5
    assert MAE.tolerance(None, 0.5, 0.40) == pytest.approx(0.002)
    assert MAE.tolerance(0.05, 0.5, 0.40) == 0.05  # given: in the objective's units, as it is
    assert MAE.tolerance(None, 0.5, None) == 0.0


def test_the_objective_travels_in_a_runs_metrics_and_reads_back():
    assert Objective.from_metrics(MAE.flat()) == MAE
    assert Objective.from_metrics({"objective": "acc"}) == ACCURACY  # a record of the version before
    assert Objective.from_metrics({}) is None
    assert Objective.of(MAE.to_dict()) == MAE and Objective.of(None) == ACCURACY
    assert MAE.describe() == "val_mae (lower is better)"
    assert ACCURACY.format_gain(-0.4) == "-0.40 pt" and MAE.format_gain(0.0123) == "+0.0123 mae"


def _mae_record(trial_id: str, mae: float, sps: float, **kwargs) -> dict:
    record = make_record(trial_id, sps=sps, acc=mae, **kwargs)
    record["metrics"].update(MAE_KEYS)
    return record


@pytest.fixture
def mae_table():
    return build_results_table([
        _mae_record("t0", 0.40, 500.0, preset="O0"),
        _mae_record("t1", 0.38, 550.0, lr=0.06),  # faster and better
        _mae_record("t2", 0.41, 650.0, lr=0.07),  # fastest, 0.01 worse
        _mae_record("t3", 0.60, 700.0, lr=0.08),  # even faster, much worse
        _mae_record("t4", 0.45, 520.0, lr=0.09),  # dominated by t1
    ], ray_version=RAY_VERSION)


def test_the_table_names_the_objective_and_orients_its_gain(mae_table):
    assert table_objective(mae_table) == MAE
    gains = dict(zip(mae_table["trial_id"], mae_table["objective_gain"]))
    assert gains["t1"] == pytest.approx(0.02) and gains["t2"] == pytest.approx(-0.01)
    assert gains["t3"] == pytest.approx(-0.20) and gains["t0"] == 0.0


def test_the_pareto_front_and_the_selection_take_lower_as_better(mae_table):
    assert list(pareto_front(mae_table)["trial_id"]) == ["t1", "t2", "t3"]  # by speed-up; t0 and t4 dominated by t1
    chosen = select_best(mae_table, Margin(MAE, 0.02))
    assert chosen.row["trial_id"] == "t2"
    assert "within 0.02 mae of the baseline's val_mae 0.4" in chosen.reason and "val_acc" not in chosen.reason
    assert select_best(mae_table, Margin(MAE, 0.005)).row["trial_id"] == "t1"  # t2 is 0.01 worse: out
    margin = Margin.on(mae_table, None, 0.5)  # on the table's own objective
    assert margin.objective == MAE and margin.value == pytest.approx(0.002)  # 0.5% of 0.40


def test_a_table_of_the_accuracy_schema_reads_as_accuracy(tmp_path):
    table = build_results_table([make_record("t0", preset="O0", sps=500.0, acc=0.8),
                                 make_record("t1", sps=600.0, acc=0.79)], ray_version=RAY_VERSION)
    old = table.drop(columns=["objective", "objective_higher_is_better", "objective_fraction"]).rename(
        columns={"objective_value": "val_acc", "objective_gain": "val_acc_delta_pt"})
    old["schema_version"] = 2
    old.to_csv(tmp_path / "results.csv", index=False)
    read = load_results(tmp_path)
    assert table_objective(read) == ACCURACY
    assert read.set_index("trial_id").loc["t1", "objective_gain"] == pytest.approx(-1.0)
    save_results(read, tmp_path / "again")  # and it is written in the current schema


EFFECTS = {"O0": (1.0, 0.0), "fast": (1.3, 0.001), "worse": (1.4, 0.05)}  # speed, MAE added


def _fake_mae_train(spec: RunSpec) -> RunRecord:
    rng = np.random.default_rng(spec.seed)
    machine, mae_seed = rng.uniform(0.8, 1.2), rng.normal(0.40, 0.01)
    own = np.random.default_rng(zlib.crc32(f"{spec.seed}-{spec.label}".encode()))
    speed, worse = EFFECTS[spec.label]
    mae = mae_seed + worse + own.normal(0, 0.001)
    curve = [{"epoch": e, "train_s": 10.0 * e / speed, "objective_value": mae + 0.1 * (3 - e)} for e in (1, 2, 3)]
    return RunRecord.from_summary(spec, {"status": "completed", "throughput_sps": 500.0 * machine * speed,
                                         "objective_value": mae, **MAE_KEYS, "curve": curve, "boost_config_dict": {},
                                         "observed_boost": {}, "environment": {}})


def test_the_confirm_stage_judges_a_lower_is_better_objective_in_its_units(tmp_path):
    base = {"model": "lenet5", "epochs": 3, "seed": 0, "data": {"name": "digits"}}
    candidates = [Candidate(n, dict(base), "test", BASELINE_NAME if n == BASELINE_NAME else None) for n in EFFECTS]
    lines: list[str] = []
    records = run_paired(candidates, [1, 2, 3, 4, 5], store=RecordStore(tmp_path), role="bench",
                         train=_fake_mae_train, log=lines.append)
    table = confirm_table(records)
    assert Margin.on(table, 0.01, 1.0) == Margin(MAE, 0.01)
    assert Margin.on(table, None, 1.0).value == pytest.approx(0.004, rel=0.1)  # 1% of ~0.40
    decision = decide(table, None, Margin.on(table, 0.01, 1.0))  # fixed rounds: judged at one look
    summary = decision.summary.set_index("recipe")
    assert summary.loc["fast", "objective_gain"] == pytest.approx(-0.001, abs=0.002)
    assert summary.loc["worse", "objective_gain"] == pytest.approx(-0.05, abs=0.003)
    # the race model's exits at one look (was the paired t test's "faster" / "faster_too_lossy")
    assert summary.loc["fast", "verdict"] == Exit.WON and summary.loc["worse", "verdict"] == Exit.TOO_LOSSY
    assert "val_mae" in summary.loc["fast", "verdict_text"] and "pt" not in summary.loc["fast", "verdict_text"]
    assert "within 0.01 mae" in summary.loc["fast", "verdict_text"]
    assert "val_mae" in summary.loc["fast", "verdict_text"].split("secondary, time to ")[1]  # the target, named
    assert set(summary["objective"]) == {"val_mae"} and set(summary["gain_unit"]) == {"mae"}
    chosen = decision.selection
    assert chosen.recipe == "fast" and not chosen.fell_back_to_baseline
    assert any("mae" in line for line in lines if line.startswith("after "))


def test_the_confirm_candidates_are_screened_in_the_objectives_units(mae_table):
    names = [c.name for c in pick_candidates(mae_table, margin=Margin.on(mae_table, None, 1.0), max_candidates=3,
                                              screen=0.05)]
    assert names[0] == "O0" and not any("(t3)" in n for n in names)  # 0.20 worse than the baseline: beyond the screen
    assert {"no boost (t1)", "no boost (t2)"} <= set(names)


def test_a_diverged_run_scores_as_the_worst_value_not_the_best():
    from boosttune.search.setup import SearchSetup
    from boosttune.search.tune import _scores

    setup = SearchSetup(base={}, ctx=None, env={}, workers=1, output="/nowhere", presets={}, baseline_objective=0.4,
                        max_drop=0.01, target=None, max_concurrent=1, objective=MAE,
                        baseline_throughput_sps=1000.0)
    diverged = _scores({"throughput_sps": 900.0, "objective_value": None}, setup)
    assert diverged["objective_value"] == MAE.worst and diverged["constrained_score"] < 0
    good = _scores({"throughput_sps": 600.0, "objective_value": 0.405}, setup)
    assert good["constrained_score"] == 600.0 and good["objective_score"] == pytest.approx(-0.405)
    assert _scores({"throughput_sps": 600.0, "objective_value": 0.5}, setup)["constrained_score"] < 600.0
    assert math.isfinite(diverged["objective_score"])


def test_report_texts_name_the_objective(mae_table, tmp_path):
    from boosttune.outputs.judged import judge_run
    from boosttune.report import ReportInputs
    from boosttune.report import figures as info

    inputs = ReportInputs(judge_run("experiment", Margin.on(mae_table, 0.02, 1.0), search=mae_table), "mae")
    header = info.header_info(inputs)
    assert "val_mae" in header.answer and "accuracy" not in header.answer
    assert ("objective", "val_mae (lower is better)") in header.run_details
    scatter = info.scatter_info(inputs)
    assert scatter.y_label == "val_mae vs O0 (mae, up is better)"
    assert pd.Series([p.y for p in scatter.points]).max() == pytest.approx(0.02)  # t1's gain, upwards
