"""The search end to end on a real local Ray cluster with real Optuna and MindSpore."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pytest

import optuna
import ray

from boosttune.config.experiment import parse_experiment
from boosttune.errors import ConfigError
from tests.helpers import REPO
from tests.helpers.dashboard import check_dashboard
from tests.helpers.leftovers import DriverGrowth

pytestmark = [pytest.mark.slow, pytest.mark.ray]

BASE = {"model": "lenet5", "epochs": 1, "batch_size": 32, "steps_per_epoch": 6, "data": {"name": "digits"},
        "optimizer": {"learning_rate": 0.05}}
# Bounds on the driver's growth over the runs after its second (imports and caches have settled by then). Over 50
# trials benchmarks/soak.py measured +20 MB and +0 open files, the files moving by up to 14 from run to run.
DRIVER_GROWTH_MB, DRIVER_GROWTH_FDS = 100, 30


@pytest.fixture(scope="module")
def fresh_ray():
    """One local Ray for the module, started as the first search starts it (connect_ray): the searches after it
    join it, as a second search in the same Python process would (a Ray start costs about 6 s here)."""
    if ray.is_initialized():
        ray.shutdown()
    yield
    ray.shutdown()


def _records(output: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in (output / "trials").glob("*.json")}


def test_search_end_to_end(tmp_path, fresh_ray, capsys, monkeypatch):
    """``boosttune tune FILE --set ...`` as a user runs it: probe, baseline, search, confirm, export, report."""
    import boosttune.experiment
    from boosttune.cli.main import main
    from boosttune.config.boost import parse_boost_config
    from boosttune.tables.results import load_results

    results, real = [], boosttune.experiment.run_experiment

    def run_experiment(*args, **kwargs):  # what the command got back, to check against what is on disk
        results.append(real(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(boosttune.experiment, "run_experiment", run_experiment)
    # lenet_smoke.yaml: LeNet-5 on digits, 4 trials; its confirm stage is checked on tests/e2e/test_faults.py's search.
    command = ["tune", str(REPO / "experiments" / "configs" / "lenet_smoke.yaml"), "--set", "name=e2e",
               "--set", "seed=1", "--set", "base.steps_per_epoch=6", "--set", "confirm_seeds=0",
               "--output", str(tmp_path / "run")]
    output = tmp_path / "run"
    with DriverGrowth(output / "trials", output / "confirm") as growth:
        assert main(command) == 0
    said = capsys.readouterr()
    lines = said.out.splitlines()
    (result,) = results
    assert "best boost_config_dict:" in said.out and f"best: {result.selection}" in said.out
    # the report's first screen in the terminal: the same answer sentence
    assert result.answer[0].startswith(("Use ", "Keep O0", "Candidate ")) and f"answer: {result.answer[0]}" in said.out
    # Never overwrites a finished run: the same command again is refused before anything starts.
    assert main(command) == 2 and "pass --resume" in capsys.readouterr().err
    # The driver does not grow with the runs it drives (benchmarks/soak.py measures it over 50 trials).
    # Two records can land between two samples (CI, 2026-11-29: samples at records 1, 3, 4, 5), so the span is
    # from the first sample at or after record 2 to the last, which must have seen all five records.
    rss_mb, fds, first, last = growth.since(2)
    assert last >= 5 and last - first >= 2 and rss_mb < DRIVER_GROWTH_MB and fds < DRIVER_GROWTH_FDS, growth.samples
    records = _records(tmp_path / "run")
    assert records["baseline"]["status"] == "completed" and records["baseline"]["preset"] == "O0"
    # The run decided its ranks' CPU threads from this machine's cores (not the one CPU Ray reserves), said so, and
    # every rank ran with them.
    threads = re.search(r"^threads: each rank runs (\d+) CPU thread\(s\) .*: its node's (\d+) core", said.out, re.M)
    assert threads and threads[1] == threads[2], said.out[:3000]
    assert {r["metrics"].get("cpu_threads") for r in records.values() if r["status"] == "completed"} == {int(threads[1])}
    tune_records = sorted((r for k, r in records.items() if k != "baseline"), key=lambda r: r["started"])
    assert len(tune_records) == 5  # the 4 trials, and O0 closing the search
    # The O0 point of the search trains again (the search re-measures its speed reference), first of the start
    # points, and once more as the search's last run, unseen by Optuna: each searched speed-up is a ratio to O0 at
    # the trial's start, read off the line between the two (the machine's drift over the search taken out).
    again = [r for r in tune_records if r["preset"] == "O0"]
    assert len(again) == 2 and all(r["status"] == "completed" and not r.get("duplicate_of") for r in again)
    assert again[1] is tune_records[-1] and again[1]["params"].get("closing_reference_run") is True
    assert not again[0]["params"].get("closing_reference_run")
    o0_runs = [records["baseline"]["metrics"]["throughput_sps"], *(r["metrics"]["throughput_sps"] for r in again)]
    assert (f"search: speed reference: O0 timed in the search before and after its trials, {o0_runs[1]:.0f} and "
            f"{o0_runs[2]:.0f} samples/s") in said.out
    assert f"(the baseline stage's O0 read {o0_runs[0]:.0f} samples/s)" in said.out
    assert any(line.startswith("search [") and "O0 (" in line and "trained again" in line
               and "so far: O0" not in line for line in lines)  # never the fastest recipe so far
    assert any(line.startswith("search [5/5] O0") and "at the search's end" in line for line in lines)
    assert any(r["preset"] == "O1-equivalent" and r["status"] == "completed" for r in tune_records)
    table = load_results(result.results_path)
    assert set(table["trial_id"]) == set(records)
    baseline = table[table["trial_id"] == "baseline"].iloc[0]
    assert baseline["is_baseline"] and baseline["speedup_vs_baseline"] == pytest.approx(o0_runs[0] / o0_runs[1])
    o1 = table[table["preset"] == "O1-equivalent"].iloc[0]
    (t1, t2), at = (r["started"] for r in again), o1["started_at"]
    expected = math.exp(math.log(o0_runs[1]) + (at - t1) / (t2 - t1) * math.log(o0_runs[2] / o0_runs[1]))
    assert t1 < at < t2 and o1["speedup_vs_baseline"] == pytest.approx(o1["throughput_sps"] / expected)
    # Exported recipe: exactly a boost_config_dict boosttune (and so MindSpore) accepts as it is.
    best = json.loads(Path(result.best_config_path).read_text())
    recipe = json.loads(Path(result.best_recipe_path).read_text())
    parse_boost_config(best, recipe["boost_level"])
    assert recipe["selection"]["reason"] == result.selection and result.summary_path is None  # no confirm stage
    assert result.report_path.is_file() and "<html" in result.report_path.read_text()[:2000].lower()
    _check_report_and_progress(tmp_path / "run", result, lines)
    study = optuna.load_study(study_name="e2e", storage=f"sqlite:///{tmp_path / 'run' / 'optuna.db'}")
    # Start points the searched space cannot draw (a preset with a knob measured slow here) train but are not
    # told to the sampler.
    start = next(line for line in lines if line.startswith("search: starts from"))
    outside = start.split("(")[1].split(" outside")[0].split(", ") if "outside the searched space" in start else []
    assert len(study.trials) == 4 - len(outside) and study.directions[0].name == "MAXIMIZE"
    # Every trial Tune told carries how far it fell below O0 (boosttune.search.lossy): the constraint Optuna's
    # samplers rank by.
    assert all("lossy" in t.constraints for t in study.trials if t.state.name == "COMPLETE")
    _check_dashboards(tmp_path / "run", "e2e", len(study.trials), lines)


def _check_dashboards(output: Path, study_name: str, n_trials: int, lines: list[str]) -> None:
    """TensorBoard event files hold every trained trial's per-epoch metrics; the Optuna dashboard serves the study;
    the probe ran in a Ray task on a worker, not in the driver."""
    assert any(line.startswith("probe: measured on node ") for line in lines)
    events = sorted((output / "tune" / study_name).glob("*/events.out.tfevents.*"))
    trained = [r for r in _records(output).values() if r["role"] == "search" and r["status"] == "completed"]
    assert len(events) >= len(trained) >= 1
    tags = _event_tags(events[0])
    assert {"ray/tune/objective_value", "ray/tune/throughput_sps", "ray/tune/speedup_vs_baseline"} <= tags, sorted(tags)
    check_dashboard(output, study_name, n_trials)


def _event_tags(path: Path) -> set[str]:
    """Scalar tags in a TensorBoard event file (TFRecord framing: length, crc, Event proto, crc)."""
    import struct

    from tensorboardX.proto import event_pb2

    data, tags, at = path.read_bytes(), set(), 0
    while at < len(data):
        (length,) = struct.unpack("<Q", data[at:at + 8])
        event = event_pb2.Event.FromString(data[at + 12:at + 12 + length])
        tags.update(value.tag for value in event.summary.value)
        at += 12 + length + 4
    return tags


def _check_report_and_progress(output: Path, result, lines: list[str]) -> None:
    """One line per finished trial in the user's terms; report.md and run_info.json beside the page."""
    progress = [line for line in lines if line.startswith("search [")]
    assert len(progress) == 5 and progress[-1].startswith("search [5/5] O0")  # 4 trials, O0 closing the search
    assert any("x O0, val_acc" in line for line in progress)
    assert any(line.startswith("search [") and "O1-equivalent" in line for line in progress)
    info = json.loads((output / "run_info.json").read_text())
    assert info["command"] and info["versions"]["mindspore"] and "device" in info
    text = (output / "report.md").read_text()
    assert text.startswith("# boosttune experiment: e2e") and "## Speed vs accuracy" in text
    assert "| O1 | ~20% faster at equal accuracy |" in text and "## Timeline" in text
    # The probe's exclusions reach the report with MindSpore's reason.
    assert "not supported on CPU" in text and "| loss_scale.dynamic | Only `loss_scale_manager=None`" in text
    assert info["probed_on"] and info["unsupported"]["boost.less_bn.gc_flag"]


