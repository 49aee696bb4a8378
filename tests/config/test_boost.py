"""The boost_config_dict model as a whole: levels, modes, JSON types, sections together, and that MindSpore agrees.

Each algorithm's own cases are in tests/algorithms/test_<name>.py; both run the checks of tests/helpers/boost_cases.py,
which builds real ``mindspore.boost.AutoBoost`` objects (no network, no training) for the last part.
"""

from __future__ import annotations

import copy

import pytest

from boosttune.config.boost import BOOST_LEVEL_NAMES, PRESETS, parse_boost_config
from boosttune.errors import ConfigError
from tests.helpers import boost_cases as cases
from tests.helpers.boost_cases import ATTRS, INVALID_FIELDS, VALID_FIELDS, level_and_dict, manual_mode


# --------------------------------------------------------------------------------------------
# Valid inputs: (level, boost_config_dict, applied algorithms, note substrings, absent substrings)
# --------------------------------------------------------------------------------------------

VALID = [
    pytest.param("O0", {}, set(), [], ["boost_level O0"], id="O0-empty"),
    pytest.param("O0", None, set(), [], ["boost_level O0"], id="O0-None"),
    pytest.param("O0", "", set(), [], ["boost_level O0"], id="O0-empty-string"),
    pytest.param(
        "O0",
        {"boost": manual_mode(less_bn=True, adasum=True), "less_bn": {"gc_flag": False}},
        set(),
        ["boost_level O0: Model skips boost entirely"],
        [],
        id="O0-manual-ignored",
    ),
    pytest.param("O0", {"boost": {"mode": "enable_all"}}, set(), ["boost_level O0"], ["dim_reduce"],
                 id="O0-enable_all"),
    pytest.param(
        "O1",
        {},
        {"less_bn", "grad_freeze"},
        ["less_bn.gc_flag true needs the Centralization kernel"],
        ["adasum", "mode auto ignores"],
        id="O1-empty",
    ),
    pytest.param("O1", None, {"less_bn", "grad_freeze"}, [], [], id="O1-None"),
    pytest.param("O1", {"boost": {"mode": "auto"}}, {"less_bn", "grad_freeze"}, [], ["mode auto ignores"],
                 id="O1-auto"),
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
    pytest.param("O1", {"boost": manual_mode(grad_freeze=False)}, {"less_bn"}, [], [], id="O1-manual-less_bn-only"),
    pytest.param(
        "O2",
        {"boost": manual_mode(less_bn=False, grad_freeze=False, adasum=False)},
        set(),
        [],
        ["Centralization", "adasum"],
        id="O2-manual-all-off",
    ),
    pytest.param(
        "O1",
        {"boost": manual_mode(less_bn=False, grad_freeze=True)},
        {"grad_freeze"},
        [],
        ["Centralization"],
        id="O1-manual-grad_freeze-only",
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
        {"boost": manual_mode(less_bn=False), "common": {"gradient_split_groups": [10, 20]}},
        {"grad_freeze"},
        ["common.gradient_split_groups is used only by less_bn, which is not applied"],
        [],
        id="O1-split-groups-without-less_bn",
    ),
    pytest.param(
        "O2",
        {
            "boost": manual_mode(
                less_bn=True, grad_freeze=True, adasum=False, grad_accumulation=False, dim_reduce=False,
                loss_scale_group=False,
            ),
            "common": {"device_number": 1},
        },
        {"less_bn", "grad_freeze"},
        [],
        ["mode auto ignores"],
        id="O2-manual-every-switch-explicit",
    ),
]


@pytest.mark.parametrize(VALID_FIELDS, VALID)
def test_valid_configs_resolve_to_expected_algorithms(level, raw, applied, notes, absent):
    cases.assert_resolves(level, raw, applied, notes, absent)


def test_o1_default_notes_only_mention_gc_flag():
    assert parse_boost_config({}, "O1").effective().notes == (
        "less_bn.gc_flag true needs the Centralization kernel (GPU/Ascend; not on CPU)",
    )


def test_o0_and_plain_configs_have_no_notes():
    assert parse_boost_config({}, "O0").effective().notes == ()
    assert parse_boost_config({"boost": {"mode": "disable_all"}}, "O2").effective().notes == ()
    plain = {"boost": manual_mode(grad_freeze=False), "less_bn": {"gc_flag": False}}
    assert parse_boost_config(plain, "O1").effective().notes == ()


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


