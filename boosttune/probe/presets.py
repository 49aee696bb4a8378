"""MindSpore's O1/O2 presets as the current device can run them.

O1 switches on LessBN with gradient centralization, which has no CPU kernel; the closest recipe a
CPU can run keeps every switch and turns ``gc_flag`` off. Every experiment trains these next to
the O0 baseline, so speed-ups are ratios within one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from boosttune import algorithms
from boosttune.algorithms import BOOST_LEVEL_NAMES
from boosttune.config.boost import parse_boost_config
from boosttune.probe.report import ProbeReport

__all__ = ["DevicePreset", "device_presets"]


@dataclass(frozen=True)
class DevicePreset:
    name: str
    boost_level: str
    boost_config_dict: dict[str, Any]
    notes: tuple[str, ...]


def device_presets(report: ProbeReport | None, world_size: int = 1) -> list[DevicePreset]:
    """O0, then O1 and O2 as far as the device supports them (duplicates left out, with a note)."""
    presets = [DevicePreset("O0", "O0", {}, ("baseline",))]
    seen: dict[tuple, str] = {}
    for level in BOOST_LEVEL_NAMES[1:]:
        config, notes = _on_this_device(level, report)
        effective = parse_boost_config(config, level).effective()
        idle = _idle_with(world_size)
        notes += [f"{name} is {why}" for name, why in idle.items() if effective.applied[name]]
        key = tuple(sorted((k, v) for k, v in effective.applied.items() if k not in idle))
        key += (repr(effective.settings),)
        name = f"{level}-equivalent" if config else level
        if key in seen:
            notes.append(f"trains the same as {seen[key]} here")
        seen.setdefault(key, name)
        presets.append(DevicePreset(name, level, config, tuple(notes)))
    return presets


def _on_this_device(level: str, report: ProbeReport | None) -> tuple[dict[str, Any], list[str]]:
    """The sections (and why) that make ``level`` run on this device: each algorithm it switches on has its say."""
    config: dict[str, Any] = {}
    notes: list[str] = []
    if report is None:
        return config, notes
    for algorithm in algorithms.boost_algorithms():
        if level in algorithm.presets and algorithm.device_preset is not None:
            sections, why = algorithm.device_preset(report)
            config.update(sections)
            notes += why
    return config, notes


def _idle_with(world_size: int) -> dict[str, str]:
    """The algorithms that do nothing with this many ranks (AdaSum outside its rank rule), and why."""
    idle = {}
    for algorithm in algorithms.boost_algorithms():
        why = algorithm.ranks_rule(world_size) if algorithm.ranks_rule is not None else None
        if why is not None:
            idle[algorithm.name] = why
    return idle
