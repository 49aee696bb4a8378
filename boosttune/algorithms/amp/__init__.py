"""Mixed precision: MindSpore's amp_level (a knob, not a boost algorithm)."""

from __future__ import annotations

from typing import Any

from boosttune.algorithms.amp.fragment import FRAGMENT
from boosttune.algorithms.amp.notes import NOTE
from boosttune.algorithms.base import Algorithm, DeviceSupport, ProbeCheck

# The amp levels that mix precision (O0 trains in float32): each is probed, calibrated and benched.
MIXED_PRECISION_LEVELS = ("O1", "O2", "O3")


def bench(report: DeviceSupport, world_size: int) -> tuple[dict[str, dict[str, Any]], list[str]]:
    matrix: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    for level in MIXED_PRECISION_LEVELS:
        if report.supports(f"amp.{level}"):
            matrix[f"amp {level}"] = {"amp_level": level}
        else:
            skipped.append(f"amp {level}: {report.why_unsupported(f'amp.{level}')}")
    return matrix, skipped


ALGORITHM = Algorithm(
    name="amp",
    kind="knob",
    fragment=FRAGMENT,
    off_params=lambda ctx, base: {"amp_level": "O0"},
    probe_checks=tuple(ProbeCheck(f"amp.{level}", amp_level=level) for level in MIXED_PRECISION_LEVELS),
    calibration={f"amp.{level}": {"amp_level": level} for level in MIXED_PRECISION_LEVELS},
    bench=bench,
    notes=(NOTE,),
)
