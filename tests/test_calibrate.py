"""Speed calibration: which knobs are slow on this device, and what the search then leaves out."""

from __future__ import annotations

import math

import pytest

from boosttune.probe.calibrate import CALIBRATED, SLOW_BELOW, SpeedReport, fragment_of, slow_knobs


def _report(ratios, spread=0.05):
    return SpeedReport(device_target="CPU", cpu="test", created="now", measured_on="test", baseline_sps=1000.0,
                       ratios=ratios, baseline_spread=spread)


def test_knobs_clearly_slower_than_o0_are_slow_with_the_reason_and_the_way_out():
    report = _report({"amp.O2": 0.52, "boost.less_bn": 0.85, "boost.grad_freeze": 1.2, "boost.dim_reduce": None})
    assert report.slow() == {"amp.O2": "amp O2: 0.52x O0's throughput on this CPU, not searched; "
                                       "--search amp to force it"}
    assert "slow: not searched by default" in report.table()


def test_a_named_fragment_is_searched_even_when_slow():
    report = _report({"amp.O1": 0.4, "amp.O2": 0.5, "boost.dim_reduce": 0.3})
    assert set(slow_knobs(report)) == {"amp.O1", "amp.O2", "boost.dim_reduce"}
    assert set(slow_knobs(report, ["amp"])) == {"boost.dim_reduce"}
    assert slow_knobs(None) == {}


def test_a_busy_machine_leaves_nothing_out():
    report = _report({"amp.O2": 0.3}, spread=0.4)  # the two O0 runs 40% apart
    assert not report.trustworthy and report.slow() == {}
    assert "nothing is left out" in report.table()


def test_fragment_names_match_the_search_flag():
    from boosttune.config.experiment import FRAGMENT_NAMES

    assert {fragment_of(k) for k in CALIBRATED} <= set(FRAGMENT_NAMES)


@pytest.mark.slow
def test_calibration_measures_every_supported_knob_on_this_machine(probe_report):
    """Real MindSpore runs (cached per device after the first): a ratio to O0 for each supported knob."""
    from boosttune.probe.calibrate import run_calibration

    lines: list[str] = []
    report = run_calibration(probe_report, log=lines.append)
    expected = {k for k in CALIBRATED if probe_report.supports(k)}
    assert set(report.ratios) == expected
    measured = {k: r for k, r in report.ratios.items() if r is not None}
    assert measured and all(math.isfinite(r) and 0.05 < r < 20 for r in measured.values())
    assert report.baseline_sps and report.baseline_sps > 0
    assert set(report.slow()) <= {k for k, r in measured.items() if r < SLOW_BELOW}
    again = run_calibration(probe_report, log=lines.append)  # cached: not measured twice
    assert again.ratios == report.ratios and any("cached" in line for line in lines)


def test_the_gp_sampler_without_pytorch_is_one_line_before_anything_trains(monkeypatch):
    import importlib.util

    from boosttune.config.experiment import parse_experiment
    from boosttune.errors import ConfigError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(ConfigError, match=r"^sampler: 'gp' needs PyTorch"):
        parse_experiment({"sampler": "gp"})
    assert parse_experiment({"sampler": "tpe"}).sampler == "tpe"


def test_startup_trials_match_the_budget():
    from boosttune.tune import startup_trials

    assert startup_trials(8, 4) == 4  # the start points are the start-up
    assert startup_trials(8, 0) == 2 and startup_trials(30, 0) == 10
    assert startup_trials(8, 1) == 2


def test_the_gp_sampler_models_the_search_space_after_its_start_up():
    """Optuna's real GPSampler (PyTorch) on boosttune's conditional space, as the search builds it."""
    pytest.importorskip("torch")
    import optuna

    from boosttune.space import SpaceContext, recipe_from_params, suggest_recipe
    from boosttune.tune import make_sampler

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ctx = SpaceContext(total_steps=100, param_count=20, slow=frozenset({"amp.O1", "amp.O2", "amp.O3"}),
                       unsupported=frozenset({"boost.less_bn.gc_flag", "loss_scale.dynamic", "loss_scale.group"}))
    base = {"model": "lenet5", "optimizer": {"learning_rate": 0.05}}
    sampler = make_sampler("gp", seed=3, n_startup=3)
    assert isinstance(sampler, optuna.samplers.GPSampler)
    study = optuna.create_study(directions=["maximize", "maximize"], sampler=sampler)
    for _ in range(6):
        trial = study.ask()
        suggest_recipe(trial, ctx, base)
        recipe = recipe_from_params(trial.params, ctx, base)  # every proposal is a valid recipe
        assert recipe.amp_level == "O0"
        # Fast and accurate with a large learning rate: something the model can learn.
        lr = trial.params["optimizer.learning_rate"]
        study.tell(trial, [lr, 1.0 - abs(lr - 0.1)])
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 6