def test_failures_are_recorded_and_abort_the_search_past_the_allowed_share(tmp_path, fresh_ray):
    from boosttune.experiment import run_experiment

    # Three batches per epoch cannot give DimReduce's PCA its n_components (>= 4) stage-1 checkpoints.
    base = {**BASE, "steps_per_epoch": 3, "warmup_steps": 1}
    config = parse_experiment({"name": "fail", "base": base, "num_trials": 8, "seed": 0, "sampler": "random",
                               "search": ["dim_reduce"], "max_failure_rate": 0.2, "confirm_seeds": 2,
                               "prune_slow": False})  # the search is named: the calibration would change nothing
    result = run_experiment(config, tmp_path / "run", log=lambda m: None)
    failed = [r for r in _records(tmp_path / "run").values() if r["status"] == "failed"]
    assert failed and all("n_components" in r["reason"] for r in failed)
    assert result.aborted_reason and "max_failure_rate" in result.aborted_reason
    assert result.trials < 8 + 1
    assert result.summary_path is None and not (tmp_path / "run" / "confirm").exists()  # an aborted search: no confirm


def test_bad_experiment_input_is_one_line():
    with pytest.raises(ConfigError, match=r"^objective: 'fastest' is invalid"):
        parse_experiment({"objective": "fastest"})
    with pytest.raises(ConfigError, match=r"^base\.batch_size"):
        parse_experiment({"base": {"batch_size": 0}})
    with pytest.raises(ConfigError, match="base recipe is the O0 baseline"):
        parse_experiment({"base": {"boost_level": "O1"}})
    with pytest.raises(ConfigError, match="search"):
        parse_experiment({"search": ["grad_freez"]})
    with pytest.raises(ConfigError, match=r"^confirm_seeds: 1 is invalid"):
        parse_experiment({"confirm_seeds": 1})


