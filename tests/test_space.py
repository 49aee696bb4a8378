"""The search space: fragment contract, conditionality, combination rules, probe pruning, replay."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import FixedTrial

from boosttune.config.recipe import parse_recipe
from boosttune.space import (
    SpaceContext,
    equivalence_key,
    fragments,
    preset_params,
    recipe_from_params,
    suggest_recipe,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)

BASE = {"model": "lenet5", "epochs": 1, "optimizer": {"learning_rate": 0.05}}
CPU_UNSUPPORTED = {"boost.less_bn.gc_flag", "loss_scale.dynamic", "loss_scale.group", "boost.adasum",
                   "optimizer.lamb", "optimizer.thor", "loss_scale.fixed_drop_overflow"}


def _ctx(**kw):
    defaults = dict(total_steps=120, param_count=10, unsupported=frozenset(CPU_UNSUPPORTED))
    return SpaceContext(**{**defaults, **kw})


def _sample(ctx, n=60, seed=0, sampler=None):
    study = optuna.create_study(directions=["maximize", "maximize"],
                                sampler=sampler or optuna.samplers.RandomSampler(seed=seed))
    out = []
    for _ in range(n):
        trial = study.ask()
        document = suggest_recipe(trial, ctx, BASE)
        out.append((trial.params, document))
        study.tell(trial, [0.0, 0.0])
    return out


def test_registry_discovers_every_fragment():
    names = [f.name for f in fragments()]
    assert names == ["dim_reduce", "less_bn", "grad_freeze", "grad_accumulation", "adasum", "loss_scale", "amp",
                     "optimizer"]
    assert len({f.order for f in fragments()}) == len(names)


@pytest.mark.parametrize("fragment", fragments(), ids=lambda f: f.name)
def test_fragment_contract(fragment):
    """Alone, every fragment yields valid recipes that replay exactly from their params."""
    ctx = _ctx(enabled=frozenset({fragment.name}))
    seen_params = set()
    for params, document in _sample(ctx, n=25):
        recipe = parse_recipe(document)  # valid: no ConfigError
        assert recipe_from_params(params, ctx, BASE) == recipe
        assert all(isinstance(k, str) for k in params)
        seen_params |= set(params)
    assert all(name.split(".")[0] in (fragment.name, "boost", "amp_level") or name.startswith(fragment.name)
               for name in seen_params), seen_params


def test_whole_space_is_valid_and_replays():
    ctx = _ctx()
    for params, document in _sample(ctx, n=80):
        recipe = parse_recipe(document)
        assert recipe_from_params(params, ctx, BASE).to_dict() == recipe.to_dict()


def test_knobs_are_asked_only_when_their_algorithm_is_on():
    for params, _ in _sample(_ctx(), n=80, seed=1):
        for algorithm in ("dim_reduce", "less_bn", "grad_freeze", "grad_accumulation"):
            if not params.get(f"boost.{algorithm}"):
                assert not any(k.startswith(f"{algorithm}.") for k in params), (algorithm, params)
        if params.get("boost.dim_reduce"):
            assert "boost.less_bn" not in params and "boost.grad_freeze" not in params
        if params.get("loss_scale.kind") != "fixed":
            assert "loss_scale.log2_scale" not in params


def test_combination_rules_hold():
    for params, document in _sample(_ctx(), n=100, seed=2):
        effective = parse_recipe(document).boost.effective()
        assert not (effective.applied["grad_freeze"] and effective.applied["grad_accumulation"])
        if effective.applied["grad_freeze"]:
            assert effective.settings["grad_freeze"]["total_steps"] == 120  # tied to the real step count
        if effective.applied["dim_reduce"]:
            assert document["loss_scale"]["kind"] == "none"
        groups = effective.settings["common"].get("gradient_split_groups")
        if groups:
            assert 1 <= groups[0] < 10


def test_unsupported_knobs_are_never_suggested():
    values = [params for params, _ in _sample(_ctx(), n=100, seed=3)]
    assert all(p.get("less_bn.gc_flag") in (None, False) for p in values)
    assert all(p.get("loss_scale.kind") in (None, "none", "fixed") for p in values)  # None: not asked
    assert all("boost.adasum" not in p for p in values)
    no_freeze = _ctx(unsupported=frozenset(CPU_UNSUPPORTED | {"boost.grad_freeze", "amp.O3"}))
    values = [params for params, _ in _sample(no_freeze, n=60, seed=4)]
    assert all("boost.grad_freeze" not in p for p in values)
    assert all(p["amp_level"] != "O3" for p in values)


def test_world_size_prunes_dim_reduce_and_enables_adasum():
    two = [p for p, _ in _sample(_ctx(world_size=2), n=40, seed=5)]
    assert all("boost.dim_reduce" not in p for p in two)
    many = [p for p, _ in _sample(_ctx(world_size=16, unsupported=frozenset()), n=40, seed=6)]
    assert any(p.get("boost.adasum") for p in many)


def test_same_seed_gives_the_same_sequence():
    for make in (lambda: optuna.samplers.TPESampler(seed=7), lambda: optuna.samplers.NSGAIISampler(seed=7)):
        first = [p for p, _ in _sample(_ctx(), n=15, sampler=make())]
        second = [p for p, _ in _sample(_ctx(), n=15, sampler=make())]
        assert first == second


def test_presets_replay_to_mindspore_presets():
    ctx = _ctx()
    o0 = recipe_from_params(preset_params("O0", ctx, BASE), ctx, BASE)
    assert o0.boost_level == "O0" and o0.boost_config_dict == {}
    assert equivalence_key(o0) == equivalence_key(parse_recipe(BASE))
    o1 = recipe_from_params(preset_params("O1-equivalent", ctx, BASE), ctx, BASE)
    effective = o1.boost.effective()
    assert effective.active == ("less_bn", "grad_freeze")
    assert effective.settings["less_bn"]["gc_flag"] is False  # Centralization has no CPU kernel
    assert effective.settings["grad_freeze"]["freeze_p"] == 0.7
    assert "gradient_split_groups" not in effective.settings["common"]  # MindSpore's default split


def test_equivalent_recipes_share_a_key():
    ctx = _ctx()
    # grad_accumulation switched on with nothing else differs from ... itself only; an all-off
    # boost dict under O1 trains exactly like O0.
    off = parse_recipe({**BASE, "boost_level": "O1", "boost_config_dict": {"boost": {"mode": "disable_all"}}})
    assert equivalence_key(off) == equivalence_key(parse_recipe(BASE))
    explicit = parse_recipe({**BASE, "boost_level": "O1", "boost_config_dict": {"less_bn": {"gc_flag": False}}})
    canonical = parse_recipe({**BASE, "boost_level": "O1",
                              "boost_config_dict": explicit.boost.to_boost_config_dict()})
    assert equivalence_key(explicit) == equivalence_key(canonical)
    a = recipe_from_params(preset_params("O1-equivalent", ctx, BASE), ctx, BASE)
    assert equivalence_key(a) != equivalence_key(parse_recipe(BASE))


def test_fixed_trial_replay_rejects_missing_params():
    with pytest.raises(ValueError):
        suggest_recipe(FixedTrial({"boost.dim_reduce": False}), _ctx(), BASE)


def test_space_pickles_for_ray():
    import pickle

    from boosttune.space import define_by_run

    space = pickle.loads(pickle.dumps(define_by_run(_ctx(), BASE)))
    trial = optuna.create_study().ask()
    space(trial)
    assert "boost.less_bn" in trial.params or "boost.dim_reduce" in trial.params
