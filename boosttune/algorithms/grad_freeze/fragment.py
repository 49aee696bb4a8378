"""GradientFreeze: train only some parameter groups on some steps. Its schedule spans the real steps."""

from boosttune.algorithms.base import SpaceContext, asks, boost_switches, switch_on

# grad_freeze.param_groups as the search draws it: up to MindSpore's default of 10; more groups than layer blocks
# freezes nothing.
PARAM_GROUPS = range(2, 11)


class GradFreezeFragment:
    name = "grad_freeze"
    requires = ("boost.grad_freeze",)

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        if switch_on(document, "dim_reduce") or not asks(trial, ctx, "boost.grad_freeze", "boost.grad_freeze"):
            return
        if not trial.suggest_categorical("boost.grad_freeze", [False, True]):
            return
        boost_switches(document)["grad_freeze"] = True
        freeze_type = trial.suggest_categorical("grad_freeze.freeze_type", [0, 1])
        document["boost_config_dict"]["grad_freeze"] = {
            "param_groups": trial.suggest_int("grad_freeze.param_groups", PARAM_GROUPS[0], PARAM_GROUPS[-1]),
            "freeze_type": freeze_type,
            # freeze_p is the share of steps that train everything; type 0 divides by (1 - freeze_p).
            "freeze_p": trial.suggest_float("grad_freeze.freeze_p", 0.1, 0.9),
            "total_steps": ctx.total_steps,
        }


FRAGMENT = GradFreezeFragment()
