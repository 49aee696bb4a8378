"""The boost_config_dict model: what it accepts, what it rejects, and that it agrees with MindSpore.

The last part builds real ``mindspore.boost.AutoBoost`` objects (no network, no training) and
checks that the canonical dict reproduces exactly what :meth:`BoostConfig.effective` promises.
"""

from __future__ import annotations

import copy
import json

import pytest

from boosttune.config.boost import (
    ALGORITHMS,
    BOOST_LEVEL_NAMES,
    PRESETS,
    BoostConfig,
    EffectiveBoost,
    parse_boost_config,
)
from boosttune.errors import ConfigError

MANUAL = "manual"


def _manual(**switches: bool) -> dict:
    return {"mode": MANUAL, **switches}


# --------------------------------------------------------------------------------------------
# Valid inputs: (level, boost_config_dict, applied algorithms, note substrings, absent substrings)
# --------------------------------------------------------------------------------------------

VALID = [
    pytest.param("O0", {}, set(), [], ["boost_level O0"], id="O0-empty"),
    pytest.param("O0", None, set(), [], ["boost_level O0"], id="O0-None"),
    pytest.param("O0", "", set(), [], ["boost_level O0"], id="O0-empty-string"),
    pytest.param(
        "O0",
        {"boost": _manual(less_bn=True, adasum=True), "less_bn": {"gc_flag": False}},
        set(),
        ["boost_level O0: Model skips boost entirely"],
        [],
        id="O0-manual-ignored",
    ),
    pytest.param("O0", {"boost": {"mode": "enable_all"}}, set(), ["boost_level O0"], ["dim_reduce"], id="O0-enable_all"),
    pytest.param(
        "O0",
        {"boost": _manual(grad_freeze=True, grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 4}},
        set(),
        ["boost_level O0"],
        ["cannot both be on"],
        id="O0-freeze+accumulation-never-built",
    ),
    pytest.param(
        "O0",
        {"grad_freeze": {"freeze_type": 0, "freeze_p": 1.0}},
        set(),
        ["boost_level O0"],
        [],
        id="O0-freeze_type0-p1-never-built",
    ),
    pytest.param(
        "O1",
        {},
        {"less_bn", "grad_freeze"},
        ["less_bn.gc_flag true needs the Centralization kernel"],
        ["adasum", "mode auto ignores"],
        id="O1-empty",
    ),
    pytest.param("O1", None, {"less_bn", "grad_freeze"}, [], [], id="O1-None"),
    pytest.param("O1", {"boost": {"mode": "auto"}}, {"less_bn", "grad_freeze"}, [], ["mode auto ignores"], id="O1-auto"),
    pytest.param(
        "O2",
        {},
        {"less_bn", "grad_freeze", "adasum"},
        ["adasum takes effect only with >= 16 ranks"],
        [],
        id="O2-empty",
    ),
    pytest.param(
        "O1",
        {"boost": {"mode": "auto", "less_bn": False, "dim_reduce": True}},
        {"less_bn", "grad_freeze"},
        ["mode auto ignores the switches in 'boost' (less_bn, dim_reduce); preset O1 applies"],
        ["dim_reduce replaces"],
        id="O1-auto-ignores-switches",
    ),
    pytest.param(
        "O2",
        {"boost": {"adasum": False}},
        {"less_bn", "grad_freeze", "adasum"},
        ["mode auto ignores the switches in 'boost' (adasum)", "set mode: manual"],
        [],
        id="O2-default-mode-is-auto",
    ),
    pytest.param("O1", {"boost": _manual(grad_freeze=False)}, {"less_bn"}, [], [], id="O1-manual-less_bn-only"),
    pytest.param(
        "O1", {"boost": _manual(adasum=True)}, {"less_bn", "grad_freeze", "adasum"}, ["adasum"], [], id="O1-manual-adasum"
    ),
    pytest.param(
        "O2",
        {"boost": _manual(less_bn=False, grad_freeze=False, adasum=False)},
        set(),
        [],
        ["Centralization", "adasum"],
        id="O2-manual-all-off",
    ),
    pytest.param(
        "O1",
        {"boost": _manual(less_bn=False, grad_freeze=True)},
        {"grad_freeze"},
        [],
        ["Centralization"],
        id="O1-manual-grad_freeze-only",
    ),
    pytest.param(
        "O1",
        {
            "boost": _manual(less_bn=False),
            "grad_freeze": {"param_groups": 4, "freeze_type": 0, "freeze_p": 0.5, "total_steps": 100},
        },
        {"grad_freeze"},
        [],
        ["freezes nothing"],
        id="O1-manual-custom-grad_freeze",
    ),
    pytest.param(
        "O1",
        {"boost": _manual(grad_freeze=False, grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 4}},
        {"less_bn", "grad_accumulation"},
        [],
        ["grad_accumulation_step is 1"],
        id="O1-manual-accumulation-4",
    ),
    pytest.param(
        "O1",
        {"boost": _manual(grad_freeze=False, grad_accumulation=True)},
        {"less_bn"},
        ["grad_accumulation is on but grad_accumulation_step is 1: MindSpore turns it off"],
        [],
        id="O1-manual-accumulation-default-step-1",
    ),
    pytest.param(
        "O1",
        {"boost": _manual(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 1}},
        {"less_bn", "grad_freeze"},
        ["grad_accumulation_step is 1"],
        ["cannot both be on"],
        id="O1-accumulation-step-1-with-grad_freeze-is-fine",
    ),
    pytest.param(
        "O1",
        {"boost": {"mode": "enable_all"}},
        {"dim_reduce", "loss_scale_group"},
        [
            "dim_reduce replaces the optimizer and skips less_bn, grad_freeze, adasum",
            "dim_reduce trains with SGD(learning_rate=1)",
            "dim_reduce needs weight_load_dir",
            "grad_accumulation_step is 1: MindSpore turns it off",
            "loss_scale_group needs a GroupLossScaleManager",
        ],
        ["cannot both be on", "Centralization"],
        id="O1-enable_all",
    ),
    pytest.param(
        "O2",
        {"boost": {"mode": "enable_all"}, "grad_accumulation": {"grad_accumulation_step": 4}},
        {"dim_reduce", "loss_scale_group", "grad_accumulation"},
        ["skips less_bn, grad_freeze, adasum"],
        ["grad_accumulation_step is 1"],
        id="O2-enable_all-accumulation-4",
    ),
    pytest.param(
        "O2",
        {"boost": {"mode": "enable_all", "dim_reduce": False}},
        {"dim_reduce", "loss_scale_group"},
        ["skips less_bn"],
        [],
        id="O2-enable_all-ignores-switches",
    ),
    pytest.param("O2", {"boost": {"mode": "disable_all"}}, set(), [], ["mode auto ignores"], id="O2-disable_all"),
    pytest.param(
        "O1",
        {"boost": {"mode": "disable_all", "less_bn": True}, "less_bn": {"fn_flag": False}},
        set(),
        ["section 'less_bn' is ignored because less_bn is not applied"],
        [],
        id="O1-disable_all-section-ignored",
    ),
    pytest.param(
        "O1",
        {"boost": _manual(dim_reduce=True)},
        {"dim_reduce"},
        ["dim_reduce replaces the optimizer and skips less_bn, grad_freeze", "dim_reduce needs weight_load_dir"],
        ["Centralization"],
        id="O1-manual-dim_reduce-skips-preset",
    ),
    pytest.param(
        "O2",
        {
            "boost": _manual(dim_reduce=True),
            "dim_reduce": {"rho": 0.6, "n_components": 8, "weight_load_dir": "runs/stage1_lr-0.1/ckpt"},
            "less_bn": {"gc_flag": False},
        },
        {"dim_reduce"},
        ["skips less_bn, grad_freeze, adasum", "section 'less_bn' is ignored"],
        ["needs weight_load_dir"],
        id="O2-manual-dim_reduce-weight_load_dir",
    ),
    pytest.param(
        "O1",
        {
            "boost": _manual(less_bn=False, grad_freeze=False, dim_reduce=True),
            "dim_reduce": {"pca_mat_path": "/tmp/pca_mat.npy", "timeout": 60},
        },
        {"dim_reduce"},
        ["SGD(learning_rate=1)"],
        ["skips", "needs weight_load_dir"],
        id="O1-manual-dim_reduce-pca_mat_path",
    ),
    pytest.param(
        "O1",
        {"grad_accumulation": {"grad_accumulation_step": 4}},
        {"less_bn", "grad_freeze"},
        ["section 'grad_accumulation' is ignored because grad_accumulation is not applied"],
        [],
        id="O1-section-of-switched-off-accumulation",
    ),
    pytest.param(
        "O1",
        {"dim_reduce": {"rho": 0.5}, "loss_scale_group": {}},
        {"less_bn", "grad_freeze"},
        ["section 'dim_reduce' is ignored", "section 'loss_scale_group' is ignored"],
        [],
        id="O1-sections-of-switched-off-dim_reduce-loss_scale_group",
    ),
    pytest.param(
        "O1",
        {"boost": _manual(less_bn=False), "common": {"gradient_split_groups": [10, 20]}},
        {"grad_freeze"},
        ["common.gradient_split_groups is used only by less_bn, which is not applied"],
        [],
        id="O1-split-groups-without-less_bn",
    ),
    pytest.param(
        "O1",
        {"boost": _manual(grad_freeze=False), "less_bn": {"gc_flag": False}, "common": {"gradient_split_groups": [2, 4]}},
        {"less_bn"},
        [],
        ["Centralization", "gradient_split_groups"],
        id="O1-manual-less_bn-gc_flag-false-groups",
    ),
    pytest.param(
        "O1",
        {"grad_freeze": {"freeze_p": 1.0}},
        {"less_bn", "grad_freeze"},
        ["grad_freeze freezes nothing"],
        [],
        id="O1-freeze_p-1-freezes-nothing",
    ),
    pytest.param(
        "O1", {"grad_freeze": {"param_groups": 1}}, {"less_bn", "grad_freeze"}, ["freezes nothing"], [], id="O1-one-group"
    ),
    pytest.param(
        "O1",
        {"grad_freeze": {"freeze_p": 1}},
        {"less_bn", "grad_freeze"},
        ["freezes nothing"],
        [],
        id="O1-freeze_p-int-1-is-a-number",
    ),
    pytest.param(
        "O1",
        {"boost": _manual(loss_scale_group=True)},
        {"less_bn", "grad_freeze", "loss_scale_group"},
        ["loss_scale_group needs a GroupLossScaleManager"],
        [],
        id="O1-manual-loss_scale_group",
    ),
    pytest.param(
        "O2",
        {
            "boost": _manual(
                less_bn=True, grad_freeze=True, adasum=False, grad_accumulation=False, dim_reduce=False, loss_scale_group=False
            ),
            "common": {"device_number": 1},
        },
        {"less_bn", "grad_freeze"},
        [],
        ["mode auto ignores"],
        id="O2-manual-every-switch-explicit",
    ),
]


