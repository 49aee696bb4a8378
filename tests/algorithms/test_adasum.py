"""adasum's rule (boosttune/algorithms/adasum/): its rank note when switched on, and that MindSpore's AutoBoost
agrees; the checks are the shared ones of tests/helpers/boost_cases.py (its rank rule: test_algorithms.py)."""

from __future__ import annotations

import pytest

from tests.helpers import boost_cases as cases
from tests.helpers.boost_cases import manual_mode

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


globals().update(cases.contract_tests(valid=VALID))
