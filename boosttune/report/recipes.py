"""What a recipe is, in words: the speed-up methods it switches on and a one-line description.

Read from a run's ``recipe_json``; shared by the report's figures and the method cards.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from boosttune.config.boost import parse_boost_config
from boosttune.config.recipe import methods_of, short_name
from boosttune.errors import BoosttuneError

__all__ = ["describe_recipe", "methods_of", "recipe_of", "recipe_settings", "run_name", "settings_diff", "short_name"]


def recipe_of(row: pd.Series) -> dict[str, Any]:
    """The recipe document a results row was run with ({} when the row has none, or an unreadable one)."""
    try:
        return json.loads(row["recipe_json"]) if isinstance(row.get("recipe_json"), str) else {}
    except ValueError:
        return {}


def describe_recipe(recipe: dict[str, Any]) -> str:
    """What a recipe changes, in a line: its methods with their knobs, then the optimizer."""
    parts = []
    try:
        effective = parse_boost_config(recipe.get("boost_config_dict") or {}, recipe.get("boost_level") or "O0")
        settings = effective.effective().settings
    except BoosttuneError:
        settings = {}
    loss_scale = recipe.get("loss_scale") or {}
    for method in methods_of(recipe):
        knobs = {k: v for k, v in (settings.get(method) or {}).items() if k not in ("total_steps",)}
        if method == "loss_scale fixed":
            knobs = {"loss_scale": loss_scale.get("loss_scale")}
        elif method == "loss_scale dynamic":
            knobs = {k: loss_scale.get(k) for k in ("init_loss_scale", "scale_factor", "scale_window")}
        shown = ", ".join(f"{k} {_short(v)}" for k, v in sorted(knobs.items()))
        parts.append(f"{method} ({shown})" if shown else method)
    optimizer = recipe.get("optimizer") or {}
    lr = optimizer.get("learning_rate")
    parts.append(" ".join(str(p) for p in (optimizer.get("name", "momentum"), f"lr {_short(lr)}" if lr else "",
                                             optimizer.get("lr_schedule", "")) if p))
    return f"boost_level {recipe.get('boost_level', 'O0')}: " + " + ".join(parts)


_LOSS_SCALE_KNOBS = {"none": (), "fixed": ("loss_scale", "drop_overflow_update"),
                     "dynamic": ("init_loss_scale", "scale_factor", "scale_window"),
                     "group": ("init_loss_scale", "scale_factor", "scale_window")}
_OPTIMIZER_KNOBS = ("name", "learning_rate", "lr_schedule", "momentum", "weight_decay", "warmup_steps")


def recipe_settings(recipe: dict[str, Any]) -> dict[str, str]:
    """Every setting that acts in a recipe, by name, as text: levels, batch and epochs, each applied boost algorithm's
    knobs (what MindSpore builds, not the unused rest of the dict), the loss scale's knobs for its kind, the optimizer."""
    out = {"boost_level": str(recipe.get("boost_level", "O0")), "amp_level": str(recipe.get("amp_level", "O0")),
           "batch_size": str(recipe.get("batch_size")), "epochs": str(recipe.get("epochs"))}
    try:
        settings = parse_boost_config(recipe.get("boost_config_dict") or {},
                                      recipe.get("boost_level") or "O0").effective().settings
    except BoosttuneError:
        settings = {}
    for method, knobs in sorted(settings.items()):
        for knob, value in sorted((knobs or {}).items()):
            if knob != "total_steps":  # the run's length: the same for every recipe of a run
                out[f"{method}.{knob}"] = _short(value)
    loss_scale = recipe.get("loss_scale") or {}
    kind = str(loss_scale.get("kind", "none"))
    out["loss_scale.kind"] = kind
    for knob in _LOSS_SCALE_KNOBS.get(kind, ()):
        out[f"loss_scale.{knob}"] = _short(loss_scale.get(knob))
    optimizer = recipe.get("optimizer") or {}
    for knob in _OPTIMIZER_KNOBS:
        if knob in optimizer:
            out[f"optimizer.{knob}"] = _short(optimizer[knob])
    return out


def settings_diff(recipe: dict[str, Any], baseline: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(setting, O0's value, the recipe's value) for every setting in which ``recipe`` differs from ``baseline``
    ("off": not set there), in the order :func:`recipe_settings` gives them."""
    ours, theirs = recipe_settings(recipe), recipe_settings(baseline)
    names = list(theirs) + [name for name in ours if name not in theirs]
    return [(name, theirs.get(name, "off"), ours.get(name, "off")) for name in names
            if theirs.get(name, "off") != ours.get(name, "off")]


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def run_name(row: pd.Series) -> str:
    """What a user reads for a run: its label (a preset, a start point, a confirmed recipe), else what its recipe
    switches on; the trial id only when the row holds no recipe (the id goes on hover and in an id column)."""
    trial = str(row.get("trial_id", ""))
    for column in ("recipe", "label", "preset"):
        value = row.get(column)
        if isinstance(value, str) and value and value != trial:
            return value
    recipe = recipe_of(row)
    return short_name(recipe) if recipe else trial