def test_settings_fill_in_defaults_and_keep_custom_values():
    eff = parse_boost_config(
        {
            "boost": manual_mode(grad_freeze=True, less_bn=True),
            "common": {"gradient_split_groups": [3, 7]},
            "grad_freeze": {"freeze_p": 0.25, "param_groups": 3},
        },
        "O1",
    ).effective()
    assert eff.settings["common"] == {"gradient_split_groups": [3, 7], "device_number": 8}
    assert eff.settings["less_bn"] == {"fn_flag": True, "gc_flag": True}
    assert eff.settings["grad_freeze"] == {"param_groups": 3, "freeze_type": 1, "freeze_p": 0.25, "total_steps": 65536}

    dr = parse_boost_config({"boost": manual_mode(dim_reduce=True), "dim_reduce": {"n_components": 4}}, "O1")
    assert dr.effective().settings["dim_reduce"] == {
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
    raw = {"boost": manual_mode(grad_freeze=False), "less_bn": {"gc_flag": False}}
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
        "O1", {"boost": manual_mode(less_bn="false")}, "boost.less_bn", ["'false' is invalid", "JSON boolean",
        "MindSpore reads any non-empty string as true"], id="bool-as-string-false"
    ),
    pytest.param("O1", {"boost": manual_mode(grad_freeze=1)}, "boost.grad_freeze", ["1 is invalid", "JSON boolean"],
                 id="bool-as-1"),
    pytest.param("O1", {"less_bn": {"fn_flag": "true"}}, "less_bn.fn_flag", ["'true' is invalid", "JSON boolean"],
                 id="fn_flag-str"),
    pytest.param("O1", {"less_bn": {"gc_flag": 0}}, "less_bn.gc_flag", ["0 is invalid", "JSON boolean"],
                 id="gc_flag-0"),
    pytest.param(
        "O1", {"grad_freeze": {"param_groups": 2.5}}, "grad_freeze.param_groups",
        ["2.5 is invalid", "expected an integer"], id="int-as-float"
    ),
    pytest.param(
        "O1", {"grad_freeze": {"total_steps": True}}, "grad_freeze.total_steps",
        ["True is invalid", "expected an integer"], id="int-as-bool"
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
    # common
    pytest.param("O1", {"common": {"device_number": 0}}, "common.device_number", ["0 is invalid"],
                 id="device_number-0"),
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
                 ["unknown key (did you mean boost?)", "allowed: boost, common, less_bn, grad_freeze"],
                 id="section-bost"),
    pytest.param("O1", {"less-bn": {}}, "less-bn", ["unknown key (did you mean less_bn?)"], id="section-less-bn"),
    pytest.param("O1", {"common": {"device_num": 8}}, "common.device_num",
                 ["unknown key (did you mean device_number?)", "allowed: gradient_split_groups, device_number"],
                 id="official-sample-device_num"),
    pytest.param("O1", {"boost": {"mode": "manual", "lessbn": True}}, "boost.lessbn",
                 ["unknown key (did you mean less_bn?)"], id="switch-lessbn"),
    pytest.param("O1", {"grad_freeze": {"zzz": 1}}, "grad_freeze.zzz", ["unknown key;", "allowed: param_groups"],
                 id="unknown-key-no-suggestion"),
    # mode and level
    pytest.param("O1", {"boost": {"mode": "fast"}}, "boost.mode",
                 ["'fast' is invalid", "'auto', 'manual', 'enable_all' or 'disable_all'"], id="mode-fast"),
    pytest.param("O1", {"boost": {"mode": "Manual"}}, "boost.mode", ["'Manual' is invalid"], id="mode-case"),
    pytest.param("O3", {}, "boost_level", ["'O3' is not a boost level", "allowed: O0, O1, O2"], id="level-O3"),
    pytest.param("o1", {}, "boost_level", ["'o1' is not a boost level"], id="level-lowercase"),
    pytest.param(None, {}, "boost_level", ["None is not a boost level"], id="level-None"),
    # shapes
    pytest.param("O1", [{"boost": {}}], "boost_config_dict", ["expected a mapping of sections, got list"], id="list"),
    pytest.param("O1", "manual", "boost_config_dict", ["expected a mapping of sections, got str"], id="string"),
    pytest.param("O1", 5, "boost_config_dict", ["got int"], id="int"),
    pytest.param("O1", {"boost": "manual"}, "boost", ["'manual' is invalid", "expected a mapping"],
                 id="section-not-mapping"),
    pytest.param("O1", {"common": [1, 2]}, "common", ["expected a mapping"], id="common-list"),
]


