"""Mixed precision: MindSpore's amp_level, among the levels the device compiles."""

from boosttune.algorithms.base import SpaceContext


class AmpFragment:
    name = "amp"
    requires = ()

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        supported = ["O0"] + [level for level in ("O1", "O2", "O3") if ctx.supported(f"amp.{level}")]
        fixed = getattr(trial, "fixed_params", {})
        if fixed.get("amp_level", "O0") not in ("O0", None):  # a replayed recipe keeps its (slow) level
            document["amp_level"] = trial.suggest_categorical("amp_level", supported)
            return
        levels = [level for level in supported if f"amp.{level}" not in ctx.slow]
        if len(levels) > 1 or "amp_level" in fixed:
            document["amp_level"] = trial.suggest_categorical("amp_level", levels)


FRAGMENT = AmpFragment()
