"""Learning rate (log-uniform around the base recipe's) and its schedule."""

from boosttune.space.base import SpaceContext


class OptimizerFragment:
    name = "optimizer"
    order = 80
    requires = ()

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        base = ctx.base_learning_rate
        optimizer = document.setdefault("optimizer", {})
        optimizer["learning_rate"] = trial.suggest_float("optimizer.learning_rate", base / 4, base * 4, log=True)
        optimizer["lr_schedule"] = trial.suggest_categorical("optimizer.lr_schedule", ["constant", "cosine"])


FRAGMENT = OptimizerFragment()
