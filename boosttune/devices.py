"""What a device is to boosttune, in one place: MindSpore's name for it, the Ray resource one rank asks for, the
variable Ray sets to select a rank's device, and whether Ray Train asks for a GPU.

Every other module reads it (the recipe's ``device_target`` choices, the CLI's ``--device``, the ranks' resources
and device ids, the check for a device on this machine). Adding a device is one entry here and what MindSpore and
Ray need of it (docs/clusters-and-devices.md, "Add a device"). Pure: no Ray, no MindSpore.
"""

from __future__ import annotations

from typing import Iterable, Mapping, NamedTuple

__all__ = ["ACCELERATOR_RESOURCES", "AUTO", "DEVICES", "DEVICE_CHOICES", "DEVICE_NAMES", "Device", "device_held"]


class Device(NamedTuple):
    name: str  # MindSpore's device_target
    ray_resource: str | None  # Ray's resource for one rank's accelerator (None: the rank takes CPUs only)
    visible_variable: str | None  # the variable Ray sets to the rank's own accelerator
    use_gpu: bool  # Ray Train's ScalingConfig.use_gpu
    note: str  # what it needs, for the docs


DEVICES: dict[str, Device] = {d.name: d for d in (
    Device("CPU", None, None, False, "any machine; ranks take CPUs"),
    Device("GPU", "GPU", "CUDA_VISIBLE_DEVICES", True, "NVIDIA CUDA; one Ray GPU per rank"),
    # Ray's native NPU accelerator (detected by Ray itself: boosttune.ray_internals), not a home-made resource
    Device("Ascend", "NPU", "ASCEND_RT_VISIBLE_DEVICES", False, "Huawei Ascend; one Ray NPU per rank"),
)}
DEVICE_NAMES = tuple(DEVICES)
# device_target -> (Ray's resource for one rank's accelerator, the visibility variable Ray sets for it)
ACCELERATOR_RESOURCES = {d.name: (d.ray_resource, d.visible_variable) for d in DEVICES.values() if d.ray_resource}

# --device auto: the device the nodes hold (:func:`device_held`), found where the run will train
AUTO = "auto"
DEVICE_CHOICES = (AUTO, *DEVICE_NAMES)


def device_held(places: Iterable[tuple[str, Mapping[str, float]]]) -> tuple[str, str | None]:
    """The device ``--device auto`` picks from ``places`` (what holds resources, and those resources: a node, a node
    type an autoscaler may start): the first accelerator of :data:`DEVICES` any of them holds, else CPU; and the
    place that holds it (None for CPU)."""
    places = list(places)
    for device in DEVICES.values():
        if device.ray_resource is None:
            continue
        for where, resources in places:
            if resources.get(device.ray_resource, 0) > 0:
                return device.name, where
    return "CPU", None