def _ids(params: list) -> list:
    return [p.id for p in params]


def _valid_args() -> list[tuple[str, object]]:
    return [(p.values[0], p.values[1]) for p in VALID]


@pytest.mark.parametrize(("level", "raw", "applied", "notes", "absent"), VALID)
def test_valid_configs_resolve_to_expected_algorithms(level, raw, applied, notes, absent):
    config = parse_boost_config(copy.deepcopy(raw), level)
    eff = config.effective()

    assert isinstance(config, BoostConfig)
    assert isinstance(eff, EffectiveBoost)
    assert eff.level == level
    assert set(eff.applied) == set(ALGORITHMS)
    assert set(eff.switches) == set(ALGORITHMS)
    assert {name for name, on in eff.applied.items() if on} == applied
    assert set(eff.active) == applied
    assert list(eff.active) == [name for name in ALGORITHMS if name in applied]  # ALGORITHMS order
    # What runs is a subset of what AutoBoost switches on, except that O0 runs nothing.
    assert all(eff.switches[name] for name in applied)

    joined = "\n".join(eff.notes)
    for expected in notes:
        assert expected in joined, f"missing note {expected!r} in {eff.notes}"
    for unexpected in absent:
        assert unexpected not in joined, f"unexpected note {unexpected!r} in {eff.notes}"
    assert all("\n" not in note for note in eff.notes)

    # settings: common always, plus exactly the applied sections that carry settings
    assert "common" in eff.settings
    assert set(eff.settings) - {"common"} == applied - {"adasum"}


