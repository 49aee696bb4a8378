"""How to apply the answer: the exported files, a snippet for a team's own ``Model(...)``, and every knob of the
recipe by its MindSpore name.

Not a figure: :mod:`boosttune.report.render` lays it out right after the answer, in report.html and report.md.
The recipe is the one ``boosttune export`` writes (:func:`boosttune.outputs.export.selected_recipe`: the one an
experiment exported, or made from the same tables and margin as the page), so the block and the files cannot
disagree; it arrives with the inputs' selection (:attr:`~boosttune.report.inputs.ReportInputs.selection`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from boosttune.config.boost import PRESETS, parse_boost_config
from boosttune.config.recipe import LossScaleConfig, OptimizerConfig
from boosttune.errors import BoosttuneError
from boosttune.outputs.export import BEST_BOOST_CONFIG_NAME, BEST_RECIPE_NAME, loss_scale_manager_call
from boosttune.report.inputs import ReportInputs

__all__ = ["ApplyInfo", "apply_info"]

_OPTIMIZERS = {"momentum": "nn.Momentum", "sgd": "nn.SGD", "adam": "nn.Adam", "lamb": "nn.Lamb", "thor": "nn.thor"}


class ApplyInfo(NamedTuple):
    files: tuple[tuple[str, str], ...]  # (path in the results folder, what it holds)
    exported: bool  # both files are in the results folder; else `export_command` writes them
    export_command: str
    snippet: str  # Python: the recipe in a team's own Model(...)
    knobs: tuple[tuple[str, str], ...]  # (MindSpore's name, this recipe's value)
    notes: tuple[str, ...]  # the level goes with the dict; what the dict leaves out and why; MindSpore's caveats


def apply_info(inputs: ReportInputs) -> ApplyInfo | None:
    """The block for the recommended recipe; None when nothing can be recommended (no finished baseline)."""
    document = inputs.selection.document
    if document is None:
        return None
    folder = inputs.folder if inputs.folder is not None else Path(".")
    recipe_path, config_path = folder / BEST_RECIPE_NAME, folder / BEST_BOOST_CONFIG_NAME
    # named as they sit beside this page (the folder may move: copy the two files with it)
    files = ((BEST_RECIPE_NAME, "the whole recipe, for boosttune.load_best_recipe; with the figures and provenance"),
             (BEST_BOOST_CONFIG_NAME, "its boost_config_dict alone, for Model(..., boost_config_dict=...)"))
    epochs = (document.get("recipe") or {}).get("epochs") or "EPOCHS"
    snippet = "\n".join((
        "import boosttune",
        "from mindspore import Model",
        "",
        "# net, loss_fn, metrics and the train dataset are yours",
        f'recipe = boosttune.load_best_recipe("{BEST_RECIPE_NAME}")',
        "optimizer = recipe.build_optimizer(",
        f"    net, steps_per_epoch=train.get_dataset_size(), epochs={epochs})",
        "model = Model(net, loss_fn, optimizer=optimizer, metrics=metrics,",
        "              **recipe.model_kwargs(net))",
        "# or the same Model in plain MindSpore (your optimizer, as the table says):",
        *_plain_model(document),
    ))
    return ApplyInfo(files, recipe_path.is_file() and config_path.is_file(), f"boosttune export {folder}", snippet,
                     _knobs(document), _notes(document))


def _plain_model(document: dict[str, Any]) -> list[str]:
    """The recipe's ``mindspore.Model(...)`` line (best_recipe.json's ``model_kwargs``) as comment lines of the
    snippet, broken between its arguments."""
    line = str(document.get("model_kwargs") or "")
    call = (line.split("=", 1)[1].strip() if line.startswith("model =") else line).replace(
        "mindspore.Model(network,", "Model(net,").replace("mindspore.", "")
    head, _, rest = call.partition("(")
    arguments, depth, start = [], 0, 0
    for i, char in enumerate(rest):
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            arguments.append(rest[start:i].strip())
            start = i + 1
    arguments.append(rest[start:].strip().removesuffix(")"))
    lines, current = [], f"# model = {head}("
    indent = f"#{' ' * (len(current) - 2)} "
    for argument in arguments:
        if len(current) + len(argument) > 76 and not current.endswith("("):
            lines.append(current.rstrip())
            current = indent
        if len(current) + len(argument) > 78 and "(" in argument:  # a manager's call: its arguments on a line
            call, _, inner = argument.partition("(")
            lines.append(f"{current}{call}(")
            current = f"{indent}    {inner}, "
            continue
        current += argument + ", "
    return lines + [current.rstrip().rstrip(",") + ")"]


def _knobs(document: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    level = document["boost_level"]
    boost_config = document["boost_config_dict"]
    knobs = [("boost_level", level)]
    switches = dict(boost_config.get("boost") or {})
    if level == "O0":
        knobs.append(("boost_config_dict", "ignored at boost_level O0"))
    elif switches:
        mode = switches.pop("mode", "auto")
        on = [name for name, value in switches.items() if value]
        off = [name for name, value in switches.items() if not value]
        knobs.append(('boost_config_dict["boost"]', f"mode {mode}; on: {', '.join(on) or 'none'}; "
                                                    f"off: {', '.join(off) or 'none'}"))
    for section, values in boost_config.items():
        if section != "boost" and level != "O0":
            knobs.append((f'boost_config_dict["{section}"]', ", ".join(f"{k}={v!r}" for k, v in values.items())))
    boosted = level != "O0"
    knobs.append(("amp_level", document["amp_level"]))
    loss_scale = _with_defaults(LossScaleConfig, document.get("loss_scale"))
    manager = loss_scale_manager_call(loss_scale, boosted)
    knobs.append(("loss_scale_manager", manager.removeprefix("mindspore.") if manager else "none"))
    knobs += _optimizer(_with_defaults(OptimizerConfig, document.get("optimizer")), loss_scale)
    if document.get("batch_size") is not None:
        knobs.append(("dataset.batch", f"{document['batch_size']} per rank"))
    return tuple(knobs)


def _with_defaults(model: type[BaseModel], given: Any) -> dict[str, Any]:
    """A recipe's part with the defaults load_best_recipe fills in (as given when it does not validate)."""
    try:
        return model.model_validate(given or {}).model_dump()
    except ValidationError:
        return dict(given) if isinstance(given, dict) else {}