def test_time_to_accuracy_objective_with_early_stopping(tmp_path, fresh_ray):
    from boosttune.experiment import run_experiment

    config = parse_experiment({"name": "tta", "base": {**BASE, "epochs": 2, "steps_per_epoch": 8},
                               "num_trials": 3, "objective": "time_to_accuracy", "max_drop": 50.0,
                               "search": ["grad_freeze", "optimizer"], "confirm_seeds": 0, "prune_slow": False})
    result = run_experiment(config, tmp_path / "run", log=lambda m: None)
    records = [r for r in _records(tmp_path / "run").values() if r["trial_id"] != "baseline"]
    baseline_acc = _records(tmp_path / "run")["baseline"]["metrics"]["objective_value"]
    target = baseline_acc - 0.5  # 50 points below the baseline
    trained = [r for r in records if r["status"] not in ("duplicate", "failed")]
    assert trained
    for record in trained:
        assert record["recipe"]["target"] == pytest.approx(target)
        if record["status"] == "target_reached":
            assert record["metrics"]["time_to_target_s"] > 0
    assert any(r["status"] == "target_reached" for r in trained)  # half the baseline's accuracy is reachable
    assert result.results_path.is_file()


@pytest.mark.filterwarnings("ignore:Fixed parameter optimizer.learning_rate")  # 1e-4: below the searched range
def test_multi_objective_scheduler_stops_a_trial_beaten_on_both_objectives(tmp_path, fresh_ray):
    """Pareto mode, real Ray Tune + Train + MindSpore: a slower, less accurate recipe stops at epoch 1."""
    from boosttune.tables.results import build_results_table
    from boosttune.stats.select import pareto_front
    from boosttune.execution.ray import connect_ray
    from boosttune.search.scheduler import promote
    from boosttune.search.setup import SearchSetup
    from boosttune.search.tune import run_search
    from boosttune.space import SpaceContext, equivalence_key, preset_params, recipe_from_params

    # A small ResNet (BatchNorm): there fp16 on a CPU runs at about 0.4x (LeNet barely notices it).
    base = {**BASE, "model": "resnet8", "data": {"name": "digits", "image_size": 8}, "epochs": 3,
            "steps_per_epoch": 20}
    config = parse_experiment({"name": "moasha", "base": base, "num_trials": 2, "seed": 0, "sampler": "random",
                               "confirm_seeds": 0})
    ctx = SpaceContext(total_steps=60, param_count=10, base_learning_rate=0.05)
    good = preset_params("O0", ctx, base)
    # fp16 on a CPU (about 0.4x here) and a learning rate too small to learn anything in 20 steps.
    bad = {**good, "amp_level": "O2", "optimizer.learning_rate": 1e-4, "optimizer.lr_schedule": "constant"}
    output = tmp_path / "run"
    output.mkdir()
    connect_ray(lambda m: None)
    o0_key = equivalence_key(recipe_from_params(good, ctx, base))
    setup = SearchSetup(base=base, ctx=ctx, env={}, workers=1, output=str(output), presets={o0_key: "O0"},
                        baseline_objective=0.5, max_drop=1.0, target=None, max_concurrent=1, lossy_drop=20.0,
                        baseline_throughput_sps=1000.0)
    lines: list[str] = []
    outcome = run_search(config, output, setup=setup, points=[good, bad], resume=False, log=lines.append)
    records = {r.params.get("amp_level"): r for r in outcome.records}
    first, second = records["O0"], records["O2"]
    assert first.status == "completed" and len(first.curve) == 3
    # The scheduler compares (throughput, the objective in points): accuracy x 100, margin 5 points at epoch 1.
    at_rung = [(e["throughput_sps"], 100 * e["objective_value"]) for e in (first.curve[0], second.curve[0])]
    # The rule, checked on what was measured: it stops exactly when the first trial beat it on both.
    expected_stop = not promote(at_rung[1], [at_rung[0]], config.reduction_factor,
                                margin=(0.0, setup.early_stop_margin))
    assert (second.status == "stopped") == expected_stop
    if expected_stop:
        assert second.rung == 1 and len(second.curve) == 1 and "multi-objective scheduler" in second.reason
        # When it ran, for the report's timeline: Tune's own clock, before the record was written.
        assert first.started < second.started < time.time() and second.metrics["wall_s"] > 0
        table = build_results_table([r.to_dict() for r in outcome.records], ray_version=ray.__version__)
        assert table.set_index("trial_id").loc[second.run_id, "rung"] == 1
    else:
        assert second.status == "completed" and len(second.curve) == 3
    # Tune told Optuna both trials as they ended, the stopped one with its rung's figures (not as pruned or failed),
    # each with how far it fell below O0 as the 'lossy' constraint (boosttune.search.lossy).
    study = optuna.load_study(study_name="moasha", storage=f"sqlite:///{output / 'optuna.db'}")
    told = {t.params.get("amp_level"): t for t in study.trials}
    assert {t.state.name for t in told.values()} == {"COMPLETE"}
    for trial in told.values():
        assert trial.constraints["lossy"] == pytest.approx(setup.lossy.violation({"objective_value": trial.values[1]}))
    if expected_stop:
        assert told["O2"].values[1] == pytest.approx(second.curve[0]["objective_value"])
    assert any("multi-objective successive halving" in line for line in lines)
    # Only trials that ran to the end reach the front (and so the confirm stage).
    table = build_results_table([r.to_dict() for r in outcome.records], ray_version=ray.__version__)
    front = set(pareto_front(table)["trial_id"])
    assert first.run_id in front and (second.run_id not in front if expected_stop else True)