def test_o1_default_notes_only_mention_gc_flag():
    assert parse_boost_config({}, "O1").effective().notes == (
        "less_bn.gc_flag true needs the Centralization kernel (GPU/Ascend; not on CPU)",
    )


def test_o0_and_plain_configs_have_no_notes():
    assert parse_boost_config({}, "O0").effective().notes == ()
    assert parse_boost_config({"boost": {"mode": "disable_all"}}, "O2").effective().notes == ()
    assert parse_boost_config({"boost": _manual(grad_freeze=False), "less_bn": {"gc_flag": False}}, "O1").effective().notes == ()


@pytest.mark.parametrize("level", BOOST_LEVEL_NAMES)
def test_auto_mode_switches_are_the_preset(level):
    eff = parse_boost_config({"boost": {"mode": "auto", "less_bn": False, "adasum": True}}, level).effective()
    assert dict(eff.switches) == PRESETS[level]
    assert eff.mode == "auto"


def test_o0_switches_follow_mode_but_nothing_is_applied():
    eff = parse_boost_config({"boost": {"mode": "enable_all"}}, "O0").effective()
    assert all(eff.switches.values())
    assert not any(eff.applied.values())
    assert eff.settings == {"common": {"device_number": 8}}


def test_dim_reduce_keeps_switches_but_not_applied():
    eff = parse_boost_config({"boost": _manual(dim_reduce=True)}, "O2").effective()
    assert eff.switches["less_bn"] and eff.switches["grad_freeze"] and eff.switches["adasum"]
    assert eff.active == ("dim_reduce",)


