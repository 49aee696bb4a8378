"""Method cards: generated from a bench folder, one per method in boosttune.report.method_notes, nothing by hand."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from boosttune.cli.main import main
from boosttune.errors import DataError
from boosttune.objective import ACCURACY
from boosttune.stages.rounds import Candidate, run_paired
from boosttune.stats.margin import Margin
from boosttune.tables.results import build_results_table, save_results
from boosttune.execution.runs import RecordStore
from boosttune.report.method_notes import NOTES
from boosttune.report.methods import card_figures, searched_ranges, verdict_line, worked_ranges
from tests.helpers.paired_runs import GF, O1, RECIPE, fake_train
from tests.helpers.records import RAY_VERSION, sample_records


def test_every_note_is_complete_and_names_its_source():
    assert set(NOTES) == {"less_bn", "grad_freeze", "grad_accumulation", "adasum", "dim_reduce", "group_loss_scale",
                          "boost_levels", "amp", "loss_scale"}
    for key, note in NOTES.items():
        assert note.key == key and note.title and len(note.what.split()) > 40 and note.knobs and note.devices
        assert all("mindspore/" in s for s in note.source)


def test_the_searched_ranges_are_read_from_the_space_fragments():
    ranges = searched_ranges()
    assert ranges["grad_freeze.freeze_p"] == "0.1..0.9" and ranges["boost.grad_freeze"] == "{False, True}"
    assert "optimizer.learning_rate" in ranges and ranges["amp_level"].startswith("{O0")


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory):
    from boosttune.outputs.summary import save_confirmed
    from boosttune.execution.provenance import record_run_info

    folder = tmp_path_factory.mktemp("bench")
    candidates = [Candidate("O0", RECIPE, "bench", "O0"), Candidate("O1-equivalent", O1, "bench"),
                  Candidate("grad_freeze p=0.5", GF, "bench")]
    records = run_paired(candidates, [0, 1, 2], store=RecordStore(folder / "runs"), role="bench", train=fake_train,
                         log=lambda m: None)
    save_confirmed(records, folder, margin=Margin(ACCURACY, 1.0))
    (folder / "bench.json").write_text(json.dumps({"name": "methods", "base": RECIPE, "max_accuracy_drop_pt": 1.0}))
    record_run_info(folder, device="CPU: test", left_out={
        "adasum": "plain data parallel with 1 rank(s) (needs >= 16)",
        "O2-equivalent": "trains the same as O1-equivalent here"})
    return folder


def test_card_figures_pick_the_recipes_that_change_only_that_method(bench_dir):
    from boosttune.outputs.summary import load_confirmed

    confirmed = load_confirmed(bench_dir, 1.0)
    gf = card_figures("grad_freeze", confirmed.summary, confirmed.runs, {})
    assert list(gf.rows["recipe"]) == ["grad_freeze p=0.5"]  # not O1-equivalent, which also applies LessBN
    levels = card_figures("boost_levels", confirmed.summary, confirmed.runs, {"O2-equivalent": "same as O1"})
    assert list(levels.rows["recipe"]) == ["O1-equivalent"] and levels.unsupported == (("O2-equivalent", "same as O1"),)
    assert verdict_line(gf, 1.0).startswith("grad_freeze p=0.5: helped here")
    assert verdict_line(levels, 1.0).startswith("O1-equivalent: did not help here: slower than O0")
    adasum = card_figures("adasum", confirmed.summary, confirmed.runs, {"adasum": "needs >= 16 ranks"})
    assert verdict_line(adasum, 1.0) == "not measurable on this device: needs >= 16 ranks"


def test_verdicts_name_a_collapse_and_too_few_seeds():
    row = dict(recipe="dim_reduce", job_speedup=0.4, job_ci_low=0.38, job_ci_high=0.43, objective_gain=-74.0,
               objective_gain_ci_low=-75.0, objective_gain_ci_high=-73.0, verdict="slower")
    from boosttune.report.methods import CardFigures

    assert "broke training here" in verdict_line(CardFigures(pd.DataFrame([row]), ()), 1.0)
    one = {**row, "objective_gain": -0.1, "verdict": "inconclusive", "job_ci_low": float("nan")}
    assert "not judged: fewer than 2 paired seeds" in verdict_line(CardFigures(pd.DataFrame([one]), ()), 1.0)


def test_worked_ranges_from_a_search():
    records = sample_records()
    records[3]["params"] = {"boost.grad_freeze": True, "grad_freeze.freeze_p": 0.4}  # 1.4x, -2 pt: too lossy
    records.append({**records[3], "trial_id": "t_00006", "params": {"boost.grad_freeze": True,
                                                                     "grad_freeze.freeze_p": 0.6},
                    "metrics": {**records[3]["metrics"], "objective_value": 0.799}})
    table = build_results_table(records, ray_version=RAY_VERSION)
    assert worked_ranges("grad_freeze", table, 1.0) == [("grad_freeze.freeze_p", "0.6", "0.4..0.6 (2 trials)")]


def test_methods_command_writes_every_card_and_an_index(bench_dir, tmp_path, capsys):
    search = tmp_path / "exp"
    save_results(build_results_table(sample_records(), ray_version=RAY_VERSION), search)
    out = tmp_path / "cards"
    assert main(["methods", str(bench_dir), "--output", str(out), "--search", str(search)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"10 files written to {out}")
    assert sorted(p.stem for p in out.glob("*.md")) == sorted([*NOTES, "README"])
    card = (out / "grad_freeze.md").read_text()
    assert card.startswith("# GradientFreeze (`grad_freeze`)") and "Do not edit by hand" in card
    assert "| grad_freeze p=0.5 | 3 | " in card and "| `grad_freeze.freeze_p` |" in card and "0.1..0.9" in card
    assert f"--search {search}" in card and "## Not supported on this device" in card
    index = (out / "README.md").read_text()
    assert "[AdaSum](adasum.md) | not measurable on this device: plain data parallel" in index


def test_methods_refuses_a_folder_that_is_not_a_bench(tmp_path, capsys):
    save_results(build_results_table(sample_records(), ray_version=RAY_VERSION), tmp_path / "exp")
    assert main(["methods", str(tmp_path / "exp"), "--output", str(tmp_path / "cards")]) == 2
    assert "not a bench folder" in capsys.readouterr().err and not (tmp_path / "cards").exists()
    with pytest.raises(DataError):
        from boosttune.report.methods import write_method_cards
        write_method_cards(tmp_path / "nothing", tmp_path / "cards")
