"""GradientAccumulation's boost_config_dict section and its rule (one step is no accumulation)."""

from pydantic import Field

from boosttune.algorithms.base import Resolution, _Section


class GradAccumulationSection(_Section):
    grad_accumulation_step: int = Field(1, ge=1)


def rule(state: Resolution) -> None:
    if state.applied["grad_accumulation"] and state.section("grad_accumulation").grad_accumulation_step <= 1:
        state.applied["grad_accumulation"] = False
        state.notes.append("grad_accumulation is on but grad_accumulation_step is 1: MindSpore turns it off")
