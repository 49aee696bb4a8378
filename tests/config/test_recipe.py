"""The typed trial recipe: defaults, rejected input, combination rules, to_dict round trip."""

from __future__ import annotations

import json

import pytest
import yaml

from boosttune.config.boost import BoostConfig
from boosttune.config.recipe import (DATASETS, DATASETS_WITH_PATH, MODELS, SHIPPED_FASHION_MNIST, SHIPPED_FASHION_TRAIN,
                                     TrialRecipe, parse_recipe)
from boosttune.errors import ConfigError


def test_defaults():
    recipe = parse_recipe()
    assert isinstance(recipe, TrialRecipe)
    assert recipe == parse_recipe({}) == parse_recipe(None)
    assert recipe.model == "lenet5"
    assert recipe.data.name == "digits" and recipe.data.path is None
    assert recipe.data.val_fraction == 0.2
    assert recipe.batch_size == 32
    assert recipe.epochs == 1
    assert recipe.steps_per_epoch is None
    assert recipe.seed == 0
    assert recipe.optimizer.name == "momentum"
    assert recipe.optimizer.learning_rate == 0.01
    assert recipe.optimizer.momentum == 0.9
    assert recipe.optimizer.lr_schedule == "constant"
    assert recipe.amp_level == "O0"
    assert recipe.loss_scale.kind == "none"
    assert recipe.boost_level == "O0"
    assert recipe.boost_config_dict == {}
    assert recipe.device_target == "CPU"
    assert recipe.warmup_steps == 3
    assert recipe.target is None
    assert recipe.eval_every_epoch is True
    assert recipe.dim_reduce_stage1_steps is None


def test_default_boost_is_plain_training():
    boost = parse_recipe().boost
    assert isinstance(boost, BoostConfig)
    assert boost.level == "O0"
    assert boost.effective().active == ()


def test_overrides_win_over_document():
    recipe = parse_recipe({"batch_size": 8, "epochs": 3}, batch_size=16, boost_level="O1")
    assert recipe.batch_size == 16
    assert recipe.epochs == 3
    assert recipe.boost_level == "O1"
    assert recipe.boost.effective().active == ("less_bn", "grad_freeze")


def test_document_is_not_mutated():
    doc = {"batch_size": 8, "optimizer": {"name": "sgd"}}
    parse_recipe(doc, batch_size=4)
    assert doc == {"batch_size": 8, "optimizer": {"name": "sgd"}}


def test_fashion_mnist_default_path():
    assert parse_recipe({"data": {"name": "fashion_mnist"}}).data.resolved_path == "/usr/share/datasets/fashion-mnist"
    assert parse_recipe({"data": {"name": "fashion_mnist", "path": "/d"}}).data.resolved_path == "/d"
    assert parse_recipe().data.resolved_path is None


def test_fashion_mnist_reads_the_shipped_rows_when_the_train_limit_fits_them():
    """The main job (train_limit 4096) reads the rows that ship in the package on every machine; more training
    images than ship come from Debian's package."""
    shipped = parse_recipe({"data": {"name": "fashion_mnist", "train_limit": SHIPPED_FASHION_TRAIN}})
    assert shipped.data.resolved_path == str(SHIPPED_FASHION_MNIST) and SHIPPED_FASHION_MNIST.is_dir()
    more = parse_recipe({"data": {"name": "fashion_mnist", "train_limit": SHIPPED_FASHION_TRAIN + 1}})
    assert more.data.resolved_path == "/usr/share/datasets/fashion-mnist"
    named = parse_recipe({"data": {"name": "fashion_mnist", "train_limit": 64, "path": "/d"}})
    assert named.data.resolved_path == "/d"


@pytest.mark.parametrize("name", DATASETS_WITH_PATH)
def test_every_dataset_read_from_a_folder_is_accepted_with_a_path(name):
    assert parse_recipe({"data": {"name": name, "path": "/data/x"}}).data.name == name


@pytest.mark.parametrize("name", sorted(set(DATASETS) - set(DATASETS_WITH_PATH)))
def test_a_path_for_a_dataset_that_reads_none_is_refused(name):
    with pytest.raises(ConfigError, match=f"data set '{name}' reads no folder"):
        parse_recipe({"data": {"name": name, "path": "/data/x"}})


