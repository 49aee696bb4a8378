"""LessBN: feature-normalised head, gradient centralization, gradient split groups."""

from boosttune.algorithms.base import SpaceContext, asks, boost_switches, switch_on


class LessBNFragment:
    name = "less_bn"
    requires = ("boost.less_bn",)

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        if switch_on(document, "dim_reduce") or not asks(trial, ctx, "boost.less_bn", "boost.less_bn"):
            return
        if not trial.suggest_categorical("boost.less_bn", [False, True]):
            return
        boost_switches(document)["less_bn"] = True
        gc_choices = [False, True] if ctx.supported("boost.less_bn.gc_flag") else [False]
        section = {
            "fn_flag": trial.suggest_categorical("less_bn.fn_flag", [True, False]),
            "gc_flag": trial.suggest_categorical("less_bn.gc_flag", gc_choices),
        }
        document["boost_config_dict"]["less_bn"] = section
        if ctx.param_count >= 4:
            # One split point, as a share of the model's parameter tensors; 0 keeps MindSpore's default (half).
            share = trial.suggest_int("less_bn.split_at_pct", 0, 90, step=10)
            if share:
                split = min(ctx.param_count - 1, max(1, round(ctx.param_count * share / 100)))
                document["boost_config_dict"].setdefault("common", {})["gradient_split_groups"] = [split]


FRAGMENT = LessBNFragment()
