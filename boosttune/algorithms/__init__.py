"""The boost algorithms and knob families, one folder each, found by discovery (not a hand-kept list).

Every subpackage of this package defines ``ALGORITHM`` (an :class:`~boosttune.algorithms.base.Algorithm`):
its config section, search-space fragment, probe check, calibration point, bench setting, combination rule,
trial hooks and method-card notes. Everything else (config names and models, the space, the probe, the bench
matrix, the method cards, the CLI's ``--search`` choices) is derived from :func:`registry`. Adding an algorithm
means adding one folder. Pure: no Ray, no MindSpore at import.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Any

from boosttune.algorithms import order
from boosttune.algorithms.base import Algorithm

__all__ = [
    "Algorithm",
    "BOOST_LEVEL_NAMES",
    "boost_algorithms",
    "boost_names",
    "REQUIRED_PARTS",
    "check_contract",
    "clear_cache",
    "fragment_names",
    "fragments",
    "get",
    "knobs",
    "listed",
    "manual",
    "presets",
    "registry",
]

BOOST_LEVEL_NAMES = ("O0", "O1", "O2")  # MindSpore's boost levels (Model's boost_level)


@functools.lru_cache(maxsize=None)
def _discover(path: tuple[str, ...]) -> tuple[Algorithm, ...]:
    found = []
    for module_info in pkgutil.iter_modules(list(path)):
        if not module_info.ispkg:
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        found.append(module.ALGORITHM)
    return tuple(sorted(found, key=lambda a: (a.kind != "boost",
                                              order.place(order.BOOST_SWITCHES + order.KNOB_FAMILIES, a.name))))


def registry() -> tuple[Algorithm, ...]:
    """Every algorithm folder's ALGORITHM: the boost algorithms in MindSpore's order, then the knobs
    (:mod:`boosttune.algorithms.order`)."""
    return _discover(tuple(__path__))


def clear_cache() -> None:
    """Forget what was discovered (a test that adds a folder)."""
    _discover.cache_clear()


def get(name: str) -> Algorithm:
    for algorithm in registry():
        if algorithm.name == name:
            return algorithm
    raise KeyError(f"no algorithm {name!r}; known: {', '.join(a.name for a in registry())}")


def boost_algorithms() -> tuple[Algorithm, ...]:
    return tuple(a for a in registry() if a.kind == "boost")


def knobs() -> tuple[Algorithm, ...]:
    return tuple(a for a in registry() if a.kind == "knob")


def boost_names() -> tuple[str, ...]:
    """The switches of boost_config_dict's ``boost`` section, in MindSpore's order."""
    return tuple(a.name for a in boost_algorithms())


def listed() -> tuple[Algorithm, ...]:
    """Every algorithm in the order of the probe's checks, the speed calibration and the bench matrix."""
    return tuple(sorted(registry(), key=lambda a: order.place(order.PROBE, a.name)))


def fragments() -> list[Any]:
    """Every algorithm's search-space fragment, in suggestion order."""
    return sorted((a.fragment for a in registry() if a.fragment is not None),
                  key=lambda f: order.place(order.SUGGESTION, f.name))


def fragment_names() -> tuple[str, ...]:
    """The ``--search`` names, in suggestion order."""
    return tuple(f.name for f in fragments())


def presets() -> dict[str, dict[str, bool]]:
    """MindSpore's boost levels: which switches each turns on (``mindspore/boost/boost.py``
    ``_boost_config_level``, 2.10). Each algorithm names the levels that switch it on."""
    return {level: {a.name: level in a.presets for a in boost_algorithms()} for level in BOOST_LEVEL_NAMES}


def manual(**switches: bool) -> dict[str, Any]:
    """A boost section in manual mode: what level O1 switches on is off, then ``switches``."""
    off = dict.fromkeys((a.name for a in boost_algorithms() if "O1" in a.presets), False)
    return {"boost": {"mode": "manual", **off, **switches}}


# The parts every algorithm folder provides, unless its ALGORITHM says in ``without`` why it has none.
REQUIRED_PARTS = {
    "boost": ("section", "fragment", "off_params", "probe_checks", "calibration", "bench", "observe", "notes"),
    "knob": ("fragment", "off_params", "probe_checks", "notes"),
}


def check_contract(algorithm: Algorithm) -> list[str]:
    """The parts ``algorithm`` lacks without saying why (empty: complete), and what else is inconsistent."""
    problems = []
    for part in REQUIRED_PARTS[algorithm.kind]:
        value = getattr(algorithm, part)
        if (value is None or value == () or value == {}) and not algorithm.without.get(part):
            problems.append(part)
    fragment = algorithm.fragment
    if fragment is not None and fragment.name != algorithm.name:
        problems.append(f"fragment named {algorithm.name!r} (it is {fragment.name!r})")
    if any(level not in BOOST_LEVEL_NAMES for level in algorithm.presets):
        problems.append(f"presets among {', '.join(BOOST_LEVEL_NAMES)}")
    return problems
