"""Process-level runtime settings that must be in place before MindSpore is imported.

oneDNN reads ``ONEDNN_MAX_CPU_ISA`` once, when MindSpore's CPU kernels load: on some CPUs its
AVX-512 path is ~60x slower for small convolutions than AVX2 (the probe measures and picks).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Mapping

__all__ = ["RUNTIME_ENV_KEYS", "apply_runtime_env", "current_runtime_env"]

logger = logging.getLogger(__name__)

RUNTIME_ENV_KEYS = ("ONEDNN_MAX_CPU_ISA",)


def current_runtime_env() -> dict[str, str]:
    """The settings in force for this process (what trial results record)."""
    return {key: os.environ.get(key, "default") for key in RUNTIME_ENV_KEYS}


def apply_runtime_env(settings: Mapping[str, str]) -> bool:
    """Set ``settings`` in the environment; returns False if MindSpore is loaded and they differ.

    A value of ``"default"`` removes the variable (oneDNN picks the ISA itself).
    """
    wanted = {k: v for k, v in settings.items() if k in RUNTIME_ENV_KEYS}
    if "mindspore" in sys.modules and wanted != {k: current_runtime_env()[k] for k in wanted}:
        logger.warning(
            "MindSpore is already imported; runtime settings %s cannot take effect in this process "
            "(in force: %s)", wanted, current_runtime_env(),
        )
        return False
    for key, value in wanted.items():
        if value == "default":
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    return True
