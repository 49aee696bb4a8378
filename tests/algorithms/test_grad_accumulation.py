"""grad_accumulation's section and rule (boosttune/algorithms/grad_accumulation/): one step is no accumulation, and
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
            "boost": manual_mode(grad_freeze=False, grad_accumulation=True),
            "grad_accumulation": {"grad_accumulation_step": 4},
        },
        {"less_bn", "grad_accumulation"},
        [],
        ["grad_accumulation_step is 1"],
        id="O1-manual-accumulation-4",
    ),
    pytest.param(
        "O1",
        {"boost": manual_mode(grad_freeze=False, grad_accumulation=True)},
        {"less_bn"},
        ["grad_accumulation is on but grad_accumulation_step is 1: MindSpore turns it off"],
        [],
        id="O1-manual-accumulation-default-step-1",
    ),
    pytest.param(
        "O1",
        {"boost": manual_mode(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 1}},
        {"less_bn", "grad_freeze"},
        ["grad_accumulation_step is 1"],
        ["cannot both be on"],
        id="O1-accumulation-step-1-with-grad_freeze-is-fine",
    ),
]

# (level, boost_config_dict, field path the message starts with, substrings)
INVALID = [
    pytest.param("O1", {"grad_accumulation": {"grad_accumulation_step": 0}}, "grad_accumulation.grad_accumulation_step",
                 ["0 is invalid", "greater than or equal to 1"], id="accumulation-step-0"),
]

# (level, boost_config_dict) built into a real AutoBoost from its canonical dict
ROUND_TRIP = [
    pytest.param(
        "O1",
        {
            "boost": manual_mode(grad_freeze=False, grad_accumulation=True),
            "grad_accumulation": {"grad_accumulation_step": 4},
        },
        id="manual-accumulation-4",
    ),
]


globals().update(cases.contract_tests(valid=VALID, invalid=INVALID, round_trip=ROUND_TRIP))


def test_it_updates_once_per_k_batches_and_says_k_in_its_label():
    from boosttune.algorithms.grad_accumulation import ALGORITHM

    assert ALGORITHM.steps_per_update({"grad_accumulation": {"grad_accumulation_step": 4}}) == 4
    assert ALGORITHM.steps_per_update({}) == 1
    assert ALGORITHM.label({"grad_accumulation_step": 4}) == "grad_accumulation x4"
