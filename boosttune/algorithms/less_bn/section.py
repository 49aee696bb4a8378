"""LessBN's boost_config_dict section and its rule."""

from boosttune.algorithms.base import Resolution, _Section


class LessBNSection(_Section):
    fn_flag: bool = True
    gc_flag: bool = True


def rule(state: Resolution) -> None:
    if state.applied["less_bn"] and state.section("less_bn").gc_flag:
        state.notes.append("less_bn.gc_flag true needs the Centralization kernel (GPU/Ascend; not on CPU)")
