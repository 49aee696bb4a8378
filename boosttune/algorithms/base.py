"""What an algorithm folder is made of: small pure primitives, no Ray, no MindSpore.

An algorithm folder (``boosttune/algorithms/<name>/``) builds one :class:`Algorithm` from these: its config
section (a strict :class:`_Section`), its search-space :class:`Fragment`, its :class:`ProbeCheck`, its
calibration point, its bench setting, its combination rule, what a trial does with it and its
:class:`MethodNote` (the method card's text). The registry (:mod:`boosttune.algorithms`) finds the folders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Protocol

from pydantic import BaseModel, ConfigDict

__all__ = [
    "Algorithm",
    "CardMatch",
    "DeviceSupport",
    "Fragment",
    "MethodNote",
    "ProbeCheck",
    "Resolution",
    "SpaceContext",
    "TrialPrep",
    "asks",
    "boost_switches",
    "switch_on",
]


# ---- the config section ----------------------------------------------------------------------------------------

class _Section(BaseModel):
    """JSON types as MindSpore means them: no coercion, no unknown keys, immutable."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


@dataclass
class Resolution:
    """What MindSpore will do, while the algorithms' rules (``Algorithm.rule``) have their say.

    ``applied`` is mutable (a rule switches an algorithm off, as MindSpore does); ``notes`` collects what the
    user should know; ``section(name)`` is the given section or its defaults.
    """

    level: str
    applied: dict[str, bool]
    notes: list[str]
    sections: Mapping[str, _Section]

    def section(self, name: str) -> Any:
        return self.sections[name]


# ---- the search space ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SpaceContext:
    """Facts the space depends on.

    total_steps: the trial's real number of training steps (GradientFreeze's schedule is tied to it).
    param_count: trainable parameter tensors of the model (gradient split points are drawn from it).
    unsupported: knobs the capability probe found unsupported, such as "boost.less_bn.gc_flag".
    world_size: ranks per trial (AdaSum needs >= 16; DimReduce runs single-process only on CPU).
    enabled: the fragment names to search (others keep the base recipe's values).
    slow: knobs measured clearly slower than O0 on this device (:mod:`boosttune.probe.calibrate`):
        the search does not draw them; a recipe that sets them (a preset, a replayed trial) still has them.
    device_target: the trials' device ("CPU", "GPU", "Ascend").
    """

    total_steps: int
    param_count: int
    unsupported: frozenset[str] = frozenset()
    world_size: int = 1
    enabled: frozenset[str] = field(default_factory=frozenset)
    base_learning_rate: float = 0.05
    slow: frozenset[str] = frozenset()
    device_target: str = "CPU"

    def supported(self, knob: str) -> bool:
        return knob not in self.unsupported


class Fragment(Protocol):
    """One algorithm's (or knob family's) part of the search space.

    ``suggest`` is define-by-run: it asks the trial only for the knobs that apply given what earlier
    fragments chose (``document`` is the recipe being built, a plain dict it mutates); the fragments suggest in
    :data:`boosttune.algorithms.order.SUGGESTION`.
    """

    name: str
    requires: tuple[str, ...]

    def suggest(self, trial: Any, ctx: SpaceContext, document: dict[str, Any]) -> None: ...


def asks(trial: Any, ctx: SpaceContext, knob: str, param: str) -> bool:
    """Whether a fragment asks ``trial`` for ``param`` (the switch of ``knob``).

    Not for a knob the device does not support. Not for a knob measured slow here, unless ``trial``
    replays a recipe that sets it (its ``fixed_params``, see :class:`boosttune.space.ReplayTrial`).
    """
    if not ctx.supported(knob):
        return False
    return knob not in ctx.slow or param in getattr(trial, "fixed_params", ())


def boost_switches(document: dict[str, Any]) -> dict[str, bool]:
    return document["boost_config_dict"]["boost"]


