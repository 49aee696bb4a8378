"""Learning rate (log-uniform around the base recipe's) and its schedule; THOR where the device runs it."""

from boosttune.algorithms import boost_names
from boosttune.algorithms.base import SpaceContext, switch_on


class OptimizerFragment:
    name = "optimizer"
    requires = ()

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        base = ctx.base_learning_rate
        optimizer = document.setdefault("optimizer", {})
        optimizer["learning_rate"] = trial.suggest_float("optimizer.learning_rate", base / 4, base * 4, log=True)
        optimizer["lr_schedule"] = trial.suggest_categorical("optimizer.lr_schedule", ["constant", "cosine"])
        # THOR, the second-order optimizer, has no CPU kernels (ThorIm2Col); MindSpore runs it with
        # boost_level O0 and no loss scale, so it is offered only for a recipe with neither.
        plain = not any(switch_on(document, name) for name in boost_names()) \
            and document.get("loss_scale", {}).get("kind", "none") == "none"
        if ctx.supported("optimizer.thor") and "optimizer.thor" not in ctx.slow and plain:
            current = optimizer.get("name", "momentum")
            choices = [current, "thor"] if current != "thor" else ["thor"]
            optimizer["name"] = trial.suggest_categorical("optimizer.name", choices)


FRAGMENT = OptimizerFragment()