def _optimizer(optimizer: dict[str, Any], loss_scale: dict[str, Any]) -> list[tuple[str, str]]:
    name = str(optimizer.get("name", "momentum"))
    arguments = ["learning_rate"]
    if name in ("momentum", "thor"):
        arguments.append(f"momentum={optimizer.get('momentum')}")
    arguments.append(f"weight_decay={optimizer.get('weight_decay', 0.0)}")
    # As boosttune.trial.optim.optimizer_loss_scale: a fixed scale without overflow checks is divided back out.
    if loss_scale.get("kind") == "fixed" and not loss_scale.get("drop_overflow_update", False):
        arguments.append(f"loss_scale={loss_scale.get('loss_scale')}")
    schedule = {"cosine": "cosine decay to 0 over the run's updates",
                "step": f"x{optimizer.get('step_gamma')} every {optimizer.get('step_every_epochs')} epoch(s)"}.get(
        str(optimizer.get("lr_schedule")), "constant")
    if optimizer.get("warmup_steps"):
        schedule = f"{optimizer['warmup_steps']} linear warm-up updates, then {schedule}"
    if schedule != "constant":
        schedule += " (every update's rate: recipe.learning_rates(steps_per_epoch, epochs))"
    return [("optimizer", f"{_OPTIMIZERS.get(name, name)}({', '.join(arguments)})"),
            ("learning_rate", f"{optimizer.get('learning_rate')}, {schedule}")]


def _notes(document: dict[str, Any]) -> tuple[str, ...]:
    level = document["boost_level"]
    if level == "O0":
        notes = ["boost_level O0: MindSpore applies no boost and ignores boost_config_dict; this is plain training, "
                 "and the snippet builds it."]
    else:
        preset = " + ".join(name for name, on in PRESETS[level].items() if on)
        same = _canonical(document["boost_config_dict"], level) == _canonical({}, level)
        notes = [f"boost_level {level} goes with this boost_config_dict: {level} alone gives MindSpore's {level} "
                 f"preset ({preset} at their defaults), {'which this recipe is' if same else 'not this recipe'}. "
                 "Give Model metrics or an eval_network: without either MindSpore skips boost, with a warning only."]
        notes += [note for note in document.get("notes") or () if not note.startswith("boost_level O0")]
    notes += [f"Not in {BEST_BOOST_CONFIG_NAME}: {key}, {why}."
              for key, why in (document.get("boost_config_dict_left_out") or {}).items()]
    return tuple(notes)


def _canonical(boost_config_dict: dict[str, Any], level: str) -> dict[str, Any] | None:
    try:
        return parse_boost_config(boost_config_dict, level).to_boost_config_dict()
    except BoosttuneError:
        return None
