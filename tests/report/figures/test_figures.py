"""Each report figure's data, one test (or a few) per module of boosttune.report.figures, on small tables whose
numbers are worked out by hand; nothing is drawn (the page itself: tests/report/test_report.py)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from boosttune.stats.decisions import decision_words
from boosttune.tables.results import build_results_table
from boosttune.objective import Objective
from boosttune.outputs.judged import judge_run
from boosttune.report import ReportInputs, figures, recipes
from boosttune.stats.margin import Margin
from tests.helpers.paired_runs import GF, RECIPE
from tests.helpers.records import RAY_VERSION, make_record

MAE = Objective("mae", higher_is_better=False, fraction=False)


def _inputs(search, max_drop=1.0, **extra) -> ReportInputs:
    return ReportInputs(judge_run("experiment", Margin.on(search, max_drop, 1.0), search=search), "t", **extra)


def _table(*records, starts=None):
    for index, record in enumerate(records):
        record["label"] = record["preset"] or record["trial_id"]
        if starts is not None:
            record["started"] = starts[index]
    return build_results_table(list(records), ray_version=RAY_VERSION)


def _mae(trial_id, mae, sps, **kwargs):
    record = make_record(trial_id, sps=sps, acc=mae, **kwargs)
    record["metrics"].update(MAE.flat())
    return record


@pytest.fixture
def small():
    """Baseline 500 sps at 0.800; t1 1.2x at -1 pt; t2 1.1x at +0.5 pt; t3 failed; started t2, O0, t1, t3."""
    grad_freeze = {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": True}}
    return _table(make_record("O0", preset="O0", sps=500.0, acc=0.800),
                  make_record("t1", level="O1", boost=grad_freeze, sps=600.0, acc=0.790,
                              params={"boost.grad_freeze": True, "grad_freeze.freeze_p": 0.3}),
                  make_record("t2", sps=550.0, acc=0.805, lr=0.1, params={"optimizer.learning_rate": 0.1}),
                  make_record("t3", "failed", reason="out of memory", params={"optimizer.learning_rate": 0.2}),
                  starts=[10.0, 20.0, 0.0, 40.0])


# --- scatter ---------------------------------------------------------------------------------------------------

def test_scatter_front_of_a_lower_is_better_objective_is_drawn_as_gains_upwards():
    table = _table(_mae("t0", 0.40, 500.0, preset="O0"), _mae("t1", 0.38, 550.0, lr=0.06),
                   _mae("t2", 0.41, 650.0, lr=0.07), _mae("t3", 0.60, 700.0, lr=0.08), _mae("t4", 0.45, 520.0, lr=0.09))
    scatter = figures.scatter_info(_inputs(table, max_drop=0.02))
    on_front = {p.trial_id for p in scatter.points if p.is_pareto}
    assert on_front == {"t1", "t2", "t3"}  # t0 and t4 dominated by t1 (faster and a lower MAE)
    assert [x for x, _ in scatter.pareto] == pytest.approx([1.1, 1.3, 1.4])
    assert [y for _, y in scatter.pareto] == pytest.approx([0.02, -0.01, -0.2])
    assert scatter.max_drop_y == -0.02 and scatter.max_drop == 0.02 and scatter.objective == MAE
    assert [p.trial_id for p in scatter.points if p.is_selected] == ["t2"]  # fastest within 0.02 of O0


def test_scatter_without_a_baseline_takes_raw_values_in_the_objectives_direction():
    table = _table(_mae("t0", 0.40, 500.0, preset="O0"), _mae("t1", 0.38, 550.0, lr=0.06),
                   _mae("t2", 0.30, 450.0, lr=0.07), _mae("t3", 0.50, 520.0, lr=0.08))
    table.loc[table["trial_id"] == "t0", "status"] = "failed"
    scatter = figures.scatter_info(_inputs(table))
    assert scatter.baseline_y is None and scatter.y_label == MAE.label
    assert {p.trial_id: (p.x, p.y) for p in scatter.points} == {"t1": (550.0, 0.38), "t2": (450.0, 0.30),
                                                                "t3": (520.0, 0.50)}
    assert {p.trial_id for p in scatter.points if p.is_pareto} == {"t1", "t2"}  # t3: slower and worse than t1
    assert scatter.pareto == ((450.0, 0.30), (550.0, 0.38))


# --- hypervolume -----------------------------------------------------------------------------------------------

def test_hypervolume_after_each_trial_in_start_order(small):
    hv = figures.hypervolume_info(_inputs(small))
    assert hv.trial_ids == ("t2", "t1", "t3") and hv.reference == (0.8, -5.0)  # the search's trials: O0 apart
    # t2 alone: 0.3 x 5.5 (it dominates O0, where the search starts); t1 adds 0.1 x 4; t3 failed.
    assert hv.hypervolume == pytest.approx((1.65, 2.05, 2.05))


# --- curves ----------------------------------------------------------------------------------------------------

def test_curves_are_the_recorded_points_of_the_baseline_presets_and_the_selected_trial(small):
    small.loc[small["trial_id"] == "O0", "curve_json"] = json.dumps(
        [{"epoch": 1, "train_s": 4.0, "objective_value": 0.7}, {"epoch": 2, "train_s": 8.5, "objective_value": 0.8},
         {"epoch": 3, "train_s": None, "objective_value": 0.81}])  # an evaluation without a time: left out
    small.loc[small["trial_id"] == "t2", "curve_json"] = json.dumps([{"epoch": 1, "train_s": 3.0,
                                                                      "objective_value": 0.805}])
    curves = figures.curves_info(_inputs(small, max_drop=0.5))
    by_name = {s.name: s for s in curves.series}
    assert set(by_name) == {"O0", "t2"}  # t2 is selected (faster, better); t1 loses 1 pt: beyond 0.5
    assert by_name["O0"].train_s == (4.0, 8.5) and by_name["O0"].objective_value == (0.7, 0.8)
    assert by_name["O0"].role == "baseline" and by_name["t2"].role == "candidate"
    assert curves.y_label == "val_acc"


def test_scatter_draws_every_trial_stopped_and_duplicate_ones_marked_far_losses_on_the_bottom_edge():
    from boosttune.report.figures.scatter import y_range

    freeze = {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": True}, "grad_freeze": {"freeze_p": 0.9}}
    table = _table(make_record("O0", preset="O0", sps=500.0, acc=0.800),
                   make_record("t1", sps=600.0, acc=0.795, lr=0.07, params={"optimizer.learning_rate": 0.07}),
                   make_record("t2", "stopped", level="O1", boost=freeze, sps=650.0, acc=0.20,
                               reason="stopped after epoch 1", params={"grad_freeze.freeze_p": 0.9}),
                   make_record("t3", "stopped", sps=550.0, acc=0.795, lr=0.08, reason="stopped after epoch 2",
                               params={"optimizer.learning_rate": 0.08}))
    scatter = figures.scatter_info(_inputs(table))
    by_id = {p.trial_id: p for p in scatter.points}
    assert set(by_id) == {"t1", "t2", "t3"}  # every trial with figures, stopped ones too; O0 drawn once, apart
    assert [p.trial_id for p in scatter.o0_runs] == ["O0"]
    assert by_id["t2"].status == by_id["t3"].status == "stopped" and not by_id["t3"].is_pareto
    assert by_id["t2"].label == "grad_freeze p=0.9" and by_id["t2"].label != "t2"  # a name, not an id
    low, _ = y_range(scatter)
    assert by_id["t2"].y == pytest.approx(-60.0) and by_id["t2"].y < low <= -1.0 < by_id["t3"].y
    fig = figures.draw_scatter(scatter)
    drawn = {t.name: t for t in fig.data}
    edge = next(t for name, t in drawn.items() if name.startswith("below the scale"))
    # the speed axis is set by the trials a user could choose (O0, t1 trained to the end): t2 sits on both edges
    assert tuple(fig.layout.xaxis.range) == pytest.approx(scatter.x_range) and scatter.x_range[1] < 1.3
    assert list(edge.x) == [pytest.approx(scatter.x_range[1])] and list(edge.y) == [pytest.approx(low)]
    assert "off the scale: -60.00 pt" in edge.hovertext[0] and "1.300x per job" in edge.hovertext[0]
    stopped = drawn["stopped early (figures at the epoch it stopped)"]
    assert list(stopped.x) == [pytest.approx(1.1)] and fig.layout.yaxis.range[0] == pytest.approx(low)


# --- importance ------------------------------------------------------------------------------------------------

def test_importance_ranks_the_knob_that_moves_each_objective_first():
    records = [make_record("O0", preset="O0", sps=500.0, acc=0.800)]
    for i in range(12):  # the learning rate sets the speed; the switch sets the accuracy
        records.append(make_record(f"x{i}", sps=500.0 + 50 * i, acc=0.80 - 0.02 * (i % 2), lr=0.01 * (i + 1),
                                   params={"optimizer.learning_rate": 0.01 * (i + 1), "boost.grad_freeze": i % 2 == 1}))
    importance = figures.importance_info(_inputs(_table(*records)))
    speed, accuracy = (dict(scores) for _, scores in importance.objectives)
    assert max(speed, key=speed.get) == "optimizer.learning_rate"
    assert max(accuracy, key=accuracy.get) == "boost.grad_freeze" and accuracy["boost.grad_freeze"] > 0.9
    assert importance.trials == 12 and importance.note == "from 12 finished trials: indicative only"


def test_importance_gives_no_share_to_a_knob_the_device_cannot_act_on_and_needs_enough_trials():
    records = [make_record("O0", preset="O0", sps=500.0, acc=0.800)]
    for i in range(12):  # gc_flag varies, but the device has no kernel for it: its draws change nothing
        records.append(make_record(f"x{i}", sps=500.0 + 50 * i, acc=0.80 - 0.02 * (i % 2), lr=0.01 * (i + 1),
                                   params={"optimizer.learning_rate": 0.01 * (i + 1), "less_bn.gc_flag": i % 3 == 0}))
    table = _table(*records)
    unsupported = {"run_info": {"unsupported": {"boost.less_bn.gc_flag": "Unsupported op [Centralization] on CPU"}}}
    inputs = _inputs(table, **unsupported)
    importance = figures.importance_info(inputs)
    assert all("less_bn.gc_flag" not in dict(scores) for _, scores in importance.objectives)
    assert importance.left_out == (("less_bn.gc_flag", "Unsupported op [Centralization] on CPU"),)
    assert "less_bn.gc_flag" not in {axis.label for axis in figures.parallel_info(inputs).dimensions}
    assert "less_bn.gc_flag" in {axis.label for axis in figures.parallel_info(_inputs(table)).dimensions}
    few = figures.importance_info(_inputs(_table(*records[:6])))
    assert isinstance(few, str) and "5 search trial(s) trained to the end" in few and "10 are needed" in few


# --- parallel coordinates --------------------------------------------------------------------------------------

def test_parallel_dimensions_are_the_knobs_as_values_or_codes_then_the_objectives(small):
    parallel = figures.parallel_info(_inputs(small))
    dims = {axis.label: (axis.values, axis.names) for axis in parallel.dimensions}
    assert parallel.trial_ids == ("t1", "t2")  # the failed t3 has no figures; O0 draws no knob, so no line
    assert dims["boost.grad_freeze"] == ((1.0, 0.0), ("(unset)", "True"))
    # a number drawn by one trial only never varied: no axis (and no range invented for it)
    assert "optimizer.learning_rate" not in dims and "grad_freeze.freeze_p" not in dims
    assert dims["speed-up per job (x)"][0] == pytest.approx((1.2, 1.1)) and parallel.color == dims["speed-up per job (x)"][0]
    assert dims["accuracy (pt)"][0] == pytest.approx((-1.0, 0.5))


def test_an_integer_knob_is_ticked_at_its_values_not_at_fractions():
    from boosttune.report.figures.parallel import _dimension

    axis = _dimension("grad_freeze.param_groups", pd.Series([2, 10, 4, None]))
    assert axis.names == ("2", "4", "10") and axis.ticks == (2.0, 4.0, 10.0)
    assert _dimension("grad_freeze.freeze_p", pd.Series([0.3, 0.5])).names is None


# --- timeline and failures -------------------------------------------------------------------------------------

def test_timeline_bars_start_at_the_first_run_and_last_their_wall_time(small):
    timeline = figures.timeline_info(_inputs(small))
    assert [(b.run_id, b.start_s, b.duration_s) for b in timeline.bars] == [
        ("t2", 0.0, 20.0), ("O0", 10.0, 20.0), ("t1", 20.0, 20.0), ("t3", 40.0, 0.0)]  # a failed run: no wall time
    assert timeline.total_s == 40.0 and timeline.bars[3].reason == "out of memory"
    assert figures.timeline_info(_inputs(small.assign(started_at=float("nan")))) is None


def test_failures_leave_out_duplicates(small):
    small.loc[small["trial_id"] == "t2", "status"] = "duplicate"
    small.loc[small["trial_id"] == "t2", "throughput_sps"] = float("nan")
    # named by what the recipe is (its id is for looking it up), not by the id alone
    assert figures.failures_info(_inputs(small)) == (figures.FailedRun("t3", "failed", "out of memory", "no boost"),)


# --- ablation, header, claims ----------------------------------------------------------------------------------

def test_ablation_takes_the_median_of_the_searchs_trials_of_one_method():
    grad_freeze = {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": True}}
    table = _table(make_record("O0", preset="O0", sps=500.0, acc=0.800),
                   *[make_record(f"g{i}", level="O1", boost=grad_freeze, sps=sps, acc=acc)
                     for i, (sps, acc) in enumerate([(600.0, 0.79), (550.0, 0.80), (700.0, 0.75)])],
                   make_record("lr", sps=650.0, acc=0.805, lr=0.1))  # another optimizer: not grad_freeze alone
    ablation = figures.ablation_info(_inputs(table))
    (row,) = ablation.alone
    assert row.name == row.method == "grad_freeze" and row.runs == 3 and row.source.endswith("(median)")
    assert (row.speedup, row.delta_pt) == (pytest.approx(1.2), pytest.approx(-1.0))
    assert math.isnan(row.speedup_low) and ablation.best is not None and ablation.best.name == "lr"
    assert not row.in_best and ablation.best_methods == ()


def test_header_of_a_search_names_the_candidate_and_its_recipe(small):
    header = figures.header_info(_inputs(small, max_drop=0.5))
    assert header.recipe == "t2" and header.verdict == "search_only"
    assert header.answer.startswith("Candidate t2: 1.10x at +0.50 accuracy points on one seed")
    assert dict(header.run_details)["recommended recipe"] == "boost_level O0: momentum lr 0.1 constant"
    assert decision_words("faster_too_lossy", MAE) == "faster, but loses more val_mae than the margin allows"


def test_claims_without_paired_seeds_say_what_the_search_measured_or_why_not():
    table = _table(make_record("O0", preset="O0", sps=500.0, acc=0.800),
                   make_record("O1-equivalent", preset="O1-equivalent", level="O1",
                               boost={"less_bn": {"gc_flag": False}}, sps=650.0, acc=0.790))
    inputs = _inputs(table, run_info={"left_out": {"O2-equivalent": "amp O2 does not run on this CPU"}})
    o1, o2 = figures.claims_info(inputs)
    assert o1.measured == "1.30x per step, -1.00 pt on one seed" and o1.verdict.startswith("not judged: one seed")
    assert (o2.measured, o2.verdict) == ("not run", "not measured: amp O2 does not run on this CPU")


def test_recipe_helpers_read_the_methods_and_describe_them():
    row = pd.Series({"recipe_json": json.dumps(GF)})
    assert recipes.recipe_of(row) == GF and recipes.recipe_of(pd.Series({"recipe_json": "{"})) == {}
    assert recipes.methods_of(recipes.recipe_of(row)) == ("grad_freeze",)
    assert recipes.describe_recipe(RECIPE) == "boost_level O0: momentum lr 0.05"


def test_the_confirm_stage_is_counted_per_recipe_when_a_race_gave_each_its_own_seeds():
    from boosttune.report.figures.header import confirmed_count

    raced = pd.DataFrame({"recipe": ["O0", "a", "b"], "n_seeds": [5, 5, 1]})
    assert confirmed_count(raced, (1000, 1001, 1002, 1003, 1004)) == (
        "3 recipes on paired seeds [1000, 1001, 1002, 1003, 1004], from 1 to 5 seeds each (a race: each recipe's "
        "number is in the table)")
    fixed = pd.DataFrame({"recipe": ["O0", "a"], "n_seeds": [3, 3]})
    assert confirmed_count(fixed, (1, 2, 3)) == "2 recipes x 3 paired seeds [1, 2, 3]"


def test_a_knob_left_out_but_run_all_the_same_says_which_trial_ran_it():
    from boosttune.report.render import build_sections

    amp = make_record("t1", preset="O2-equivalent", level="O2", sps=450.0, acc=0.79)
    amp["recipe"]["amp_level"] = "O3"
    table = _table(make_record("O0", preset="O0", sps=500.0, acc=0.800), amp)
    inputs = _inputs(table, run_info={"left_out": {"amp.O3": "amp O3: 0.51x O0's throughput, not searched",
                                                 "amp.O2": "amp O2: 0.46x O0's throughput, not searched"}})
    search = next(s for s in build_sections(inputs) if s.anchor == "search")
    rows = dict(next(t for t in search.tables if t.headers[0] == "left out of the search").rows)
    assert rows["amp.O3"].endswith("not searched; run all the same by O2-equivalent")
    assert rows["amp.O2"] == "amp O2: 0.46x O0's throughput, not searched"  # nothing ran it


def test_confirmed_names_stand_apart_in_a_column_inside_the_axis():
    """Six recipes within a tenth of a point of each other: each name keeps its own lines' height from the next, in
    the order of the means, and none leaves the axis."""
    from boosttune.report.figures.scatter import _LINE_PX, _PLOT_PX, ConfirmedPoint, _label_lines, label_positions

    names = ["a", "b + c", "d", "e + f + g", "h", "i"]
    points = tuple(ConfirmedPoint(n, 1.1, 1.0, 1.2, -0.3 - 0.02 * k, -0.6, 0.0, 5, "won", False)
                   for k, n in enumerate(names))
    low, high = -1.5, 0.5
    placed = label_positions(points, low, high)
    unit = (high - low) / _PLOT_PX
    half = {n: (len(_label_lines(n)) * _LINE_PX + 4) * unit / 2 for n in names}
    ordered = sorted(names, key=lambda n: -placed[n])
    assert ordered == names  # the column keeps the means' order
    for upper, lower in zip(ordered, ordered[1:]):
        assert placed[upper] - placed[lower] >= half[upper] + half[lower] - 1e-12
    assert all(low <= placed[n] - half[n] and placed[n] + half[n] <= high + 1e-12 for n in names)
    # crowded at the bottom of the axis: the column is lifted to stay inside
    bottom = tuple(q._replace(delta_pt=-1.45) for q in points)
    lifted = label_positions(bottom, low, high)
    assert min(lifted[n] - half[n] for n in names) >= low - 1e-12
