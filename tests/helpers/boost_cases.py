"""The checks every boost_config_dict case runs, in tests/config/test_boost.py and each tests/algorithms/test_<name>.py.

A case is a ``pytest.param``: valid (level, dict, applied algorithms, note substrings, absent substrings), invalid
(level, dict, the field path the message starts with, substrings), or a round trip (level, dict). The AutoBoost checks
take the ``autoboost`` fixture (tests/conftest.py): a real ``mindspore.boost.AutoBoost``, no network, no training.
"""

from __future__ import annotations

import copy
import json

import pytest

from boosttune.algorithms.mindspore_state import reset_boost_state
from boosttune.config.boost import ALGORITHMS, BoostConfig, EffectiveBoost, parse_boost_config
from boosttune.errors import ConfigError

VALID_FIELDS = ("level", "raw", "applied", "notes", "absent")
INVALID_FIELDS = ("level", "raw", "path", "substrings")


def manual_mode(**switches: bool) -> dict:
    """The ``boost`` section in manual mode with these switches (the others keep the level's preset)."""
    return {"mode": "manual", **switches}


def level_and_dict(cases: list) -> list:
    """The (level, dict) of each valid case, under its id."""
    return [pytest.param(case.values[0], case.values[1], id=case.id) for case in cases]


def assert_resolves(level, raw, applied: set[str], notes: list[str], absent: list[str]) -> None:
    """The dict resolves to exactly ``applied``, with the ``notes`` and without the ``absent`` substrings."""
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


def assert_one_line_error(level, raw, path: str, substrings: list[str]) -> None:
    """The dict is refused with a one-line ConfigError that starts with the field's ``path``."""
    with pytest.raises(ConfigError) as info:
        parse_boost_config(raw, level)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message
    assert message.startswith(path + ": "), message
    for expected in substrings:
        assert expected in message, f"{expected!r} not in {message!r}"
    # ConfigError is a ValueError, so generic callers can catch it too
    assert isinstance(info.value, ValueError)


def assert_fixed_point(level, raw) -> None:
    """The canonical dict is plain JSON, manual with every switch explicit, and its own canonical dict."""
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


# The AutoBoost attribute that holds each key of a section, and MindSpore's default for it.
ATTRS = {
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
SECTION_DEFAULTS = {
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
    for key, attr in ATTRS[name].items():
        expected = values.get(key, SECTION_DEFAULTS[name][key])
        actual = getattr(ab, attr)
        assert actual == expected, f"AutoBoost.{attr}: {actual!r} != {expected!r}"
        if same_types:  # True == 1 == 1.0: make sure a bool did not stand in for a number
            assert type(actual) is type(expected), f"AutoBoost.{attr}: {actual!r} != {expected!r}"


def _assert_common_attrs(ab, common: dict) -> None:
    assert ab.device_number == common["device_number"]
    assert ab.gradient_groups == common.get("gradient_split_groups")


def assert_round_trip(autoboost, level, raw) -> None:
    """AutoBoost built from the canonical dict runs what :meth:`BoostConfig.effective` promises, settings included."""
    config = parse_boost_config(raw, level)
    eff = config.effective()
    canonical = config.to_boost_config_dict()

    ab = autoboost(level, canonical)

    assert ab.level == level
    assert ab.boost_config == dict(eff.applied)
    _assert_common_attrs(ab, eff.settings["common"])
    for name in ATTRS:
        # applied sections carry their settings; the others are absent and stay at MindSpore's defaults
        _assert_section_attrs(ab, name, dict(eff.settings.get(name, {})))


def assert_agrees_with_autoboost(autoboost, level, raw) -> None:
    """Both the user's dict and the canonical one: switches, and the settings of what runs."""
    eff = parse_boost_config(copy.deepcopy(raw), level).effective()

    # the user's own dict: AutoBoost.boost_config is the model's ``switches``
    ab = autoboost(level, copy.deepcopy(raw))
    assert dict(ab.boost_config) == dict(eff.switches)
    _assert_common_attrs(ab, eff.settings["common"])
    for name in ATTRS:
        if eff.applied[name]:  # the user may write 1 for 1.0
            _assert_section_attrs(ab, name, dict(eff.settings[name]), same_types=False)

    # the canonical dict, in a fresh process state: boost_config is ``applied``
    reset_boost_state()
    ab = autoboost(level, parse_boost_config(raw, level).to_boost_config_dict())
    assert dict(ab.boost_config) == dict(eff.applied)
    _assert_common_attrs(ab, eff.settings["common"])
    for name in ATTRS:
        _assert_section_attrs(ab, name, dict(eff.settings.get(name, {})))


def contract_tests(valid: list = (), invalid: list = (), round_trip: list = ()) -> dict:
    """The shared checks as one algorithm's tests over its own cases: a test file takes them with
    ``globals().update(contract_tests(VALID, INVALID, ROUND_TRIP))``, so pytest collects them there, under its name."""
    tests = {}
    if valid:
        @pytest.mark.parametrize(VALID_FIELDS, valid)
        def test_valid_configs_resolve_to_expected_algorithms(level, raw, applied, notes, absent):
            assert_resolves(level, raw, applied, notes, absent)

        @pytest.mark.parametrize(("level", "raw"), level_and_dict(valid))
        def test_canonical_dict_is_a_fixed_point(level, raw):
            assert_fixed_point(level, raw)

        @pytest.mark.parametrize(("level", "raw"), level_and_dict(valid))
        def test_every_valid_case_agrees_with_autoboost(autoboost, level, raw):
            assert_agrees_with_autoboost(autoboost, level, raw)

        tests.update({f.__name__: f for f in (test_valid_configs_resolve_to_expected_algorithms,
                                              test_canonical_dict_is_a_fixed_point,
                                              test_every_valid_case_agrees_with_autoboost)})
    if invalid:
        @pytest.mark.parametrize(INVALID_FIELDS, invalid)
        def test_invalid_configs_raise_one_line_config_error(level, raw, path, substrings):
            assert_one_line_error(level, raw, path, substrings)

        tests[test_invalid_configs_raise_one_line_config_error.__name__] = test_invalid_configs_raise_one_line_config_error
    if round_trip:
        @pytest.mark.parametrize(("level", "raw"), round_trip)
        def test_canonical_dict_round_trips_through_autoboost(autoboost, level, raw):
            assert_round_trip(autoboost, level, raw)

        tests[test_canonical_dict_round_trips_through_autoboost.__name__] = test_canonical_dict_round_trips_through_autoboost
    return tests
