"""DimReduce: second-order training in a PCA subspace of earlier weights. Excludes LessBN/GradientFreeze."""

from boosttune.algorithms.base import SpaceContext, asks, boost_switches


class DimReduceFragment:
    name = "dim_reduce"
    requires = ("boost.dim_reduce",)

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        # MindSpore's DimReduce fails with several CPU workers (BroadcastCPUKernelMod): one CPU rank only.
        # On GPU/Ascend its broadcast and all-reduce have kernels: it runs across ranks.
        if (ctx.world_size > 1 and ctx.device_target == "CPU") or not asks(trial, ctx, "boost.dim_reduce", "boost.dim_reduce"):
            return
        if not trial.suggest_categorical("boost.dim_reduce", [False, True]):
            return
        boost_switches(document)["dim_reduce"] = True
        document["boost_config_dict"]["dim_reduce"] = {
            "rho": trial.suggest_float("dim_reduce.rho", 0.3, 0.8),
            "gamma": trial.suggest_float("dim_reduce.gamma", 0.5, 0.99),
            "alpha": trial.suggest_float("dim_reduce.alpha", 1e-4, 1e-2, log=True),
            "sigma": trial.suggest_float("dim_reduce.sigma", 0.1, 0.7),
            "n_components": trial.suggest_int("dim_reduce.n_components", 4, 32, log=True),
        }


FRAGMENT = DimReduceFragment()
