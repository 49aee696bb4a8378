"""The capability report: what works on this device, cached per device, CPU and MindSpore version.

Pure Python: reading the cache and checking a recipe against it needs no MindSpore.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from boosttune import algorithms
from boosttune.config.recipe import TrialRecipe
from boosttune.errors import UnsupportedError
from boosttune.ray_internals import accelerator_manager

__all__ = ["Capability", "ProbeReport", "cache_path", "check_recipe", "knobs_of", "load_cached", "cpu_name",
           "node_type"]


@dataclass(frozen=True)
class Capability:
    knob: str
    supported: bool
    reason: str = ""


@dataclass
class ProbeReport:
    """What the capability probe found on one device; the algorithms read it as a
    :class:`boosttune.algorithms.base.DeviceSupport`."""

    device_target: str
    cpu: str
    mindspore_version: str
    boosttune_version: str
    created: str
    capabilities: dict[str, Capability]
    isa_seconds: dict[str, float | None] = field(default_factory=dict)
    runtime_env: dict[str, str] = field(default_factory=dict)

    def supports(self, knob: str) -> bool:
        capability = self.capabilities.get(knob)
        return capability is None or capability.supported

    def why_unsupported(self, knob: str) -> str:
        """The probe's reason for an unsupported ``knob`` (a knob it did not probe has none: KeyError)."""
        return self.capabilities[knob].reason

    def unsupported(self) -> list[Capability]:
        return [c for c in self.capabilities.values() if not c.supported]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeReport:
        data = dict(data)
        data["capabilities"] = {k: Capability(**v) for k, v in data["capabilities"].items()}
        return cls(**data)

    def table(self) -> str:
        width = max(len(k) for k in self.capabilities) + 2
        lines = [f"{'knob':<{width}}{'status':<13}reason", "-" * (width + 60)]
        for knob, capability in self.capabilities.items():
            status = "supported" if capability.supported else "unsupported"
            lines.append(f"{knob:<{width}}{status:<13}{capability.reason}")
        if self.isa_seconds:
            lines.append("")
            lines.append("CPU runtime (16->16 3x3 conv forward, 32x16x32x32, median seconds):")
            for isa, seconds in self.isa_seconds.items():
                shown = f"{seconds:.4f}" if seconds is not None else "failed"
                lines.append(f"  ONEDNN_MAX_CPU_ISA={isa:<13}{shown}")
            lines.append(f"  chosen: {self.runtime_env}")
        return "\n".join(lines)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def accelerator_name(device_target: str) -> str:
    """The accelerator model of this node as Ray names it (e.g. "A100", "Ascend910B"), "" on CPU or unknown."""
    if device_target == "CPU":
        return ""
    try:
        manager = accelerator_manager("GPU" if device_target == "GPU" else "NPU")
        return (manager.get_current_node_accelerator_type() if manager else None) or ""
    except Exception:  # no driver library on this node: the model is unknown, the device target still keys
        return ""


def node_type(device_target: str) -> str:
    """What a probe result holds for: the device, the CPU model and, on GPU/Ascend, the accelerator model."""
    accelerator = accelerator_name(device_target)
    return f"{device_target}|{cpu_name()}" + (f"|{accelerator}" if accelerator else "")


def cache_dir() -> Path:
    root = os.environ.get("BOOSTTUNE_CACHE_DIR") or Path.home() / ".cache" / "boosttune"
    return Path(root) / "probe"


# Bump when the checks or the report layout change: older caches are then probed again.
PROBE_REVISION = 2


def cache_path(device_target: str, mindspore_version: str, boosttune_version: str) -> Path:
    key = f"{node_type(device_target)}|{mindspore_version}|{boosttune_version}|{PROBE_REVISION}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_dir() / f"{device_target.lower()}-ms{mindspore_version}-{digest}.json"


def load_cached(device_target: str = "CPU") -> ProbeReport | None:
    """The cached report for this device, CPU, MindSpore and boosttune version, if any."""
    from importlib.metadata import PackageNotFoundError, version

    from boosttune import __version__

    try:
        ms_version = version("mindspore")
    except PackageNotFoundError:
        return None
    path = cache_path(device_target, ms_version, __version__)
    if not path.is_file():
        return None
    try:
        return ProbeReport.from_dict(json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError):
        return None  # a cache from an older layout: probe again


def knobs_of(recipe: TrialRecipe) -> list[str]:
    """The probe knobs a recipe relies on."""
    knobs = [f"optimizer.{recipe.optimizer.name}"]
    if recipe.amp_level not in ("O0", "auto"):
        knobs.append(f"amp.{recipe.amp_level}")
    kind = recipe.loss_scale.kind
    if kind == "fixed" and recipe.loss_scale.drop_overflow_update:
        knobs.append("loss_scale.fixed_drop_overflow")
    elif kind != "none":
        knobs.append(f"loss_scale.{kind}")
    boost = recipe.boost
    effective = boost.effective()
    for algorithm in algorithms.boost_algorithms():
        if algorithm.name in effective.active:
            knobs.append(f"boost.{algorithm.name}")
            if algorithm.sub_knobs is not None:  # a setting of its section that the probe checks apart
                knobs.extend(algorithm.sub_knobs(effective.settings[algorithm.name]))
    return knobs


def check_recipe(recipe: TrialRecipe, report: ProbeReport | None) -> None:
    """Raise UnsupportedError for the first knob the probe found unsupported on this device."""
    if report is None or report.device_target != recipe.device_target:
        return
    idle = {f"boost.{a.name}" for a in algorithms.registry() if a.ranks_rule is not None}
    for knob in knobs_of(recipe):
        if knob in idle:
            continue  # an algorithm with a rank rule (AdaSum) idles below its ranks; it never fails
        if not report.supports(knob):
            raise UnsupportedError(
                f"{knob} is not supported on {report.device_target}: {report.why_unsupported(knob)}"
            )
