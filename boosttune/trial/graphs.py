"""Compiled graphs kept between the runs of one warm worker.

Confirm rounds and bench seeds train one recipe again and again with another seed. MindSpore compiles a graph per
Cell instance, so a fresh Model compiles again; its compile cache does not help inside one process (measured: O0
ResNet-8 1.08 s with it, 1.09 s without) and across processes it loaded a GradientFreeze graph built for another
seed (the freeze schedule is a constant of the graph: NaN at step 7). So, instead, a worker keeps the Models it has
trained (the last :data:`CACHE_SIZE`), and a run whose recipe differs from a kept one by its seed alone trains the
kept, compiled Model with the values of a Model built fresh for its own seed.

Why, and what was measured: docs/design/warm-workers.md.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any, Callable

__all__ = ["CACHE_SIZE", "GraphCache", "graph_key"]

CACHE_SIZE = 4  # Models a worker keeps; a confirm round alternates the baseline with a few candidates


def graph_key(recipe: dict[str, Any], **shape: Any) -> str:
    """What a run's graph depends on: its recipe except the seed, and the run's shape (ranks, steps)."""
    return json.dumps({**{k: v for k, v in recipe.items() if k != "seed"}, **shape}, sort_keys=True, default=str)


class GraphCache:
    """The compiled Models of one worker process, by :func:`graph_key`."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._kept: OrderedDict[str, Any] = OrderedDict()  # by key and graph fingerprint
        self.hits = 0

    def adopt(self, key: str, fresh: Any, log: Callable[[str], None] = print) -> tuple[Any, bool]:
        """The Model to train for ``fresh`` (built, not yet compiled) and whether its graph is a kept one.

        A kept Model with the same key and the same graph takes ``fresh``'s parameter values; otherwise ``fresh``
        is trained, and kept for the next run (the least recently used kept one dropped). A graph whose constants
        depend on the seed (``nn.Dropout``'s seeds) is kept once per seed.
        """
        if _hidden_state(fresh):
            return fresh, False
        slot = f"{key}\n{_fingerprint(fresh)}"
        kept = self._kept.get(slot)
        if kept is not None:
            _load_values(kept, fresh)
            self._kept.move_to_end(slot)
            self.hits += 1
            log("graph: cached (compiled by an earlier run of this recipe)")
            return kept, True
        self._kept[slot] = fresh
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)
        return fresh, False


def _networks(model: Any) -> list[Any]:
    """The cells a Model compiles: its train network and its evaluation network."""
    return [net for net in (model._train_network, model._eval_network) if net is not None]  # noqa: SLF001


def _parameters(model: Any) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for net in _networks(model):
        for param in net.get_parameters():
            params.setdefault(param.name, param)
    return params


def _hidden_state(model: Any) -> bool:
    """Whether a Model has state that its parameters do not list, which a kept Model could not be given: buffers, or
    cells that no registered cell reaches, held in a plain list or tuple (GradientFreeze's per-group train cells and
    optimizers, whose moments ``get_parameters`` never lists; ``SequentialCell.cell_list`` holds registered ones)."""
    from mindspore import nn

    cells = [cell for net in _networks(model) for _, cell in net.cells_and_names()]
    registered = {id(cell) for cell in cells}
    for cell in cells:
        if getattr(cell, "_buffers", None):
            return True
        for value in vars(cell).values():
            if isinstance(value, (list, tuple)) and any(
                    isinstance(item, nn.Cell) and id(item) not in registered for item in value):
                return True
    return False


def _fingerprint(model: Any) -> str:
    """A digest of what a Model's graphs are made of besides parameter values: parameter names, shapes and dtypes,
    the Tensors its cells hold that are not parameters, and its primitives' attributes."""
    from mindspore import Parameter, Tensor
    from mindspore.ops.primitive import Primitive

    digest = hashlib.sha256()
    for name, param in _parameters(model).items():
        digest.update(f"P {name} {tuple(param.shape)} {param.dtype}\n".encode())

    def constant(path: str, value: Any) -> None:
        if isinstance(value, Parameter):
            return
        if isinstance(value, Tensor):
            array = value.asnumpy()
            digest.update(f"T {path} {array.shape} {array.dtype}\n".encode())
            digest.update(array.tobytes())
        elif isinstance(value, Primitive):
            attrs = {k: v for k, v in value.attrs.items() if k not in ("input_names", "output_names")}
            digest.update(f"O {path} {value.name} {sorted(attrs.items(), key=lambda kv: kv[0])!r}\n".encode())
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                constant(f"{path}[{i}]", item)

    for n, net in enumerate(_networks(model)):
        for cell_name, cell in net.cells_and_names():
            for attr, value in sorted(vars(cell).items(), key=lambda kv: kv[0]):
                constant(f"{n}.{cell_name}.{attr}", value)
    return digest.hexdigest()


def _load_values(kept: Any, fresh: Any) -> None:
    """Every parameter of ``kept`` takes the value of ``fresh``'s of the same name (same shapes: checked by the
    fingerprint)."""
    from mindspore import Tensor

    source = _parameters(fresh)
    for name, param in _parameters(kept).items():
        value = source[name]
        if value.has_init:
            value.init_data()
        param.assign_value(Tensor(value.asnumpy(), dtype=value.dtype))
