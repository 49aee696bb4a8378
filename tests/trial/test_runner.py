"""End-to-end trials on real MindSpore and real data: each CPU boost algorithm changes training."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from boosttune.config.recipe import parse_recipe
from boosttune.errors import TrialError, UnsupportedError
from boosttune.probe import check_recipe

pytestmark = pytest.mark.slow

from mindspore.train.callback import Callback  # noqa: E402

from boosttune.trial.runner import run_trial  # noqa: E402


def _manual(**switches):
    return {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": False, **switches}}


def _recipe(**fields):
    base = {"model": "lenet5", "epochs": 1, "batch_size": 32, "steps_per_epoch": 12, "warmup_steps": 2}
    return parse_recipe({**base, **fields})


class WeightSnapshots(Callback):
    """Copies every original network parameter after each step."""

    def __init__(self):
        super().__init__()
        self.steps: list[dict[str, np.ndarray]] = []
        self.names: set[str] | None = None

    def on_train_begin(self, run_context):
        net = run_context.original_args().network
        params = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
        self.names = {n for n in params if not n.startswith(("grad_accumulation", "accu", "weights_clone"))}
        self.steps.append({n: params[n] for n in self.names})

    def on_train_step_end(self, run_context):
        net = run_context.original_args().network
        self.steps.append({p.name: p.asnumpy().copy() for p in net.trainable_params() if p.name in self.names})

    def changed_per_step(self) -> list[set[str]]:
        return [
            {n for n in self.names if not np.array_equal(before[n], after[n])}
            for before, after in zip(self.steps, self.steps[1:])
        ]


def test_plain_trial_reports_honest_metrics(digits):
    epochs = []
    result = run_trial(_recipe(epochs=2), data=digits, reporter=epochs.append, log=lambda m: None)
    assert result.status == "completed"
    assert [e["epoch"] for e in epochs] == [1, 2]
    m = result.metrics
    assert m["total_steps"] == 24
    # First step (graph compile) is reported apart and excluded from the throughput.
    assert m["compile_steps"] >= 1 and m["first_step_s"] > 0
    assert m["steady_steps"] <= 24 - 2
    assert m["throughput_sps"] > 0 and m["peak_rss_mb"] > 0
    assert 0.0 <= m["val_acc"] <= 1.0 and math.isfinite(m["val_loss"])
    assert result.observed_boost["train_cell"] == "TrainOneStepCell"
    assert result.environment["runtime_env"]["ONEDNN_MAX_CPU_ISA"]


def test_training_learns_on_real_digits(digits):
    result = run_trial(_recipe(epochs=3, steps_per_epoch=None, optimizer={"learning_rate": 0.05}),
                       data=digits, log=lambda m: None)
    assert result.metrics["val_acc"] > 0.8  # chance is 0.1


def test_grad_freeze_leaves_frozen_groups_unchanged(digits):
    snapshots = WeightSnapshots()
    recipe = _recipe(boost_level="O1", boost_config_dict={
        **_manual(grad_freeze=True), "grad_freeze": {"param_groups": 2, "freeze_type": 1, "freeze_p": 0.0}})
    result = run_trial(recipe, data=digits, extra_callbacks=[snapshots], log=lambda m: None)
    assert result.observed_boost["grad_freeze"] and result.observed_boost["optimizer"] == "FreezeOpt"
    # total_steps was tied to the trial's real step count.
    assert result.boost_config_dict["grad_freeze"]["total_steps"] == 12
    changed = snapshots.changed_per_step()
    all_params = snapshots.names
    frozen_steps = [c for c in changed if c and c != all_params]
    assert frozen_steps, "no step left a parameter group unchanged"
    assert all(0 < len(c) < len(all_params) for c in frozen_steps)


@pytest.mark.parametrize("switch", ["grad_freeze", "less_bn"])
def test_adam_is_rebuilt_by_grad_freeze_and_less_bn(digits, switch):
    """MindSpore 2.10 records nn.Adam's **kwargs as an argument named kwargs, and boost rebuilt it with
    kwargs={}: KeyError "invalid keys are passed as kwargs". boosttune spreads them back (trial/optim)."""
    extra = {"less_bn": {"gc_flag": False}} if switch == "less_bn" else {}
    recipe = _recipe(optimizer={"name": "adam", "learning_rate": 0.01}, boost_level="O1",
                     boost_config_dict={**_manual(**{switch: True}), **extra})
    result = run_trial(recipe, data=digits, log=lambda m: None)
    assert result.status == "completed" and result.observed_boost[switch]
    assert result.observed_boost["optimizer"] == ("FreezeOpt" if switch == "grad_freeze" else "Adam")


def test_without_boost_every_step_updates_every_parameter(digits):
    snapshots = WeightSnapshots()
    run_trial(_recipe(), data=digits, extra_callbacks=[snapshots], log=lambda m: None)
    assert all(c == snapshots.names for c in snapshots.changed_per_step())


def test_grad_accumulation_updates_once_per_k_batches(digits):
    snapshots = WeightSnapshots()
    recipe = _recipe(boost_level="O1", boost_config_dict={
        **_manual(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 4}})
    result = run_trial(recipe, data=digits, extra_callbacks=[snapshots], log=lambda m: None)
    assert result.observed_boost["grad_accumulation"] and result.observed_boost["grad_accumulation_step"] == 4
    updated = [i + 1 for i, c in enumerate(snapshots.changed_per_step()) if c]
    assert updated == [4, 8, 12]


def test_less_bn_swaps_in_a_feature_normalised_head(digits):
    # MindSpore 2.10's LessBN keeps every BatchNorm layer: what it changes is the classifier head
    # (last Dense -> CommonHeadLastFN with a learnt multiplier) and the parameter groups.
    base = _recipe(model="resnet8", steps_per_epoch=4)
    plain = run_trial(base, data=digits, log=lambda m: None)
    less_bn = run_trial(
        base.model_copy(update={"boost_level": "O1", "boost_config_dict": {
            **_manual(less_bn=True), "less_bn": {"gc_flag": False}}}),
        data=digits, log=lambda m: None)
    no_fn = run_trial(
        base.model_copy(update={"boost_level": "O1", "boost_config_dict": {
            **_manual(less_bn=True), "less_bn": {"gc_flag": False, "fn_flag": False}}}),
        data=digits, log=lambda m: None)
    assert plain.observed_boost["fn_heads"] == 0 and not plain.observed_boost["less_bn"]
    assert less_bn.observed_boost["less_bn"] and less_bn.observed_boost["fn_heads"] == 1
    assert less_bn.observed_boost["batchnorm_layers"] == plain.observed_boost["batchnorm_layers"] > 0
    assert no_fn.observed_boost["less_bn"] and no_fn.observed_boost["fn_heads"] == 0
    assert less_bn.metrics["train_loss"] != pytest.approx(plain.metrics["train_loss"], rel=1e-4)


def test_dim_reduce_swaps_optimizer_and_reuses_pca(digits, tmp_path):
    recipe = _recipe(boost_level="O1", boost_config_dict={**_manual(dim_reduce=True), "dim_reduce": {"n_components": 6}})
    logs: list[str] = []
    first = run_trial(recipe, data=digits, work_dir=tmp_path, log=logs.append)
    assert first.observed_boost["dim_reduce"]
    assert first.observed_boost["optimizer"] == "SGD"  # the recipe asked for Momentum
    assert first.metrics["stage1_s"] > 0
    weight_dir = Path(first.boost_config_dict["dim_reduce"]["weight_load_dir"])
    assert len(list(weight_dir.glob("*.ckpt"))) >= 6
    assert (weight_dir / "pca_mat_temp.npy").is_file()
    second = run_trial(recipe, data=digits, work_dir=tmp_path, log=logs.append)
    assert second.metrics["stage1_s"] == 0.0
    assert second.boost_config_dict["dim_reduce"]["pca_mat_path"] == str(weight_dir / "pca_mat_temp.npy")
    assert any("reusing stage-1 checkpoints" in line for line in logs)


def test_alternating_trials_do_not_leak_configuration(digits):
    """10 trials in one process, O0 / O1 / manual recipes in turn: each built what its own recipe says.

    Observed from the Model MindSpore built (its optimizer, train cell, network wrapper), not from the input:
    MindSpore's AutoBoost is a process-wide singleton whose preset table manual mode mutates in place. Two rounds
    of the cycle: every recipe runs after the one before it in the cycle (O0 after LessBN included) and again after
    a whole round; more rounds repeat the same pairs (tests/execution/test_warm.py runs these recipes 20 times in
    one worker).
    """
    import mindspore.boost.boost as ms_boost

    from boosttune.config.boost import PRESETS

    cycle = [
        ("O0", _recipe(), {"grad_freeze": False, "less_bn": False, "grad_accumulation_step": 1,
                           "train_cell": "TrainOneStepCell"}),
        ("O1", _recipe(boost_level="O1", boost_config_dict={"less_bn": {"gc_flag": False}}),
         {"grad_freeze": True, "less_bn": True, "grad_accumulation_step": 1}),
        ("freeze", _recipe(boost_level="O1", boost_config_dict={**_manual(grad_freeze=True),
                                                                 "grad_freeze": {"param_groups": 2}}),
         {"grad_freeze": True, "less_bn": False, "grad_accumulation_step": 1}),
        ("accumulate", _recipe(boost_level="O1", boost_config_dict={
            **_manual(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 3}}),
         {"grad_freeze": False, "less_bn": False, "grad_accumulation": True, "grad_accumulation_step": 3}),
        ("less_bn", _recipe(boost_level="O2", boost_config_dict={**_manual(less_bn=True),
                                                                  "less_bn": {"gc_flag": False}}),
         {"grad_freeze": False, "less_bn": True, "grad_accumulation_step": 1}),
    ]
    seen = []
    for index in range(2 * len(cycle)):
        name, recipe, expected = cycle[index % len(cycle)]
        observed = run_trial(recipe, data=digits, log=lambda m: None).observed_boost
        seen.append(name)
        assert {key: observed[key] for key in expected} == expected, f"trial {index} ({name}) after {seen[:-1]}"
    assert ms_boost.AutoBoost._instance is None
    assert ms_boost._boost_config_level == PRESETS


def test_nan_loss_stops_the_trial_with_its_reason(digits):
    recipe = _recipe(epochs=3, optimizer={"learning_rate": 1e12})
    result = run_trial(recipe, data=digits, log=lambda m: None)
    assert result.status == "stopped"
    assert "non-finite loss" in result.reason
    assert result.metrics["total_steps"] < 36


def test_target_accuracy_records_time_and_stops(digits):
    recipe = _recipe(epochs=5, steps_per_epoch=None, target=0.3, optimizer={"learning_rate": 0.05})
    result = run_trial(recipe, data=digits, log=lambda m: None)
    assert result.status == "target_reached"
    assert 0 < result.metrics["time_to_target_s"] <= result.metrics["train_s"]
    assert len(result.epochs) < 5


def test_fixed_loss_scale_matches_unscaled_training(digits):
    plain = run_trial(_recipe(), data=digits, log=lambda m: None)
    scaled = run_trial(_recipe(loss_scale={"kind": "fixed", "loss_scale": 1024.0}), data=digits, log=lambda m: None)
    assert scaled.metrics["train_loss"] == pytest.approx(plain.metrics["train_loss"], rel=1e-3)


def test_probe_rejects_unsupported_knobs_before_training(probe_report):
    recipe = _recipe(boost_level="O1", boost_config_dict=_manual(less_bn=True))  # gc_flag defaults to true
    with pytest.raises(UnsupportedError, match=r"boost.less_bn.gc_flag is not supported on CPU: .*Centralization"):
        check_recipe(recipe, probe_report)
    with pytest.raises(UnsupportedError, match="loss_scale.dynamic"):
        check_recipe(_recipe(loss_scale={"kind": "dynamic"}), probe_report)


def test_mindspore_failure_becomes_trial_error_with_reason(digits):
    with pytest.raises(TrialError, match=r"Centralization"):
        run_trial(_recipe(boost_level="O1", boost_config_dict=_manual(less_bn=True)), data=digits, log=lambda m: None)


def test_a_shard_trains_on_its_share_of_the_data(digits):
    full = run_trial(_recipe(steps_per_epoch=None), data=digits, log=lambda m: None)
    half = run_trial(_recipe(steps_per_epoch=None), data=digits, num_shards=2, shard_id=1, log=lambda m: None)
    assert full.metrics["world_size"] == 1 and half.metrics["world_size"] == 2
    assert half.metrics["samples_per_epoch"] == (len(digits.train) // 2) // 32 * 32
    assert full.metrics["samples_per_epoch"] == len(digits.train) // 32 * 32


def test_accumulation_stretches_the_lr_schedule_over_optimizer_updates(digits):
    snapshots = []

    class LearningRates(Callback):
        def on_train_step_end(self, run_context):
            opt = run_context.original_args().optimizer
            snapshots.append(int(opt.global_step.asnumpy().reshape(-1)[0]))

    recipe = _recipe(boost_level="O1", optimizer={"lr_schedule": "cosine"}, boost_config_dict={
        **_manual(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 4}})
    run_trial(recipe, data=digits, extra_callbacks=[LearningRates()], log=lambda m: None)
    # 12 batches, 3 optimizer updates: the schedule (3 learning rates) ends exactly at the last update.
    assert snapshots[-1] == 3


def test_final_evaluation_on_every_held_out_sample_gives_the_objective():
    """The learning curve stays on the per-epoch slice; the run's objective comes from one pass over all of it."""
    recipe = _recipe(epochs=2, data={"name": "digits", "val_limit": 64, "final_val_limit": "all"})
    result = run_trial(recipe, log=lambda m: None)
    m = result.metrics
    assert m["final_eval_samples"] == 352  # digits: 359 held-out images, in full batches of 32
    assert m["epoch_objective_value"] == result.epochs[-1]["objective_value"]
    assert m["objective_value"] == m["val_acc"] and 0.0 <= m["objective_value"] <= 1.0
    sliced = run_trial(_recipe(epochs=2, data={"name": "digits", "val_limit": 64}), log=lambda m: None)
    assert "final_eval_samples" not in sliced.metrics
    assert sliced.metrics["objective_value"] == sliced.epochs[-1]["objective_value"]


def test_without_curves_the_final_evaluation_is_the_only_one():
    """``eval_every_epoch`` off with a final evaluation (the confirm stage's default): no per-epoch pass, not even
    on the last epoch; the objective is the final pass's."""
    recipe = _recipe(epochs=2, eval_every_epoch=False,
                     data={"name": "digits", "val_limit": 64, "final_val_limit": "all"})
    result = run_trial(recipe, log=lambda m: None)
    m = result.metrics
    assert [e["objective_value"] for e in result.epochs] == [None, None]
    assert m["epoch_objective_value"] is None and m["final_eval_samples"] == 352
    assert m["objective_value"] == m["val_acc"] and 0.0 <= m["objective_value"] <= 1.0
    alone = run_trial(_recipe(epochs=2, eval_every_epoch=False, data={"name": "digits", "val_limit": 64}),
                      log=lambda m: None)  # no final pass: the last epoch is evaluated on the slice
    assert alone.epochs[0]["objective_value"] is None and alone.epochs[-1]["objective_value"] is not None
