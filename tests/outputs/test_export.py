"""Export of the selected trial, and (end to end) that MindSpore builds from the exported files what was measured."""

from __future__ import annotations

import json

import pytest

from boosttune.config.boost import parse_boost_config
from boosttune.errors import ConfigError, DataError
from boosttune.objective import ACCURACY
from boosttune.outputs.export import applicable_boost_config, export_best
from boosttune.stats.margin import Margin
from boosttune.tables.results import build_results_table
from tests.helpers.records import RAY_VERSION, make_record, sample_records

ONE_PT = Margin(ACCURACY, 1.0)

_BOOST_KEYS = ("less_bn", "grad_freeze", "grad_accumulation", "grad_accumulation_step", "dim_reduce")


def test_export_writes_the_selected_boost_config_less_what_the_run_does_not_read(table, tmp_path):
    config_path, recipe_path = export_best(table, tmp_path / "out", margin=ONE_PT, experiment_path="/runs/exp1")
    assert (config_path.name, recipe_path.name) == ("best_boost_config.json", "best_recipe.json")
    config = json.loads(config_path.read_text())
    trained = sample_records()[2]["boost_config_dict"]
    assert trained["common"] == {"device_number": 8} and "common" not in config  # 1 rank, no AdaSum or DimReduce
    assert config == {name: section for name, section in trained.items() if name != "common"}
    assert parse_boost_config(config, "O1").to_boost_config_dict() == trained  # what the trial trained, exactly
    recipe = json.loads(recipe_path.read_text())
    assert recipe["boost_level"] == "O1" and recipe["boost_config_dict"] == config
    assert recipe["boost_config_dict_left_out"] == {"common.device_number": (
        "8 is read only by adasum and dim_reduce, and neither acts in this recipe on 1 rank; MindSpore builds the "
        "same Model without it")}
    assert (recipe["amp_level"], recipe["loss_scale"]["kind"], recipe["optimizer"]["name"], recipe["batch_size"]) == \
        ("O0", "none", "momentum", 32)
    assert recipe["measured"]["step_speedup"] == pytest.approx(1.2)  # one seed: per step, named so
    assert recipe["measured"]["objective_gain"] == pytest.approx(-0.3)
    assert recipe["measured"]["time_to_target_s"] is None  # NaN becomes null: strict JSON
    assert recipe["selection"]["tolerance"] == 1.0 and not recipe["selection"]["fell_back_to_baseline"]
    assert recipe["selection"]["reason"].startswith("trial t_00002")
    assert recipe["provenance"] == {"device_target": "CPU", "mindspore_version": "2.10.0", "ray_version": RAY_VERSION,
                                    "boosttune_version": "0.1.0", "onednn_isa": "AVX2", "seed": 0,
                                    "trial_id": "t_00002", "experiment_path": "/runs/exp1"}
    assert 'boost_level="O1"' in recipe["model_kwargs"] and "FixedLossScaleManager(1.0" in recipe["model_kwargs"]
    assert recipe["recipe"]["model"] == "lenet5"


def test_export_falls_back_to_the_baseline(table, tmp_path):
    _, recipe_path = export_best(table, tmp_path, margin=Margin(ACCURACY, 0.1))
    recipe = json.loads(recipe_path.read_text())
    assert recipe["selection"]["fell_back_to_baseline"] and recipe["provenance"]["trial_id"] == "t_00000"
    assert recipe["boost_level"] == "O0" and "loss_scale_manager" not in recipe["model_kwargs"]


