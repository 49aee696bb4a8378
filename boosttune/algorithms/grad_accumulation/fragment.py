"""GradientAccumulation: one optimizer update per k batches. MindSpore 2.10 cannot combine it with freeze."""

from boosttune.algorithms.base import SpaceContext, asks, boost_switches, switch_on


class GradAccumulationFragment:
    name = "grad_accumulation"
    requires = ("boost.grad_accumulation",)

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        if switch_on(document, "grad_freeze"):
            return  # '_TrainFreezeCell' object has no attribute 'optimizer'
        if not asks(trial, ctx, "boost.grad_accumulation", "boost.grad_accumulation"):
            return
        if not trial.suggest_categorical("boost.grad_accumulation", [False, True]):
            return
        boost_switches(document)["grad_accumulation"] = True
        steps = trial.suggest_int("grad_accumulation.grad_accumulation_step", 2, 8)
        document["boost_config_dict"]["grad_accumulation"] = {"grad_accumulation_step": steps}


FRAGMENT = GradAccumulationFragment()
