"""The loss_scale method card's text: what the code does in MindSpore 2.10, read from its source (not measured)."""

from boosttune.algorithms.base import CardMatch, MethodNote

NOTE = MethodNote(
    key="loss_scale",
    title="Loss scale managers",
    what=(
        "`build_train_network` asks the manager for `get_update_cell()`.\n\n"
        "**FixedLossScaleManager(loss_scale=128.0, drop_overflow_update=True)**: with `True` the update "
        "cell is `FixedLossScaleUpdateCell`, so `TrainOneStepWithLossScaleCell` (or its boost twin) "
        "backpropagates with sens = loss_scale, divides the gradients by it, checks them for inf/nan "
        "and skips the optimizer on overflow; the scale never changes. With `False` there is no update "
        "cell: the scale only becomes the `sens` of a plain `TrainOneStepCell`, with **no unscaling "
        "and no overflow check**. The optimizer's own `loss_scale` must then equal it, or the "
        "gradients reach the optimizer multiplied by it.\n\n"
        "**DynamicLossScaleManager(init_loss_scale=2**24, scale_factor=2, scale_window=2000)** yields "
        "`DynamicLossScaleUpdateCell`, run on the device: on overflow the step is skipped and "
        "scale = max(scale / scale_factor, 1); after `scale_window` consecutive clean steps "
        "scale *= scale_factor. Starting at 2**24, early float16 steps can overflow and be skipped "
        "while the scale comes down. The manager's host-side `update_loss_scale`, which raises after "
        "1000 consecutive overflows, is not used by Model."
    ),
    knobs=(
        ("FixedLossScaleManager.loss_scale", "Constant scale; must be >= 1. Default 128.0."),
        ("FixedLossScaleManager.drop_overflow_update",
         "True: unscale in the cell and skip overflowed steps. False: the scale is only the sens, and "
         "the optimizer's loss_scale must match it. Default True."),
        ("DynamicLossScaleManager.init_loss_scale", "Starting scale; must be >= 1. Default 2**24."),
        ("DynamicLossScaleManager.scale_factor",
         "Divisor on overflow and multiplier after a clean window; must be > 0. Default 2."),
        ("DynamicLossScaleManager.scale_window",
         "Consecutive overflow-free steps before the scale grows. Default 2000."),
    ),
    devices=(
        "DynamicLossScaleManager, FixedLossScaleUpdateCell, DynamicLossScaleUpdateCell and "
        "TrainOneStepWithLossScaleCell list Ascend and GPU; on CPU (without GE) build_train_network "
        "accepts only None or FixedLossScaleManager(drop_overflow_update=False) and raises ValueError "
        "otherwise."
    ),
    source=(
        "mindspore/train/loss_scale_manager.py: FixedLossScaleManager, DynamicLossScaleManager",
        "mindspore/nn/wrap/loss_scale.py: FixedLossScaleUpdateCell, DynamicLossScaleUpdateCell, "
        "TrainOneStepWithLossScaleCell",
        "mindspore/nn/wrap/cell_wrapper.py: TrainOneStepCell",
        "mindspore/nn/optim/optimizer.py: Optimizer.scale_grad (loss_scale argument)",
        "mindspore/train/amp.py: build_train_network",
        "mindspore/boost/boost_cell_wrapper.py: BoostTrainOneStepWithLossScaleCell._get_overflow_status",
    ),
    algorithms=(),
    card=CardMatch(method_prefix="loss_scale ", probe_knobs=("loss_scale.fixed", "loss_scale.dynamic"),
               left_out=("loss_scale",), params=("loss_scale.",)),
)