def test_settings_fill_in_defaults_and_keep_custom_values():
    eff = parse_boost_config(
        {
            "boost": _manual(grad_freeze=True, less_bn=True),
            "common": {"gradient_split_groups": [3, 7]},
            "grad_freeze": {"freeze_p": 0.25, "param_groups": 3},
        },
        "O1",
    ).effective()
    assert eff.settings["common"] == {"gradient_split_groups": [3, 7], "device_number": 8}
    assert eff.settings["less_bn"] == {"fn_flag": True, "gc_flag": True}
    assert eff.settings["grad_freeze"] == {"param_groups": 3, "freeze_type": 1, "freeze_p": 0.25, "total_steps": 65536}

    dr = parse_boost_config({"boost": _manual(dim_reduce=True), "dim_reduce": {"n_components": 4}}, "O1").effective()
    assert dr.settings["dim_reduce"] == {
        "rho": 0.55,
        "gamma": 0.9,
        "alpha": 0.001,
        "sigma": 0.4,
        "n_components": 4,
        "timeout": 1800,
    }


def test_describe_lists_applied_algorithms_and_notes():
    text = parse_boost_config({"grad_freeze": {"freeze_p": 0.5}}, "O1").effective().describe()
    assert text.splitlines()[0] == "boost_level: O1  (mode: auto)"
    assert "applied: less_bn  [fn_flag=True, gc_flag=True]" in text
    assert "applied: grad_freeze  [param_groups=10, freeze_type=1, freeze_p=0.5, total_steps=65536]" in text
    assert "common: device_number=8" in text
    assert "note: less_bn.gc_flag true" in text
    assert "applied: nothing (plain training)" in parse_boost_config({}, "O0").effective().describe()


def test_config_is_frozen_and_input_is_not_mutated():
    raw = {"boost": _manual(grad_freeze=False), "less_bn": {"gc_flag": False}}
    before = copy.deepcopy(raw)
    config = parse_boost_config(raw, "O1")
    config.to_boost_config_dict()
    assert raw == before
    with pytest.raises(Exception):
        config.level = "O2"  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# Invalid inputs: (level, boost_config_dict, field path the message starts with, substrings)
# --------------------------------------------------------------------------------------------

