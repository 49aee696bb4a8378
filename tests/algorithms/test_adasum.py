"""adasum's rule (boosttune/algorithms/adasum/): its rank note when switched on, and that MindSpore's AutoBoost
agrees; the checks are the shared ones of tests/helpers/boost_cases.py (its rank rule: test_algorithms.py)."""

from __future__ import annotations

import pytest

from tests.helpers import boost_cases as cases
from tests.helpers.boost_cases import VALID_FIELDS, level_and_dict, manual_mode

# (level, boost_config_dict, applied algorithms, note substrings, absent substrings)
VALID = [
    pytest.param(
        "O1",
        {"boost": manual_mode(adasum=True)},
        {"less_bn", "grad_freeze", "adasum"},
        ["adasum"],
        [],
        id="O1-manual-adasum",
    ),
]


@pytest.mark.parametrize(VALID_FIELDS, VALID)
def test_valid_configs_resolve_to_expected_algorithms(level, raw, applied, notes, absent):
    cases.assert_resolves(level, raw, applied, notes, absent)


@pytest.mark.parametrize(("level", "raw"), level_and_dict(VALID))
def test_canonical_dict_is_a_fixed_point(level, raw):
    cases.assert_fixed_point(level, raw)


@pytest.mark.parametrize(("level", "raw"), level_and_dict(VALID))
def test_every_valid_case_agrees_with_autoboost(autoboost, level, raw):
    cases.assert_agrees_with_autoboost(autoboost, level, raw)