def test_export_errors(table, tmp_path):
    with pytest.raises(ConfigError, match="max_drop"):
        export_best(table, tmp_path, margin=Margin(ACCURACY, -1))
    with pytest.raises(DataError, match="no finished O0 baseline"):
        export_best(table[table["trial_id"] != "t_00000"], tmp_path, margin=ONE_PT)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("boost, level, world_size, kept", [
    ({"boost": {"mode": "manual", "less_bn": False, "grad_freeze": True}}, "O1", 1, {}),
    ({}, "O2", 1, {}),  # AdaSum switched on, but plain data parallel on one rank
    ({}, "O2", 16, {"device_number": 8}),  # AdaSum's servers of device_number ranks
    ({}, "O2", None, {"device_number": 8}),  # ranks not known: kept
    ({"boost": {"mode": "manual", "dim_reduce": True}}, "O1", 1, {"device_number": 8}),  # DimReduce's PCA ranks
    ({"less_bn": {"gc_flag": False}, "common": {"gradient_split_groups": [3]}}, "O1", 1,
     {"gradient_split_groups": [3]}),
    ({"boost": {"mode": "manual", "less_bn": False, "grad_freeze": True}, "common": {"gradient_split_groups": [3]}},
     "O1", 1, {}),
    ({"less_bn": {"gc_flag": False}}, "O0", 1, {}),  # O0: Model reads nothing of the dict
])
def test_the_exported_dict_keeps_the_common_settings_the_run_reads(boost, level, world_size, kept):
    parsed = parse_boost_config(boost, level)
    canonical = parsed.to_boost_config_dict()
    exported, left_out = applicable_boost_config(canonical, parsed.effective(), world_size)
    assert exported.get("common", {}) == kept
    assert set(left_out) == {f"common.{key}" for key in set(canonical["common"]) - set(kept)}
    assert {k: v for k, v in exported.items() if k != "common"} == {k: v for k, v in canonical.items() if k != "common"}
    assert parse_boost_config(exported, level).effective().applied == parsed.effective().applied


def _record_for(boost: dict, observed: dict) -> list[dict]:
    return [make_record("e_00000", preset="O0", sps=100.0, acc=0.9),
            make_record("e_00001", level="O1", boost=boost, sps=150.0, acc=0.9, observed=observed)]


@pytest.mark.parametrize("boost, observed", [
    ({"less_bn": {"gc_flag": False}},
     {"less_bn": True, "grad_freeze": True, "fn_heads": 1, "train_cell": "BoostTrainOneStepCell",
      "optimizer": "FreezeOpt"}),
    ({"boost": {"mode": "manual", "grad_freeze": False, "grad_accumulation": True}, "less_bn": {"gc_flag": False},
      "grad_accumulation": {"grad_accumulation_step": 4}},
     {"less_bn": True, "grad_accumulation": True, "grad_accumulation_step": 4, "fn_heads": 1,
      "train_cell": "BoostTrainOneStepCell"}),
], ids=["O1-less_bn-no-gc", "manual-accumulate-4"])
def test_mindspore_builds_what_the_export_says(tmp_path, boost, observed):
    """The exported dict (common.device_number left out on this 1-rank run) builds what the trial's full canonical
    dict builds: the same boost read back from the Model, and the same AutoBoost settings."""
    records = _record_for(boost, observed)
    config_path, recipe_path = export_best(build_results_table(records, ray_version=RAY_VERSION), tmp_path, margin=ONE_PT)
    with open(config_path) as f:
        loaded = json.load(f)
    with open(recipe_path) as f:
        recipe = json.load(f)
    trained = parse_boost_config(boost, "O1").to_boost_config_dict()
    assert "common" in trained and "common" not in loaded

    built, settings = _build(recipe["boost_level"], loaded)
    expected = records[1]["observed_boost"]
    assert {key: built[key] for key in _BOOST_KEYS} == {key: expected[key] for key in _BOOST_KEYS}
    assert built["train_cell"] == expected["train_cell"]
    assert (built, settings) == _build(recipe["boost_level"], trained)


def _build(level: str, boost_config_dict: dict) -> tuple[dict, dict]:
    """What MindSpore builds from a level and a dict: the boost read back from the Model, and AutoBoost's settings."""
    import mindspore as ms
    from mindspore import nn
    from mindspore.boost.boost import AutoBoost
    from mindspore.train import Accuracy

    from boosttune.algorithms.mindspore_state import reset_boost_state
    from boosttune.builtin.models import build_network
    from boosttune.trial.runner import observed_boost

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    reset_boost_state()  # AutoBoost is a process-wide singleton: the first dict of a process would win
    try:
        net = build_network("lenet5", 10, 1, 32)
        model = ms.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                         nn.Momentum(net.trainable_params(), 0.01, 0.9), metrics={"acc": Accuracy()},
                         boost_level=level, boost_config_dict=boost_config_dict,
                         loss_scale_manager=ms.FixedLossScaleManager(1.0, drop_overflow_update=False))
        settings = {k: v for k, v in vars(AutoBoost._instance).items()
                    if k not in ("boost_config_dict", "_param_processer")}
        return observed_boost(model), settings
    finally:
        reset_boost_state()