INVALID = [
    # JSON types, no coercion
    pytest.param(
        "O1", {"boost": _manual(less_bn="false")}, "boost.less_bn", ["'false' is invalid", "JSON boolean",
        "MindSpore reads any non-empty string as true"], id="bool-as-string-false"
    ),
    pytest.param("O1", {"boost": _manual(grad_freeze=1)}, "boost.grad_freeze", ["1 is invalid", "JSON boolean"], id="bool-as-1"),
    pytest.param("O1", {"less_bn": {"fn_flag": "true"}}, "less_bn.fn_flag", ["'true' is invalid", "JSON boolean"], id="fn_flag-str"),
    pytest.param("O1", {"less_bn": {"gc_flag": 0}}, "less_bn.gc_flag", ["0 is invalid", "JSON boolean"], id="gc_flag-0"),
    pytest.param(
        "O1", {"grad_freeze": {"param_groups": 2.5}}, "grad_freeze.param_groups", ["2.5 is invalid", "expected an integer"],
        id="int-as-float"
    ),
    pytest.param(
        "O1", {"grad_freeze": {"total_steps": True}}, "grad_freeze.total_steps", ["True is invalid", "expected an integer"],
        id="int-as-bool"
    ),
    pytest.param(
        "O1",
        {"grad_accumulation": {"grad_accumulation_step": True}},
        "grad_accumulation.grad_accumulation_step",
        ["True is invalid", "expected an integer"],
        id="accumulation-step-bool",
    ),
    pytest.param(
        "O1", {"common": {"device_number": "8"}}, "common.device_number", ["'8' is invalid", "expected an integer"],
        id="int-as-string"
    ),
    pytest.param(
        "O1", {"grad_freeze": {"freeze_p": "0.7"}}, "grad_freeze.freeze_p", ["'0.7' is invalid", "expected a number"],
        id="float-as-string"
    ),
    pytest.param(
        "O1", {"grad_freeze": {"freeze_p": True}}, "grad_freeze.freeze_p", ["True is invalid", "expected a number"],
        id="float-as-bool"
    ),
    # ranges
    pytest.param("O1", {"grad_freeze": {"freeze_p": 1.5}}, "grad_freeze.freeze_p", ["1.5 is invalid", "less than or equal to 1"],
                 id="freeze_p-1.5"),
    pytest.param("O1", {"grad_freeze": {"freeze_p": -0.1}}, "grad_freeze.freeze_p",
                 ["-0.1 is invalid", "greater than or equal to 0"], id="freeze_p-negative"),
    pytest.param("O1", {"grad_freeze": {"freeze_type": 2}}, "grad_freeze.freeze_type",
                 ["2 is invalid", "must be 0 (continuous) or 1 (interval)"], id="freeze_type-2"),
    pytest.param("O1", {"grad_freeze": {"param_groups": 0}}, "grad_freeze.param_groups",
                 ["0 is invalid", "greater than or equal to 1"], id="param_groups-0"),
    pytest.param("O1", {"grad_freeze": {"total_steps": 0}}, "grad_freeze.total_steps", ["0 is invalid"], id="total_steps-0"),
    pytest.param("O1", {"common": {"device_number": 0}}, "common.device_number", ["0 is invalid"], id="device_number-0"),
    pytest.param("O1", {"grad_accumulation": {"grad_accumulation_step": 0}}, "grad_accumulation.grad_accumulation_step",
                 ["0 is invalid", "greater than or equal to 1"], id="accumulation-step-0"),
    pytest.param("O1", {"dim_reduce": {"rho": 1.0}}, "dim_reduce.rho", ["1.0 is invalid", "less than 1"], id="rho-1"),
    pytest.param("O1", {"dim_reduce": {"alpha": 0.0}}, "dim_reduce.alpha", ["0.0 is invalid", "greater than 0"], id="alpha-0"),
    pytest.param("O1", {"dim_reduce": {"alpha": float("inf")}}, "dim_reduce.alpha", ["inf is invalid", "finite"],
                 id="alpha-inf"),
    pytest.param("O1", {"dim_reduce": {"gamma": float("nan")}}, "dim_reduce.gamma", ["nan is invalid"], id="gamma-nan"),
    pytest.param("O1", {"dim_reduce": {"n_components": 0}}, "dim_reduce.n_components", ["0 is invalid"], id="n_components-0"),
    pytest.param("O1", {"dim_reduce": {"timeout": 0}}, "dim_reduce.timeout", ["0 is invalid"], id="timeout-0"),
    # gradient_split_groups
    pytest.param("O1", {"common": {"gradient_split_groups": [100, 50]}}, "common.gradient_split_groups",
                 ["[100, 50] is invalid", "strictly increasing"], id="split-groups-decreasing"),
    pytest.param("O1", {"common": {"gradient_split_groups": [50, 50]}}, "common.gradient_split_groups",
                 ["strictly increasing"], id="split-groups-repeated"),
    pytest.param("O1", {"common": {"gradient_split_groups": 50}}, "common.gradient_split_groups",
                 ["50 is invalid", "expected a list"], id="split-groups-int"),
    pytest.param("O1", {"common": {"gradient_split_groups": []}}, "common.gradient_split_groups",
                 ["[] is invalid", "non-empty"], id="split-groups-empty"),
    pytest.param("O1", {"common": {"gradient_split_groups": [0, 50]}}, "common.gradient_split_groups",
                 ["[0, 50] is invalid", ">= 1"], id="split-groups-zero"),
    pytest.param("O1", {"common": {"gradient_split_groups": [50, "100"]}}, "common.gradient_split_groups.1",
                 ["'100' is invalid", "expected an integer"], id="split-groups-string-item"),
    # unknown sections and keys, with did-you-mean
    pytest.param("O1", {"bost": {"mode": "manual"}}, "bost",
                 ["unknown key (did you mean boost?)", "allowed: boost, common, less_bn, grad_freeze"], id="section-bost"),
    pytest.param("O1", {"less-bn": {}}, "less-bn", ["unknown key (did you mean less_bn?)"], id="section-less-bn"),
    pytest.param("O1", {"common": {"device_num": 8}}, "common.device_num",
                 ["unknown key (did you mean device_number?)", "allowed: gradient_split_groups, device_number"],
                 id="official-sample-device_num"),
    pytest.param("O1", {"boost": _manual(dim_reduce=True), "dim_reduce": {"n_component": 32}}, "dim_reduce.n_component",
                 ["unknown key (did you mean n_components?)", "allowed: rho, gamma, alpha, sigma, n_components"],
                 id="official-sample-n_component"),
    pytest.param("O1", {"boost": {"mode": "manual", "lessbn": True}}, "boost.lessbn",
                 ["unknown key (did you mean less_bn?)"], id="switch-lessbn"),
    pytest.param("O1", {"loss_scale_group": {"groups": 2}}, "loss_scale_group.groups",
                 ["unknown key; allowed: none"], id="loss_scale_group-has-no-keys"),
    pytest.param("O1", {"grad_freeze": {"zzz": 1}}, "grad_freeze.zzz", ["unknown key;", "allowed: param_groups"],
                 id="unknown-key-no-suggestion"),
    # mode and level
    pytest.param("O1", {"boost": {"mode": "fast"}}, "boost.mode",
                 ["'fast' is invalid", "'auto', 'manual', 'enable_all' or 'disable_all'"], id="mode-fast"),
    pytest.param("O1", {"boost": {"mode": "Manual"}}, "boost.mode", ["'Manual' is invalid"], id="mode-case"),
    pytest.param("O3", {}, "boost_level", ["'O3' is not a boost level", "allowed: O0, O1, O2"], id="level-O3"),
    pytest.param("o1", {}, "boost_level", ["'o1' is not a boost level"], id="level-lowercase"),
    pytest.param(None, {}, "boost_level", ["None is not a boost level"], id="level-None"),
    # combinations MindSpore crashes on
    pytest.param(
        "O1",
        {"boost": _manual(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 4}},
        "boost",
        ["grad_freeze and grad_accumulation cannot both be on", "'_TrainFreezeCell' object has no attribute 'optimizer'"],
        id="grad_freeze+grad_accumulation",
    ),
    pytest.param(
        "O2",
        {"boost": _manual(less_bn=False, grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 2}},
        "boost",
        ["cannot both be on"],
        id="O2-grad_freeze+grad_accumulation",
    ),
    pytest.param(
        "O1",
        {"grad_freeze": {"freeze_type": 0, "freeze_p": 1}},
        "grad_freeze.freeze_p",
        ["1.0 is invalid with freeze_type 0", "divides by (1 - freeze_p)"],
        id="freeze_type0-freeze_p1",
    ),
    pytest.param(
        "O1",
        {"grad_freeze": {"freeze_type": 0, "freeze_p": 1.0}},
        "grad_freeze.freeze_p",
        ["1.0 is invalid with freeze_type 0"],
        id="freeze_type0-freeze_p1.0",
    ),
    # DimReduce paths
    pytest.param("O1", {"dim_reduce": {"pca_mat_path": "pca_mat.npz"}}, "dim_reduce.pca_mat_path",
                 ["'pca_mat.npz' is invalid", ".npy"], id="pca_mat_path-npz"),
    pytest.param("O1", {"dim_reduce": {"pca_mat_path": 5}}, "dim_reduce.pca_mat_path", ["expected a string"],
                 id="pca_mat_path-int"),
    pytest.param("O1", {"dim_reduce": {"weight_load_dir": "runs/lr=0.1,n=8"}}, "dim_reduce.weight_load_dir",
                 ["'runs/lr=0.1,n=8' is invalid", "[_A-Za-z0-9/.-]"], id="weight_load_dir-comma-equals"),
    pytest.param("O1", {"dim_reduce": {"weight_load_dir": "runs/a,b"}}, "dim_reduce.weight_load_dir", ["is invalid"],
                 id="weight_load_dir-comma"),
    pytest.param("O1", {"dim_reduce": {"weight_load_dir": "runs/lr=0.1"}}, "dim_reduce.weight_load_dir", ["is invalid"],
                 id="weight_load_dir-equals"),
    pytest.param("O1", {"dim_reduce": {"weight_load_dir": "my runs/ckpt"}}, "dim_reduce.weight_load_dir", ["is invalid"],
                 id="weight_load_dir-space"),
    # shapes
    pytest.param("O1", [{"boost": {}}], "boost_config_dict", ["expected a mapping of sections, got list"], id="list"),
    pytest.param("O1", "manual", "boost_config_dict", ["expected a mapping of sections, got str"], id="string"),
    pytest.param("O1", 5, "boost_config_dict", ["got int"], id="int"),
    pytest.param("O1", {"boost": "manual"}, "boost", ["'manual' is invalid", "expected a mapping"], id="section-not-mapping"),
    pytest.param("O1", {"common": [1, 2]}, "common", ["expected a mapping"], id="common-list"),
]


