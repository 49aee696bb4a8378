"""The amp method card's text: what the code does in MindSpore 2.10, read from its source (not measured)."""

from boosttune.algorithms.base import CardMatch, MethodNote

NOTE = MethodNote(
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
    card=CardMatch(method_prefix="amp ", probe_knobs=("amp.",), left_out=("amp",), params=("amp_level",)),
)
