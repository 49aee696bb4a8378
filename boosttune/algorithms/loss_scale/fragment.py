"""Loss scaling: none, fixed, dynamic (window and factor) or per-group (with boost loss_scale_group)."""

from boosttune.algorithms.base import SpaceContext, boost_switches, switch_on


class LossScaleFragment:
    name = "loss_scale"
    requires = ()

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        if switch_on(document, "dim_reduce"):
            document["loss_scale"] = {"kind": "none"}  # DimReduce's SGD(lr=1) cannot unscale a fixed scale
            return
        kinds = ["none", "fixed"] if ctx.supported("loss_scale.fixed") else ["none"]
        if ctx.supported("loss_scale.dynamic"):
            kinds.append("dynamic")
        if ctx.supported("loss_scale.group"):
            kinds.append("group")
        kind = trial.suggest_categorical("loss_scale.kind", kinds)
        section: dict = {"kind": kind}
        if kind == "fixed":
            section["loss_scale"] = float(2 ** trial.suggest_int("loss_scale.log2_scale", 0, 16))
        elif kind in ("dynamic", "group"):
            section["init_loss_scale"] = float(2 ** trial.suggest_int("loss_scale.log2_init", 8, 24))
            section["scale_factor"] = trial.suggest_int("loss_scale.scale_factor", 2, 4)
            section["scale_window"] = trial.suggest_int("loss_scale.scale_window", 50, 5000, log=True)
            if kind == "group":
                boost_switches(document)["loss_scale_group"] = True
        document["loss_scale"] = section


FRAGMENT = LossScaleFragment()
