"""Export the selected trial: a boost_config_dict for ``mindspore.Model`` and the recipe around it.

``best_boost_config.json`` is the canonical dict the trial trained with, less the settings that nothing reads on
the run it was found on (``common.device_number`` on one rank: :func:`applicable_boost_config`), so
``Model(..., boost_level=..., boost_config_dict=json.load(f))`` builds what was measured. The level goes with the
dict: O1 alone is MindSpore's O1 preset, not the recipe. ``best_recipe.json`` adds the rest of the recipe, the
measured figures, why it was chosen, what was left out of the dict and why, and where it came from. Reads only
the results table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from boosttune import algorithms
from boosttune.config.boost import EffectiveBoost, common_readers, parse_boost_config
from boosttune.errors import BoosttuneError, DataError
from boosttune.files import write_json
from boosttune.tables.results import finite
from boosttune.tables.states import FINISHED
from boosttune.stats.decide import Decision
from boosttune.stats.margin import Margin
from boosttune.stats.select import Selection, select_best

__all__ = ["BEST_BOOST_CONFIG_NAME", "BEST_RECIPE_NAME", "SelectedRecipe", "applicable_boost_config", "export_best",
           "loss_scale_manager_call", "selected_recipe", "write_best"]

BEST_BOOST_CONFIG_NAME = "best_boost_config.json"
BEST_RECIPE_NAME = "best_recipe.json"

# a results row's figures, named in best_recipe.json by what they are (one seed: per step, the throughput ratio)
_MEASURED = {"job_speedup_vs_baseline": "job_speedup", "throughput_sps": "throughput_sps",
             "speedup_vs_baseline": "step_speedup",
             "objective_value": "objective_value", "objective_gain": "objective_gain", "compile_s": "compile_s",
             "time_to_target_s": "time_to_target_s", "peak_rss_mb": "peak_rss_mb"}
_PROVENANCE = ("device_target", "mindspore_version", "ray_version", "boosttune_version", "onednn_isa", "seed",
               "trial_id")


class SelectedRecipe(NamedTuple):
    """The recipe export recommends: how it was chosen, and ``best_recipe.json`` as :func:`write_best` writes it."""

    selection: Selection  # the confirmed figures' choice when there are some, else the search's select_best
    document: dict[str, Any]


def export_best(df: pd.DataFrame | None, out_dir: str | Path, *, margin: Margin,
                experiment_path: str | Path | None = None, decision: Decision | None = None) -> tuple[Path, Path]:
    """Write the two JSON files of the recipe :func:`selected_recipe` names.

    Returns:
        The paths of ``best_boost_config.json`` and ``best_recipe.json``.

    Raises:
        DataError: no finished baseline, or the selected row's boost_config_dict is not valid.
    """
    return write_best(selected_recipe(df, margin, experiment_path=experiment_path, decision=decision).document,
                      out_dir)


def write_best(recipe: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    """Write a :attr:`SelectedRecipe.document` as ``best_boost_config.json`` and ``best_recipe.json``; their paths."""
    out_dir = Path(out_dir)
    config_path = write_json(out_dir / BEST_BOOST_CONFIG_NAME, recipe["boost_config_dict"])
    recipe_path = write_json(out_dir / BEST_RECIPE_NAME, recipe)
    return config_path, recipe_path


def selected_recipe(df: pd.DataFrame | None, margin: Margin, *, experiment_path: str | Path | None = None,
                    decision: Decision | None = None, pick: Selection | None = None) -> SelectedRecipe:
    """The recipe to take home and ``best_recipe.json`` as :func:`write_best` writes it (its ``boost_config_dict`` is
    ``best_boost_config.json``). With a ``decision`` (the confirm stage or a bench) its answer, with its intervals,
    seeds and verdict; without, the search's one-seed pick (``pick``, else :func:`~boosttune.stats.select.select_best`
    over ``df``) within ``margin``. Nothing is decided here.

    Raises:
        DataError: no finished baseline, or the selected row's boost_config_dict is not valid.
    """
    if decision is not None:
        selection, row = _confirmed_selection(decision)
    else:
        if df is None:
            raise DataError("results: no search results and no confirm runs to export a recipe from")
        selection = pick if pick is not None else select_best(df, margin)
        row = selection.row
    canonical = _json_cell(row, "boost_config_dict_json")
    level = str(row["boost_level"]) if pd.notna(row["boost_level"]) else "O0"
    try:
        effective = parse_boost_config(canonical, level).effective()
    except BoosttuneError as e:
        raise DataError(f"results: trial {row['trial_id']}: boost_config_dict_json is invalid: {e}") from None
    world_size = int(row["world_size"]) if finite(row["world_size"]) else None
    boost_config, left_out = applicable_boost_config(canonical, effective, world_size)
    recipe = _recipe_document(row, selection, boost_config, left_out, level, effective.notes, experiment_path)
    recipe["objective"] = margin.objective.to_dict()
    if decision is not None:
        recipe["confirmed"] = _confirmed_document(decision)
        recipe["measured"] = _decided_measurements(recipe["confirmed"]["figures"], recipe["measured"])
    return SelectedRecipe(selection, recipe)


def applicable_boost_config(canonical: dict[str, Any], effective: EffectiveBoost,
                            world_size: int | None) -> tuple[dict[str, Any], dict[str, str]]:
    """``canonical`` without the ``common`` keys that nothing reads on a run of ``world_size`` ranks (None: not
    known) with ``effective``'s algorithms, and why each was left out (``"common.device_number"`` -> why).

    MindSpore builds the same Model from either: a key left out falls back to AutoBoost's default, which no
    applied algorithm reads (tests/outputs/test_export.py builds both).
    """
    in_effect = {name for name, on in effective.applied.items() if on}
    if world_size is not None:  # an algorithm idle at this many ranks (AdaSum: plain data parallel) reads nothing
        in_effect -= {a.name for a in algorithms.registry() if a.ranks_rule is not None and a.ranks_rule(world_size)}
    common = dict(canonical.get("common") or {})
    left_out: dict[str, str] = {}
    for key, readers in common_readers().items():  # as the algorithm folders declare (Algorithm.common_keys)
        if key in common and not in_effect & set(readers):
            value = common.pop(key)
            ranks = "" if world_size is None else f" on {world_size} rank{'s' if world_size > 1 else ''}"
            idle = (f"{' and '.join(readers)}, and neither acts" if len(readers) > 1 else
                    f"{readers[0]}, which does not act")
            left_out[f"common.{key}"] = (f"{value!r} is read only by {idle} in this recipe{ranks}; MindSpore builds "
                                         "the same Model without it")
    exported = {name: section for name, section in canonical.items() if name != "common"}
    if common:
        exported["common"] = common
    return exported, left_out


def _confirmed_selection(confirmed: Decision) -> tuple[Selection, pd.Series]:
    chosen = confirmed.selection
    runs = confirmed.runs
    finished = runs[(runs["recipe"] == chosen.recipe) & runs["status"].isin(FINISHED)]
    if finished.empty:
        raise DataError(f"confirm runs: no finished run of {chosen.recipe!r} to export")
    row = finished.sort_values("round").iloc[0]
    return Selection(row, chosen.reason, chosen.fell_back_to_baseline, chosen.max_drop), row


def _confirmed_document(confirmed: Decision) -> dict[str, Any]:
    """The chosen recipe's paired figures, every recipe's verdict, and the seeds they rest on."""
    def figures(row: pd.Series) -> dict[str, Any]:
        return {name: _plain(row[name]) for name in row.index if name not in ("recipe",)}

    summary = confirmed.summary
    chosen = summary[summary["recipe"] == confirmed.selection.recipe].iloc[0]
    return {
        "recipe": confirmed.selection.recipe,
        "seeds": list(confirmed.seeds),
        "max_drop": confirmed.max_drop,
        "figures": figures(chosen),
        "all_recipes": {str(row["recipe"]): figures(row) for _, row in summary.iterrows()},
        "race": confirmed.rules.to_dict() if confirmed.rules is not None else None,
    }


def _decided_measurements(figures: dict[str, Any], first_run: dict[str, Any]) -> dict[str, Any]:
    """``measured`` of a confirmed recipe: the decision's own figures over its paired seeds (the ones the page and
    summary.csv show), not one run's; the run the file's provenance names is kept apart, labelled as one seed."""
    return {
        "source": f"the confirm stage's decision over {figures.get('n_seeds')} paired seed(s)",
        "n_seeds": figures.get("n_seeds"),
        "job_speedup": figures.get("job_speedup"),  # the speed-up: per job at the planned length, compile included
        "job_ci": [figures.get("job_ci_low"), figures.get("job_ci_high")],
        "step_speedup": figures.get("step_speedup"),  # per step (steady state, compile apart), the same model
        "step_ci": [figures.get("step_ci_low"), figures.get("step_ci_high")],
        "objective_value": figures.get("objective_value"),
        "objective_gain": figures.get("objective_gain"),
        "objective_gain_ci": [figures.get("objective_gain_ci_low"), figures.get("objective_gain_ci_high")],
        "compile_s": first_run.get("compile_s"),
        "peak_rss_mb": first_run.get("peak_rss_mb"),
        "one_run": {"seed_note": "the first paired run alone (provenance.seed); not the decision's figures",
                    **first_run},
    }


def _recipe_document(row: pd.Series, selection: Selection, boost_config: dict[str, Any], left_out: dict[str, str],
                     level: str, notes: tuple[str, ...], experiment_path: str | Path | None) -> dict[str, Any]:
    recipe = _json_cell(row, "recipe_json")
    loss_scale = recipe.get("loss_scale") or {"kind": "none"}
    amp_level = recipe.get("amp_level") or "O0"
    provenance = {name: _plain(row[name]) for name in _PROVENANCE}
    provenance["experiment_path"] = str(experiment_path) if experiment_path is not None else None
    return {
        "boost_level": level,
        "boost_config_dict": boost_config,
        "boost_config_dict_left_out": left_out,  # setting -> why it is not in boost_config_dict
        "amp_level": amp_level,
        "loss_scale": loss_scale,
        "optimizer": recipe.get("optimizer"),
        "batch_size": _plain(row["batch_size"]),
        "measured": {key: _plain(row.get(name)) for name, key in _MEASURED.items()},
        "selection": {
            "reason": selection.reason,
            "tolerance": selection.max_drop,  # the max_drop selected at (key named so on disk)
            "fell_back_to_baseline": selection.fell_back_to_baseline,
        },
        "provenance": provenance,
        "notes": list(notes),
        "model_kwargs": _model_kwargs_line(level, amp_level, loss_scale),
        "recipe": recipe,
    }


def _model_kwargs_line(level: str, amp_level: str, loss_scale: dict[str, Any]) -> str:
    """A line of Python that builds the Model the trial trained (network, loss, optimizer, metrics are yours)."""
    manager = loss_scale_manager_call(loss_scale, boosted=level != "O0")
    return (f'model = mindspore.Model(network, loss_fn, optimizer, metrics=metrics, '
            f'amp_level="{amp_level}", boost_level="{level}", '
            f'boost_config_dict=json.load(open("{BEST_BOOST_CONFIG_NAME}"))'
            + (f", loss_scale_manager={manager}" if manager else "") + ")")


def loss_scale_manager_call(loss_scale: dict[str, Any], boosted: bool) -> str | None:
    """The loss-scale manager a trial built, as a line of Python; None: no manager."""
    # Mirrors boosttune.trial.optim.build_loss_scale_manager: boost's train cell returns None as the
    # loss without a manager (MindSpore 2.10), so a boosted model always gets one.
    kind = loss_scale.get("kind", "none")
    if kind == "none":
        return "mindspore.FixedLossScaleManager(1.0, drop_overflow_update=False)" if boosted else None
    if kind == "fixed":
        return (f"mindspore.FixedLossScaleManager({loss_scale.get('loss_scale')}, "
                f"drop_overflow_update={loss_scale.get('drop_overflow_update', False)})")
    if kind == "dynamic":
        return (f"mindspore.DynamicLossScaleManager({loss_scale.get('init_loss_scale')}, "
                f"{loss_scale.get('scale_factor')}, {loss_scale.get('scale_window')})")
    return f"mindspore.boost.GroupLossScaleManager({loss_scale.get('init_loss_scale')}, loss_scale_groups)"


def _json_cell(row: pd.Series, column: str) -> dict[str, Any]:
    try:
        value = json.loads(row[column])
    except (TypeError, ValueError) as e:
        raise DataError(f"results: trial {row['trial_id']}: {column} is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise DataError(f"results: trial {row['trial_id']}: {column} is {type(value).__name__}; expected an object")
    return value


def _plain(value: Any) -> Any:
    """A JSON value: numpy scalars as Python ones, NaN and missing values as null."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not finite(value):
        return None
    return value
