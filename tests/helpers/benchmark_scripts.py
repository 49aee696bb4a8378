"""Load a script of benchmarks/ as a module, so tests check its arithmetic without running it (it is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.helpers import REPO

BENCHMARKS = REPO / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, imported once (registered in sys.modules: its dataclasses need that)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
