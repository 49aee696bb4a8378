"""The less_bn method card's text: what the code does in MindSpore 2.10, read from its source (not measured)."""

from boosttune.algorithms.base import MethodNote

NOTE = MethodNote(
    key="less_bn",
    title="LessBN",
    what=(
        "`AutoBoost.network_auto_process_train` wraps the backbone in `LessBN(network, fn_flag)`, which "
        "does three things. (1) It sets the `less_bn` flag on every sub-cell; the C++ graph pass "
        "`LessBatchNormalization` then deletes BatchNorm nodes inside residual blocks, keeping the one "
        "just before the `Add`. Its three patterns all need a main branch of three Conv2D→BatchNorm "
        "stages (bottleneck blocks): two-conv basic blocks never match, and as a compile pass it can "
        "only act in GRAPH_MODE.\n\n"
        "(2) With `fn_flag` the last `nn.Dense` directly inside each cell becomes `CommonHeadLastFN`: "
        "L2-normalised inputs and weight rows, a learnable scalar `multiplier` starting at 1, and "
        "**the bias dropped**, so logits start within [-1, 1].\n\n"
        "(3) The optimizer is rebuilt (same class and arguments) on parameter groups; with `gc_flag` "
        "the weights whose names lack beta/gamma/bias (grouped convs and the FN head excluded) are "
        "flagged `grad_centralization`, and `Optimizer` centralises each flagged gradient with ≥2 dims "
        "whose dim 1 is a multiple of 16, Dense weights included. All-reduce `comm_fusion` buckets are "
        "assigned too."
    ),
    knobs=(
        ("boost.less_bn", "The switch. On in the O1 and O2 presets; False in manual mode unless set."),
        ("less_bn.fn_flag",
         "Replace the last Dense of each cell by CommonHeadLastFN (no bias, normalised logits times a "
         "learnable multiplier). AutoBoost default True, although LessBN's own default is False."),
        ("less_bn.gc_flag",
         "Gradient centralization through optimizer parameter groups (applied even to a plain parameter "
         "list, which AutoBoost first turns into one group). Default True."),
        ("common.gradient_split_groups",
         "Parameter indices where a new comm_fusion (all-reduce fusion) bucket starts; only matters in "
         "distributed runs. Default None: one split at half the parameter count. An int raises "
         "TypeError (the code calls list(int))."),
    ),
    devices=(
        "LessBN states no platform, CommonHeadLastFN lists Ascend, GPU and CPU, but gradient "
        "centralization's Centralization primitive (gc_flag, on by default) lists only Ascend, as does "
        "AutoBoost."
    ),
    source=(
        "mindspore/boost/less_batch_normalization.py: LessBN, CommonHeadLastFN",
        "mindspore/boost/boost.py: AutoBoost.network_auto_process_train, network_auto_process_eval",
        "mindspore/boost/base.py: OptimizerProcess.add_grad_centralization, build_gc_params_group, "
        "generate_new_optimizer; ParameterProcess.generate_group_params, assign_parameter_group",
        "mindspore/nn/optim/optimizer.py: Optimizer.gradients_centralization, "
        "_tensor_apply_grad_centralization",
        "mindspore/ops/operations/_inner_ops.py: Centralization",
        "mindspore/nn/cell.py: Cell.set_boost",
        "mindspore-ai/mindspore (C++, not shipped as source in the wheel): "
        "mindspore/ccsrc/frontend/optimizer/irpass/less_batch_normalization.cc: LessBatchNormalization",
    ),
    algorithms=("less_bn",),
)