def switch_on(document: dict[str, Any], name: str) -> bool:
    return bool(boost_switches(document).get(name))


# ---- the probe -------------------------------------------------------------------------------------------------

class DeviceSupport(Protocol):
    """What an algorithm reads from the capability probe's findings on a device (its bench setting, its device
    preset). The probe's report (a later stage) is one; the algorithms know this much of it and nothing more.
    """

    def supports(self, knob: str) -> bool:
        """Whether ``knob`` (such as "boost.less_bn.gc_flag") works on the device; True when it was not probed."""
        ...

    def why_unsupported(self, knob: str) -> str:
        """Why the probe found ``knob`` unsupported on the device (asked only of a knob it does not support)."""
        ...


class RebuildRefused(Exception):
    """An algorithm's rebuild refused the team's optimizer, for the reason its message gives whole."""


@dataclass(frozen=True)
class OptimizerRebuild:
    """How an algorithm throws the team's optimizer away and builds its own (MindSpore's boost does), tried without
    training by :func:`boosttune.trial.rebuild.rebuild_problems`.

    knob: the search space's knob that switches it on.
    by: MindSpore's name of the algorithm, for the message.
    rebuild: (optimizer, network, trainable params) -> the optimizer MindSpore builds from it (MindSpore's own code,
        imported when called: only a trial's process has it); raises what MindSpore raises, or
        :class:`RebuildRefused`.
    same_as: a knob that rebuilds the same way and more: its problem is this one's too.
    """

    knob: str
    by: str
    rebuild: Callable[[Any, Any, list], Any]
    same_as: str | None = None


@dataclass(frozen=True)
class InformedPoint:
    """A variation a person would try first, after the presets (the search's informed start).

    over: the preset whose space params it changes ("O0": the algorithm alone; "O1": a variation of the preset).
    A search's start takes as many points as its budget leaves, so their order decides which train:
    :data:`boosttune.algorithms.order.INFORMED` says how every algorithm's points are ranked together.
    """

    label: str
    params: Mapping[str, Any]
    over: Literal["O0", "O1"] = "O0"


@dataclass(frozen=True)
class ProbeCheck:
    """How the capability probe tries one knob: a tiny BatchNorm network trained for two steps.

    Declarative where it can be: the probe trains with these Model arguments; ``switches`` on (manual mode,
    see :func:`boosttune.algorithms.manual`) at boost level O1, with ``sections`` beside them. ``run`` is for a
    check that needs more (its own network or checkpoints): it gets ``(device, kit)``, where ``kit.train(device,
    **model_arguments)`` is the probe's training function, ``kit.network()`` its tiny network and
    ``kit.dataset()`` its data (:mod:`boosttune.probe.checks`).
    """

    knob: str
    switches: tuple[str, ...] = ()
    sections: Mapping[str, Any] = field(default_factory=dict)
    amp_level: str = "O0"
    loss_scale: str = "fixed1"  # fixed1, fixed (128, unscaled by the optimizer), fixed_drop or dynamic
    optimizer: str = "momentum"
    run: Callable[[str, Any], None] | None = None

    def train_kwargs(self, manual: Callable[..., dict[str, Any]]) -> dict[str, Any]:
        """The probe's ``train`` arguments; ``manual`` builds the ``boost`` section (the registry's)."""
        kwargs: dict[str, Any] = {"optimizer": self.optimizer, "amp_level": self.amp_level,
                                  "loss_scale": self.loss_scale}
        if self.switches:
            kwargs["boost_level"] = "O1"
            kwargs["boost_config_dict"] = {**manual(**dict.fromkeys(self.switches, True)), **self.sections}
        return kwargs


