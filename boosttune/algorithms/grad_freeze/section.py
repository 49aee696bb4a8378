"""GradientFreeze's boost_config_dict section and its rules (with accumulation; freeze_p at its ends)."""

from pydantic import Field, field_validator

from boosttune.algorithms.base import Resolution, _Section
from boosttune.errors import ConfigError


class GradFreezeSection(_Section):
    param_groups: int = Field(10, ge=1)
    freeze_type: int = 1
    freeze_p: float = Field(0.7, ge=0.0, le=1.0)
    total_steps: int = Field(65536, ge=1)

    @field_validator("freeze_type")
    @classmethod
    def _known_strategy(cls, value: int) -> int:
        if value not in (0, 1):
            raise ValueError("must be 0 (continuous) or 1 (interval)")
        return value


def rule(state: Resolution) -> None:
    applied = state.applied
    if applied["grad_freeze"] and applied["grad_accumulation"]:
        raise ConfigError(
            "boost: grad_freeze and grad_accumulation cannot both be on: MindSpore 2.10 fails to build "
            "the network ('_TrainFreezeCell' object has no attribute 'optimizer'); switch one off "
            "(O1/O2 presets switch grad_freeze on)"
        )
    if applied["grad_freeze"]:
        gf = state.section("grad_freeze")
        if gf.freeze_type == 0 and gf.freeze_p >= 1.0:
            raise ConfigError(
                f"grad_freeze.freeze_p: {gf.freeze_p!r} is invalid with freeze_type 0: MindSpore divides by "
                "(1 - freeze_p); use freeze_p < 1 or freeze_type 1"
            )
        if gf.freeze_p >= 1.0 or gf.param_groups == 1:
            state.notes.append("grad_freeze freezes nothing (freeze_p 1 or param_groups 1): every step trains all layers")
