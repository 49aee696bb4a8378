"""The typed configuration of a search experiment (``boosttune tune CONFIG.yaml`` and experiments/)."""

from __future__ import annotations

import importlib.util
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from boosttune.config.boost import format_validation_error
from boosttune.config.recipe import RENAMED_RECIPE_FIELDS, TrialRecipe, parse_recipe, refuse_renamed, with_entry_names
from boosttune.errors import ConfigError

__all__ = ["CONFIRM_SCREEN", "EARLY_STOP_MARGIN", "MAX_DROP", "OBJECTIVES", "SAMPLERS", "ExperimentConfig",
           "parse_experiment"]

# Tolerances left unset: points for a fraction objective (accuracy), percent of the baseline's value otherwise.
MAX_DROP, EARLY_STOP_MARGIN, CONFIRM_SCREEN = 0.5, 5.0, 3.0
# Named so before the objective was the user's (they were accuracy points).
RENAMED_FIELDS = {
    "max_accuracy_drop_pt": "max_drop (in the objective's units: points for accuracy)",
    "early_stop_margin_pt": "early_stop_margin (in the objective's units: points for accuracy)",
    "confirm_screen_pt": "confirm_screen (in the objective's units: points for accuracy)",
}

OBJECTIVES = ("pareto", "constrained", "time_to_accuracy")
SAMPLERS = ("tpe", "gp", "nsga2", "random")
FRAGMENT_NAMES = ("dim_reduce", "less_bn", "grad_freeze", "grad_accumulation", "adasum", "loss_scale", "amp",
                  "optimizer")


class ExperimentConfig(BaseModel):
    """A search: the base recipe, how many trials, on how many workers each, for which objective.

    objective:
      pareto: the best (throughput, objective) pairs together; the Pareto set is the answer.
      constrained: the fastest recipe within ``max_drop`` of the baseline's objective.
      time_to_accuracy: the least training time to reach the baseline's objective less the allowed drop.

    The objective is the builder's (accuracy for the built-in models; see :mod:`boosttune.objective`). The
    tolerances ``max_drop``, ``early_stop_margin`` and ``confirm_screen`` are in its units: points for a
    fraction such as accuracy, the metric's own units otherwise; left unset, their defaults (0.5, 5 and 3) are
    points for a fraction and percent of the baseline's value otherwise.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field("boosttune", pattern=r"^[A-Za-z0-9_.-]+$")
    base: dict[str, Any] = Field(default_factory=dict)
    num_trials: int = Field(12, ge=1)
    workers_per_trial: int = Field(1, ge=1)
    objective: Literal["pareto", "constrained", "time_to_accuracy"] = "pareto"
    max_drop: float | None = Field(None, ge=0.0)  # default: MAX_DROP (see the class docstring)
    # At the main job's budget (8 trials, half of them the informed start) random sampling of the pruned space
    # reached the best front in benchmarks/search_efficiency.py; TPE and GP exploited the start points' neighbours.
    sampler: Literal["tpe", "gp", "nsga2", "random"] = "random"
    seed: int = Field(0, ge=0)
    time_budget_s: float | None = Field(None, gt=0)
    max_failure_rate: float = Field(0.5, gt=0.0, le=1.0)
    max_concurrent_trials: int | None = Field(None, ge=1)
    search: list[Literal["dim_reduce", "less_bn", "grad_freeze", "grad_accumulation", "adasum", "loss_scale",
                         "amp", "optimizer"]] | None = None
    # The user's code, shipped to every node through Ray's runtime environment: a folder (default: the one the
    # command starts in, when base.model names a builder of the user's own) and modules (package folders, .py files).
    working_dir: str | None = None
    py_modules: list[str] = Field(default_factory=list)
    # Where Ray Train and Tune persist (a folder every node can write, or a bucket URI); default: the output folder.
    storage: str | None = None
    # The Optuna study's RDB URL; default: sqlite in the output folder.
    study_storage: str | None = None
    # Ray's accelerator model for GPU/Ascend trials (e.g. "A100", "Ascend910B"); default: any of the device's kind.
    accelerator_type: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]+$")
    # Stop hopeless trials early: ASHA on one objective, multi-objective successive halving in Pareto mode.
    early_stopping: bool = True
    reduction_factor: float = Field(2.0, gt=1.0)
    early_stop_margin: float | None = Field(None, ge=0.0)  # a lead at epoch 1 smaller than this is noise (default 5)
    # Leave out of the search the knobs this device measured clearly slower than O0 (boosttune.probe.calibrate).
    prune_slow: bool = True
    # Start from the presets and the variations a person would try first, then let the sampler model.
    informed_start: bool = True
    # The confirm stage (boosttune.evaluation.confirm): 0 skips it, and the answer then rests on one seed.
    confirm_seeds: int = Field(3, ge=0)
    confirm_candidates: int = Field(3, ge=0)
    confirm_screen: float | None = Field(None, ge=0.0)  # default 3

    @property
    def recipe(self) -> TrialRecipe:
        return parse_recipe(self.base)


def parse_experiment(document: Mapping[str, Any] | None = None, **overrides: Any) -> ExperimentConfig:
    """Validate an experiment (from YAML/JSON plus overrides); bad input is one ConfigError line."""
    raw = {**dict(document or {}), **{k: v for k, v in overrides.items() if v is not None}}
    refuse_renamed(raw, RENAMED_FIELDS)
    if isinstance(raw.get("base"), Mapping):
        refuse_renamed(raw["base"], RENAMED_RECIPE_FIELDS, prefix="base.")
        raw["base"] = with_entry_names(dict(raw["base"]))
    try:
        config = ExperimentConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, ExperimentConfig, prefix="")) from None
    try:
        recipe = config.recipe
    except ConfigError as e:
        raise ConfigError(f"base.{e}") from None
    if recipe.boost_level != "O0" or recipe.boost_config_dict:
        raise ConfigError("base.boost_level: the base recipe is the O0 baseline; boost settings are what the "
                          "search chooses (leave boost_level/boost_config_dict out of base)")
    if config.confirm_seeds == 1:
        raise ConfigError("confirm_seeds: 1 is invalid; allowed: 0 (no confirm stage) or >= 2 paired seeds "
                          "(an interval needs two; 5 or more recommended)")
    if config.sampler == "gp" and importlib.util.find_spec("torch") is None:
        raise ConfigError("sampler: 'gp' needs PyTorch, which is not installed (pip install 'boosttune[gp]'); "
                          "allowed without it: tpe, nsga2, random")
    if config.num_trials < 2:
        raise ConfigError(f"num_trials: {config.num_trials} is invalid; the baseline plus at least one more trial")
    return config
