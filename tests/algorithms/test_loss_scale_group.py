"""loss_scale_group's section and rule (boosttune/algorithms/loss_scale_group/): a section with no keys, its note,
and that MindSpore's AutoBoost agrees; the checks are the shared ones of tests/helpers/boost_cases.py."""

from __future__ import annotations

import pytest

from tests.helpers import boost_cases as cases
from tests.helpers.boost_cases import INVALID_FIELDS, VALID_FIELDS, level_and_dict, manual_mode

# (level, boost_config_dict, applied algorithms, note substrings, absent substrings)
VALID = [
    pytest.param(
        "O1",
        {"boost": manual_mode(loss_scale_group=True)},
        {"less_bn", "grad_freeze", "loss_scale_group"},
        ["loss_scale_group needs a GroupLossScaleManager"],
        [],
        id="O1-manual-loss_scale_group",
    ),
]

# (level, boost_config_dict, field path the message starts with, substrings)
INVALID = [
    pytest.param("O1", {"loss_scale_group": {"groups": 2}}, "loss_scale_group.groups",
                 ["unknown key; allowed: none"], id="loss_scale_group-has-no-keys"),
]


@pytest.mark.parametrize(VALID_FIELDS, VALID)
def test_valid_configs_resolve_to_expected_algorithms(level, raw, applied, notes, absent):
    cases.assert_resolves(level, raw, applied, notes, absent)


@pytest.mark.parametrize(INVALID_FIELDS, INVALID)
def test_invalid_configs_raise_one_line_config_error(level, raw, path, substrings):
    cases.assert_one_line_error(level, raw, path, substrings)


@pytest.mark.parametrize(("level", "raw"), level_and_dict(VALID))
def test_canonical_dict_is_a_fixed_point(level, raw):
    cases.assert_fixed_point(level, raw)


@pytest.mark.parametrize(("level", "raw"), level_and_dict(VALID))
def test_every_valid_case_agrees_with_autoboost(autoboost, level, raw):
    cases.assert_agrees_with_autoboost(autoboost, level, raw)