@pytest.mark.parametrize("model", MODELS)
def test_every_model_is_accepted(model):
    assert parse_recipe({"model": model}).model == model


GROUP_BOOST = {"boost": {"mode": "manual", "loss_scale_group": True}}

INVALID = [
    pytest.param({"batch_size": 0}, "batch_size", ["0 is invalid", "greater than or equal to 1"], id="batch_size-0"),
    pytest.param({"batch_size": "32"}, "batch_size", ["'32' is invalid", "expected an integer"], id="batch_size-str"),
    pytest.param({"epochs": 2.5}, "epochs", ["2.5 is invalid", "expected an integer"], id="epochs-2.5"),
    pytest.param({"epochs": True}, "epochs", ["True is invalid", "expected an integer"], id="epochs-bool"),
    pytest.param(
        {"model": "vgg"},
        "model",
        ["'vgg' is invalid", "'lenet5'", "'resnet8'", "'resnet20'", "'resnet18'", "'resnet50'"],
        id="model-vgg",
    ),
    pytest.param(
        {"optimizer": {"name": "adagrad"}},
        "optimizer.name",
        ["'adagrad' is invalid", "'momentum'", "'sgd'", "'adam'", "'lamb'", "'thor'"],
        id="optimizer-adagrad",
    ),
    pytest.param(
        {"optimizer": {"learning_rte": 0.1}},
        "optimizer.learning_rte",
        ["unknown key (did you mean learning_rate?)", "allowed: name, learning_rate, momentum"],
        id="optimizer-learning_rte",
    ),
    pytest.param({"batchsize": 8}, "batchsize", ["unknown key (did you mean batch_size?)"], id="top-level-batchsize"),
    pytest.param({"data": {"nme": "digits"}}, "data.nme", ["unknown key (did you mean name?)"], id="data-nme"),
    pytest.param({"optimizer": {"learning_rate": 0}}, "optimizer.learning_rate", ["0 is invalid"], id="lr-0"),
    pytest.param(
        {"optimizer": {"learning_rate": float("inf")}},
        "optimizer.learning_rate",
        ["inf is invalid", "finite"],
        id="lr-inf",
    ),
    pytest.param({"optimizer": {"momentum": 1.0}}, "optimizer.momentum", ["1.0 is invalid", "less than 1"], id="momentum-1"),
    pytest.param({"optimizer": {"lr_schedule": "linear"}}, "optimizer.lr_schedule", ["'linear' is invalid"], id="schedule"),
    pytest.param(
        {"data": {"name": "mnist_idx"}},
        "data",
        ["is invalid", "data set 'mnist_idx' needs data.path"],
        id="mnist_idx-without-path",
    ),
    pytest.param({"data": {"name": "cifar10"}}, "data", ["'cifar10' needs data.path"], id="cifar10-without-path"),
    pytest.param({"data": {"name": "imagenet"}}, "data.name", ["'imagenet' is invalid", "'digits'"], id="data-imagenet"),
    pytest.param({"data": {"val_fraction": 1.0}}, "data.val_fraction", ["1.0 is invalid"], id="val_fraction-1"),
    pytest.param({"data": {"image_size": 4}}, "data.image_size", ["4 is invalid", "greater than or equal to 8"],
                 id="image_size-4"),
    pytest.param({"amp_level": "O4"}, "amp_level", ["'O4' is invalid"], id="amp_level"),
    pytest.param({"device_target": "cpu"}, "device_target", ["'cpu' is invalid", "'CPU'"], id="device-lowercase"),
    pytest.param({"target_accuracy": 0.9}, "target_accuracy", ["renamed; use target"], id="target_accuracy-renamed"),
    pytest.param({"target": "high"}, "target", ["is invalid"], id="target"),
    pytest.param({"dim_reduce_stage1_steps": 1}, "dim_reduce_stage1_steps", ["1 is invalid"], id="stage1-steps-1"),
    pytest.param({"loss_scale": {"kind": "auto"}}, "loss_scale.kind", ["'auto' is invalid"], id="loss_scale-kind"),
    pytest.param(
        {"loss_scale": {"kind": "group"}},
        "loss_scale.kind",
        ["'group' needs boost_config_dict boost.loss_scale_group: true", "mode manual"],
        id="group-without-switch",
    ),
    pytest.param(
        {"loss_scale": {"kind": "group"}, "boost_level": "O0", "boost_config_dict": GROUP_BOOST},
        "loss_scale.kind",
        ["'group' needs"],
        id="group-with-switch-at-O0",
    ),
    pytest.param(
        {"loss_scale": {"kind": "group"}, "boost_level": "O1", "boost_config_dict": {"loss_scale_group": {}}},
        "loss_scale.kind",
        ["'group' needs"],
        id="group-with-section-but-auto-mode",
    ),
    pytest.param(
        {"loss_scale": {"kind": "dynamic"}, "boost_level": "O1", "boost_config_dict": GROUP_BOOST},
        "loss_scale.kind",
        ["'dynamic' is invalid with boost loss_scale_group on", "allowed: 'group'"],
        id="switch-without-group-kind",
    ),
    pytest.param(
        {"optimizer": {"name": "thor"}, "boost_level": "O1"},
        "optimizer.name",
        ["'thor' is invalid with boost_level O1/O2", "THOR runs with boost_level O0"],
        id="thor-O1",
    ),
    pytest.param(
        {"optimizer": {"name": "thor"}, "boost_level": "O2"}, "optimizer.name", ["'thor' is invalid"], id="thor-O2"
    ),
    pytest.param(
        {"optimizer": {"name": "thor"}, "loss_scale": {"kind": "fixed"}},
        "loss_scale.kind",
        ["'fixed' is invalid with THOR", "allowed: 'none'"],
        id="thor-loss-scale",
    ),
    pytest.param({"boost_level": "O3"}, "boost_level", ["'O3' is invalid", "'O0', 'O1' or 'O2'"], id="boost_level-O3"),
    pytest.param(
        {"boost_config_dict": "manual"}, "boost_config_dict", ["'manual' is invalid", "expected a mapping"],
        id="boost_config_dict-str"
    ),
    # boost errors come back prefixed with boost_config_dict.
    pytest.param(
        {"boost_level": "O1", "boost_config_dict": {"bost": {"mode": "manual"}}},
        "boost_config_dict.bost",
        ["unknown key (did you mean boost?)"],
        id="boost-bost",
    ),
    pytest.param(
        {"boost_level": "O1", "boost_config_dict": {"dim_reduce": {"n_component": 8}}},
        "boost_config_dict.dim_reduce.n_component",
        ["did you mean n_components?"],
        id="boost-n_component",
    ),
    pytest.param(
        {"boost_level": "O1", "boost_config_dict": {"boost": {"mode": "manual", "less_bn": "false"}}},
        "boost_config_dict.boost.less_bn",
        ["'false' is invalid", "JSON boolean"],
        id="boost-string-false",
    ),
    pytest.param(
        {
            "boost_level": "O1",
            "boost_config_dict": {
                "boost": {"mode": "manual", "grad_accumulation": True},
                "grad_accumulation": {"grad_accumulation_step": 4},
            },
        },
        "boost_config_dict.boost",
        ["grad_freeze and grad_accumulation cannot both be on"],
        id="boost-freeze+accumulation",
    ),
    pytest.param(
        {"boost_level": "O1", "boost_config_dict": {"grad_freeze": {"freeze_type": 0, "freeze_p": 1.0}}},
        "boost_config_dict.grad_freeze.freeze_p",
        ["invalid with freeze_type 0"],
        id="boost-freeze_type0-p1",
    ),
    pytest.param(
        {"boost_level": "O1", "boost_config_dict": {"dim_reduce": {"weight_load_dir": "runs/lr=0.1,n=8"}}},
        "boost_config_dict.dim_reduce.weight_load_dir",
        ["'runs/lr=0.1,n=8' is invalid"],
        id="boost-weight_load_dir",
    ),
]