@pytest.mark.parametrize(("level", "raw", "path", "substrings"), INVALID)
def test_invalid_configs_raise_one_line_config_error(level, raw, path, substrings):
    with pytest.raises(ConfigError) as info:
        parse_boost_config(raw, level)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message
    assert message.startswith(path + ": "), message
    for expected in substrings:
        assert expected in message, f"{expected!r} not in {message!r}"
    # ConfigError is a ValueError, so generic callers can catch it too
    assert isinstance(info.value, ValueError)


def test_error_has_no_chained_pydantic_traceback():
    with pytest.raises(ConfigError) as info:
        parse_boost_config({"common": {"device_num": 8}}, "O1")
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


# --------------------------------------------------------------------------------------------
# Canonical dict
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("level", "raw"), _valid_args(), ids=_ids(VALID))
def test_canonical_dict_is_a_fixed_point(level, raw):
    eff = parse_boost_config(raw, level).effective()
    canonical = parse_boost_config(raw, level).to_boost_config_dict()

    # plain JSON, so it can be written to a file and handed to Model(boost_config_dict=...)
    assert json.loads(json.dumps(canonical)) == canonical
    assert canonical["boost"] == {"mode": "manual", **dict(eff.applied)}

    again = parse_boost_config(canonical, level)
    eff2 = again.effective()
    assert dict(eff2.applied) == dict(eff.applied)
    assert {k: dict(v) for k, v in eff2.settings.items()} == {k: dict(v) for k, v in eff.settings.items()}
    # manual with every switch explicit: AutoBoost.boost_config is exactly what runs
    assert dict(eff2.switches) == dict(eff.applied)
    assert again.to_boost_config_dict() == canonical
    assert not any("mode auto ignores" in note or "is ignored" in note for note in eff2.notes)


