"""MindSpore's O1/O2 presets as the current device can run them.

O1 switches on LessBN with gradient centralization, which has no CPU kernel; the closest recipe a
CPU can run keeps every switch and turns ``gc_flag`` off. Every experiment trains these next to
the O0 baseline, so speed-ups are ratios within one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    for level in ("O1", "O2"):
        config: dict[str, Any] = {}
        notes: list[str] = []
        if report is not None and not report.supports("boost.less_bn.gc_flag"):
            config["less_bn"] = {"gc_flag": False}
            notes.append(f"less_bn.gc_flag off: {report.capabilities['boost.less_bn.gc_flag'].reason}")
        effective = parse_boost_config(config, level).effective()
        if effective.applied["adasum"] and world_size < 16:
            notes.append(f"adasum is plain data parallel with {world_size} rank(s) (needs >= 16)")
        key = tuple(sorted((k, v) for k, v in effective.applied.items() if k != "adasum" or world_size >= 16))
        key += (repr(effective.settings),)
        name = f"{level}-equivalent" if config else level
        if key in seen:
            notes.append(f"trains the same as {seen[key]} here")
        seen.setdefault(key, name)
        presets.append(DevicePreset(name, level, config, tuple(notes)))
    return presets