# ---- the trial -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrialPrep:
    """What a trial hands an algorithm's ``prepare`` hook before it builds the Model (MindSpore objects inside)."""

    recipe: Any  # boosttune.config.recipe.TrialRecipe
    parts: Any  # this rank's built parts (network, loss, data)
    make_parts: Callable[[], Any]  # fresh parts from the builder
    train_dataset: Any
    boost_dict: dict[str, Any]  # the boost_config_dict the Model gets; the hook may fill in paths
    work_dir: Any  # pathlib.Path
    num_shards: int
    shard_id: int
    log: Callable[[str], None]


# ---- the method card -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CardMatch:
    """How a method card finds its figures: in the bench, the probe, the bench's notes and a search's params.

    A bench recipe measures the card when its methods are exactly ``methods``, or are one method starting
    with ``method_prefix``; ``by_name`` cards (the presets) are matched by recipe name instead.
    """

    methods: tuple[str, ...] = ()
    method_prefix: str | None = None
    probe_knobs: tuple[str, ...] = ()  # probe capability names it covers (prefixes)
    left_out: tuple[str, ...] = ()  # bench notes it covers (prefixes)
    params: tuple[str, ...] = ()  # search params it covers (prefixes)
    switch: str | None = None  # the boost switch a search trial must have on to count

    def measured_by(self, methods: tuple[str, ...]) -> bool:
        if self.method_prefix is not None:
            return len(methods) == 1 and methods[0].startswith(self.method_prefix)
        return bool(self.methods) and methods == self.methods

    @classmethod
    def alone(cls, name: str) -> CardMatch:
        """A boost algorithm's card: the bench recipe with it alone, its probe knob, its params."""
        return cls(methods=(name,), probe_knobs=(f"boost.{name}",), left_out=(name,), params=(f"{name}.",),
                   switch=f"boost.{name}")


@dataclass(frozen=True)
class MethodNote:
    key: str
    """The method card's file name; one of the keys of :data:`boosttune.report.method_notes.NOTES`."""
    title: str
    what: str
    """Markdown, 1-3 short paragraphs: what the code does in MindSpore 2.10."""
    knobs: tuple[tuple[str, str], ...]
    """(boost_config_dict path or Model argument, what it controls and MindSpore's default)."""
    devices: str
    """What MindSpore's own docstrings/source say about Ascend/GPU/CPU, one sentence."""
    source: tuple[str, ...]
    """The MindSpore source files and classes the note was read from."""
    algorithms: tuple[str, ...]
    """The boost_config_dict ``boost`` switches this card covers; () for amp / loss_scale / boost_levels."""
    card: CardMatch | None = None
    """How the card finds its figures; None: :meth:`CardMatch.alone` of its one algorithm."""

    @property
    def match(self) -> CardMatch:
        return self.card if self.card is not None else CardMatch.alone(self.algorithms[0])


# ---- the algorithm ---------------------------------------------------------------------------------------------

BenchSetting = Callable[[DeviceSupport, int], "tuple[dict[str, dict[str, Any]], list[str]]"]


