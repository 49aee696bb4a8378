"""grad_freeze's section and rules (boosttune/algorithms/grad_freeze/): what they accept, refuse and note, and that
MindSpore's AutoBoost agrees; the checks are the shared ones of tests/helpers/boost_cases.py."""

from __future__ import annotations

import pytest

from tests.helpers import boost_cases as cases
from tests.helpers.boost_cases import manual_mode

# (level, boost_config_dict, applied algorithms, note substrings, absent substrings)
VALID = [
    pytest.param(
        "O0",
        {
            "boost": manual_mode(grad_freeze=True, grad_accumulation=True),
            "grad_accumulation": {"grad_accumulation_step": 4},
        },
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
        {
            "boost": manual_mode(less_bn=False),
            "grad_freeze": {"param_groups": 4, "freeze_type": 0, "freeze_p": 0.5, "total_steps": 100},
        },
        {"grad_freeze"},
        [],
        ["freezes nothing"],
        id="O1-manual-custom-grad_freeze",
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
        "O1", {"grad_freeze": {"param_groups": 1}}, {"less_bn", "grad_freeze"}, ["freezes nothing"], [],
        id="O1-one-group"
    ),
    pytest.param(
        "O1",
        {"grad_freeze": {"freeze_p": 1}},
        {"less_bn", "grad_freeze"},
        ["freezes nothing"],
        [],
        id="O1-freeze_p-int-1-is-a-number",
    ),
]

# (level, boost_config_dict, field path the message starts with, substrings)
INVALID = [
    # ranges
    pytest.param("O1", {"grad_freeze": {"freeze_p": 1.5}}, "grad_freeze.freeze_p",
                 ["1.5 is invalid", "less than or equal to 1"], id="freeze_p-1.5"),
    pytest.param("O1", {"grad_freeze": {"freeze_p": -0.1}}, "grad_freeze.freeze_p",
                 ["-0.1 is invalid", "greater than or equal to 0"], id="freeze_p-negative"),
    pytest.param("O1", {"grad_freeze": {"freeze_type": 2}}, "grad_freeze.freeze_type",
                 ["2 is invalid", "must be 0 (continuous) or 1 (interval)"], id="freeze_type-2"),
    pytest.param("O1", {"grad_freeze": {"param_groups": 0}}, "grad_freeze.param_groups",
                 ["0 is invalid", "greater than or equal to 1"], id="param_groups-0"),
    pytest.param("O1", {"grad_freeze": {"total_steps": 0}}, "grad_freeze.total_steps", ["0 is invalid"],
                 id="total_steps-0"),
    # combinations MindSpore crashes on
    pytest.param(
        "O1",
        {"boost": manual_mode(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 4}},
        "boost",
        [
            "grad_freeze and grad_accumulation cannot both be on",
            "'_TrainFreezeCell' object has no attribute 'optimizer'",
        ],
        id="grad_freeze+grad_accumulation",
    ),
    pytest.param(
        "O2",
        {
            "boost": manual_mode(less_bn=False, grad_accumulation=True),
            "grad_accumulation": {"grad_accumulation_step": 2},
        },
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
]

# (level, boost_config_dict) built into a real AutoBoost from its canonical dict
ROUND_TRIP = [
    pytest.param(
        "O1",
        {
            "boost": manual_mode(less_bn=False),
            "grad_freeze": {"param_groups": 4, "freeze_type": 0, "freeze_p": 0.5, "total_steps": 1000},
            "common": {"device_number": 2},
        },
        id="manual-custom-grad_freeze",
    ),
]


globals().update(cases.contract_tests(valid=VALID, invalid=INVALID, round_trip=ROUND_TRIP))


def test_its_schedule_spans_the_runs_steps_unless_the_recipe_set_it():
    from boosttune.algorithms.grad_freeze import ALGORITHM

    section = {"freeze_p": 0.5, "total_steps": 65536}
    ALGORITHM.sized_to_run(section, frozenset({"freeze_p"}), 640)
    assert section["total_steps"] == 640
    ALGORITHM.sized_to_run(section, frozenset({"total_steps"}), 99)
    assert section["total_steps"] == 640  # the recipe's own length is kept
    assert ALGORITHM.label({"freeze_p": 0.59374}) == "grad_freeze p=0.594" and ALGORITHM.label({}) is None
    # its parameter groups, when not MindSpore's 10: each compiles a graph, so they tell two recipes apart per job
    assert ALGORITHM.label({"freeze_p": 0.5, "param_groups": 10}) == "grad_freeze p=0.5"
    assert ALGORITHM.label({"freeze_p": 0.5, "param_groups": 2}) == "grad_freeze p=0.5 on 2 groups"


def test_it_declares_the_variations_a_person_tries_first_middle_then_higher_then_lower_freeze_p_on_two_groups():
    from boosttune.algorithms.grad_freeze import ALGORITHM
    from boosttune.algorithms.less_bn import ALGORITHM as LESS_BN
    from tests.helpers.space import cpu_context

    points = ALGORITHM.informed(cpu_context())
    alone = [p for p in points if p.over == "O0"]
    assert [p.params["grad_freeze.freeze_p"] for p in alone] == [0.5, 0.7, 0.3]
    # the fewest groups the search draws: each group is a graph compiled on first use, paid by every job
    assert all(p.params["boost.grad_freeze"] and p.params["grad_freeze.param_groups"] == 2 for p in alone)
    assert [p.label for p in alone] == [f"grad_freeze p={p} on 2 groups" for p in (0.5, 0.7, 0.3)]
    # the preset's variations change only its freeze_p
    variations = [p for p in points if p.over == "O1"]
    assert [dict(p.params) for p in variations] == [{"grad_freeze.freeze_p": 0.3}, {"grad_freeze.freeze_p": 0.5}]
    # ranked together (boosttune.algorithms.order.INFORMED): alone before LessBN alone, the preset's variations last
    from boosttune.space import informed_points
    from tests.helpers.space import BASE

    (less_bn,) = LESS_BN.informed(cpu_context())
    labels = [label for label, _ in informed_points(cpu_context(), BASE)]
    assert labels == [p.label for p in alone] + [less_bn.label] + [p.label for p in variations]
