"""LessBN: feature-normalised head, gradient centralization, gradient split groups."""

from __future__ import annotations

from typing import Any

from boosttune.algorithms import manual
from boosttune.algorithms.base import (
    Algorithm,
    DeviceSupport,
    InformedPoint,
    OptimizerRebuild,
    ProbeCheck,
    SpaceContext,
    alone_in_bench,
)
from boosttune.algorithms.less_bn.fragment import FRAGMENT
from boosttune.algorithms.less_bn.notes import NOTE
from boosttune.algorithms.less_bn.section import LessBNSection, rule


def _preset_params(ctx: SpaceContext) -> dict[str, Any]:
    return {"boost.less_bn": True, "less_bn.fn_flag": True, "less_bn.gc_flag": ctx.supported("boost.less_bn.gc_flag"),
            "less_bn.split_at_pct": 0}


def _rebuild(centralize: bool):
    def rebuild(optimizer: Any, network: Any, params: list) -> Any:
        from boosttune.algorithms.less_bn.optimizer_rebuild import less_bn_rebuild  # MindSpore: a trial's process only

        return less_bn_rebuild(optimizer, network, params, centralize)

    return rebuild


def bench(report: DeviceSupport, world_size: int):
    gc = {} if report.supports("boost.less_bn.gc_flag") else {"gc_flag": False}
    return alone_in_bench("less_bn", report, {**manual(less_bn=True), **({"less_bn": gc} if gc else {})})


def device_preset(report: DeviceSupport) -> tuple[dict[str, Any], list[str]]:
    """O1/O2 switch on gradient centralization, which has no CPU kernel: the closest recipe turns gc_flag off."""
    if report.supports("boost.less_bn.gc_flag"):
        return {}, []
    return {"less_bn": {"gc_flag": False}}, [f"less_bn.gc_flag off: {report.why_unsupported('boost.less_bn.gc_flag')}"]


def observe(model) -> dict[str, Any]:
    # Deferred: MindSpore is heavy and only a trial's worker has it loaded.
    from mindspore import nn
    from mindspore.boost.less_batch_normalization import CommonHeadLastFN, LessBN

    cells = [cell for _, cell in model._network.cells_and_names()]
    return {
        "batchnorm_layers": sum(isinstance(cell, nn.BatchNorm2d) for cell in cells),
        # LessBN (MindSpore 2.10) keeps BatchNorm; with fn_flag it swaps the last Dense for this head.
        "fn_heads": sum(isinstance(cell, CommonHeadLastFN) for cell in cells),
        "less_bn": isinstance(model._network, LessBN),
    }


ALGORITHM = Algorithm(
    name="less_bn",
    kind="boost",
    fragment=FRAGMENT,
    section=LessBNSection,
    presets=("O1", "O2"),
    off_params=lambda ctx, base: {"boost.less_bn": False},
    preset_params=_preset_params,
    informed=lambda ctx: (InformedPoint("less_bn", _preset_params(ctx)),),
    rebuilds=(OptimizerRebuild("boost.less_bn", "LessBN", _rebuild(False)),
              OptimizerRebuild("boost.less_bn.gc_flag", "LessBN", _rebuild(True), same_as="boost.less_bn")),
    probe_checks=(
        ProbeCheck("boost.less_bn", switches=("less_bn",), sections={"less_bn": {"gc_flag": False}}),
        ProbeCheck("boost.less_bn.gc_flag", switches=("less_bn",), sections={"less_bn": {"gc_flag": True}}),
    ),
    calibration={"boost.less_bn": {"boost.less_bn": True, "less_bn.fn_flag": True, "less_bn.gc_flag": False,
                                   "less_bn.split_at_pct": 0}},
    bench=bench,
    rule=rule,
    common_keys=("gradient_split_groups",),
    device_preset=device_preset,
    observe=observe,
    sub_knobs=lambda section: ("boost.less_bn.gc_flag",) if section.get("gc_flag") else (),
    notes=(NOTE,),
)
