"""Speed calibration: which knobs are slow on this device, and what the search then leaves out."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from boosttune.probe.calibrate import (
    AMBIGUOUS_BAND,
    CALIBRATED,
    SLOW_BELOW,
    SpeedReport,
    calibration_base,
    fragment_of,
    judge,
    slow_knobs,
)
from boosttune.trial.graphs import GraphCache


def _report(ratios, unclear=()):
    return SpeedReport(device_target="CPU", cpu="test", created="now", measured_on="test", baseline_sps=1000.0,
                       ratios=ratios, unclear=list(unclear))


def test_knobs_clearly_slower_than_o0_are_slow_with_the_reason_and_the_way_out():
    report = _report({"amp.O2": 0.52, "boost.less_bn": 0.85, "boost.grad_freeze": 1.2, "boost.dim_reduce": None})
    assert report.slow() == {"amp.O2": "amp O2: 0.52x O0's throughput on this CPU (timed by the calibration on test), "
                                       "not searched; --search amp to force it"}
    assert "slow: not searched by default" in report.table()


def test_a_knob_is_judged_against_its_two_o0_neighbours():
    assert judge(500.0, 1000.0, 1000.0) == (0.5, True)
    ratio, clear = judge(500.0, 800.0, 1200.0)  # the machine sped up by 40% across the knob's run: no verdict
    assert ratio == 0.5 and not clear
    ratio, clear = judge(820.0, 1000.0, 1000.0)  # at the threshold: within the noise
    assert abs(ratio - 0.82) < 1e-12 and not clear and abs(ratio - SLOW_BELOW) <= AMBIGUOUS_BAND
    assert judge(1200.0, 1000.0, 1050.0)[1]


def test_the_calibration_runs_on_the_experiments_own_builder_and_is_keyed_by_its_source(tmp_path, monkeypatch):
    module = tmp_path / "team_model.py"
    module.write_text("def build(ctx):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    base = {"model": {"entry": "team_model:build", "kwargs": {"hidden": 8}}, "batch_size": 16,
            "optimizer": {"learning_rate": 0.1}}
    recipe, measured_on, fingerprint = calibration_base(base)
    assert recipe["model"] == base["model"] and recipe["batch_size"] == 16 and recipe["steps_per_epoch"] > 3
    assert measured_on.startswith("team_model:build") and "batch 16" in measured_on
    module.write_text("def build(ctx):\n    return None  # a changed network is measured again\n")
    assert calibration_base(base)[2] != fingerprint
    assert calibration_base({**base, "model": {**base["model"], "kwargs": {"hidden": 16}}})[2] != fingerprint
    builtin = calibration_base({"model": "lenet5", "data": {"name": "digits"}})
    assert builtin == calibration_base(None) and builtin[0]["model"] == "resnet8"  # the built-in stand-in


def test_a_named_fragment_is_searched_even_when_slow():
    report = _report({"amp.O1": 0.4, "amp.O2": 0.5, "boost.dim_reduce": 0.3})
    assert set(slow_knobs(report)) == {"amp.O1", "amp.O2", "boost.dim_reduce"}
    assert set(slow_knobs(report, ["amp"])) == {"boost.dim_reduce"}
    assert slow_knobs(None) == {}


def test_a_busy_machine_leaves_nothing_out():
    report = _report({"amp.O2": 0.3, "amp.O3": 0.4}, unclear=["amp.O2", "amp.O3"])  # neighbours disagreed twice
    assert not report.trustworthy and report.slow() == {}
    assert "unclear (a busy machine?): searched" in report.table()


def test_fragment_names_match_the_search_flag():
    from boosttune.algorithms import fragment_names

    assert {fragment_of(k) for k in CALIBRATED} <= set(fragment_names())


@pytest.mark.slow
def test_calibration_measures_every_supported_knob_on_this_machine(probe_report, tmp_path, monkeypatch):
    """Real MindSpore runs (cached per device after the first): a ratio to O0 for each supported knob. Each run is
    one epoch of the calibration's steps here, not the steady second a user's calibration times over more epochs."""
    from boosttune.probe import calibrate
    from boosttune.probe.calibrate import run_calibration
    from boosttune.probe.report import cache_dir

    monkeypatch.setattr(calibrate, "MIN_STEADY_S", 0.2)
    lines: list[str] = []
    report = run_calibration(probe_report, log=lines.append)
    expected = {k for k in CALIBRATED if probe_report.supports(k)}
    assert set(report.ratios) == expected
    measured = {k: r for k, r in report.ratios.items() if r is not None}
    assert measured and all(math.isfinite(r) and 0.05 < r < 20 for r in measured.values())
    assert report.baseline_sps and report.baseline_sps > 0
    assert set(report.slow()) <= {k for k, r in measured.items() if r < SLOW_BELOW}
    assert set(report.slow()).isdisjoint(report.unclear)  # an unclear knob stays in the search
    # Cached: only an unclear verdict is timed again. On a copy of the session's cache (the trainings beside this
    # test read it), one knob is planted as unclear; the second call records what it times and times it as 1.0
    # (timing it for real again doubled this test beside the Ray tests).
    shutil.copytree(cache_dir(), tmp_path / "cache" / "probe")
    monkeypatch.setenv("BOOSTTUNE_CACHE_DIR", str(tmp_path / "cache"))
    (cached,) = [p for p in cache_dir().glob("speed-*.json") if json.loads(p.read_text())["fingerprint"]
                 == report.fingerprint]
    planted = next(k for k in CALIBRATED if k in report.ratios)
    cached.write_text(json.dumps({**json.loads(cached.read_text()), "unclear": [planted]}))
    timed: list[list[str]] = []

    def time_knobs(knobs, setup):
        timed.append(list(knobs))
        return calibrate._Timings(ratios=dict.fromkeys(knobs, 1.0), baseline=[report.baseline_sps])

    monkeypatch.setattr(calibrate, "_time_knobs", time_knobs)
    again = run_calibration(probe_report, log=lines.append)
    assert any(line.startswith("calibration: cached result") for line in lines) and timed == [[planted]]
    assert again.ratios == {**report.ratios, planted: 1.0} and not again.unclear


@pytest.mark.slow
def test_the_calibration_times_knobs_on_a_team_network_outside_the_repository(probe_report, tmp_path, monkeypatch,
                                                                                 custom_example):
    """The example project's LSTM on its MindRecord data (copied outside the repository, not installed), two knobs
    of the calibration (the full set is the test above, on the built-in stand-in): real runs, keyed by the
    builder, cached per fingerprint."""
    from tests.helpers.example_project import copy_example

    from boosttune.probe import calibrate

    project = copy_example(tmp_path, custom_example)
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.setenv("BOOSTTUNE_CACHE_DIR", str(tmp_path / "cache"))
    knobs = ("amp.O2", "boost.grad_freeze")
    monkeypatch.setattr(calibrate, "CALIBRATED", {k: calibrate.CALIBRATED[k] for k in knobs})
    base = {"model": {"entry": "digits_lstm:build", "kwargs": {"hidden": 32, "data_dir": str(project / "data")}},
            "batch_size": 32, "optimizer": {"learning_rate": 0.1}}
    kept = []  # the calibration's compiled Models: O0 trains between the knobs without compiling again
    monkeypatch.setattr(calibrate, "GraphCache", lambda size: kept.append(GraphCache(size)) or kept[-1])
    lines: list[str] = []
    report = calibrate.run_calibration(probe_report, base=base, log=lines.append)
    assert len(kept) == 1 and kept[0].hits >= len(knobs)  # every O0 run after the first
    assert report.measured_on.startswith("digits_lstm:build") and set(report.ratios) == set(knobs)
    assert any("timing 2 knobs on CPU for digits_lstm:build" in line for line in lines)
    assert all(r is None or 0.05 < r < 20 for r in report.ratios.values()) and report.baseline_sps > 0
    cached = list((tmp_path / "cache" / "probe").glob("speed-*.json"))
    assert len(cached) == 1


def test_a_diverging_o0_run_stops_the_calibration_with_the_rate_to_lower(probe_report, tmp_path, monkeypatch):
    """The issue's project: its O0 run's loss went non-finite at step 3, and the calibration said "too few steady
    steps" and went on. Now it stops there, before the baseline, naming the step, the rate and a lower one."""
    from boosttune.errors import TrialError
    from boosttune.probe import calibrate

    from tests.helpers.team_project import make_project

    project = make_project(tmp_path)
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.chdir(project)  # where its relative data path resolves, as in a Ray task of the shipped folder
    monkeypatch.setenv("BOOSTTUNE_CACHE_DIR", str(tmp_path / "cache"))
    base = {"model": {"entry": "team_model:build"}, "batch_size": 32,
            "optimizer": {"name": "momentum", "learning_rate": 1e8}}
    with pytest.raises(TrialError) as error:
        calibrate.run_calibration(probe_report, base=base, log=lambda m: None)
    message = str(error.value)
    assert message.startswith("calibration: the O0 run of the base recipe diverged: non-finite loss"), message
    assert "at step " in message and "--set base.optimizer.learning_rate=1e+07" in message
    assert not list((tmp_path / "cache").rglob("speed-*.json"))  # nothing cached from a diverged run