@pytest.mark.parametrize(("doc", "path", "substrings"), INVALID)
def test_invalid_recipes_raise_one_line_config_error(doc, path, substrings):
    with pytest.raises(ConfigError) as info:
        parse_recipe(doc)
    message = str(info.value)
    assert "\n" not in message, message
    assert message.startswith(path + ": "), message
    for expected in substrings:
        assert expected in message, f"{expected!r} not in {message!r}"


def test_invalid_override_is_reported_like_the_document():
    with pytest.raises(ConfigError, match=r"^batch_size: 0 is invalid"):
        parse_recipe({"batch_size": 8}, batch_size=0)


def test_boost_errors_are_prefixed_but_level_errors_are_not():
    with pytest.raises(ConfigError) as info:
        parse_recipe({"boost_level": "O1", "boost_config_dict": {"common": {"device_num": 8}}})
    assert str(info.value).startswith("boost_config_dict.common.device_num: unknown key (did you mean device_number?)")
    assert "boost_config_dict.boost_config_dict" not in str(info.value)


def test_thor_at_o0_without_loss_scale_is_valid():
    recipe = parse_recipe({"optimizer": {"name": "thor"}})
    assert recipe.optimizer.name == "thor" and recipe.boost_level == "O0"


def test_group_loss_scale_with_switch_is_valid():
    recipe = parse_recipe({"loss_scale": {"kind": "group"}, "boost_level": "O1", "boost_config_dict": GROUP_BOOST})
    assert "loss_scale_group" in recipe.boost.effective().active


