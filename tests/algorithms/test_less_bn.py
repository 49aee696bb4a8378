"""less_bn's section and rule (boosttune/algorithms/less_bn/): gc_flag and its Centralization note, and that
MindSpore's AutoBoost agrees; the checks are the shared ones of tests/helpers/boost_cases.py."""

from __future__ import annotations

import pytest

from tests.helpers import boost_cases as cases
from tests.helpers.boost_cases import manual_mode

# (level, boost_config_dict, applied algorithms, note substrings, absent substrings)
VALID = [
    pytest.param(
        "O1",
        {
            "boost": manual_mode(grad_freeze=False),
            "less_bn": {"gc_flag": False},
            "common": {"gradient_split_groups": [2, 4]},
        },
        {"less_bn"},
        [],
        ["Centralization", "gradient_split_groups"],
        id="O1-manual-less_bn-gc_flag-false-groups",
    ),
]

# (level, boost_config_dict) built into a real AutoBoost from its canonical dict
ROUND_TRIP = [
    pytest.param(
        "O1",
        {
            "boost": manual_mode(less_bn=True, grad_freeze=False),
            "less_bn": {"gc_flag": False},
            "common": {"gradient_split_groups": [2, 6]},
        },
        id="manual-less_bn-gc_flag-false-groups",
    ),
]


globals().update(cases.contract_tests(valid=VALID, round_trip=ROUND_TRIP))


def test_gradient_centralization_is_a_probe_knob_of_its_own():
    from boosttune.algorithms.less_bn import ALGORITHM

    assert ALGORITHM.sub_knobs({"gc_flag": True}) == ("boost.less_bn.gc_flag",)
    assert ALGORITHM.sub_knobs({"gc_flag": False}) == ()
