"""Process-level runtime settings that must be in place before MindSpore is imported.

oneDNN reads ``ONEDNN_MAX_CPU_ISA`` once, when MindSpore's CPU kernels load: on some CPUs its
AVX-512 path is ~60x slower for small convolutions than AVX2 (the probe measures and picks).

A Ray worker's CPU threads: Ray sets ``OMP_NUM_THREADS`` from the CPUs a task reserved (one a rank), while MindSpore
sizes its kernel thread pool from the machine; the run decides both from the cores its job would have
(:func:`boosttune.execution.capacity.rank_threads`) and hands the figure to its ranks in ``CPU_THREADS_VAR``, which
:func:`apply_cpu_threads` sets in MindSpore before the rank's first graph.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Mapping

__all__ = ["CPU_THREADS_VAR", "RUNTIME_ENV_KEYS", "apply_cpu_threads", "apply_runtime_env", "cpu_threads_env",
           "current_runtime_env"]

logger = logging.getLogger(__name__)

RUNTIME_ENV_KEYS = ("ONEDNN_MAX_CPU_ISA",)
CPU_THREADS_VAR = "BOOSTTUNE_CPU_THREADS"  # a rank's CPU threads, as the run decided them


def cpu_threads_env(threads: int | None) -> dict[str, str]:
    """What a rank's environment carries for ``threads`` CPU threads (nothing for None: MindSpore's own default)."""
    if threads is None:
        return {}
    return {CPU_THREADS_VAR: str(threads), "OMP_NUM_THREADS": str(threads)}


def apply_cpu_threads() -> int | None:
    """Set MindSpore's CPU kernel threads to what the run decided for this rank (``CPU_THREADS_VAR``); the figure, or
    None where none was decided. Once a process: MindSpore refuses a second setting, and a warm worker keeps its
    first."""
    value = os.environ.get(CPU_THREADS_VAR)
    if not value:
        return None
    threads = int(value)
    from mindspore.device_context.cpu import op_tuning

    try:
        op_tuning.threads_num(threads)
    except RuntimeError:  # "can not be set repeatedly": this process set it for an earlier run (a warm worker)
        pass
    return threads


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
