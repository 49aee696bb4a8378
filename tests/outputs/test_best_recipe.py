"""An exported best_recipe.json applied by a team's own training script (boosttune.load_best_recipe), and the
one-line errors of a file it cannot use."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from boosttune import BestRecipe, ConfigError, UnsupportedError, load_best_recipe
from boosttune.config.boost import parse_boost_config
from boosttune.config.recipe import parse_recipe
from boosttune.objective import ACCURACY
from boosttune.outputs.export import export_best
from boosttune.stats.margin import Margin
from boosttune.tables.results import build_results_table
from tests.helpers.records import RAY_VERSION, make_record

STEPS_PER_EPOCH, EPOCHS, BATCH = 8, 2, 32
LOSS_SCALE = 128.0
# A real GradientFreeze recipe as a search exports it: the trial's schedule tied to its steps, LessBN off (its
# gradient centralization has no CPU kernel), with mixed precision and a fixed loss scale.
BOOST = {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": True},
         "grad_freeze": {"param_groups": 2, "freeze_type": 1, "freeze_p": 0.5,
                         "total_steps": STEPS_PER_EPOCH * EPOCHS}}
OPTIMIZER = {"name": "momentum", "learning_rate": 0.05, "momentum": 0.9, "weight_decay": 1e-4,
             "lr_schedule": "cosine", "warmup_steps": 2}

# The team's script: its own network and data, plain mindspore.train.Model, boosttune only for the recipe.
# It prints what MindSpore built and trained as one JSON line.
USER_SCRIPT = '''
import json
import sys

import mindspore as ms
import numpy as np
from mindspore import nn
from mindspore.boost.boost import AutoBoost
from mindspore.train import Accuracy, Callback, Model
from sklearn.datasets import load_digits

import boosttune

ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
ms.set_seed(0)
np.random.seed(0)


class SmallCNN(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 16, 3), nn.BatchNorm2d(16)
        self.relu, self.flatten, self.fc = nn.ReLU(), nn.Flatten(), nn.Dense(16 * 8 * 8, 10)

    def construct(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.relu(self.bn2(self.conv2(x)))
        return self.fc(self.flatten(x))


class Losses(Callback):
    def __init__(self):
        self.values = []

    def on_train_step_end(self, run_context):
        self.values.append(float(run_context.original_args().net_outputs.asnumpy()))


digits = load_digits()
images = (digits.data[:256] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
train = ms.dataset.NumpySlicesDataset({"image": images, "label": digits.target[:256].astype(np.int32)},
                                      shuffle=False).batch(32, drop_remainder=True)

recipe = boosttune.load_best_recipe(sys.argv[1])
net = SmallCNN()
opt = recipe.build_optimizer(net, steps_per_epoch=train.get_dataset_size(), epochs=2)
model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), optimizer=opt,
              metrics={"acc": Accuracy()}, **recipe.model_kwargs(net))

before = net.conv1.weight.asnumpy().copy()
losses = Losses()
model.train(2, train, callbacks=[losses], dataset_sink_mode=False)
applied = AutoBoost._instance
train_cell = model._train_network
print(json.dumps({
    "boost_level": model._boost_level,
    "switches": applied.boost_config,
    "grad_freeze": {"param_groups": applied._param_groups, "freeze_type": applied._freeze_type,
                    "freeze_p": applied._freeze_p, "total_steps": applied._total_steps},
    "optimizer_built": type(model._optimizer).__name__,
    "freeze_schedule_steps": int(model._optimizer.train_strategy.shape[0]),
    "freeze_nets": len(train_cell.freeze_nets),
    "amp_level": model._amp_level,
    "precision": {"conv1": net.conv1.mixed_precision_type.name, "bn1": net.bn1._backbone.mixed_precision_type.name},
    "train_cell": type(train_cell).__name__,
    "manager": [type(model._loss_scale_manager).__name__, model._loss_scale_manager.get_loss_scale()],
    "sens": float(train_cell.sens),
    "optimizer_loss_scale": float(opt.loss_scale),
    "learning_rates": opt.learning_rate.learning_rate.asnumpy().tolist(),
    "losses": losses.values,
    "weights_moved": float(np.abs(net.conv1.weight.asnumpy() - before).max()),
    "accuracy": model.eval(train, dataset_sink_mode=False)["acc"],
}))
'''


def _document(**changes) -> dict:
    """A best_recipe.json's fields, as load_best_recipe reads them."""
    return {"boost_level": "O1", "boost_config_dict": {}, "amp_level": "O0", "loss_scale": {"kind": "none"},
            "optimizer": {"name": "momentum"}, **changes}


