"""Mixed precision: MindSpore's amp_level, among the levels the device compiles."""

from boosttune.space.base import SpaceContext


class AmpFragment:
    name = "amp"
    order = 70
    requires = ()

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        levels = ["O0"] + [level for level in ("O1", "O2", "O3") if ctx.supported(f"amp.{level}")]
        document["amp_level"] = trial.suggest_categorical("amp_level", levels)


FRAGMENT = AmpFragment()
