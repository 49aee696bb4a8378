"""What each method does in MindSpore 2.10, read from its source code, one note per method card.

Every note describes the code in ``mindspore/boost/*.py``, ``mindspore/train/amp.py``,
``mindspore/train/loss_scale_manager.py`` and the cells they build (MindSpore 2.10.0), not the
marketing text in their docstrings. Defaults are MindSpore's. Nothing here is a measurement.
This module is pure data: it imports neither MindSpore, Ray nor Optuna.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MethodNote", "NOTES"]


@dataclass(frozen=True)
class MethodNote:
    key: str
    """The method card's file name; one of the keys of :data:`NOTES`."""
    title: str
    what: str
    """Markdown, 1-3 short paragraphs: what the code does in MindSpore 2.10."""
    knobs: tuple[tuple[str, str], ...]
    """(boost_config_dict path or Model argument, what it controls and MindSpore's default)."""
    devices: str
    """What MindSpore's own docstrings/source say about Ascend/GPU/CPU, one sentence."""
    source: tuple[str, ...]
    """The MindSpore source files and classes the note was read from."""
    algorithms: tuple[str, ...]
    """The boost_config_dict ``boost`` switches this card covers; () for amp / loss_scale / boost_levels."""


_NOTES = (
    MethodNote(
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
    ),
    MethodNote(
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
    ),
    MethodNote(
        key="grad_accumulation",
        title="Gradient accumulation",
        what=(
            "AutoBoost does nothing for this switch; `BoostTrainOneStepCell` accumulates by itself. It is "
            "enabled only when the switch is on, the parallel mode is STAND_ALONE or DATA_PARALLEL, and "
            "`AutoBoost.grad_accumulation_step > 1`. That step count **defaults to 1, which silently turns "
            "the algorithm off**; it is read only from an enabled section, e.g. "
            "`{\"grad_accumulation\": {\"grad_accumulation_step\": 4}}`.\n\n"
            "When on, every step adds `grad / N` into a zero-initialised clone of the weights, and every "
            "N-th step applies the optimizer (or DimReduce/AdaSum) to that buffer and clears it. The Model "
            "still counts each micro-batch as a step and reports its own loss; the optimizer, its "
            "`global_step` and so its learning-rate schedule advance once per N steps. Under a loss-scale "
            "cell an overflowed step is neither accumulated nor counted.\n\n"
            "The `GradientAccumulation` class in grad_accumulation.py is used only by gradient freezing's "
            "`_TrainFreezeCell`, which passes it `self.optimizer`, an attribute that cell does not have: "
            "grad_freeze together with grad_accumulation fails when the network is built."
        ),
        knobs=(
            ("boost.grad_accumulation", "The switch. Off in every preset."),
            ("grad_accumulation.grad_accumulation_step",
             "Micro-batches N per optimizer update. Default 1, which disables the algorithm. The key is "
             "read from any enabled section, not only this one."),
        ),
        devices=(
            "Neither GradientAccumulation nor the accumulation path states a platform; BoostTrainOneStepCell "
            "lists Ascend, GPU and CPU, and the code enables accumulation only in STAND_ALONE or "
            "DATA_PARALLEL mode."
        ),
        source=(
            "mindspore/boost/boost_cell_wrapper.py: BoostTrainOneStepCell.__init__, "
            "gradient_accumulation_process",
            "mindspore/boost/grad_accumulation.py: GradientAccumulation, gradient_accumulation_op, "
            "gradient_clear_op",
            "mindspore/boost/grad_freeze.py: _TrainFreezeCell",
            "mindspore/boost/boost.py: AutoBoost._set_grad_accumulation_step, _do_new_config_func",
        ),
        algorithms=("grad_accumulation",),
    ),
    MethodNote(
        key="adasum",
        title="AdaSum",
        what=(
            "The switch only sets `optimizer.adasum = True`. `BoostTrainOneStepCell.check_adasum_enable` "
            "then activates AdaSum only if there is a distributed gradient reducer (data or hybrid "
            "parallel) and `get_group_size() // 8`, a hard-coded 8 rather than `common.device_number`, is "
            "a power of two above 1: 16, 32, 64… ranks. Otherwise nothing changes, so on a single device "
            "the O2 preset trains exactly like O1.\n\n"
            "When active, ranks form servers of `device_number` ranks. Gradients are all-reduced only "
            "inside a server; each rank runs the optimizer, takes its slice of the parameters (split into "
            "`device_number` contiguous slices) and forms the weight delta against the previous weights. "
            "`AdaSum` merges deltas across servers in log2(servers) recursive-halving rounds of HCCL "
            "Send/Receive, combining halves a and b as (1 − a·b/2‖a‖²)·a + (1 − a·b/2‖b‖²)·b with the dot "
            "products all-reduced; each slice is then broadcast inside its server."
        ),
        knobs=(
            ("boost.adasum", "The switch. On in the O2 preset only."),
            ("common.device_number",
             "Ranks per server: server size and number of parameter slices. Default 8. The enable check "
             "still divides the world size by a hard-coded 8."),
        ),
        devices=(
            "AdaSum states no platform, but it communicates over hccl_world_group (Ascend's HCCL) and needs "
            "at least 16 ranks; AutoBoost lists only Ascend."
        ),
        source=(
            "mindspore/boost/adasum.py: AdaSum, _adasum_opt_forward_process, _send_recv_res",
            "mindspore/boost/boost_cell_wrapper.py: BoostTrainOneStepCell.check_adasum_enable, "
            "__init_adasum, adasum_process",
            "mindspore/boost/boost.py: AutoBoost.network_auto_process_train",
        ),
        algorithms=("adasum",),
    ),
    MethodNote(
        key="dim_reduce",
        title="DimReduce",
        what=(
            "With the switch on, `network_auto_process_train` returns early: LessBN, gradient freezing and "
            "AdaSum are skipped and **the user's optimizer is replaced by `SGD(params, learning_rate=1)`**, "
            "dropping its momentum, weight decay and schedule. Training first needs a PCA basis: "
            "`pca_mat_path` (an existing `.npy`) or `weight_load_dir`, a folder of `.ckpt` files of the "
            "same network, one PCA sample per file, at least `n_components` files. The randomized-SVD PCA "
            "is saved there as `pca_mat_temp.npy` and split per rank; ranks poll every 5 s, up to "
            "`timeout`, for `save_pca_end.txt`. Paths may only contain `[_A-Za-z0-9/.-]`.\n\n"
            "Each step `DimReduce` projects the gradient g onto the k components (gₖ = P·g), takes a "
            "BFGS direction d = −B·gₖ there, and line-searches only ρ⁰ and ρ¹: each try applies the step, "
            "runs one extra forward pass and restores the weights; the first with "
            "new_loss < old_loss + sigma·ρ·gₖᵀd wins, else ρ = 0. The update is w += ρ·Pᵀd − alpha·m, "
            "with m = gamma·m + g − Pᵀgₖ the momentum of the out-of-subspace gradient."
        ),
        knobs=(
            ("boost.dim_reduce",
             "The switch. Off in every preset; when on it disables less_bn, grad_freeze and adasum."),
            ("dim_reduce.n_components", "PCA dimension k, and the minimum number of checkpoints. Default 32."),
            ("dim_reduce.rho", "Line-search backtracking factor; only rho**0 and rho**1 are tried. Default 0.55."),
            ("dim_reduce.gamma", "Decay of the out-of-subspace gradient momentum. Default 0.9."),
            ("dim_reduce.alpha",
             "Step size on that momentum, i.e. the learning rate outside the subspace. Default 0.001."),
            ("dim_reduce.sigma", "Sufficient-decrease (Armijo) constant of the line search. Default 0.4."),
            ("dim_reduce.pca_mat_path",
             "A saved PCA matrix to reuse; silently ignored unless the file exists and ends in .npy. "
             "Default None."),
            ("dim_reduce.weight_load_dir",
             "Folder of .ckpt files the PCA is computed from; required (ValueError) when pca_mat_path is "
             "not usable. Default None."),
            ("dim_reduce.timeout", "Seconds a rank waits for the PCA files. Default 1800."),
            ("common.device_number",
             "Only ranks with rank % device_number == 0 compute the PCA. Default 8."),
        ),
        devices="DimReduce states no platform; AutoBoost, which switches it on, lists only Ascend.",
        source=(
            "mindspore/boost/dim_reduce.py: DimReduce",
            "mindspore/boost/base.py: _get_local_pca_mat_path, _load_weights, _compute_pca_mat, "
            "_save_local_pca_mat, _load_local_pca_mat, _check_path",
            "mindspore/boost/boost.py: AutoBoost.network_auto_process_train",
            "mindspore/boost/boost_cell_wrapper.py: BoostTrainOneStepCell.check_dim_reduce_enable, "
            "__init_dim_reduce",
        ),
        algorithms=("dim_reduce",),
    ),
    MethodNote(
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
    ),
    MethodNote(
        key="boost_levels",
        title="Boost levels (AutoBoost)",
        what=(
            "`Model` builds `AutoBoost(boost_level, boost_config_dict)` and, for O1/O2, applies "
            "`network_auto_process_train` before amp. Presets: **O0** nothing; **O1** less_bn + "
            "grad_freeze; **O2** less_bn + grad_freeze + adasum. `boost.mode` (default \"auto\"): **auto** "
            "uses the preset and ignores the switches in `boost`; **manual** overwrites the preset with "
            "them; **enable_all**/**disable_all** set all six (enable_all includes dim_reduce, which then "
            "needs its checkpoints). Sections are read only for switched-on algorithms plus `common`, with "
            "keys looked up flatly. At O0 nothing runs, whatever the dict says.\n\n"
            "`AutoBoost` is a process-wide singleton whose first configuration wins: a Model built earlier "
            "with the default O0 leaves later O1/O2 Models untransformed. Manual mode writes into the "
            "module-level preset dict; an unknown level becomes O0. Boost is skipped, with a warning, "
            "unless the Model has an optimizer and metrics or an eval_network, yet `BoostTrainOneStepCell` "
            "still wraps it. Without a loss-scale manager that cell returns None as the loss unless "
            "grad_freeze is on."
        ),
        knobs=(
            ("boost_level",
             "Model argument: O0 (default), O1 or O2. Picks the preset and whether BoostTrainOneStepCell "
             "(or its loss-scale twin) wraps the network."),
            ("boost_config_dict", "Model keyword argument. Default \"\": the preset alone."),
            ("boost.mode", "auto (default), manual, enable_all or disable_all; anything else raises ValueError."),
            ("boost.<algorithm>",
             "less_bn, grad_freeze, adasum, grad_accumulation, dim_reduce, loss_scale_group; read only in "
             "manual mode and by truthiness (the string \"false\" is True). Unknown keys are ignored."),
            ("acc_level", "Deprecated alias of boost_level; logs a warning."),
        ),
        devices=(
            "AutoBoost lists only Ascend and Model's docstring recommends Graph mode on Ascend; "
            "BoostTrainOneStepCell lists Ascend, GPU and CPU, BoostTrainOneStepWithLossScaleCell Ascend "
            "and GPU."
        ),
        source=(
            "mindspore/boost/boost.py: AutoBoost (__new__, __init__, _get_configuration, "
            "_do_new_config_func), _boost_config_level, _boost_config_mode",
            "mindspore/train/model.py: Model._build_boost_network, _build_train_network",
            "mindspore/train/amp.py: build_train_network, _check_level",
            "mindspore/boost/boost_cell_wrapper.py: BoostTrainOneStepCell.construct, _no_sens_impl",
            "mindspore/nn/wrap/cell_wrapper.py: TrainOneStepCell.__init__ (sens=None sets sense_flag False)",
        ),
        algorithms=(),
    ),
    MethodNote(
        key="amp",
        title="Automatic mixed precision (amp_level)",
        what=(
            "`Model(amp_level=...)` calls `build_train_network`, which merges `_config_level[level]` with "
            "the keyword arguments. With the default `MS_AMP_BY_REWRITE = False`:\n\n"
            "- **O0**: unchanged, float32.\n"
            "- **O1**: `auto_mixed_precision(net, \"O1\")` builds a rewritten network that casts the inputs "
            "of white-list cells and primitives (Conv1d/2d/3d and transposes, Dense, LSTM/RNN/GRU cells, "
            "Conv2D, MatMul, BatchMatMul, PReLU, ReLU, Ger) to float16 and their outputs back to float32; "
            "BatchNorm and the loss stay float32. The generated code is written to `./rewritten_network/`; "
            "Model's eval and predict networks are built from the original instance, not the rewritten one.\n"
            "- **O2**: `network.to_float(float16)` (each cell's inputs and parameters cast at use; stored "
            "weights stay float32), then `keep_batchnorm_fp32=True` puts BatchNorm1d/2d/3d and LayerNorm "
            "back to float32 with float16 outputs. Default loss scaler: `DynamicLossScaleManager()`.\n"
            "- **O3**: as O2 but BatchNorm also float16, and no loss scaler.\n"
            "- **auto** (experimental): per-primitive: convs, matmuls and Dense float16; BatchNorm, "
            "LayerNorm, Softmax, exp/log and several losses float32; others follow their inputs.\n\n"
            "For O2, O3 and auto the loss gets outputs and labels cast to float32."
        ),
        knobs=(
            ("amp_level", "Model argument: O0 (default), O1, O2, O3 or auto."),
            ("keep_batchnorm_fp32",
             "Model keyword argument. Acts only when the backbone is cast to float16: default True for O2, "
             "False for O3 (O3 with True equals O2 without its loss scaler); ignored for O0, O1 and auto."),
            ("loss_scale_manager",
             "Model keyword argument; overrides the level's default: DynamicLossScaleManager(2**24, 2, 2000) "
             "for O2, None otherwise. Passing it explicitly (even None) is the only way to run O2 on CPU."),
        ),
        devices=(
            "Cell.to_float lists Ascend, GPU and CPU and the amp functions state no platform, but O2's "
            "default DynamicLossScaleManager makes build_train_network raise ValueError on CPU (without GE) "
            "unless loss_scale_manager is passed explicitly."
        ),
        source=(
            "mindspore/train/amp.py: build_train_network, _config_level, _auto_mixed_precision_process, "
            "auto_mixed_precision, _auto_mixed_precision_rewrite, _do_keep_batchnorm_fp32, _add_loss_network, "
            "AMP_WHITE_LIST, AMP_BLACK_LIST, AMP_AUTO_WHITE_LIST, AMP_AUTO_BLACK_LIST",
            "mindspore/amp.py: re-exports of build_train_network, auto_mixed_precision and the loss scale "
            "managers",
            "mindspore/nn/cell.py: Cell.to_float",
            "mindspore/rewrite/symbol_tree/symbol_tree.py: SymbolTree._get_cls_through_file",
            "mindspore/train/model.py: Model._build_train_network, _build_eval_network, _build_predict_network",
        ),
        algorithms=(),
    ),
    MethodNote(
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
    ),
)

NOTES: dict[str, MethodNote] = {note.key: note for note in _NOTES}