def test_the_speed_floor_stops_a_trial_the_confirm_stage_would_never_race_at_its_last_rung(tmp_path, fresh_ray):
    """Real Ray Tune + Train + MindSpore on a warm worker, as an experiment trains: O0 first (the baseline stage's
    speed reference, planted at twice its measured speed), then a search of two trials that run fp16 on a CPU
    (about 0.4x on a small ResNet here, alone): below the handoff's bar with the reference noise, each stops at the
    last rung (epoch 1 of 2) for its speed and says so, the second trains after the first was stopped on the same
    Tune actor, and the handoff leaves both out."""
    from functools import partial

    from boosttune.execution.ray import connect_ray
    from boosttune.execution.ray_train import train_run
    from boosttune.execution.warm import WarmPool
    from boosttune.execution.runs import RunSpec
    from boosttune.objective import ACCURACY
    from boosttune.search.lossy import CONSTRAINT, UNSETTLED
    from boosttune.search.setup import SearchSetup
    from boosttune.search.speed import SpeedFloor, stopped_for_speed
    from boosttune.search.tune import run_search
    from boosttune.space import SpaceContext, equivalence_key, preset_params, recipe_from_params
    from boosttune.stages.rounds import pick_candidates
    from boosttune.stats.handoff import MIN_P_ACCEPTABLE, slowest_handed_on
    from boosttune.stats.margin import Margin
    from boosttune.stats.race import REFERENCE_NOISE
    from boosttune.tables.results import build_results_table

    base = {**BASE, "model": "resnet8", "data": {"name": "digits", "image_size": 8}, "epochs": 2,
            "steps_per_epoch": 20}
    config = parse_experiment({"name": "floor", "base": base, "num_trials": 2, "seed": 0, "sampler": "random"})
    ctx = SpaceContext(total_steps=40, param_count=10, base_learning_rate=0.05)
    o0 = preset_params("O0", ctx, base)
    output = tmp_path / "run"
    output.mkdir()
    connect_ray(lambda m: None)
    o0_key = equivalence_key(recipe_from_params(o0, ctx, base))
    slowest = partial(slowest_handed_on, REFERENCE_NOISE.speed_sd)
    lines: list[str] = []
    with WarmPool(slots=1, env={}, storage_path=str(tmp_path / "train")) as pool:
        baseline = train_run(RunSpec(run_id="baseline", role="baseline", label="O0", preset="O0", key=o0_key,
                                     recipe=recipe_from_params(o0, ctx, base).to_dict()), output=output,
                             pool=pool.client())
        # the planted effect: the search's speed reference is twice O0's measured speed, so each fp16 trial is
        # under half of it on top of fp16's own slowdown on a CPU (about 0.4x alone, 0.9x once under a loaded CI
        # run, where the bar is 0.79x: 2026-12-07)
        reference = 2 * baseline.metrics["throughput_sps"]
        setup = SearchSetup(base=base, ctx=ctx, env={}, workers=1, output=str(output), presets={o0_key: "O0"},
                            baseline_objective=baseline.metrics["objective_value"], max_drop=1.0, target=None,
                            max_concurrent=1, baseline_throughput_sps=reference, pool=pool.client(),
                            lossy_drop=20.0, speed_floor=SpeedFloor(slowest, MIN_P_ACCEPTABLE))
        outcome = run_search(config, output, setup=setup, points=[{**o0, "amp_level": lv} for lv in ("O2", "O3")],
                             resume=False, log=lines.append)
    assert len(outcome.records) == 2, lines
    for record in outcome.records:
        speedup = record.metrics["throughput_sps"] / reference
        assert speedup < slowest([reference], 0.1)  # the planted effect: far below the bar, whatever one epoch's noise
        assert record.status == "stopped" and record.rung == 1 and len(record.curve) == 1, record.reason
        assert stopped_for_speed(record.reason) and f"{speedup:.2f}x O0 at epoch 1" in record.reason
    assert any("is too slow for the confirm stage to race" in line for line in lines)  # the start line
    assert sum("stopped at epoch 1/2, too slow to be raced (the speed floor)" in line for line in lines) == 2
    study = optuna.load_study(study_name="floor", storage=f"sqlite:///{output / 'optuna.db'}")
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 2  # told with their rung's figures, as any stopped
    # with their 'lossy' constraint, marked so that neither convicts an algorithm (boosttune.search.lossy)
    assert all(CONSTRAINT in t.constraints and t.user_attrs.get(UNSETTLED) for t in study.trials)
    table = build_results_table([baseline.to_dict(), *(r.to_dict() for r in outcome.records)],
                                ray_version=ray.__version__)
    assert [c.name for c in pick_candidates(table, margin=Margin(ACCURACY, 1.0), min_p=0.0)] == ["O0"]


