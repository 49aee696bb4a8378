"""Undo MindSpore's process-wide boost state so two trials in one process cannot leak.

``AutoBoost`` is a singleton whose first configuration wins for every later ``Model``, and manual
mode writes its switches into the module-level preset dict. Both are reset before and after
every trial (and around DimReduce's stage 1).
"""

from __future__ import annotations

import copy

from boosttune.algorithms import presets

__all__ = ["reset_boost_state"]


def reset_boost_state() -> None:
    # Deferred: MindSpore is heavy; only a process that trains has it loaded.
    import mindspore.boost.boost as ms_boost

    ms_boost.AutoBoost._instance = None
    levels = ms_boost._boost_config_level
    for level, switches in presets().items():
        levels[level] = copy.deepcopy(switches)
