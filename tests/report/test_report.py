"""The report: every figure's data from the tables (no rendering), the page and report.md, and a real browser."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from boosttune.errors import ConfigError, DataError
from boosttune.tables.results import build_results_table
from boosttune.stats.select import hypervolume
from boosttune.report import figures, load_report_inputs, recipes, write_report
from tests.helpers import REPO
from tests.helpers.paired_runs import GF, O1, RECIPE, experiment_folder, report_inputs
from tests.helpers.records import RAY_VERSION, sample_records


# --- figure data ---------------------------------------------------------------------------------------

def test_the_confirmed_section_lists_what_each_raced_recipe_changes_from_o0(search, confirmed):
    from boosttune.report.render import build_sections

    section = next(s for s in build_sections(report_inputs(search, confirmed, max_drop=0.5)) if s.anchor == "confirmed")
    table = next(t for t in section.tables if t.headers == ("recipe", "setting", "O0", "this recipe"))
    named = [row[0] for row in table.rows if row[0]]
    assert named and "O0" not in named and all(row[2] != row[3] for row in table.rows)
    assert any(row[1] == "boost_level" and row[3] in ("O1", "O2") for row in table.rows)


def test_scatter_is_speedup_vs_accuracy_points_with_front_band_and_confirmed_intervals(search, confirmed):
    scatter = figures.scatter_info(report_inputs(search, confirmed, max_drop=0.5))
    by_id = {p.trial_id: p for p in scatter.points}
    assert set(by_id) == {"t_00001", "t_00002", "t_00003", "t_00005"}  # not the failed one, and O0 apart
    assert (by_id["t_00003"].x, by_id["t_00003"].y) == (pytest.approx(1.4), pytest.approx(-2.0))
    assert [(p.trial_id, p.label) for p in scatter.o0_runs] == [("t_00000", "O0")]  # drawn once, at (1, 0)
    assert by_id["t_00001"].is_preset and not by_id["t_00002"].is_preset
    assert [p.trial_id for p in scatter.points if p.is_pareto] == ["t_00002", "t_00003", "t_00005"]
    assert [x for x, _ in scatter.pareto] == pytest.approx([0.9, 1.0, 1.2, 1.4])
    assert scatter.baseline_y == 0.0 and scatter.max_drop_y == -0.5 and scatter.y_label.startswith("accuracy vs O0")
    assert ("grad_accumulation.grad_accumulation_step", 4) in by_id["t_00002"].params  # data; the drawer words it
    hover = [h for t in figures.draw_scatter(scatter).data if t.hovertext for h in t.hovertext]
    assert any("grad_accumulation.grad_accumulation_step=4" in h and "(t_00002, completed)" in h for h in hover)
    gf = {c.recipe: c for c in scatter.confirmed}["grad_freeze p=0.5"]
    assert gf.n_seeds == 5 and gf.speedup_low < gf.speedup < gf.speedup_high and gf.is_selected
    assert "O0" not in {c.recipe for c in scatter.confirmed}
    assert [f[:3] for f in scatter.not_plotted] == [("t_00004", "failed", "trial failed in MindSpore: boom")]
    # a confirmed recipe is linked to its own search trial (one seed) by position; one the search never ran is not
    o1 = {c.recipe: c for c in scatter.confirmed}["O1-equivalent"]
    assert (o1.search_x, o1.search_y) == (pytest.approx(1.28), pytest.approx(-3.0)) and math.isnan(gf.search_x)
    # The star marks the answer: the confirmed recipe, not the search's best single-seed trial
    assert not any(p.is_selected for p in scatter.points) and scatter.answer == "grad_freeze p=0.5"
    stars = [t.name for t in figures.draw_scatter(scatter).data if getattr(t.marker, "symbol", None) == "star"]
    assert stars == ["grad_freeze p=0.5 (the answer): 5 paired seeds (95% CI)"]


def test_one_decision_per_recipe_in_the_answer_the_tables_and_the_figure(tmp_path, search, confirmed):
    """The page reads the confirm stage's one decision everywhere: the answer table, the summary table, the
    figure's hover and the text in full say the same words, and no second verdict (a paired test's) appears."""
    from boosttune.stats.decisions import SHORT, decision_words

    inputs = report_inputs(search, confirmed)
    _, md_path = write_report(inputs, tmp_path)
    md = md_path.read_text()
    hover = {c.recipe: c for c in figures.scatter_info(inputs).confirmed}
    for _, row in confirmed.summary.iterrows():
        if row["recipe"] == "O0":
            continue
        words = decision_words(str(row["verdict"]), inputs.objective, 1.0)
        rows = [line for line in md.splitlines() if line.startswith(f"| {row['recipe']}")]
        short = SHORT.get(str(row["verdict"]), words)  # the first table's few words; the summary's in full
        assert len(rows) >= 2 and rows[0].rstrip(" |").endswith(short) and rows[1].rstrip(" |").endswith(words), rows
        assert f"decision: {words}" in md and hover[row["recipe"]].verdict == row["verdict"]
    for other in ("loses more than the", "consistent but not shown", "non-inferiority shown", "| p |"):
        assert other not in md, other


def test_scatter_without_a_baseline_falls_back_to_throughput_and_accuracy():
    records = sample_records()
    records[0] = {**records[0], "status": "failed", "reason": "baseline crashed", "metrics": {}}
    scatter = figures.scatter_info(report_inputs(build_results_table(records, ray_version=RAY_VERSION)))
    assert scatter.x_label.startswith("throughput") and scatter.max_drop_y is None and scatter.confirmed == ()
    assert max(p.x for p in scatter.points) == 700.0


def test_header_answers_in_one_sentence_with_intervals_and_says_how_to_reproduce(search, confirmed):
    run_info = {"command": "python experiments/lenet.py --epochs 3", "versions": {"optuna": "5.0.0"},
                "device": "CPU: Xeon", "host": "box", "cpu_count": 2}
    header = figures.header_info(report_inputs(search, confirmed, run_info=run_info))
    assert header.recipe == "grad_freeze p=0.5" and header.verdict == "won"
    assert re.match(r"Use grad_freeze p=0\.5: 1\.\d\dx per job \(a 3-epoch job, compile included; 95% CI "
                    r"1\.\d\d-1\.\d\d\), faster after \d+ steps; 1\.\d\dx per step, at -0\.\d\d accuracy points "
                    r"\(95% CI .* over 5 paired seeds", header.answer)
    facts = dict(header.run_details)
    assert facts["recommended recipe"].startswith("boost_level O1: grad_freeze (freeze_p 0.7, freeze_type 1, "
                                                  "param_groups 10) + momentum lr 0.05")
    assert facts["reproduce"] == run_info["command"] and "optuna 5.0.0" in facts["versions"]
    assert facts["device"].startswith("CPU (CPU: Xeon)") and "paired seeds [1, 2, 3, 4, 5]" in facts["confirm stage"]
    # Judged at a margin the recipe's loss does not fit in: keep the baseline.
    strict = figures.header_info(report_inputs(search, _rejudged(confirmed, 0.0), max_drop=0.0))
    assert strict.recipe == "O0" and strict.answer.startswith("Keep O0")
    # Without paired seeds the answer says it is one seed, unconfirmed.
    single = figures.header_info(report_inputs(search))
    assert single.verdict == "search_only" and "one seed" in single.answer and "t_00002" in single.answer


def _rejudged(confirmed, max_drop):
    from boosttune.objective import ACCURACY
    from boosttune.stats.decide import decide
    from boosttune.stats.margin import Margin

    return decide(confirmed.runs, confirmed.rules, Margin(ACCURACY, max_drop), decided=confirmed.race)


def test_mindspore_claims_are_judged_on_paired_figures_and_not_on_one_seed(search, confirmed):
    claims = {c.preset: c for c in figures.claims_info(report_inputs(search, confirmed))}
    assert claims["O1"].verdict.startswith("does not hold here: the whole interval is below 1.20x")
    assert "5 paired seeds" in claims["O1"].measured
    assert claims["O2"].verdict.startswith("not measured")
    single = {c.preset: c for c in figures.claims_info(report_inputs(search))}
    assert single["O1"].verdict.startswith("not judged: one seed") and "1.28x" in single["O1"].measured


@pytest.mark.parametrize("low, high, delta, expected", [
    (1.25, 1.40, -0.1, "holds here"),
    (1.05, 1.15, -0.1, "does not hold here: the whole interval is below"),
    (1.10, 1.30, -0.1, "not separable"),
    (1.25, 1.40, -2.0, "does not hold here: loses more than 1 pt"),
    (float("nan"), float("nan"), 0.0, "not judged"),
])
def test_claim_verdicts(low, high, delta, expected):
    row = pd.Series({"job_ci_low": low, "job_ci_high": high, "objective_gain": delta})
    assert figures.judge_claim(row, 1.2, 1.0).startswith(expected)


def test_methods_of_a_recipe_are_what_mindspore_applies():
    assert recipes.methods_of(RECIPE) == ()
    assert recipes.methods_of(GF) == ("grad_freeze",)
    assert recipes.methods_of(O1) == ("less_bn", "grad_freeze")
    assert recipes.methods_of({**RECIPE, "amp_level": "O2", "loss_scale": {"kind": "fixed"}}) == ("amp O2",
                                                                                               "loss_scale fixed")
    accumulate_once = {**RECIPE, "boost_level": "O1", "boost_config_dict": {
        "boost": {"mode": "manual", "less_bn": False, "grad_freeze": False, "grad_accumulation": True},
        "grad_accumulation": {"grad_accumulation_step": 1}}}
    assert recipes.methods_of(accumulate_once) == ()  # accumulation over 1 step is off in MindSpore


def test_ablation_takes_paired_figures_and_marks_the_recommended_recipes_methods(search, confirmed):
    ablation = figures.ablation_info(report_inputs(search, confirmed))
    rows = {r.name: r for r in ablation.alone}
    assert rows["grad_freeze p=0.5"].source == "paired seeds" and rows["grad_freeze p=0.5"].in_best
    assert ablation.best.name == "grad_freeze p=0.5" and ablation.best_methods == ("grad_freeze",)
    assert not math.isnan(ablation.best.speedup_low)
    # The search alone: one seed each. t_00005 changes the learning rate only: no method, no row.
    single = figures.ablation_info(report_inputs(search))
    assert all(r.source.startswith("search, one seed") and math.isnan(r.speedup_low) for r in single.alone)


def test_hypervolume_grows_in_start_order_and_ends_at_the_fronts(search):
    hv = figures.hypervolume_info(report_inputs(search))
    assert hv.trial_ids == tuple(f"t_0000{i}" for i in range(1, 6))  # the search's own trials: O0 is where it starts
    assert ("search", "5 trials after the O0 baseline, one seed each (seed 0)") in \
        figures.header_info(report_inputs(search)).run_details
    assert all(b >= a for a, b in zip(hv.hypervolume, hv.hypervolume[1:]))
    finished = search[search["status"] == "completed"]
    points = list(zip(finished["speedup_vs_baseline"], finished["objective_gain"]))
    assert hv.hypervolume[-1] == pytest.approx(hypervolume(points, hv.reference)) and hv.hypervolume[-1] > 0


def test_parameter_importance_per_objective_from_optuna(search):
    extra = [dict(r, trial_id=f"x{i}", label=f"x{i}", params={"boost.grad_freeze": i % 2 == 0,
                                                                 "optimizer.learning_rate": 0.01 * (i + 1)},
                  metrics={**r["metrics"], "throughput_sps": 500 + 40 * i, "objective_value": 0.8 - 0.001 * i})
             for i, r in enumerate([sample_records()[2]] * 10)]
    table = build_results_table(sample_records()[:1] + extra, ray_version=RAY_VERSION)
    importance = figures.importance_info(report_inputs(table))
    assert [name for name, _ in importance.objectives] == ["speed-up per job", "accuracy"]
    speed = dict(importance.objectives[0][1])
    assert set(speed) == {"optimizer.learning_rate", "boost.grad_freeze"} and sum(speed.values()) == pytest.approx(1)
    assert importance.evaluator == "FanovaImportanceEvaluator" and "indicative" in importance.note
    too_few = figures.importance_info(report_inputs(build_results_table(sample_records()[:2], ray_version=RAY_VERSION)))
    assert isinstance(too_few, str) and too_few.startswith("Parameter importance: not computed: 1 search trial(s)")


def test_parallel_coordinates_code_categories_and_end_with_the_objectives(search):
    parallel = figures.parallel_info(report_inputs(search))
    labels = [d[0] for d in parallel.dimensions]
    assert labels[-2:] == ["speed-up per job (x)", "accuracy (pt)"] and len(parallel.trial_ids) == 4  # not O0, not failed
    switches = dict((d[0], d) for d in parallel.dimensions)["boost.grad_freeze"]
    assert switches[2] == ("(unset)", "True") and set(switches[1]) == {0.0, 1.0}


def test_curves_timeline_and_failures(search, confirmed):
    curves = figures.curves_info(report_inputs(search, confirmed))
    assert len(curves.series) == 15 and {s.role for s in curves.series} == {"baseline", "preset", "candidate"}
    assert all(len(s.train_s) == 3 and s.train_s[0] < s.train_s[-1] for s in curves.series)
    search_only = figures.curves_info(report_inputs(search))
    assert {s.name for s in search_only.series} == {"O0", "O1-equivalent", "t_00002"}  # baseline, preset, selected
    # a confirm stage evaluated after the last epoch only (confirm_curves off): its runs draw no curve, the search's do
    last_only = confirmed.runs.assign(curve_json=[
        json.dumps([{**e, "objective_value": None} for e in json.loads(c)[:-1]] + json.loads(c)[-1:])
        for c in confirmed.runs["curve_json"]])
    fallback = figures.curves_info(report_inputs(search, dataclasses.replace(confirmed, runs=last_only)))
    # the search's runs of O0 and the answer; the answer was a start point the search never trained: said so
    assert {s.name for s in fallback.series} == {"O0"} and fallback.source.startswith("the search's runs")
    assert "O0 and the answer, grad_freeze p=0.5" in fallback.source
    assert fallback.source.endswith("the search never ran grad_freeze p=0.5, so no curve of it is drawn")
    timeline = figures.timeline_info(report_inputs(search, confirmed))
    assert timeline.bars[0].run_id == "t_00000" and timeline.bars[0].start_s == 0.0 and len(timeline.bars) == 21
    assert [b.start_s for b in timeline.bars] == sorted(b.start_s for b in timeline.bars)
    assert {b.stage for b in timeline.bars} == {"search", "confirm"}
    assert figures.failures_info(report_inputs(search)) == (("t_00004", "failed", "trial failed in MindSpore: boom",
                                                       "less_bn + grad_freeze p=0.7"),)


def _leaves(value):
    if isinstance(value, dict):
        value = (*value.keys(), *value.values())
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def test_every_info_is_data_only_no_html_no_hover_text_no_plotly(search, confirmed):
    """Hover text and markup belong to the drawers (Optuna's ``_get_*_info`` rule): no info carries them."""
    names = ("ablation", "answer", "apply", "claims", "curves", "failures", "header", "hypervolume", "importance",
             "parallel", "scatter", "timeline")
    for inputs in (report_inputs(search, confirmed), report_inputs(search), report_inputs(confirmed=confirmed, kind="bench")):
        for name in names:
            leaves = list(_leaves(getattr(figures, f"{name}_info")(inputs)))
            assert not [v for v in leaves if isinstance(v, str) and re.search(r"</?[A-Za-z][^<>]*>", v)], name
            assert not [v for v in leaves if type(v).__module__.startswith("plotly")], name


def test_the_selection_is_made_once_with_the_inputs_and_every_figure_reads_it(tmp_path, search, monkeypatch):
    from boosttune.outputs import judged as judged_module

    calls = []
    select = judged_module.select_best
    monkeypatch.setattr(judged_module, "select_best", lambda *a, **k: calls.append(a) or select(*a, **k))
    inputs = report_inputs(search, max_drop=0.5)
    write_report(inputs, tmp_path)
    assert len(calls) == 1 and inputs.selection.search_trial == inputs.selection.recipe == "t_00002"
    assert figures.header_info(inputs).recipe == "t_00002"
    assert [p.trial_id for p in figures.scatter_info(inputs).points if p.is_selected] == ["t_00002"]


# --- the page, report.md, the folder and the CLI ------------------------------------------------------------

def test_report_folder_writes_a_self_contained_page_and_markdown(tmp_path, search, confirmed, confirmed_dir):
    folder = experiment_folder(tmp_path, search, confirmed_dir)
    inputs = load_report_inputs(folder)
    assert inputs.kind == "experiment" and inputs.max_drop == 1.0 and inputs.title.endswith("lenet-digits")
    html_path, md_path = write_report(inputs)
    page, text = html_path.read_text(encoding="utf-8"), md_path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and not re.search(r"<script[^>]*\bsrc=", page)
    assert not re.search(r"<link[^>]*href=[\"']https?://", page) and "* plotly.js v" in page
    for anchor in ("speed-vs-accuracy", "confirmed", "ablation", "search", "curves", "timeline", "failures"):
        assert f'<section id="{anchor}">' in page and "](#" not in text
    # scatter, ablation, hypervolume, parallel coordinates, curves, timeline; no importance from 5 trials
    assert page.count('class="plotly-graph-div"') == 6 and "10 are needed before a share means anything" in text
    assert "Use grad_freeze p=0.5" in text and "| O1 | ~20% faster at equal accuracy |" in text
    assert "amp O2: 0.52x" in text and "trial failed in MindSpore: boom" in text
    assert f"- reproduce: `{inputs.run_info['command']}`" in text


def test_empty_or_missing_folders_are_one_line_errors(tmp_path):
    with pytest.raises(DataError, match="no results.parquet or confirm.parquet here; run an experiment"):
        load_report_inputs(tmp_path)
    with pytest.raises(DataError, match="no such results folder"):
        load_report_inputs(tmp_path / "nope")
    with pytest.raises(ConfigError, match="max_drop: -1"):
        report_inputs(build_results_table(sample_records(), ray_version=RAY_VERSION), max_drop=-1.0)


def test_a_table_written_before_the_new_columns_still_reports(tmp_path, search):
    """A table of schema version 1: no label, start times, curves, rung, version or graph_cached."""
    old = search.drop(columns=["label", "started_at", "curve_json", "rung", "schema_version", "graph_cached"])
    old.to_parquet(tmp_path / "results.parquet", index=False)
    inputs = load_report_inputs(tmp_path)
    assert list(inputs.search["label"][:2]) == ["O0", "O1-equivalent"] and inputs.search["started_at"].isna().all()
    html_path, _ = write_report(inputs)
    assert "Timeline" not in html_path.read_text()  # no start times, no timeline: nothing invented


def test_bench_folder_report_is_the_paired_runs(tmp_path, confirmed):
    inputs = report_inputs(confirmed=confirmed, kind="bench")
    scatter = figures.scatter_info(inputs)
    assert len(scatter.points) == 10 and scatter.pareto == ()  # O0's five runs are the one O0 point, at 1.0
    assert len(scatter.o0_runs) == 5 and all(p.x == 1.0 for p in scatter.o0_runs)
    html_path, md_path = write_report(inputs, tmp_path)
    assert "The search" not in md_path.read_text() and "grad_freeze p=0.5" in html_path.read_text()


@pytest.mark.slow
def test_report_in_a_real_browser_renders_every_figure_offline_without_console_errors(tmp_path, search, confirmed, confirmed_dir):
    """Read as a person would, on a laptop's screen (1366 x 768): every figure renders offline; the first screen
    holds the answer, the confirmed table and the snippet that applies it; no text of a figure overlaps another;
    no table runs off the page without a scroll bar."""
    from tests.helpers.browser import LAYOUT_JS, check_page, find_chromium

    if find_chromium() is None:
        if os.environ.get("BOOSTTUNE_REQUIRE_BROWSER"):
            pytest.fail("no chromium, and BOOSTTUNE_REQUIRE_BROWSER is set (.ci/run installs Debian's chromium)")
        pytest.skip("no chromium (Debian package chromium; .ci/run installs it)")
    folder = experiment_folder(tmp_path, search, confirmed_dir)
    html_path, _ = write_report(load_report_inputs(folder))
    shots = Path(os.environ.get("BOOSTTUNE_SCREENSHOTS", REPO / "reports" / "ci"))
    shot = shots / "report-first-screen.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    check = check_page(html_path, screenshot=shot, width=1366, height=768, evaluate=LAYOUT_JS)
    assert check.figures == html_path.read_text().count('class="plotly-graph-div"') >= 6
    assert check.rendered == check.figures, check.console_errors
    assert check.console_errors == () and check.network_requests == ()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    layout = check.evaluated
    for part in ("answer", "table", "snippet"):  # on the first screen, not below it
        assert layout[part] is not None and layout[part] <= layout["height"], (part, layout)
    assert layout["overlaps"] == [], layout["overlaps"]
    assert layout["unscrollable_wide_tables"] == 0 and layout["page_width"] <= layout["width"], layout
    print(f"\nscreenshot of the report's first screen at 1366x768: {shot}")


@pytest.mark.parametrize("argv, expected", [
    (["/venv/bin/boosttune", "bench", "b.yaml", "--seeds", "0,1"], "boosttune bench b.yaml --seeds 0,1"),
    (["/x/boosttune/cli/main.py", "report", "runs/a b"], "boosttune report 'runs/a b'"),
    (["experiments/resnet.py", "--epochs", "3"], "python experiments/resnet.py --epochs 3"),
])
def test_the_command_that_reproduces_a_run_is_recorded_as_typed(argv, expected):
    from boosttune.execution.provenance import command_line

    assert command_line(argv) == expected


@pytest.mark.parametrize("with_confirm", [False, True])
def test_the_report_reads_the_recipe_the_experiment_exported_and_makes_the_same_page(tmp_path, monkeypatch, search,
                                                                                     confirmed, with_confirm):
    """A run is judged once (:func:`boosttune.outputs.judged.judge`): the report draws that judgement and selects
    nothing again (with a confirm stage, the search's one-seed pick is shown beside the decision's answer)."""
    from boosttune.objective import ACCURACY
    from boosttune.outputs import export as export_module
    from boosttune.outputs import judged as judged_module
    from boosttune.outputs.judged import judge_run
    from boosttune.report import ReportInputs
    from boosttune.stats.margin import Margin

    confirmed = confirmed if with_confirm else None
    judged = judge_run("experiment", Margin(ACCURACY, 1.0), search=search, decision=confirmed,
                   experiment_path=str(tmp_path))

    def selected_again(*args, **kwargs):
        raise AssertionError("the report selected the recipe again")

    for module, name in ((judged_module, "select_best"), (judged_module, "selected_recipe"),
                         (export_module, "select_best")):
        monkeypatch.setattr(module, name, selected_again)
    handed = ReportInputs(judged, "LeNet <digits>")
    assert handed.selection.document is judged.best.document
    pages = write_report(handed, tmp_path / "handed")
    monkeypatch.undo()
    again = write_report(report_inputs(search, confirmed), tmp_path / "from-tables")
    assert [p.read_bytes() for p in pages] == [p.read_bytes() for p in again]


def test_the_trials_table_names_each_trial_by_what_it_runs_never_by_a_bare_id(search):
    from boosttune.report.render import build_sections

    section = next(s for s in build_sections(report_inputs(search)) if s.anchor == "search")
    trials = next(t for t in section.tables if t.headers[:2] == ("trial_id", "label"))
    assert trials.rows and all(row[1] and row[1] != row[0] for row in trials.rows), trials.rows
