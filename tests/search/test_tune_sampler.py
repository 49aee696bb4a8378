"""The search's sampler: how many start-up trials a budget gets, and Optuna's GPSampler (PyTorch) on boosttune's
conditional space; without PyTorch, ``--sampler gp`` is refused in one line before anything trains."""

from __future__ import annotations

import pytest


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
    from boosttune.search.tune import startup_trials

    assert startup_trials(8, 4) == 4  # the start points are the start-up
    assert startup_trials(8, 0) == 2 and startup_trials(30, 0) == 10
    assert startup_trials(8, 1) == 2


def test_the_gp_sampler_models_the_search_space_after_its_start_up():
    """Optuna's real GPSampler (PyTorch) on boosttune's conditional space, as the search builds it."""
    import optuna

    from boosttune.search.tune import make_sampler
    from boosttune.space import SpaceContext, recipe_from_params, suggest_recipe

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
