"""The grad_freeze method card's text: what the code does in MindSpore 2.10, read from its source (not measured)."""

from boosttune.algorithms.base import MethodNote

NOTE = MethodNote(
    key="grad_freeze",
    title="GradientFreeze",
    what=(
        "`GradientFreeze.split_parameters_groups` cuts `trainable_params()` into blocks (a new block "
        "starts at a parameter whose name has neither `bn` nor `bias` once the current block holds "
        "≥3), then builds `param_groups` nested groups: group *k* is every block from `k*stride` to the "
        "end, `stride = blocks // param_groups`. `FreezeOpt` creates one optimizer copy per group, each "
        "with its own moments and `global_step`, and `BoostTrainOneStepCell` builds one "
        "`_TrainFreezeCell` per group that differentiates only that group's parameters. Index 0 trains "
        "everything; index *k* freezes the first `k*stride` blocks.\n\n"
        "The step-by-step index sequence is precomputed with `int(total_steps*1.01)` entries, then "
        "wraps. `freeze_type` 0 repeats `[0]*z + [1..n-1]`; type 1 draws indices with numpy.random, "
        "P(k) ∝ n−k. In both, **`freeze_p` is the share of full-training steps**, not of frozen ones: "
        "0.7 freezes about 30 % of steps. With fewer blocks than `param_groups` the stride is 0 and "
        "nothing is ever frozen.\n\n"
        "The loss-scale cell `BoostTrainOneStepWithLossScaleCell` never takes the freeze path: it calls "
        "the `FreezeOpt`, a Cell with no `construct`."
    ),
    knobs=(
        ("boost.grad_freeze", "The switch. On in the O1 and O2 presets."),
        ("grad_freeze.param_groups",
         "Number of nested parameter groups, i.e. of train sub-networks and optimizer copies built. "
         "Default 10; 1 never freezes."),
        ("grad_freeze.freeze_type",
         "0: continuous cycle of full steps followed by indices 1..n-1 once each; 1: interval, a random "
         "frozen index between full steps. Default 1; other values raise ValueError."),
        ("grad_freeze.freeze_p",
         "Fraction of steps that train all parameters (index 0), despite the name. Default 0.7. "
         "freeze_type 0 divides by (1 - freeze_p), so 1.0 raises ZeroDivisionError."),
        ("grad_freeze.total_steps",
         "Length of the precomputed schedule (times 1.01) before it repeats; generated on the host when "
         "the Model is built. Default 65536."),
    ),
    devices=(
        "FreezeOpt and _TrainFreezeCell list only Ascend (GradientFreeze states no platform), while "
        "BoostTrainOneStepCell, which runs them, lists Ascend, GPU and CPU."
    ),
    source=(
        "mindspore/boost/grad_freeze.py: GradientFreeze, FreezeOpt, _TrainFreezeCell, freeze_cell",
        "mindspore/boost/boost_cell_wrapper.py: BoostTrainOneStepCell.gradient_freeze_process, "
        "BoostTrainOneStepWithLossScaleCell.construct",
        "mindspore/boost/boost.py: AutoBoost (_freeze_p, _param_groups, _freeze_type, _total_steps)",
        "mindspore/boost/base.py: ParameterProcess.generate_group_params",
    ),
    algorithms=("grad_freeze",),
)
