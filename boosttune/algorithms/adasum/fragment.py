"""AdaSum: adaptive summation across >= 16 ranks (ranks/8 a power of two); plain data parallel below."""

from boosttune.algorithms.base import SpaceContext, boost_switches, switch_on


def adasum_applies(world_size: int) -> bool:
    """MindSpore runs AdaSum only with >= 16 ranks and ranks/8 a power of two (8 devices per node, hard-coded)."""
    groups = world_size // 8
    return world_size % 8 == 0 and groups >= 2 and not groups & (groups - 1)


class AdaSumFragment:
    name = "adasum"
    requires = ("boost.adasum",)

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        if switch_on(document, "dim_reduce") or not adasum_applies(ctx.world_size):
            return  # would change nothing: not worth a trial
        if trial.suggest_categorical("boost.adasum", [False, True]):
            boost_switches(document)["adasum"] = True
            document["boost_config_dict"].setdefault("common", {})["device_number"] = 8


FRAGMENT = AdaSumFragment()
