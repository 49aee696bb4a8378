"""A recipe's settings against O0's: only what acts, and only what differs."""

from __future__ import annotations

from boosttune.report.recipes import recipe_settings, settings_diff

O0 = {"boost_level": "O0", "amp_level": "O0", "batch_size": 64, "epochs": 10, "boost_config_dict": {},
      "loss_scale": {"kind": "none", "loss_scale": 1024.0, "init_loss_scale": 65536.0},
      "optimizer": {"name": "momentum", "learning_rate": 0.05, "lr_schedule": "cosine", "momentum": 0.9}}
GF = {**O0, "boost_level": "O1", "optimizer": {**O0["optimizer"], "learning_rate": 0.083},
      "loss_scale": {**O0["loss_scale"], "kind": "fixed", "drop_overflow_update": False},
      "boost_config_dict": {"boost": {"mode": "manual", "grad_freeze": True, "less_bn": False},
                            "grad_freeze": {"freeze_p": 0.594, "freeze_type": 1, "param_groups": 2, "total_steps": 640}}}


def test_a_name_hides_nothing_every_differing_setting_is_listed():
    diff = {name: (base, ours) for name, base, ours in settings_diff(GF, O0)}
    assert diff == {"boost_level": ("O0", "O1"), "loss_scale.kind": ("none", "fixed"),
                    "optimizer.learning_rate": ("0.05", "0.083"), "grad_freeze.freeze_p": ("off", "0.594"),
                    "grad_freeze.freeze_type": ("off", "1"), "grad_freeze.param_groups": ("off", "2"),
                    "loss_scale.loss_scale": ("off", "1.02e+03"), "loss_scale.drop_overflow_update": ("off", "False")}
    assert settings_diff(O0, O0) == []


def test_only_the_settings_that_act_are_read():
    settings = recipe_settings(O0)
    assert "loss_scale.loss_scale" not in settings  # kind none: the manager's knobs do nothing
    assert not any(name.startswith("grad_freeze") for name in settings)
    assert "grad_freeze.total_steps" not in recipe_settings(GF)  # the run's length, the same for every recipe