# --------------------------------------------------------------------------------------------
# Round trip through the real mindspore.boost.AutoBoost
# --------------------------------------------------------------------------------------------


@pytest.fixture
def autoboost():
    """mindspore.boost.AutoBoost with its process-wide state reset before and after the test."""
    from mindspore.boost import AutoBoost

    from boosttune.algorithms.mindspore_state import reset_boost_state

    reset_boost_state()
    yield AutoBoost
    reset_boost_state()


_ATTRS = {
    "less_bn": {"fn_flag": "_fn_flag", "gc_flag": "_gc_flag"},
    "grad_freeze": {
        "param_groups": "_param_groups",
        "freeze_type": "_freeze_type",
        "freeze_p": "_freeze_p",
        "total_steps": "_total_steps",
    },
    "grad_accumulation": {"grad_accumulation_step": "grad_accumulation_step"},
    "dim_reduce": {
        "rho": "rho",
        "gamma": "gamma",
        "alpha": "alpha",
        "sigma": "sigma",
        "n_components": "n_components",
        "timeout": "timeout",
        "pca_mat_path": "pca_mat_path",
        "weight_load_dir": "weight_load_dir",
    },
}
_SECTION_DEFAULTS = {
    "less_bn": {"fn_flag": True, "gc_flag": True},
    "grad_freeze": {"param_groups": 10, "freeze_type": 1, "freeze_p": 0.7, "total_steps": 65536},
    "grad_accumulation": {"grad_accumulation_step": 1},
    "dim_reduce": {
        "rho": 0.55,
        "gamma": 0.9,
        "alpha": 0.001,
        "sigma": 0.4,
        "n_components": 32,
        "timeout": 1800,
        "pca_mat_path": None,
        "weight_load_dir": None,
    },
}


def _assert_section_attrs(ab, name: str, values: dict, *, same_types: bool = True) -> None:
    for key, attr in _ATTRS[name].items():
        expected = values.get(key, _SECTION_DEFAULTS[name][key])
        actual = getattr(ab, attr)
        assert actual == expected, f"AutoBoost.{attr}: {actual!r} != {expected!r}"
        if same_types:  # True == 1 == 1.0: make sure a bool did not stand in for a number
            assert type(actual) is type(expected), f"AutoBoost.{attr}: {actual!r} != {expected!r}"


def _assert_common_attrs(ab, common: dict) -> None:
    assert ab.device_number == common["device_number"]
    assert ab.gradient_groups == common.get("gradient_split_groups")


ROUND_TRIP = [
    pytest.param("O1", {"boost": {"mode": "auto"}}, id="O1-auto"),
    pytest.param("O2", {}, id="O2"),
    pytest.param(
        "O1",
        {
            "boost": _manual(less_bn=False),
            "grad_freeze": {"param_groups": 4, "freeze_type": 0, "freeze_p": 0.5, "total_steps": 1000},
            "common": {"device_number": 2},
        },
        id="manual-custom-grad_freeze",
    ),
    pytest.param(
        "O1",
        {
            "boost": _manual(less_bn=True, grad_freeze=False),
            "less_bn": {"gc_flag": False},
            "common": {"gradient_split_groups": [2, 6]},
        },
        id="manual-less_bn-gc_flag-false-groups",
    ),
    pytest.param(
        "O1",
        {"boost": _manual(grad_freeze=False, grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 4}},
        id="manual-accumulation-4",
    ),
    pytest.param(
        "O2",
        {
            "boost": _manual(dim_reduce=True),
            "dim_reduce": {"rho": 0.6, "n_components": 8, "sigma": 0.3, "timeout": 60, "weight_load_dir": "runs/s1"},
        },
        id="manual-dim_reduce",
    ),
    pytest.param(
        "O1",
        {"boost": {"mode": "enable_all"}, "grad_accumulation": {"grad_accumulation_step": 3}, "dim_reduce": {"alpha": 0.01}},
        id="enable_all",
    ),
    pytest.param("O0", {"boost": _manual(less_bn=True), "less_bn": {"gc_flag": False}}, id="O0-manual"),
]


@pytest.mark.parametrize(("level", "raw"), ROUND_TRIP)
def test_canonical_dict_round_trips_through_autoboost(autoboost, level, raw):
    config = parse_boost_config(raw, level)
    eff = config.effective()
    canonical = config.to_boost_config_dict()

    ab = autoboost(level, canonical)

    assert ab.level == level
    assert ab.boost_config == dict(eff.applied)
    _assert_common_attrs(ab, eff.settings["common"])
    for name in _ATTRS:
        # applied sections carry their settings; the others are absent and stay at MindSpore's defaults
        _assert_section_attrs(ab, name, dict(eff.settings.get(name, {})))