ROUND_TRIP = [
    pytest.param({}, id="defaults"),
    pytest.param(
        {
            "model": "resnet20",
            "data": {"name": "cifar10", "path": "/data/cifar10", "train_limit": 512, "val_limit": 128, "image_size": 32},
            "batch_size": 64,
            "epochs": 3,
            "steps_per_epoch": 10,
            "seed": 7,
            "optimizer": {
                "name": "sgd",
                "learning_rate": 0.1,
                "momentum": 0.0,
                "weight_decay": 1e-4,
                "lr_schedule": "step",
                "warmup_steps": 5,
                "step_gamma": 0.5,
                "step_every_epochs": 2,
            },
            "amp_level": "O2",
            "loss_scale": {"kind": "dynamic", "init_loss_scale": 1024.0, "scale_factor": 4, "scale_window": 50},
            "boost_level": "O1",
            "boost_config_dict": {"boost": {"mode": "manual", "grad_freeze": False}, "less_bn": {"gc_flag": False}},
            "device_target": "GPU",
            "warmup_steps": 0,
            "target": 0.9,
            "eval_every_epoch": False,
        },
        id="everything-set",
    ),
    pytest.param(
        {
            "boost_level": "O2",
            "boost_config_dict": {
                "boost": {"mode": "manual", "dim_reduce": True},
                "dim_reduce": {"n_components": 8, "weight_load_dir": "runs/stage1"},
            },
            "dim_reduce_stage1_steps": 20,
        },
        id="dim_reduce",
    ),
    pytest.param(
        {"loss_scale": {"kind": "group"}, "boost_level": "O1", "boost_config_dict": GROUP_BOOST, "amp_level": "auto"},
        id="group-loss-scale",
    ),
    pytest.param(
        {"optimizer": {"name": "thor", "learning_rate": 0.05}, "data": {"name": "fashion_mnist"}, "model": "resnet8"},
        id="thor",
    ),
]


@pytest.mark.parametrize("doc", ROUND_TRIP)
def test_to_dict_round_trip(doc):
    recipe = parse_recipe(doc)
    as_dict = recipe.to_dict()

    assert parse_recipe(as_dict) == recipe
    # to_dict is plain JSON / YAML: a recipe file written from it reads back to the same recipe
    assert parse_recipe(json.loads(json.dumps(as_dict))) == recipe
    assert parse_recipe(yaml.safe_load(yaml.safe_dump(as_dict))) == recipe
    # and it is complete: every field is present
    assert set(as_dict) == set(TrialRecipe.model_fields)
    assert recipe.to_dict() == parse_recipe(as_dict).to_dict()
