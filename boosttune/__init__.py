"""boosttune: benchmark and autotune MindSpore's boost algorithms for speed vs accuracy."""

from boosttune.builder import TrialContext, TrialParts
from boosttune.config import BoostConfig, EffectiveBoost, load_document, parse_boost_config
from boosttune.config.recipe import TrialRecipe, parse_recipe
from boosttune.errors import BoosttuneError, BuilderError, ConfigError, DataError, TrialError, UnsupportedError
from boosttune.outputs.best_recipe import BestRecipe, load_best_recipe

__version__ = "0.1.0"

__all__ = [
    "BestRecipe",
    "BoostConfig",
    "BoosttuneError",
    "BuilderError",
    "ConfigError",
    "DataError",
    "EffectiveBoost",
    "TrialContext",
    "TrialError",
    "TrialParts",
    "TrialRecipe",
    "UnsupportedError",
    "__version__",
    "load_best_recipe",
    "load_document",
    "parse_boost_config",
    "parse_recipe",
    "run_trial",
]


def __getattr__(name: str):
    if name == "run_trial":  # imports MindSpore: only when asked for
        from boosttune.trial.runner import run_trial

        return run_trial
    raise AttributeError(name)
