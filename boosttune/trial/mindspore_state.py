"""Undo MindSpore's process-wide boost state so two trials in one process cannot leak.

``AutoBoost`` is a singleton whose first configuration wins for every later ``Model``, and manual
mode writes its switches into the module-level preset dict. Both are reset before and after
every trial.
"""

from __future__ import annotations

import copy

from boosttune.config.boost import PRESETS

__all__ = ["reset_boost_state"]


def reset_boost_state() -> None:
    import mindspore.boost.boost as ms_boost

    ms_boost.AutoBoost._instance = None
    presets = ms_boost._boost_config_level
    for level, switches in PRESETS.items():
        presets[level] = copy.deepcopy(switches)