@pytest.mark.parametrize(INVALID_FIELDS, INVALID)
def test_invalid_configs_raise_one_line_config_error(level, raw, path, substrings):
    cases.assert_one_line_error(level, raw, path, substrings)


def test_error_has_no_chained_pydantic_traceback():
    with pytest.raises(ConfigError) as info:
        parse_boost_config({"common": {"device_num": 8}}, "O1")
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


# --------------------------------------------------------------------------------------------
# Canonical dict
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("level", "raw"), level_and_dict(VALID))
def test_canonical_dict_is_a_fixed_point(level, raw):
    cases.assert_fixed_point(level, raw)


# --------------------------------------------------------------------------------------------
# Round trip through the real mindspore.boost.AutoBoost
# --------------------------------------------------------------------------------------------

ROUND_TRIP = [
    pytest.param("O1", {"boost": {"mode": "auto"}}, id="O1-auto"),
    pytest.param("O2", {}, id="O2"),
    pytest.param(
        "O1",
        {
            "boost": {"mode": "enable_all"},
            "grad_accumulation": {"grad_accumulation_step": 3},
            "dim_reduce": {"alpha": 0.01},
        },
        id="enable_all",
    ),
    pytest.param("O0", {"boost": manual_mode(less_bn=True), "less_bn": {"gc_flag": False}}, id="O0-manual"),
]


@pytest.mark.parametrize(("level", "raw"), ROUND_TRIP)
def test_canonical_dict_round_trips_through_autoboost(autoboost, level, raw):
    cases.assert_round_trip(autoboost, level, raw)


@pytest.mark.parametrize(("level", "raw"), level_and_dict(VALID))
def test_every_valid_case_agrees_with_autoboost(autoboost, level, raw):
    cases.assert_agrees_with_autoboost(autoboost, level, raw)


def test_presets_match_mindspore(autoboost):
    import mindspore.boost.boost as ms_boost

    assert ms_boost._boost_config_level == PRESETS
    assert tuple(ms_boost._boost_config_mode) == ("auto", "manual", "enable_all", "disable_all")
    assert set(ms_boost.AutoBoost._boost_config_func_map) == {
        key for keys in ATTRS.values() for key in keys
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

    autoboost("O1", {"boost": manual_mode(grad_freeze=False, adasum=True)})
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
    ab = autoboost("O1", {"boost": manual_mode(dim_reduce=True), "dim_reduce": {"n_component": 8}})
    assert ab.n_components == 32
    with pytest.raises(ConfigError, match="did you mean n_components"):
        parse_boost_config({"boost": manual_mode(dim_reduce=True), "dim_reduce": {"n_component": 8}}, "O1")

    # a string "false" switches less_bn on
    reset_boost_state()
    ab = autoboost("O1", {"boost": manual_mode(less_bn="false", grad_freeze=False)})
    assert ab.boost_config["less_bn"] == "false" and bool(ab.boost_config["less_bn"])
    with pytest.raises(ConfigError, match="JSON boolean"):
        parse_boost_config({"boost": manual_mode(less_bn="false", grad_freeze=False)}, "O1")

    # an unknown level silently becomes O0
    reset_boost_state()
    assert autoboost("O3", {}).level == "O0"


def test_the_common_keys_and_their_readers_come_from_the_algorithm_folders():
    from boosttune.config.boost import common_readers

    assert common_readers() == {"device_number": ("adasum", "dim_reduce"), "gradient_split_groups": ("less_bn",)}
    notes = parse_boost_config({"common": {"device_number": 4}, "less_bn": {"gc_flag": False}}, "O1").effective().notes
    assert "common.device_number is used only by adasum and dim_reduce, neither of which is applied" in notes