def test_a_start_point_outside_the_searched_space_trains_but_is_not_told_to_the_sampler(tmp_path, fresh_ray):
    """LessBN measured slow: the search never draws it, yet the O1-equivalent preset still trains as it is (and is not
    trained again when the search resumes past a saved state it cannot read). On warm workers, as an experiment's
    search trains (the multi-objective test above takes the other path: a fresh Ray Train run per trial)."""
    from boosttune.execution.ray import connect_ray
    from boosttune.execution.warm import WarmPool
    from boosttune.search.resume import state_reads_back
    from boosttune.search.setup import SearchSetup
    from boosttune.search.tune import run_search
    from boosttune.space import SpaceContext, equivalence_key, preset_params, recipe_from_params, searchable

    base = {**BASE, "steps_per_epoch": 8}
    config = parse_experiment({"name": "outside", "base": base, "num_trials": 2, "seed": 0, "confirm_seeds": 0})
    ctx = SpaceContext(total_steps=8, param_count=10, base_learning_rate=0.05, slow=frozenset({"boost.less_bn"}),
                       unsupported=frozenset({"boost.less_bn.gc_flag"}))
    o0, o1 = preset_params("O0", ctx, base), preset_params("O1", ctx, base)
    assert searchable(o0, ctx, base) and not searchable(o1, ctx, base)
    keys = {equivalence_key(recipe_from_params(p, ctx, base)): name for p, name in ((o0, "O0"), (o1, "O1-equivalent"))}
    output = tmp_path / "run"
    output.mkdir()
    connect_ray(lambda m: None)
    with WarmPool(slots=1, env={}, storage_path=str(tmp_path / "train")) as pool:
        setup = SearchSetup(base=base, ctx=ctx, env={}, workers=1, output=str(output), presets=keys,
                            baseline_objective=0.5, max_drop=1.0, target=None, max_concurrent=1,
                            baseline_throughput_sps=1000.0, outside=[o1], pool=pool.client())
        outcome = run_search(config, output, setup=setup, points=[o0], resume=False, log=lambda m: None)
        records = {r.label: r for r in outcome.records}
        assert set(records) == {"O0", "O1-equivalent"}
        o1_run = records["O1-equivalent"]
        assert o1_run.status == "completed" and o1_run.observed_boost["less_bn"] and o1_run.observed_boost["grad_freeze"]
        study = optuna.load_study(study_name="outside", storage=f"sqlite:///{output / 'optuna.db'}")
        assert [t.params.get("boost.grad_freeze") for t in study.trials] == [False]  # only the O0 point was told

        # Tune's saved state as a driver killed while Tune copied it to the storage leaves it (empty): resumed with one
        # trial more, the search sets the state aside and trains only what its records do not hold (boosttune.search.resume).
        assert state_reads_back(str(output / "tune" / "outside"))  # the state Tune saved, as it saved it, reads back
        for state in (output / "tune" / "outside").glob("*-state-*"):
            state.write_bytes(b"")
        more = parse_experiment({"name": "outside", "base": base, "num_trials": 3, "seed": 0, "confirm_seeds": 0})
        lines: list[str] = []
        resumed = run_search(more, output, setup=setup, points=[o0], resume=True, log=lines.append)
        assert any("does not read back whole" in line and "The 1 trial(s)" in line for line in lines), lines
        assert (output / "tune" / "outside" / "tuner.pkl").is_file()  # the new search's, the old one set aside
        runs = {r.run_id: r for r in resumed.records}
        assert len(runs) == 3 and all(runs[r.run_id].started == r.started for r in outcome.records)  # none trained again
        study = optuna.load_study(study_name="outside", storage=f"sqlite:///{output / 'optuna.db'}")
        # the O0 point as told before and one drawn trial (it may fail: DimReduce with too few steps): no start point again
        assert len(study.trials) == 2 and study.trials[0].params.get("boost.grad_freeze") is False
        (drawn,) = [r for r in resumed.records if r.run_id not in {o.run_id for o in outcome.records}]
        assert drawn.role == "search" and drawn.label not in ("O0", "O1-equivalent")
        assert study.trials[1].state.name == ("FAIL" if drawn.status == "failed" else "COMPLETE")
        assert study.trials[1].user_attrs["tune_trial_id"] == drawn.run_id  # the record it was drawn for

        # A state saved before the drawn trial was added (it was added and ended within Tune's saving period): its
        # record is newer than the state. Resumed, the search does not let Tune draw it again: nothing trains.
        (state,) = sorted((output / "tune" / "outside").glob("experiment_state-*.json"))[-1:]
        saved = json.loads(state.read_text())
        saved["trial_data"] = [t for t in saved["trial_data"] if json.loads(t[0])["trial_id"] != drawn.run_id]
        state.write_text(json.dumps(saved))
        lines.clear()
        again = run_search(more, output, setup=setup, points=[o0], resume=True, log=lines.append)
        assert any(f"is older than 1 trial record(s) ({drawn.run_id}" in line and "The 0 trial(s)" in line
                   for line in lines), lines
        assert {r.run_id: r.started for r in again.records} == {r.run_id: r.started for r in resumed.records}
