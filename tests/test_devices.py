"""A device has one home (boosttune/devices.py): everything that names devices reads it."""

from __future__ import annotations

import typing

from boosttune.config.recipe import TrialRecipe
from boosttune.devices import ACCELERATOR_RESOURCES, DEVICE_NAMES, DEVICES, Device


def test_the_recipe_the_cli_and_the_ranks_read_the_one_table():
    from boosttune.cli.main import build_parser
    from boosttune.execution.ray import worker_resources

    assert typing.get_args(TrialRecipe.model_fields["device_target"].annotation) == DEVICE_NAMES
    tune = next(a for a in build_parser()._subparsers._group_actions[0].choices["tune"]._actions
                if "--device" in a.option_strings)
    assert tuple(tune.choices) == ("auto", *DEVICE_NAMES)
    for name, device in DEVICES.items():
        resources = worker_resources(name)
        assert (device.ray_resource in resources) == (device.ray_resource is not None), (name, resources)
    assert ACCELERATOR_RESOURCES == {"GPU": ("GPU", "CUDA_VISIBLE_DEVICES"), "Ascend": ("NPU", "ASCEND_RT_VISIBLE_DEVICES")}


def test_a_new_device_is_one_entry(monkeypatch):
    """Added in a test by one entry: the rank's resources and its device id follow it."""
    from boosttune.execution import ray as ray_module
    from boosttune.execution import ray_train

    tpu = Device("TPU", "TPU", "TPU_VISIBLE_CHIPS", False, "a planted device")
    table = {**ACCELERATOR_RESOURCES, "TPU": ("TPU", "TPU_VISIBLE_CHIPS")}
    monkeypatch.setattr(ray_module, "ACCELERATOR_RESOURCES", table)
    monkeypatch.setattr(ray_train, "ACCELERATOR_RESOURCES", table)
    monkeypatch.setitem(DEVICES, "TPU", tpu)
    assert ray_module.worker_resources("TPU")["TPU"] == 1.0
    assert ray_train.device_id_for("TPU", {"TPU_VISIBLE_CHIPS": "3"}, {"TPU": ["3"]}) == 0


def test_auto_takes_the_first_accelerator_any_place_holds_else_cpu():
    from boosttune.devices import device_held

    assert device_held([("head", {"CPU": 8.0}), ("gpu_worker", {"CPU": 4.0, "GPU": 1.0})]) == ("GPU", "gpu_worker")
    assert device_held([("a", {"CPU": 1.0, "NPU": 8.0})]) == ("Ascend", "a")
    assert device_held([("a", {"NPU": 8.0}), ("b", {"GPU": 1.0})]) == ("GPU", "b")  # the table's order decides
    assert device_held([("a", {"CPU": 1.0, "GPU": 0.0})]) == ("CPU", None)
    assert device_held([]) == ("CPU", None)
