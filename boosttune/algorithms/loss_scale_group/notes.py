"""The group_loss_scale method card's text: what the code does in MindSpore 2.10, read from its source (not measured)."""

from boosttune.algorithms.base import CardMatch, MethodNote

NOTE = MethodNote(
    key="group_loss_scale",
    title="GroupLossScaleManager",
    what=(
        "`GroupLossScaleManager(init_loss_scale, loss_scale_groups)` is an \"enhanced amp\" loss scaler "
        "with one scale per parameter group. It takes that role only when `boost.loss_scale_group` is "
        "on (no preset enables it), boost_level is O1 or O2 and the manager is the Model's "
        "`loss_scale_manager`; `BoostTrainOneStepWithLossScaleCell` then raises TypeError for anything "
        "without `set_loss_scale_status`. The network must also call the manager between layer groups, "
        "e.g. `x = self.enhanced_amp(x, 0, 1)`: each call is a `_DynamicLossScale` primitive fed the "
        "ratio of adjacent group scales, and the cell forces those calls to float32 with float16 "
        "output.\n\n"
        "Backpropagation runs with sens 1. Per group, an overflow multiplies the scale by 1/√2 and a "
        "clean step by 2^(1/1000); both constants are hard-coded, so there is no scale_window or "
        "scale_factor. If no group overflowed, each gradient is divided by its group's new scale and "
        "the optimizer runs. Groups are matched to the optimizer's parameters by position."
    ),
    knobs=(
        ("boost.loss_scale_group",
         "The switch. Off in every preset, so it needs mode manual (or enable_all) and boost_level O1/O2."),
        ("GroupLossScaleManager.init_loss_scale",
         "Starting scale of every group (also what get_loss_scale returns); a list sets one per group. "
         "No default."),
        ("GroupLossScaleManager.loss_scale_groups",
         "List of parameter lists, one per scale, in the optimizer's parameter order. No default."),
    ),
    devices=(
        "GroupLossScaleManager lists only Ascend and BoostTrainOneStepWithLossScaleCell Ascend and GPU; "
        "on CPU build_train_network raises ValueError for any manager with an update cell, this one "
        "included."
    ),
    source=(
        "mindspore/boost/group_loss_scale_manager.py: GroupLossScaleManager",
        "mindspore/boost/boost_cell_wrapper.py: BoostTrainOneStepWithLossScaleCell._init_enhanced_amp, "
        "_enhanced_amp_process_overflow_status, _get_dynamic_overflow_status, _do_keep_mix_fp32",
        "mindspore/ops/operations/other_ops.py: _DynamicLossScale",
        "mindspore/train/amp.py: build_train_network",
    ),
    algorithms=("loss_scale_group",),
    card=CardMatch(methods=("loss_scale_group",), probe_knobs=("loss_scale.group",), left_out=("loss_scale group",),
               params=("loss_scale.",)),
)
