"""The search space: fragment contract, conditionality, combination rules, probe pruning, replay."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import FixedTrial

from boosttune.config.recipe import parse_recipe
from boosttune.space import (
    equivalence_key,
    fragments,
    preset_params,
    recipe_from_params,
    suggest_recipe,
)
from tests.helpers.space import BASE, CPU_UNSUPPORTED
from tests.helpers.space import cpu_context as _ctx

optuna.logging.set_verbosity(optuna.logging.WARNING)


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


# --- device-aware pruning and the informed start ---------------------------------------------------------

SLOW = frozenset({"amp.O1", "amp.O2", "amp.O3", "boost.dim_reduce", "boost.less_bn"})


def test_the_search_never_draws_a_knob_measured_slow_here():
    ctx = _ctx(slow=SLOW)
    for params, document in _sample(ctx, n=80):
        assert "amp_level" not in params and "boost.dim_reduce" not in params and "boost.less_bn" not in params
        recipe = recipe_from_params(params, ctx, BASE)
        assert recipe.amp_level == "O0"
        assert not (set(recipe.boost.effective().active) & {"dim_reduce", "less_bn"})
    drawn = {p.get("boost.grad_freeze") for p, _ in _sample(ctx, n=40)}
    assert drawn == {False, True}  # what is not slow is still searched


def test_only_the_slow_amp_levels_are_left_out():
    ctx = _ctx(slow=frozenset({"amp.O2"}))
    levels = {p["amp_level"] for p, _ in _sample(ctx, n=60)}
    assert levels == {"O0", "O1", "O3"}


def test_a_replayed_recipe_keeps_its_slow_knobs():
    ctx = _ctx(slow=SLOW)
    o1 = preset_params("O1", ctx, BASE)
    recipe = recipe_from_params(o1, ctx, BASE)
    assert recipe.boost.effective().applied["less_bn"] and recipe.boost.effective().applied["grad_freeze"]
    assert recipe == recipe_from_params(o1, _ctx(), BASE)  # the same recipe as without pruning
    forced_amp = {**preset_params("O0", ctx, BASE), "amp_level": "O2"}
    assert recipe_from_params(forced_amp, ctx, BASE).amp_level == "O2"


def test_searchable_tells_start_points_the_search_could_draw():
    from boosttune.space import searchable

    ctx = _ctx(slow=SLOW)
    assert searchable(preset_params("O0", ctx, BASE), ctx, BASE)
    assert not searchable(preset_params("O1", ctx, BASE), ctx, BASE)  # LessBN is slow here
    assert searchable(preset_params("O1", _ctx(), BASE), _ctx(), BASE)
    assert not searchable({"boost.grad_freeze": False}, ctx, BASE)  # params the space asks for are missing


def test_informed_points_are_valid_distinct_and_named():
    from boosttune.space import informed_points

    ctx = _ctx()
    points = informed_points(ctx, BASE)
    labels = [label for label, _ in points]
    # the middle freeze_p, then the higher (less lossy), then the lower
    assert labels == ["grad_freeze p=0.5 on 2 groups", "grad_freeze p=0.7 on 2 groups", "grad_freeze p=0.3 on 2 groups",
                      "less_bn",
                      "O1-equivalent p=0.3", "O1-equivalent p=0.5"]
    keys = {equivalence_key(recipe_from_params(params, ctx, BASE)) for _, params in points}
    assert len(keys) == len(points)
    freeze = recipe_from_params(points[0][1], ctx, BASE).boost.to_boost_config_dict()["grad_freeze"]
    assert freeze["freeze_p"] == 0.5 and freeze["total_steps"] == ctx.total_steps
    no_freeze = informed_points(_ctx(unsupported=frozenset(CPU_UNSUPPORTED | {"boost.grad_freeze"})), BASE)
    assert [label for label, _ in no_freeze] == ["less_bn"]


def test_the_calibration_on_the_teams_network_ranks_the_informed_points():
    """LessBN measured faster than GradientFreeze on this network: LessBN alone first; points over O1 stay last,
    and an algorithm the calibration did not time ranks as fast as O0."""
    from boosttune.space import informed_points

    ctx = _ctx()
    labels = [label for label, _ in informed_points(ctx, BASE, {"boost.less_bn": 1.3, "boost.grad_freeze": 1.1})]
    assert labels == ["less_bn", "grad_freeze p=0.5 on 2 groups", "grad_freeze p=0.7 on 2 groups",
                      "grad_freeze p=0.3 on 2 groups", "O1-equivalent p=0.3", "O1-equivalent p=0.5"]
    slower = [label for label, _ in informed_points(ctx, BASE, {"boost.grad_freeze": 0.9, "amp.O2": 2.0})]
    assert slower[0] == "less_bn" and slower[1].startswith("grad_freeze")  # GradientFreeze below O0 here
    assert [label for label, _ in informed_points(ctx, BASE, {})] == [label for label, _ in informed_points(ctx, BASE)]


def test_accelerator_only_knobs_are_drawn_where_the_device_supports_them():
    """On a device whose probe found everything supported (a GPU or Ascend node), the space reaches every knob
    the CPU lacks: dynamic and group loss scale with their window and factor, gc_flag, THOR, and DimReduce
    across ranks; every drawn recipe is valid and replays."""
    gpu = _ctx(unsupported=frozenset({"boost.adasum"}), device_target="GPU")
    drawn = _sample(gpu, n=150, seed=11)
    params = [p for p, _ in drawn]
    kinds = {p.get("loss_scale.kind") for p in params}
    assert {"dynamic", "group"} <= kinds
    assert any("loss_scale.scale_window" in p and "loss_scale.scale_factor" in p for p in params)
    assert any(p.get("less_bn.gc_flag") is True for p in params)
    thor = [(p, d) for p, d in drawn if d["optimizer"].get("name") == "thor"]
    assert thor, "THOR never offered"
    for p, document in thor:  # MindSpore runs THOR with boost O0 and no loss scale only
        assert document["boost_level"] == "O0" and document["loss_scale"]["kind"] == "none"
    for p, document in drawn:
        assert recipe_from_params(p, gpu, BASE).to_dict() == parse_recipe(document).to_dict()
    o1 = recipe_from_params(preset_params("O1", gpu, BASE), gpu, BASE)
    assert o1.boost.effective().settings["less_bn"]["gc_flag"] is True and o1.optimizer.name == "momentum"
    two_gpus = [p for p, _ in _sample(_ctx(unsupported=frozenset(), world_size=2, device_target="GPU"), n=40, seed=12)]
    assert any(p.get("boost.dim_reduce") for p in two_gpus)  # only one CPU rank runs it; GPU ranks can


def test_the_cpu_probe_excludes_the_accelerator_only_knobs_with_mindspore_reasons(probe_report):
    """The real CPU probe of this machine: each accelerator-only knob is unsupported with MindSpore's own reason,
    and the space built from it never draws one."""
    reasons = {c.knob: c.reason for c in probe_report.unsupported()}
    for knob in ("loss_scale.dynamic", "loss_scale.group", "boost.less_bn.gc_flag", "optimizer.thor"):
        assert knob in reasons and reasons[knob], knob
    assert "CPU" in reasons["loss_scale.dynamic"] and "Centralization" in reasons["boost.less_bn.gc_flag"]
    ctx = _ctx(unsupported=frozenset(reasons))
    for params, document in _sample(ctx, n=80, seed=13):
        assert params.get("loss_scale.kind") in (None, "none", "fixed") and not params.get("less_bn.gc_flag")
        assert document["optimizer"].get("name", "momentum") != "thor"
