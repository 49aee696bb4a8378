"""How MindSpore's boost rebuilds an optimizer, and what boosttune does so that a team's optimizer survives it.

GradientFreeze and LessBN throw the optimizer away and build a new one as ``type(opt)(params=<groups>,
learning_rate=..., **opt.init_args)``, from attributes MindSpore records on some built-in ``__init__`` methods only,
which breaks for ``nn.Adam``, undecorated optimizers, subclasses and flat parameter lists with weight decay.
:func:`recording_constructions` records the arguments each optimizer the team's factory builds was really called
with, and :func:`make_rebuildable` writes them where boost reads them, so the rebuild is the factory's own call
again. What still cannot be rebuilt is found by :func:`rebuild_problems`, which tries MindSpore's own rebuild.

The four ways it breaks, as measured: docs/design/builder.md.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, NamedTuple

import numpy as np
from mindspore import Parameter, Tensor, nn

from boosttune import algorithms
from boosttune.algorithms.base import RebuildRefused
from boosttune.trial.messages import first_line

__all__ = ["Construction", "make_rebuildable", "rebuild_problems", "recording_constructions"]

class Construction(NamedTuple):
    """One optimizer built while recording: the instance, its class, and the arguments its class was called with."""

    optimizer: Any
    args: tuple
    kwargs: dict


@contextmanager
def recording_constructions() -> Iterator[list[Construction]]:
    """Record every ``nn.Optimizer`` constructed inside the block, with the arguments of its constructor call.

    ``__new__`` receives the same arguments as ``__init__``, whatever the class and however its ``__init__`` is
    written, so the optimizer's base class's ``__new__`` is wrapped for the duration of the block.
    """
    constructions: list[Construction] = []
    own = nn.Optimizer.__dict__.get("__new__")  # None: Cell.__new__, inherited
    original = nn.Optimizer.__new__

    def recording_new(cls, *args, **kwargs):
        instance = original(cls, *args, **kwargs)
        constructions.append(Construction(instance, args, kwargs))
        return instance

    nn.Optimizer.__new__ = staticmethod(recording_new)
    try:
        yield constructions
    finally:
        if own is None:
            del nn.Optimizer.__new__
        else:
            nn.Optimizer.__new__ = own


def make_rebuildable(optimizer: nn.Optimizer, constructions: Iterable[Construction] = ()) -> nn.Optimizer:
    """``optimizer``, changed so that boost's ``type(opt)(params=..., learning_rate=..., **opt.init_args)`` repeats
    the constructor call that built it, and so does the rebuild of the rebuilt one (LessBN then GradientFreeze).

    ``constructions``: what :func:`recording_constructions` saw while the optimizer was built (every optimizer in
    it, LARS's inner one too, is registered from its record). Without a record, MindSpore's own registration is
    kept, its ``kwargs`` argument spread back into the others. Then:

    - a flat parameter list with weight decay becomes two explicit groups (decayed, not decayed), as the
      optimizer applies it, so that the rebuild keeps BatchNorm's gamma and beta undecayed;
    - the instance's class becomes a subclass of the same name (:func:`_rebuildable_class`) whose constructor
      drops the empty groups GradientFreeze makes (a team's group without a parameter in a later freeze group:
      MindSpore refuses "group `params` must not be empty") and registers its own arguments, so that what boost
      builds from it is rebuildable in turn.

    What still cannot be rebuilt is left as it is (:func:`rebuild_problems` names it).
    """
    for construction in constructions:
        _register(construction.optimizer, type(construction.optimizer), construction.args, construction.kwargs)
    _spread_kwargs(optimizer)
    _explicit_decay_groups(optimizer)
    inner = getattr(optimizer, "opt", None)  # LARS: boost rebuilds its inner optimizer
    for target in (optimizer, inner) if isinstance(inner, nn.Optimizer) else (optimizer,):
        if hasattr(target, "init_args") and hasattr(target, "init_params"):
            target.__class__ = _rebuildable_class(type(target))
    return optimizer


_REBUILDABLE: dict[type, type] = {}


def _rebuildable_class(cls: type) -> type:
    """``cls`` with a constructor that drops empty parameter groups and registers the call (same name, same
    behaviour otherwise)."""
    original = getattr(cls, "_rebuilds", cls)
    if original is not cls:
        return cls
    if cls not in _REBUILDABLE:
        def __init__(self, *args, **kwargs):
            args, kwargs = _without_empty_groups(args, kwargs)
            original.__init__(self, *args, **kwargs)
            _register(self, original, args, kwargs)
            _spread_kwargs(self)

        _REBUILDABLE[cls] = type(cls.__name__, (cls,), {
            "__init__": __init__, "__qualname__": cls.__qualname__, "_rebuilds": cls,
            "__doc__": f"{cls.__qualname__}, rebuildable by mindspore.boost (boosttune.trial.rebuild)."})
    return _REBUILDABLE[cls]


def _without_empty_groups(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A group with no parameter changes no update: dropping it is what MindSpore should have done."""
    def kept(params):
        if isinstance(params, list) and any(_empty_group(g) for g in params):
            return [g for g in params if not _empty_group(g)]
        return params

    if "params" in kwargs:
        return args, {**kwargs, "params": kept(kwargs["params"])}
    return ((kept(args[0]), *args[1:]) if args else args), kwargs


def _empty_group(group: Any) -> bool:
    return isinstance(group, dict) and "params" in group and not list(group["params"])


def _register(optimizer: nn.Optimizer, cls: type, args: tuple, kwargs: dict) -> None:
    """What MindSpore's ``opt_init_args_register`` records, for the class that was really called."""
    cls = getattr(cls, "_rebuilds", cls)
    try:
        bound = inspect.signature(cls.__init__).bind(optimizer, *args, **kwargs)
    except TypeError:  # the call failed itself; nothing was built
        return
    bound.apply_defaults()
    arguments: dict[str, Any] = {}
    for name, value in list(bound.arguments.items())[1:]:
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                return  # cannot be passed by keyword, as boost passes everything
        elif kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        else:
            arguments[name] = value
    if "params" not in arguments or "learning_rate" not in arguments:
        return  # boost's keywords do not fit this signature; rebuild_problems reports MindSpore's TypeError
    params = arguments.pop("params")
    if not isinstance(params, (list, tuple)):  # an iterator, consumed by the constructor
        if getattr(optimizer, "is_group", True):
            return
        params = list(optimizer.parameters)
    learning_rate = arguments.pop("learning_rate")
    if isinstance(learning_rate, Tensor):
        learning_rate = learning_rate.asnumpy().tolist()
    optimizer.init_params = {"params": params}
    optimizer.init_learning_rate = None if isinstance(learning_rate, nn.Cell) else learning_rate
    optimizer.init_args = arguments


def _spread_kwargs(optimizer: nn.Optimizer) -> None:
    """MindSpore records a signature's ``**kwargs`` as one argument named ``kwargs``: boost rebuilt ``nn.Adam``
    with ``kwargs={}``."""
    args = getattr(optimizer, "init_args", None)
    if isinstance(args, dict) and isinstance(args.get("kwargs"), dict):
        optimizer.init_args = {**{k: v for k, v in args.items() if k != "kwargs"}, **args["kwargs"]}


def _explicit_decay_groups(optimizer: nn.Optimizer) -> None:
    """A flat list's weight decay skips parameters named beta or gamma; boost's rebuild puts the list in one
    group, whose weight decay applies to all. Two explicit groups say which ones are decayed."""
    init = getattr(optimizer, "init_params", None)
    params = init.get("params") if isinstance(init, dict) else None
    if (not isinstance(params, (list, tuple)) or not params or not all(isinstance(p, Parameter) for p in params)
            or optimizer.is_group or not optimizer.exec_weight_decay or all(optimizer.decay_flags)):
        return
    flags = dict(zip((id(p) for p in optimizer.parameters), optimizer.decay_flags))
    decay = optimizer.weight_decay
    decay = float(decay.asnumpy()) if isinstance(decay, Tensor) else decay
    decayed = [p for p in params if flags.get(id(p), True)]
    kept = [p for p in params if not flags.get(id(p), True)]
    optimizer.init_params = {"params": [{"params": decayed, "weight_decay": decay},
                                        {"params": kept, "weight_decay": 0.0}]}


def rebuild_problems(optimizer: nn.Optimizer, network: nn.Cell) -> dict[str, str]:
    """Which boost knobs cannot use ``optimizer``, found by running MindSpore's own rebuild of it, without training.

    Args:
        optimizer: as :func:`boosttune.trial.optim.build_optimizer` returns it (made rebuildable, where it can be).
        network: the network it updates, as the builder returned it (before boost). Neither is changed.

    Returns:
        knob name as the search space names it (``"boost.less_bn"``, ``"boost.less_bn.gc_flag"``,
        ``"boost.grad_freeze"``) -> one line: MindSpore's error when the rebuild fails, or the first settings that
        differ (per-parameter learning rate or weight decay, or a hyper-parameter such as ``beta1``) when the
        rebuilt optimizer would not make the same updates. Empty when every knob can use the optimizer. A knob
        not named here keeps the optimizer (DimReduce replaces it with ``SGD(lr=1)`` by design).

    Cost: up to four copies of the optimizer's state (one per rebuild tried), freed on return.
    """
    with _names_kept(network, optimizer):  # FreezeOpt's ``self.single_opt = opt`` renames every parameter
        return _rebuild_problems(optimizer, network)


@contextmanager
def _names_kept(*cells: nn.Cell) -> Iterator[None]:
    names = {id(p): (p, p.name) for cell in cells for p in cell.get_parameters()}
    try:
        yield
    finally:
        for param, name in names.values():
            if param.name != name:
                param.name = name


def _rebuild_problems(optimizer: nn.Optimizer, network: nn.Cell) -> dict[str, str]:
    """Each algorithm's rebuild (``Algorithm.rebuilds``), in the registry's order."""
    name = type(optimizer).__name__
    params = list(network.trainable_params())
    problems: dict[str, str] = {}
    for item in (rebuild for algorithm in algorithms.registry() for rebuild in algorithm.rebuilds):
        if item.same_as in problems:
            problems[item.knob] = problems[item.same_as]
            continue
        try:
            rebuilt = item.rebuild(optimizer, network, params)
        except RebuildRefused as e:
            problems[item.knob] = f"MindSpore's {item.by} cannot rebuild the builder's {name}: {e}"
            continue
        except Exception as e:  # MindSpore's reason is the answer  # noqa: BLE001
            problems[item.knob] = f"MindSpore's {item.by} cannot rebuild the builder's {name}: {first_line(e)}"
            continue
        differences = settings_differences(optimizer, rebuilt)
        if differences:
            problems[item.knob] = (f"MindSpore's {item.by} rebuilds the builder's {name} with other settings: "
                                   f"{'; '.join(differences[:3])}")
    return problems


def settings_differences(original: nn.Optimizer, rebuilt: nn.Optimizer) -> list[str]:
    """What would make ``rebuilt`` update the parameters they share differently from ``original``: per-parameter
    learning rate and weight decay, and the class's own scalar hyper-parameters (``beta1``, ``momentum``,
    ``use_nesterov``, ...). Empty when they match; each entry names the setting, the original and the rebuilt."""
    differences = []
    if type(original) is not type(rebuilt):
        differences.append(f"class {type(original).__name__} -> {type(rebuilt).__name__}")
    before, after = per_parameter_settings(original), per_parameter_settings(rebuilt)
    for param in sorted(before.keys() - after.keys()):
        differences.append(f"{param} not updated")
    for param, (lr, decay) in before.items():
        if param not in after:
            continue
        new_lr, new_decay = after[param]
        if not _same(lr, new_lr):
            differences.append(f"{param} learning rate {_show(lr)} -> {_show(new_lr)}")
        if not _same(decay, new_decay):
            differences.append(f"{param} weight decay {_show(decay)} -> {_show(new_decay)}")
    old_hyper, new_hyper = hyper_parameters(original), hyper_parameters(rebuilt)
    for key in sorted(old_hyper.keys() | new_hyper.keys()):
        if not _same(old_hyper.get(key), new_hyper.get(key)):
            differences.append(f"{key} {_show(old_hyper.get(key))} -> {_show(new_hyper.get(key))}")
    return differences


def per_parameter_settings(optimizer: nn.Optimizer) -> dict[str, tuple[Any, Any]]:
    """Parameter name -> (learning rate, weight decay) as the optimizer applies them: the rate a number or the
    per-step list, the decay 0 where it is not applied; a schedule given as a Cell is named by its class."""
    settings = {}
    for index, param in enumerate(optimizer.parameters):
        rate = optimizer.get_lr_parameter(param)
        rate = _value(rate.learning_rate if isinstance(rate, nn.Cell) and hasattr(rate, "learning_rate") else rate)
        if optimizer.is_group:
            decay = optimizer.group_weight_decay[index] if optimizer.decay_flags[index] else 0.0
        else:
            decay = optimizer.weight_decay if optimizer.decay_flags[index] and optimizer.exec_weight_decay else 0.0
        settings[param.name] = (rate, _value(decay))
    return settings


_BASE_ATTRIBUTES: frozenset[str] | None = None


def hyper_parameters(optimizer: nn.Optimizer) -> dict[str, Any]:
    """The class's own scalar settings (what ``nn.Optimizer.__init__`` does not set), plus ``loss_scale``."""
    global _BASE_ATTRIBUTES
    if _BASE_ATTRIBUTES is None:
        base = nn.Optimizer(0.1, [Parameter(Tensor(np.zeros(1, np.float32)), name="reference")])
        _BASE_ATTRIBUTES = frozenset(vars(base)) | frozenset(base._params)  # noqa: SLF001
    network_params = {id(p) for p in optimizer.parameters}
    found: dict[str, Any] = {"loss_scale": optimizer.loss_scale}
    for key, value in [*vars(optimizer).items(), *optimizer._params.items()]:  # noqa: SLF001
        if key in _BASE_ATTRIBUTES or key.startswith(("_", "init_", "learning_rate")) or "." in key:
            continue
        if isinstance(value, (bool, int, float, str)) or (isinstance(value, Tensor) and value.size <= 1
                                                          and id(value) not in network_params):
            found[key] = _value(value)
    return found


def _value(value: Any) -> Any:
    if isinstance(value, Tensor):
        return tuple(float(x) for x in value.asnumpy().ravel())
    if isinstance(value, nn.Cell):
        return type(value).__name__
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float, tuple)) and isinstance(b, (int, float, tuple)) and not isinstance(a, bool):
        left, right = np.atleast_1d(np.asarray(a, float)), np.atleast_1d(np.asarray(b, float))
        return left.shape == right.shape and bool(np.allclose(left, right, rtol=1e-6, atol=0.0))
    return a == b


def _show(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 1:
        value = value[0]
    if isinstance(value, tuple):
        return f"[{len(value)} per-step values from {value[0]:g}]"
    return f"{value:g}" if isinstance(value, float) else str(value)