@pytest.fixture
def exported(tmp_path) -> Path:
    """best_recipe.json as ``boosttune tune`` writes it: a results table of a baseline and a boosted trial."""
    boosted = make_record("t_00001", level="O1", boost=BOOST, sps=150.0, acc=0.9)
    boosted["recipe"] = parse_recipe({
        "model": {"entry": "mynet:build"}, "batch_size": BATCH, "epochs": EPOCHS, "optimizer": OPTIMIZER,
        "amp_level": "O2", "loss_scale": {"kind": "fixed", "loss_scale": LOSS_SCALE},
        "boost_level": "O1", "boost_config_dict": BOOST}).to_dict()
    records = [make_record("t_00000", preset="O0", sps=100.0, acc=0.9), boosted]
    _, recipe_path = export_best(build_results_table(records, ray_version=RAY_VERSION), tmp_path / "run", margin=Margin(ACCURACY, 1.0))
    return recipe_path


def _cosine_with_warmup(updates: int) -> list[float]:
    """The schedule written out by hand: 2 warm-up updates, then a half cosine over the rest."""
    lr, warm = OPTIMIZER["learning_rate"], OPTIMIZER["warmup_steps"]
    return [lr * (step + 1) / warm if step < warm else
            0.5 * lr * (1 + math.cos(math.pi * (step - warm) / (updates - warm))) for step in range(updates)]


