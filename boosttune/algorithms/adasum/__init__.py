"""AdaSum: adaptive summation across >= 16 ranks (ranks/8 a power of two); plain data parallel below.

Its rank rule (:func:`adasum_applies`) is written once, here: the space, the presets, the bench and the
experiment use it.
"""

from __future__ import annotations

from typing import Any

from boosttune.algorithms.adasum.fragment import FRAGMENT, adasum_applies
from boosttune.algorithms.adasum.notes import NOTE
from boosttune.algorithms.base import Algorithm, DeviceSupport, ProbeCheck, Resolution

__all__ = ["ADASUM_REASON", "ALGORITHM", "adasum_applies", "inactive_with"]

# The probe's one process cannot show AdaSum; this is the reason it reports.
ADASUM_REASON = ("needs >= 16 ranks with ranks/8 a power of two (8 devices per node hard-coded in "
                 "BoostTrainOneStepCell.check_adasum_enable); below that MindSpore runs plain data parallel")


def inactive_with(world_size: int) -> str | None:
    """Why AdaSum does nothing with this many ranks, or None when it takes effect."""
    if adasum_applies(world_size):
        return None
    needs = "needs >= 16" if world_size < 16 else "needs ranks/8 a power of two"
    return f"plain data parallel with {world_size} rank(s) ({needs})"


def rule(state: Resolution) -> None:
    if state.applied["adasum"]:
        state.notes.append(
            "adasum takes effect only with >= 16 ranks where ranks/8 is a power of two; "
            "below that MindSpore runs plain data parallel"
        )


def bench(report: DeviceSupport, world_size: int) -> tuple[dict[str, dict[str, Any]], list[str]]:
    why = inactive_with(world_size)
    return {}, [] if why is None else [f"adasum: {why}"]


def _probe(device: str, kit: Any) -> None:
    raise RuntimeError(ADASUM_REASON)


def observe(model) -> dict[str, Any]:
    return {"adasum": bool(getattr(model._train_network, "enable_adasum", False))}


ALGORITHM = Algorithm(
    name="adasum",
    graph_state=lambda recipe: "AdaSum's per-rank state is not proven reset",
    kind="boost",
    fragment=FRAGMENT,
    presets=("O2",),
    off_params=lambda ctx, base: {"boost.adasum": False},
    preset_params=lambda ctx: {"boost.adasum": True},
    probe_checks=(ProbeCheck("boost.adasum", run=_probe),),
    bench=bench,
    rule=rule,
    common_keys=("device_number",),
    ranks_rule=inactive_with,
    observe=observe,
    notes=(NOTE,),
    without={"section": "AutoBoost reads no adasum section",
             "calibration": "it needs >= 16 ranks; the speed calibration trains one"},
)
