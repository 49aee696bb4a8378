"""Loss scaling: none, fixed, dynamic or per-group (a knob; the group kind switches on boost's loss_scale_group)."""

from __future__ import annotations

from typing import Any

from boosttune.algorithms.base import Algorithm, DeviceSupport, ProbeCheck
from boosttune.algorithms.loss_scale.fragment import FRAGMENT
from boosttune.algorithms.loss_scale.notes import NOTE

# The bench's managers: a fixed scale MindSpore's optimizers unscale, and MindSpore's dynamic defaults.
BENCH_MANAGERS = {"fixed": {"kind": "fixed", "loss_scale": 1024.0}, "dynamic": {"kind": "dynamic"}}


def bench(report: DeviceSupport, world_size: int) -> tuple[dict[str, dict[str, Any]], list[str]]:
    matrix: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    for kind, loss_scale in BENCH_MANAGERS.items():
        if report.supports(f"loss_scale.{kind}"):
            matrix[f"loss_scale {kind}"] = {"loss_scale": loss_scale}
        else:
            skipped.append(f"loss_scale {kind}: {report.why_unsupported(f'loss_scale.{kind}')}")
    return matrix, skipped


ALGORITHM = Algorithm(
    name="loss_scale",
    kind="knob",
    fragment=FRAGMENT,
    off_params=lambda ctx, base: {"loss_scale.kind": "none"},
    probe_checks=(
        ProbeCheck("loss_scale.fixed", loss_scale="fixed"),
        ProbeCheck("loss_scale.fixed_drop_overflow", loss_scale="fixed_drop"),
        ProbeCheck("loss_scale.dynamic", loss_scale="dynamic"),
    ),
    bench=bench,
    notes=(NOTE,),
)
