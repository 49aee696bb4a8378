"""AdaSum: adaptive summation across >= 16 ranks (ranks/8 a power of two); plain data parallel below."""

from boosttune.space.base import SpaceContext, boost_switches, switch_on


class AdaSumFragment:
    name = "adasum"
    order = 50
    requires = ("boost.adasum",)

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        groups = ctx.world_size // 8
        if switch_on(document, "dim_reduce") or groups < 2 or groups & (groups - 1):
            return  # would change nothing: not worth a trial
        if trial.suggest_categorical("boost.adasum", [False, True]):
            boost_switches(document)["adasum"] = True
            document["boost_config_dict"].setdefault("common", {})["device_number"] = 8


FRAGMENT = AdaSumFragment()
