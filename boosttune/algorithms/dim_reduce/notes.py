"""The dim_reduce method card's text: what the code does in MindSpore 2.10, read from its source (not measured)."""

from boosttune.algorithms.base import MethodNote

NOTE = MethodNote(
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
)