@pytest.mark.parametrize(("level", "raw"), _valid_args(), ids=_ids(VALID))
def test_every_valid_case_agrees_with_autoboost(autoboost, level, raw):
    """Both the user's dict and the canonical one: switches, and the settings of what runs."""
    eff = parse_boost_config(copy.deepcopy(raw), level).effective()

    # the user's own dict: AutoBoost.boost_config is the model's ``switches``
    ab = autoboost(level, copy.deepcopy(raw))
    assert dict(ab.boost_config) == dict(eff.switches)
    _assert_common_attrs(ab, eff.settings["common"])
    for name in _ATTRS:
        if eff.applied[name]:  # the user may write 1 for 1.0
            _assert_section_attrs(ab, name, dict(eff.settings[name]), same_types=False)

    # the canonical dict, in a fresh process state: boost_config is ``applied``
    from boosttune.algorithms.mindspore_state import reset_boost_state

    reset_boost_state()
    ab = autoboost(level, parse_boost_config(raw, level).to_boost_config_dict())
    assert dict(ab.boost_config) == dict(eff.applied)
    _assert_common_attrs(ab, eff.settings["common"])
    for name in _ATTRS:
        _assert_section_attrs(ab, name, dict(eff.settings.get(name, {})))


def test_presets_match_mindspore(autoboost):
    import mindspore.boost.boost as ms_boost

    assert ms_boost._boost_config_level == PRESETS
    assert tuple(ms_boost._boost_config_mode) == ("auto", "manual", "enable_all", "disable_all")
    assert set(ms_boost.AutoBoost._boost_config_func_map) == {
        key for keys in _ATTRS.values() for key in keys
    } | {"device_number", "gradient_split_groups"}


def test_autoboost_is_a_singleton_until_reset(autoboost):
    from boosttune.algorithms.mindspore_state import reset_boost_state

    first = autoboost("O1", {})
    assert first.boost_config == PRESETS["O1"]

    second = autoboost("O0", {})  # what a second Model(boost_level="O0") does in the same process
    assert second is first
    assert second.level == "O1"
    assert second.boost_config == PRESETS["O1"]  # the first configuration wins

    reset_boost_state()
    fresh = autoboost("O0", {})
    assert fresh is not first
    assert fresh.level == "O0"
    assert fresh.boost_config == PRESETS["O0"]


def test_manual_mode_mutates_mindspore_presets_until_reset(autoboost):
    import mindspore.boost.boost as ms_boost

    from boosttune.algorithms.mindspore_state import reset_boost_state

    autoboost("O1", {"boost": _manual(grad_freeze=False, adasum=True)})
    mutated = ms_boost._boost_config_level["O1"]
    assert mutated["grad_freeze"] is False and mutated["adasum"] is True
    # boosttune's copy is not aliased to MindSpore's dict
    assert PRESETS["O1"]["grad_freeze"] is True and PRESETS["O1"]["adasum"] is False

    # resetting only the singleton is not enough: a later auto-mode O1 gets the leaked switches
    ms_boost.AutoBoost._instance = None
    leaked = autoboost("O1", {})
    assert leaked.boost_config["grad_freeze"] is False

    reset_boost_state()
    assert ms_boost._boost_config_level == PRESETS
    assert ms_boost._boost_config_level["O1"] is not PRESETS["O1"]
    clean = autoboost("O1", {})
    assert clean is not leaked
    assert clean.boost_config == PRESETS["O1"]


def test_mindspore_accepts_what_boosttune_rejects(autoboost):
    """Why the strict model exists: MindSpore silently takes these."""
    from boosttune.algorithms.mindspore_state import reset_boost_state

    # the official sample's typo is ignored: n_components stays 32
    ab = autoboost("O1", {"boost": _manual(dim_reduce=True), "dim_reduce": {"n_component": 8}})
    assert ab.n_components == 32
    with pytest.raises(ConfigError, match="did you mean n_components"):
        parse_boost_config({"boost": _manual(dim_reduce=True), "dim_reduce": {"n_component": 8}}, "O1")

    # a string "false" switches less_bn on
    reset_boost_state()
    ab = autoboost("O1", {"boost": _manual(less_bn="false", grad_freeze=False)})
    assert ab.boost_config["less_bn"] == "false" and bool(ab.boost_config["less_bn"])
    with pytest.raises(ConfigError, match="JSON boolean"):
        parse_boost_config({"boost": _manual(less_bn="false", grad_freeze=False)}, "O1")

    # an unknown level silently becomes O0
    reset_boost_state()
    assert autoboost("O3", {}).level == "O0"


def test_the_common_keys_and_their_readers_come_from_the_algorithm_folders():
    from boosttune.config.boost import common_readers

    assert common_readers() == {"device_number": ("adasum", "dim_reduce"), "gradient_split_groups": ("less_bn",)}
    notes = parse_boost_config({"common": {"device_number": 4}, "less_bn": {"gc_flag": False}}, "O1").effective().notes
    assert "common.device_number is used only by adasum and dim_reduce, neither of which is applied" in notes
