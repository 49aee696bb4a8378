"""The grad_accumulation method card's text: what the code does in MindSpore 2.10, read from its source (not measured)."""

from boosttune.algorithms.base import MethodNote

NOTE = MethodNote(
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
)
