"""What each method does in MindSpore 2.10, read from its source code, one note per method card.

Every note describes the code in ``mindspore/boost/*.py``, ``mindspore/train/amp.py``,
``mindspore/train/loss_scale_manager.py`` and the cells they build (MindSpore 2.10.0), not the
marketing text in their docstrings. Defaults are MindSpore's. Nothing here is a measurement.
Each algorithm's note lives in its folder (``boosttune/algorithms/<name>/notes.py``); the boost levels'
card, which is about the presets rather than one algorithm, lives here.
This module is pure data: it imports neither MindSpore, Ray nor Optuna.
"""

from __future__ import annotations

from boosttune.algorithms import order, registry
from boosttune.algorithms.base import CardMatch, MethodNote

__all__ = ["MethodNote", "NOTES", "notes"]

BOOST_LEVELS = MethodNote(
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
    card=CardMatch(probe_knobs=("boost.O",), left_out=("O1-equivalent", "O2-equivalent")),
)


def notes() -> dict[str, MethodNote]:
    """Every method card's note (the algorithms' from their folders, and the boost levels'), in index order."""
    found = [note for algorithm in registry() for note in algorithm.notes] + [BOOST_LEVELS]
    return {note.key: note for note in sorted(found, key=lambda note: order.place(order.CARDS, note.key))}


NOTES: dict[str, MethodNote] = notes()
