"""The search space: one fragment per boost algorithm plus loss scale, amp and optimizer, each from its folder
in :mod:`boosttune.algorithms`.

Define-by-run: ``suggest_recipe(trial, ctx, base)`` asks an Optuna trial only for the knobs that
apply given earlier choices, the device's capabilities and the knobs measured slow on it, and returns
the full recipe document. Replaying a trial's flat params through :class:`ReplayTrial` rebuilds the
exact same recipe (``recipe_from_params``), a preset's slow knobs included, so the space is written
once. Pure: no Ray, no MindSpore.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Mapping

from boosttune import algorithms
from boosttune.algorithms import fragments, order  # the folders' fragments, in suggestion order (not hand-kept)
from boosttune.algorithms.base import Fragment, SpaceContext
from boosttune.config.recipe import TrialRecipe, parse_recipe

__all__ = [
    "Fragment",
    "ReplayTrial",
    "SpaceContext",
    "define_by_run",
    "equivalence_key",
    "fragments",
    "informed_points",
    "preset_params",
    "recipe_from_params",
    "searchable",
    "suggest_recipe",
]


def _active(fragment: Fragment, ctx: SpaceContext) -> bool:
    if ctx.enabled and fragment.name not in ctx.enabled:
        return False
    return all(ctx.supported(knob) for knob in fragment.requires)


def _start_document(base: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(base)
    document["boost_level"] = "O1"
    document["boost_config_dict"] = {"boost": {"mode": "manual", **dict.fromkeys(algorithms.boost_names(), False)}}
    return document


def suggest_recipe(trial: Any, ctx: SpaceContext, base: dict[str, Any]) -> dict[str, Any]:
    """Ask ``trial`` for every applicable knob; return the recipe document (not yet validated)."""
    document = _start_document(base)
    for fragment in fragments():
        if _active(fragment, ctx):
            fragment.suggest(trial, ctx, document)
    switches = document["boost_config_dict"]["boost"]
    if not any(switches[name] for name in algorithms.boost_names()):
        document["boost_level"], document["boost_config_dict"] = "O0", {}  # nothing on: plain training
    return document


class define_by_run:  # noqa: N801 - used like a function; a class so that Ray can pickle it
    """The function OptunaSearch calls for each new trial."""

    def __init__(self, ctx: SpaceContext, base: dict[str, Any]) -> None:
        self.ctx = ctx
        self.base = base

    def __call__(self, trial: Any) -> None:
        suggest_recipe(trial, self.ctx, self.base)


class ReplayTrial:
    """Answers a fragment's questions from a finished trial's flat params (like Optuna's FixedTrial).

    ``fixed_params`` tells the fragments that these values are given, so a knob the search leaves out
    because it is slow here is still replayed when the params set it. With ``as_search=True`` it
    answers like a search trial instead: slow knobs are not asked (see :func:`searchable`).
    """

    def __init__(self, params: dict[str, Any], *, as_search: bool = False) -> None:
        self.params = dict(params)
        self.fixed_params = {} if as_search else self.params

    def _get(self, name: str) -> Any:
        if name not in self.params:
            raise ValueError(f"params: {name!r} is missing; the space asks for it here")
        return self.params[name]

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        return self._get(name)

    def suggest_int(self, name: str, low: int, high: int, *, step: int = 1, log: bool = False) -> int:
        return int(self._get(name))

    def suggest_float(self, name: str, low: float, high: float, *, step: float | None = None,
                      log: bool = False) -> float:
        return float(self._get(name))


def recipe_from_params(params: dict[str, Any], ctx: SpaceContext, base: dict[str, Any]) -> TrialRecipe:
    """Rebuild (and validate) the recipe a trial with these params trains."""
    return parse_recipe(suggest_recipe(ReplayTrial(params), ctx, base))


def searchable(params: dict[str, Any], ctx: SpaceContext, base: dict[str, Any]) -> bool:
    """Whether the search itself can draw these params: no knob it leaves out as slow is switched on."""
    try:
        drawn = parse_recipe(suggest_recipe(ReplayTrial(params, as_search=True), ctx, base))
    except ValueError:
        return False
    return equivalence_key(drawn) == equivalence_key(recipe_from_params(params, ctx, base))


def equivalence_key(recipe: TrialRecipe) -> str:
    """Equal for recipes that train identically (same effective boost and everything else)."""
    document = recipe.to_dict()
    document["boost_config_dict"] = recipe.boost.to_boost_config_dict()
    if not recipe.boost.effective().active:
        document["boost_level"], document["boost_config_dict"] = "O0", {}
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:16]


def preset_params(preset: str, ctx: SpaceContext, base: dict[str, Any]) -> dict[str, Any]:
    """The params that make the space produce MindSpore's preset (O0, O1/O2 as this device runs them).

    Every fragment's params as O0 has them, then those of each algorithm the preset switches on.
    """
    by_fragment = {a.fragment.name: a for a in algorithms.registry() if a.fragment is not None}
    params: dict[str, Any] = {}
    for fragment in fragments():
        algorithm = by_fragment[fragment.name]
        if algorithm.off_params is not None:
            params.update(algorithm.off_params(ctx, base))
    level = preset[:2]
    for fragment in fragments():
        algorithm = by_fragment[fragment.name]
        if level in algorithm.presets and level != "O0" and algorithm.preset_params is not None:
            params.update(algorithm.preset_params(ctx))
    return params


def informed_points(ctx: SpaceContext, base: dict[str, Any],
                    speed: Mapping[str, float | None] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The variations a person would try first, after the presets: (label, params), each a full-space point.

    Each algorithm declares its own (``Algorithm.informed``: GradientFreeze alone at a middle, a high and a low
    freeze_p, LessBN alone, the O1-equivalent at a lower freeze_p). ``speed`` (knob -> throughput over O0's, the
    calibration on the team's own network on this device) ranks the algorithms: the one measured fastest there first;
    without it, the order of ``order.INFORMED``. Points that rely on a knob the device does not support are left out
    (a variation of a preset: every switch the preset turns on); the caller leaves out those that rely on a knob
    measured slow here (:func:`uses_slow`).
    """
    over = {"O0": preset_params("O0", ctx, base), "O1": preset_params("O1", ctx, base)}
    ranked: list[tuple[tuple[Any, ...], str, dict[str, Any]]] = []
    for algorithm in algorithms.registry():
        if algorithm.informed is None or not ctx.supported(f"boost.{algorithm.name}"):
            continue
        measured = (speed or {}).get(f"boost.{algorithm.name}")
        faster = -measured if isinstance(measured, (int, float)) else -1.0  # unmeasured: as fast as O0
        for index, point in enumerate(algorithm.informed(ctx)):
            params = {**over[point.over], **point.params}
            switched = [k for k, v in over[point.over].items() if k.count(".") == 1 and k.startswith("boost.") and v]
            if all(ctx.supported(knob) for knob in switched):
                place = (point.over != "O0", faster, order.place(order.INFORMED, algorithm.name), index)
                ranked.append((place, point.label, params))
    return [(label, params) for _, label, params in sorted(ranked, key=lambda point: point[0])]
