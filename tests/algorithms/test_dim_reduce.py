"""dim_reduce's section and rule (boosttune/algorithms/dim_reduce/): its bounds and paths, what it replaces, and that
MindSpore's AutoBoost agrees; the checks are the shared ones of tests/helpers/boost_cases.py."""

from __future__ import annotations

import pytest

from boosttune.config.boost import parse_boost_config
from tests.helpers import boost_cases as cases
from tests.helpers.boost_cases import manual_mode

# (level, boost_config_dict, applied algorithms, note substrings, absent substrings)
VALID = [
    pytest.param(
        "O1",
        {"boost": manual_mode(dim_reduce=True)},
        {"dim_reduce"},
        ["dim_reduce replaces the optimizer and skips less_bn, grad_freeze", "dim_reduce needs weight_load_dir"],
        ["Centralization"],
        id="O1-manual-dim_reduce-skips-preset",
    ),
    pytest.param(
        "O2",
        {
            "boost": manual_mode(dim_reduce=True),
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
            "boost": manual_mode(less_bn=False, grad_freeze=False, dim_reduce=True),
            "dim_reduce": {"pca_mat_path": "/tmp/pca_mat.npy", "timeout": 60},
        },
        {"dim_reduce"},
        ["SGD(learning_rate=1)"],
        ["skips", "needs weight_load_dir"],
        id="O1-manual-dim_reduce-pca_mat_path",
    ),
]

# (level, boost_config_dict, field path the message starts with, substrings)
INVALID = [
    # ranges
    pytest.param("O1", {"dim_reduce": {"rho": 1.0}}, "dim_reduce.rho", ["1.0 is invalid", "less than 1"], id="rho-1"),
    pytest.param("O1", {"dim_reduce": {"alpha": 0.0}}, "dim_reduce.alpha", ["0.0 is invalid", "greater than 0"],
                 id="alpha-0"),
    pytest.param("O1", {"dim_reduce": {"alpha": float("inf")}}, "dim_reduce.alpha", ["inf is invalid", "finite"],
                 id="alpha-inf"),
    pytest.param("O1", {"dim_reduce": {"gamma": float("nan")}}, "dim_reduce.gamma", ["nan is invalid"], id="gamma-nan"),
    pytest.param("O1", {"dim_reduce": {"n_components": 0}}, "dim_reduce.n_components", ["0 is invalid"],
                 id="n_components-0"),
    pytest.param("O1", {"dim_reduce": {"timeout": 0}}, "dim_reduce.timeout", ["0 is invalid"], id="timeout-0"),
    # the official sample's typo, with did-you-mean
    pytest.param("O1", {"boost": manual_mode(dim_reduce=True), "dim_reduce": {"n_component": 32}},
                 "dim_reduce.n_component",
                 ["unknown key (did you mean n_components?)", "allowed: rho, gamma, alpha, sigma, n_components"],
                 id="official-sample-n_component"),
    # paths
    pytest.param("O1", {"dim_reduce": {"pca_mat_path": "pca_mat.npz"}}, "dim_reduce.pca_mat_path",
                 ["'pca_mat.npz' is invalid", ".npy"], id="pca_mat_path-npz"),
    pytest.param("O1", {"dim_reduce": {"pca_mat_path": 5}}, "dim_reduce.pca_mat_path", ["expected a string"],
                 id="pca_mat_path-int"),
    pytest.param("O1", {"dim_reduce": {"weight_load_dir": "runs/lr=0.1,n=8"}}, "dim_reduce.weight_load_dir",
                 ["'runs/lr=0.1,n=8' is invalid", "[_A-Za-z0-9/.-]"], id="weight_load_dir-comma-equals"),
    pytest.param("O1", {"dim_reduce": {"weight_load_dir": "runs/a,b"}}, "dim_reduce.weight_load_dir", ["is invalid"],
                 id="weight_load_dir-comma"),
    pytest.param("O1", {"dim_reduce": {"weight_load_dir": "runs/lr=0.1"}}, "dim_reduce.weight_load_dir",
                 ["is invalid"], id="weight_load_dir-equals"),
    pytest.param("O1", {"dim_reduce": {"weight_load_dir": "my runs/ckpt"}}, "dim_reduce.weight_load_dir",
                 ["is invalid"], id="weight_load_dir-space"),
]

# (level, boost_config_dict) built into a real AutoBoost from its canonical dict
ROUND_TRIP = [
    pytest.param(
        "O2",
        {
            "boost": manual_mode(dim_reduce=True),
            "dim_reduce": {"rho": 0.6, "n_components": 8, "sigma": 0.3, "timeout": 60, "weight_load_dir": "runs/s1"},
        },
        id="manual-dim_reduce",
    ),
]


globals().update(cases.contract_tests(valid=VALID, invalid=INVALID, round_trip=ROUND_TRIP))


def test_dim_reduce_keeps_switches_but_not_applied():
    eff = parse_boost_config({"boost": manual_mode(dim_reduce=True)}, "O2").effective()
    assert eff.switches["less_bn"] and eff.switches["grad_freeze"] and eff.switches["adasum"]
    assert eff.active == ("dim_reduce",)


def test_a_loss_scale_it_cannot_unscale_and_a_missing_checkpoint_folder_are_refused(tmp_path):
    from boosttune.algorithms.dim_reduce import ALGORITHM
    from boosttune.config.recipe import parse_recipe
    from boosttune.errors import ConfigError

    scaled = parse_recipe({"loss_scale": {"kind": "fixed", "loss_scale": 128.0}})
    with pytest.raises(ConfigError, match=r"^loss_scale.kind: 'fixed' is invalid with dim_reduce"):
        ALGORITHM.recipe_rule(scaled, True)
    ALGORITHM.recipe_rule(scaled, False)  # not applied: no say
    ALGORITHM.recipe_rule(parse_recipe({"loss_scale": {"kind": "fixed", "loss_scale": 1.0}}), True)
    with pytest.raises(ConfigError, match=r"^best_recipe.json: boost_config_dict.dim_reduce.weight_load_dir: None"):
        ALGORITHM.check_here({"dim_reduce": {}}, "best_recipe.json")
    ALGORITHM.check_here({"dim_reduce": {"weight_load_dir": str(tmp_path)}}, "best_recipe.json")
