"""loss_scale_group's section and rule (boosttune/algorithms/loss_scale_group/): a section with no keys, its note,
and that MindSpore's AutoBoost agrees; the checks are the shared ones of tests/helpers/boost_cases.py."""

from __future__ import annotations

import pytest

from tests.helpers import boost_cases as cases
from tests.helpers.boost_cases import manual_mode

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


globals().update(cases.contract_tests(valid=VALID, invalid=INVALID))


def test_the_switch_and_a_group_loss_scale_come_together():
    from boosttune.algorithms.loss_scale_group import ALGORITHM
    from boosttune.config.recipe import parse_recipe
    from boosttune.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^loss_scale.kind: 'none' is invalid with boost loss_scale_group on"):
        ALGORITHM.recipe_rule(parse_recipe({}), True)
    with pytest.raises(ConfigError, match=r"^loss_scale.kind: 'group' needs boost_config_dict boost.loss_scale_group"):
        ALGORITHM.recipe_rule(parse_recipe({"loss_scale": {"kind": "group"}}), False)
    ALGORITHM.recipe_rule(parse_recipe({}), False)
