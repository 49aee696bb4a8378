"""Configuration: boost config model, training recipe, file loading. Pure Python."""

from boosttune.config.boost import (
    ALGORITHMS,
    BOOST_LEVEL_NAMES,
    MODES,
    PRESETS,
    BoostConfig,
    EffectiveBoost,
    parse_boost_config,
)
from boosttune.config.io import load_document, split_boost_document

__all__ = [
    "ALGORITHMS",
    "BOOST_LEVEL_NAMES",
    "MODES",
    "PRESETS",
    "BoostConfig",
    "EffectiveBoost",
    "load_document",
    "parse_boost_config",
    "split_boost_document",
]
