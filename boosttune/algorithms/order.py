"""The orders the algorithms are taken in, each a named list of folder names, so that no folder picks an integer.

An order is a relation between algorithms, not a fact of one, so the lists live here side by side. A folder a list
does not name comes after the ones it names, by name: adding an algorithm needs no edit here unless its place
matters. ``tests/algorithms/test_algorithms.py`` checks that every name listed is a folder.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["BOOST_SWITCHES", "CARDS", "INFORMED", "KNOB_FAMILIES", "PROBE", "RESOLUTION", "SUGGESTION", "place"]

# MindSpore's order of the boost section's switches (mindspore/boost/boost.py, 2.10): the registry lists the boost
# algorithms so, then the knob families in KNOB_FAMILIES.
BOOST_SWITCHES = ("less_bn", "grad_freeze", "adasum", "grad_accumulation", "dim_reduce", "loss_scale_group")
KNOB_FAMILIES = ("amp", "loss_scale", "optimizer")

# The probe's checks, and so the speed calibration's and the bench matrix's rows: what every trial sets first (the
# optimizer, mixed precision, loss scaling), then the boost algorithms, AdaSum last (it needs several ranks).
PROBE = ("optimizer", "amp", "loss_scale", "loss_scale_group", "less_bn", "grad_freeze", "grad_accumulation",
         "dim_reduce", "adasum")

# The combination rules when a boost config is resolved: those that switch algorithms off run first (DimReduce skips
# LessBN, GradientFreeze and AdaSum; accumulation of one step is none), so the later rules see what stays on.
RESOLUTION = ("dim_reduce", "grad_accumulation", "grad_freeze", "adasum", "loss_scale_group", "less_bn")

# The order the fragments ask Optuna for their parameters (a define-by-run space: a fragment asks only for what the
# earlier ones' choices leave open, and a fixed order keeps a seed's draws the same).
SUGGESTION = ("dim_reduce", "less_bn", "grad_freeze", "grad_accumulation", "adasum", "loss_scale", "amp", "optimizer")

# Whose informed start points train first (the search's start takes as many as its budget leaves). Points of an
# algorithm alone (over O0) come before variations of the O1 preset; an algorithm's own points keep their order.
INFORMED = ("grad_freeze", "less_bn")

# The method cards' index, by card (a card's key, not always its folder's name): the boost algorithms, the boost
# levels, then the knobs.
CARDS = ("less_bn", "grad_freeze", "grad_accumulation", "adasum", "dim_reduce", "group_loss_scale", "boost_levels",
         "amp", "loss_scale")


def place(order: Sequence[str], name: str) -> tuple[int, str]:
    """A sort key: ``name``'s place in ``order``, after every listed name (then by name) when it is not listed."""
    return (order.index(name), "") if name in order else (len(order), name)