@dataclass(frozen=True)
class Algorithm:
    """Everything boosttune knows about one boost algorithm or knob family, from its folder.

    kind: "boost" (a switch of boost_config_dict's ``boost`` section) or "knob" (amp, loss scale, optimizer).
    section: the boost_config_dict section model (None: the algorithm reads no section, like AdaSum).
    presets: MindSpore's boost levels that switch it on.
    fragment: its part of the search space.
    off_params / preset_params: the space params that leave it as O0 has it / set it as the presets do.
    probe_checks: how the probe tries its knobs.
    calibration: knob -> the space params (on top of O0's) that switch it on, for the speed calibration.
    bench: its entries in the bench's default matrix and the notes for what it leaves out.
    rule: its combination rule (switches itself or others off, raises, adds notes); when a boost config is resolved,
        the rules run in :data:`boosttune.algorithms.order.RESOLUTION`.
    common_keys: keys of the ``common`` section it reads (a key several algorithms read is declared by each).
    ranks_rule: why it does nothing with this many ranks, or None when it takes effect.
    device_preset: the section values and notes the O1/O2 presets need on a device the probe describes.
    observe / prepare: what a trial reads back from the built Model / does before building it.
    sized_to_run: fills in its canonical section, in place, what the run's real step count sizes (the fields the
        recipe did not set: their names are given), when the section is in the boost_config_dict.
    steps_per_update: batches per optimizer update a boost_config_dict asks of it (the LR schedule spans updates).
    label: its name in a recipe's short name, with the setting that tells its variants apart, from its resolved
        section ("grad_freeze p=0.5"); None: its bare name.
    recipe_rule: raises ConfigError, naming the field, for a recipe whose other knobs (its loss scale) it cannot run
        with; given the recipe and whether the algorithm is applied in it.
    sub_knobs: the probe knobs a resolved section of it relies on beyond ``boost.<name>`` (LessBN's gradient
        centralization).
    check_here: raises ConfigError, naming the field, when the machine a recipe is loaded on lacks what the algorithm
        needs there (``load_best_recipe``: DimReduce's checkpoint folder); given the boost_config_dict and its source.
    rebuilds: how it rebuilds the team's optimizer (:class:`OptimizerRebuild`), one per knob that does.
    informed: the variations of it a person would try first (:class:`InformedPoint`), for a space context; the
        search's informed start (:func:`boosttune.space.informed_points`) ranks every algorithm's together.
    graph_state: why a warm worker may not train a run of a recipe it is in on a kept, compiled Model of an earlier
        run (state the Model's parameters do not carry, or not proven reset: :mod:`boosttune.trial.graphs`), or None.
        A boost algorithm's is asked only when it is applied; a knob's for every recipe.
    notes: its method cards.
    without: a part it deliberately lacks -> why (the contract test accepts nothing else missing).
    """

    name: str
    kind: Literal["boost", "knob"]
    fragment: Fragment | None = None
    section: type[_Section] | None = None
    presets: tuple[str, ...] = ()
    off_params: Callable[[SpaceContext, Mapping[str, Any]], dict[str, Any]] | None = None
    preset_params: Callable[[SpaceContext], dict[str, Any]] | None = None
    probe_checks: tuple[ProbeCheck, ...] = ()
    calibration: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    bench: BenchSetting | None = None
    rule: Callable[[Resolution], None] | None = None
    common_keys: tuple[str, ...] = ()
    ranks_rule: Callable[[int], str | None] | None = None
    device_preset: Callable[[DeviceSupport], tuple[dict[str, Any], list[str]]] | None = None
    observe: Callable[[Any], dict[str, Any]] | None = None
    prepare: Callable[[TrialPrep], float] | None = None
    sized_to_run: Callable[[dict[str, Any], frozenset[str], int], None] | None = None
    steps_per_update: Callable[[Mapping[str, Any]], int] | None = None
    check_here: Callable[[Mapping[str, Any], str], None] | None = None
    sub_knobs: Callable[[Mapping[str, Any]], tuple[str, ...]] | None = None
    recipe_rule: Callable[[Any, bool], None] | None = None
    label: Callable[[Mapping[str, Any]], str | None] | None = None
    informed: Callable[[SpaceContext], tuple[InformedPoint, ...]] | None = None
    rebuilds: tuple[OptimizerRebuild, ...] = ()
    graph_state: Callable[[Any], str | None] | None = None
    notes: tuple[MethodNote, ...] = ()
    without: Mapping[str, str] = field(default_factory=dict)


def short_value(value: Any) -> str:
    """A setting as a label shows it: a float to three significant digits."""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def alone_in_bench(name: str, report: DeviceSupport,
                   config: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """A boost algorithm alone at level O1 in the bench matrix, or why the device leaves it out."""
    knob = f"boost.{name}"
    if not report.supports(knob):
        return {}, [f"{name}: {report.why_unsupported(knob)}"]
    return {name: {"boost_level": "O1", "boost_config_dict": config}}, []