@pytest.mark.slow
def test_a_teams_script_trains_with_the_exported_recipe(exported, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(USER_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(exported)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=240, env={**os.environ, "GLOG_v": "3"})
    assert done.returncode == 0, done.stderr[-4000:]
    built = json.loads(done.stdout.strip().splitlines()[-1])

    assert built["boost_level"] == "O1"
    assert built["switches"] == parse_boost_config(BOOST, "O1").effective().applied
    assert built["grad_freeze"] == {key: BOOST["grad_freeze"][key] for key in built["grad_freeze"]}
    assert built["optimizer_built"] == "FreezeOpt" and built["freeze_nets"] == BOOST["grad_freeze"]["param_groups"]
    assert built["freeze_schedule_steps"] == int(STEPS_PER_EPOCH * EPOCHS * 1.01)  # MindSpore's own sizing
    assert built["amp_level"] == "O2" and built["precision"] == {"conv1": "FP16", "bn1": "FP32"}
    assert built["train_cell"] == "BoostTrainOneStepCell"
    assert built["manager"] == ["FixedLossScaleManager", LOSS_SCALE]
    assert built["sens"] == built["optimizer_loss_scale"] == LOSS_SCALE  # scaled, and divided back out
    assert built["learning_rates"] == pytest.approx(_cosine_with_warmup(STEPS_PER_EPOCH * EPOCHS), rel=1e-6)
    assert len(built["losses"]) == STEPS_PER_EPOCH * EPOCHS and all(map(math.isfinite, built["losses"]))
    assert built["weights_moved"] > 0 and built["accuracy"] > 0.5


def test_the_exported_file_reads_back_as_the_trial_ran(exported):
    recipe = load_best_recipe(exported)
    assert isinstance(recipe, BestRecipe) and recipe.source == str(exported)
    assert (recipe.boost_level, recipe.amp_level, recipe.loss_scale.kind, recipe.loss_scale.loss_scale) == \
        ("O1", "O2", "fixed", LOSS_SCALE)
    trained = parse_boost_config(BOOST, "O1").to_boost_config_dict()
    assert parse_boost_config(recipe.boost_config_dict, "O1").to_boost_config_dict() == trained
    assert recipe.boost_config_dict == {k: v for k, v in trained.items() if k != "common"}  # 1 rank: nothing reads it
    assert recipe.optimizer.model_dump(include=set(OPTIMIZER)) == OPTIMIZER
    assert recipe.batch_size == BATCH and recipe.boost.applied["grad_freeze"]
    assert load_best_recipe(json.loads(exported.read_text())) == \
        BestRecipe(**{**vars(recipe), "source": "<dict>"})


def test_schedule_and_loss_scale_follow_the_recipe():
    accumulate = load_best_recipe(_document(
        boost_config_dict={"boost": {"mode": "manual", "less_bn": False, "grad_freeze": False,
                                     "grad_accumulation": True}, "grad_accumulation": {"grad_accumulation_step": 4}},
        optimizer={"name": "momentum", "learning_rate": 0.1, "lr_schedule": "step", "step_gamma": 0.5}))
    # 10 batches an epoch, 3 epochs, one update per 4 batches: 3 updates an epoch (the last one short), 8 in all.
    assert accumulate.learning_rates(10, 3) == pytest.approx([0.1] * 3 + [0.05] * 3 + [0.025] * 2)
    assert accumulate.optimizer_loss_scale == 1.0
    fixed = load_best_recipe(_document(loss_scale={"kind": "fixed", "loss_scale": 64.0}))
    assert fixed.optimizer_loss_scale == 64.0
    checked = load_best_recipe(_document(loss_scale={"kind": "fixed", "loss_scale": 64.0,
                                                     "drop_overflow_update": True}))
    assert checked.optimizer_loss_scale == 1.0  # the overflow-checking cell unscales itself
    with pytest.raises(ConfigError, match=r"^steps_per_epoch: 0 is invalid"):
        fixed.learning_rates(0, 3)


def test_model_kwargs_without_boost_or_scale_leave_mindspore_defaults():
    kwargs = load_best_recipe(_document(boost_level="O0")).model_kwargs()
    assert kwargs == {"boost_level": "O0", "boost_config_dict": {}, "amp_level": "O0"}
    boosted = load_best_recipe(_document()).model_kwargs()
    manager = boosted["loss_scale_manager"]  # boost's train cell loses the loss without one (MindSpore 2.10)
    assert (type(manager).__name__, manager.get_loss_scale(), manager.get_drop_overflow_update()) == \
        ("FixedLossScaleManager", 1.0, False)


@pytest.mark.parametrize("source, message", [
    ("missing.json", r"missing\.json: no such file$"),
    ({"boost": {"mode": "manual"}, "grad_freeze": {}},
     r"^<dict>: not a best_recipe\.json: no boost_level, .*this looks like best_boost_config\.json"),
    ("list.json", r"^list\.json: holds a list; expected a best_recipe\.json object$"),
    (_document(loss_scale={"kind": "huge"}), r"^<dict>: loss_scale\.kind: 'huge' is invalid"),
    (_document(optimizer={"name": "momentum", "learning_rate": -1}), r"^<dict>: optimizer\.learning_rate: -1"),
    (_document(boost_config_dict={"grad_freez": {}}), r"^<dict>: boost_config_dict\.grad_freez: unknown key "
                                                       r"\(did you mean grad_freeze\?\)"),
    (_document(loss_scale={"kind": "group"}), r"^<dict>: loss_scale\.kind: 'group' needs boost_config_dict"),
], ids=["missing-file", "boost-config-file", "not-an-object", "loss-scale-kind", "learning-rate", "boost-key",
        "group-without-switch"])
def test_a_file_it_cannot_use_fails_in_one_line(tmp_path, monkeypatch, source, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match=message) as caught:
        load_best_recipe(source)
    assert "\n" not in str(caught.value)


def test_fields_this_process_cannot_honour_are_named(tmp_path):
    dim_reduce = _document(boost_config_dict={"boost": {"mode": "manual", "less_bn": False, "grad_freeze": False,
                                                        "dim_reduce": True},
                                              "dim_reduce": {"weight_load_dir": str(tmp_path / "gone")}})
    with pytest.raises(ConfigError, match=r"boost_config_dict\.dim_reduce\.weight_load_dir: '.*gone' is not a folder"):
        load_best_recipe(dim_reduce).model_kwargs()
    with pytest.raises(UnsupportedError, match=r"^<dict>: loss_scale\.kind: 'dynamic' cannot run on CPU"):
        load_best_recipe(_document(loss_scale={"kind": "dynamic"})).model_kwargs()
