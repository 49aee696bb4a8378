"""A strict, typed model of everything ``mindspore.boost.AutoBoost`` reads (MindSpore 2.10).

MindSpore is lenient where it should not be: unknown keys are silently ignored, a string
``"false"`` is truthy, an invalid level becomes O0, and some switch combinations crash only at
graph-build time.  This module rejects all of that up front and computes the configuration
MindSpore will *effectively* apply.  It imports neither MindSpore nor Ray.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model, field_validator

from boosttune import algorithms
from boosttune.algorithms import BOOST_LEVEL_NAMES, order
from boosttune.algorithms.base import Algorithm, Resolution, _Section
from boosttune.errors import ConfigError

__all__ = [
    "ALGORITHMS",
    "common_readers",
    "BOOST_LEVEL_NAMES",
    "MODES",
    "PRESETS",
    "BoostConfig",
    "EffectiveBoost",
    "parse_boost_config",
]

MODES = ("auto", "manual", "enable_all", "disable_all")
# The boost algorithms in MindSpore's order, each from its folder in boosttune/algorithms. The models below are
# built from them once, at import; config_dict_model() builds them again from the registry as it is now.
_REGISTERED: tuple[Algorithm, ...] = algorithms.boost_algorithms()
ALGORITHMS = tuple(a.name for a in _REGISTERED)

# mindspore/boost/boost.py `_boost_config_level` (2.10), from the levels each algorithm names. Kept as a copy:
# MindSpore's own dict is mutated in place by manual mode, so it cannot be trusted after the first Model of a process.
PRESETS: dict[str, dict[str, bool]] = algorithms.presets()


class CommonSection(_Section):
    gradient_split_groups: list[int] | None = None
    device_number: int = Field(8, ge=1)

    @field_validator("gradient_split_groups")
    @classmethod
    def _strictly_increasing(cls, groups: list[int] | None) -> list[int] | None:
        if groups is None:
            return groups
        if not groups:
            raise ValueError("must be a non-empty list of parameter indices")
        if any(g < 1 for g in groups):
            raise ValueError("split points must be >= 1")
        if any(b <= a for a, b in zip(groups, groups[1:])):
            raise ValueError("split points must be strictly increasing")
        return groups


def _switches_model(registered: tuple[Algorithm, ...]) -> type[_Section]:
    """The ``boost`` section: the mode and one optional switch per registered algorithm."""
    switches: dict[str, Any] = {a.name: (bool | None, None) for a in registered}
    return create_model("BoostSwitches", __base__=_Section, __module__=__name__,
                        mode=(Literal["auto", "manual", "enable_all", "disable_all"], "auto"), **switches)


def _sectioned(registered: tuple[Algorithm, ...] = _REGISTERED) -> tuple[Algorithm, ...]:
    return tuple(a for a in registered if a.section is not None)


def _config_dict_model(registered: tuple[Algorithm, ...], switches: type[_Section]) -> type[_Section]:
    """boost_config_dict: the ``boost`` switches, ``common``, and each registered algorithm's section."""
    sections: dict[str, Any] = {a.name: (a.section | None, None) for a in _sectioned(registered)}
    return create_model("BoostConfigDict", __base__=_Section, __module__=__name__,
                        boost=(switches | None, None), common=(CommonSection | None, None), **sections)


def config_dict_model() -> type[_Section]:
    """boost_config_dict's model as the registry has it now (the module's :data:`BoostConfigDict` is built once)."""
    registered = algorithms.boost_algorithms()
    return _config_dict_model(registered, _switches_model(registered))


BoostSwitches = _switches_model(_REGISTERED)
BoostConfigDict = _config_dict_model(_REGISTERED, BoostSwitches)


@dataclass(frozen=True)
class EffectiveBoost:
    """What MindSpore 2.10 will do with a level and a boost_config_dict.

    ``switches`` is what ``AutoBoost.boost_config`` holds; ``applied`` is what actually runs once
    ``Model`` and ``BoostTrainOneStepCell`` have had their say (level O0 skips everything,
    DimReduce returns before LessBN/GradientFreeze/AdaSum, accumulation over 1 step is off).
    """

    level: str
    mode: str
    switches: Mapping[str, bool]
    applied: Mapping[str, bool]
    settings: Mapping[str, Mapping[str, Any]]
    notes: tuple[str, ...] = field(default=())

    @property
    def active(self) -> tuple[str, ...]:
        return tuple(name for name in ALGORITHMS if self.applied[name])

    def describe(self) -> str:
        lines = [f"boost_level: {self.level}  (mode: {self.mode})"]
        if not self.active:
            lines.append("applied: nothing (plain training)")
        for name in self.active:
            values = ", ".join(f"{k}={v}" for k, v in self.settings.get(name, {}).items())
            lines.append(f"applied: {name}" + (f"  [{values}]" if values else ""))
        if self.settings.get("common"):
            values = ", ".join(f"{k}={v}" for k, v in self.settings["common"].items())
            lines.append(f"common: {values}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


class BoostConfig(BaseModel):
    """A boost level plus a validated boost_config_dict. Build it with :func:`parse_boost_config`."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    level: Literal["O0", "O1", "O2"] = "O0"
    config: BoostConfigDict = BoostConfigDict()  # type: ignore[valid-type]

    def effective(self) -> EffectiveBoost:
        return _resolve(self)

    def to_boost_config_dict(self) -> dict[str, Any]:
        """The canonical dict: explicit manual switches and every applied section in full.

        ``AutoBoost(level, d)`` reproduces :meth:`effective` exactly, whatever MindSpore's presets
        are, and ``parse_boost_config(d, level)`` is a fixed point.
        """
        eff = self.effective()
        out: dict[str, Any] = {"boost": {"mode": "manual", **dict(eff.applied)}}
        for name, values in eff.settings.items():
            out[name] = dict(values)
        return out


def parse_boost_config(boost_config_dict: Any, level: str = "O0") -> BoostConfig:
    """Validate a boost_config_dict (as loaded from JSON/YAML) and its boost level.

    Raises:
        ConfigError: one line naming the field, the value and what is allowed.
    """
    if level not in BOOST_LEVEL_NAMES:
        raise ConfigError(f"boost_level: {level!r} is not a boost level; allowed: {', '.join(BOOST_LEVEL_NAMES)}")
    if boost_config_dict in (None, ""):
        boost_config_dict = {}
    if not isinstance(boost_config_dict, Mapping):
        raise ConfigError(
            f"boost_config_dict: expected a mapping of sections, got {type(boost_config_dict).__name__}"
        )
    try:
        parsed = BoostConfigDict.model_validate(dict(boost_config_dict))
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, BoostConfigDict, prefix="")) from None
    config = BoostConfig(level=level, config=parsed)
    config.effective()  # combination rules raise here, before anything runs
    return config


def format_validation_error(error: ValidationError, root: type[BaseModel], prefix: str) -> str:
    """One line for the first problem: dotted field path, the value, what is allowed."""
    first = error.errors()[0]
    loc = [str(part) for part in first["loc"] if not str(part).startswith("<")]  # "<name>": a union's tag
    if not loc and first["type"] == "value_error":  # a rule across fields: its message names them
        return prefix + first["msg"].removeprefix("Value error, ")
    path = prefix + ".".join(loc) if loc else prefix.rstrip(".") or "config"
    if first["type"] == "extra_forbidden":
        allowed = _field_names(root, loc[:-1])
        hint = did_you_mean(loc[-1], first.get("input"), _model_at(root, loc[:-1]))
        suggestion = f" (did you mean {hint}?)" if hint else ""
        return f"{path}: unknown key{suggestion}; allowed: {', '.join(allowed) or 'none'}"
    value = first.get("input")
    message = _MESSAGES.get(first["type"], first["msg"])
    if first["type"] == "value_error":
        message = first["msg"].removeprefix("Value error, ")
    return f"{path}: {value!r} is invalid: {message}"


_MESSAGES = {
    "bool_type": "expected a JSON boolean (true or false); MindSpore reads any non-empty string as true",
    "int_type": "expected an integer",
    "float_type": "expected a number",
    "string_type": "expected a string",
    "list_type": "expected a list",
    "model_type": "expected a mapping",
    "dict_type": "expected a mapping",
}


def _field_names(root: type[BaseModel], loc: list[str]) -> list[str]:
    return list(_model_at(root, loc).model_fields)


def _model_at(root: type[BaseModel], loc: list[str]) -> Any:
    model: Any = root
    for part in loc:
        model = _model_in(model.model_fields[part].annotation)
    return model


def did_you_mean(key: str, value: Any, model: Any) -> str | None:
    """The field of ``model`` an unknown ``key`` most likely meant: among the names close to it (by spelling, or one
    name holding the other: ``workers`` in ``workers_per_trial``), the closest whose type takes ``value``
    (``workers: 8`` is not the switch ``warm_workers``); None when no field is close."""
    names = list(model.model_fields)
    if not names:
        return None
    close = difflib.get_close_matches(key, names, n=len(names), cutoff=0.5)
    close += [n for n in names if n not in close and len(key) >= 3 and (key in n or n in key)]
    fitting = [n for n in close if _takes(model.model_fields[n].annotation, value)]
    return (fitting or close or [None])[0]


def _takes(annotation: Any, value: Any) -> bool:
    try:
        TypeAdapter(annotation).validate_python(value)
    except (ValidationError, TypeError, ValueError):
        return False
    except Exception:  # an annotation pydantic cannot build an adapter for: no evidence either way
        return True
    return True


def _model_in(annotation: Any) -> Any:
    """The pydantic model an annotation holds (``X | None``, a tagged union of a name and a model, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) + tuple(getattr(annotation, "__metadata__", ())):
        found = _model_in(arg)
        if found is not None:
            return found
    origin = getattr(annotation, "__origin__", None)
    return _model_in(origin) if origin is not None and origin is not annotation else None


def _resolve(config: BoostConfig) -> EffectiveBoost:
    """What MindSpore does with ``config``: the mode's switches, then level O0, then each algorithm's rule."""
    cfg, level = config.config, config.level
    notes: list[str] = []
    mode, switches = _mode_switches(cfg.boost or BoostSwitches(), level, notes)
    if level == "O0":
        if cfg.model_dump(exclude_none=True):
            notes.append("boost_level O0: Model skips boost entirely and ignores boost_config_dict; use O1 or O2")
        applied = dict.fromkeys(ALGORITHMS, False)
    else:
        applied = dict(switches)
    state = Resolution(level=level, applied=applied, notes=notes, sections=_sections(cfg))
    for algorithm in sorted(_REGISTERED, key=lambda a: order.place(order.RESOLUTION, a.name)):
        if algorithm.rule is not None:
            algorithm.rule(state)
    _note_ignored(cfg, state)
    return EffectiveBoost(level=level, mode=mode, switches=switches, applied=applied,
                          settings=_settings(cfg, state), notes=tuple(notes))


def _mode_switches(given_switches: Any, level: str, notes: list[str]) -> tuple[str, dict[str, bool]]:
    """The switches ``AutoBoost.boost_config`` holds for the boost section's mode."""
    given = {name: getattr(given_switches, name) for name in ALGORITHMS if getattr(given_switches, name) is not None}
    mode = given_switches.mode
    if mode == "manual":
        return mode, {**PRESETS[level], **given}
    if mode == "enable_all":
        return mode, dict.fromkeys(ALGORITHMS, True)
    if mode == "disable_all":
        return mode, dict.fromkeys(ALGORITHMS, False)
    if given:
        notes.append(
            f"mode auto ignores the switches in 'boost' ({', '.join(given)}); preset {level} applies "
            "- set mode: manual to use them"
        )
    return mode, dict(PRESETS[level])


def _sections(cfg: Any) -> dict[str, Any]:
    """Every section as given, or its defaults."""
    sections = {"common": cfg.common or CommonSection()}
    for algorithm in _sectioned():
        sections[algorithm.name] = getattr(cfg, algorithm.name) or algorithm.section()
    return sections


def _note_ignored(cfg: Any, state: Resolution) -> None:
    """Sections (and keys of ``common``) given for an algorithm that is not applied."""
    for algorithm in _sectioned():
        name = algorithm.name
        if getattr(cfg, name) is not None and not state.applied[name] and state.level != "O0":
            state.notes.append(f"section '{name}' is ignored because {name} is not applied")


def common_readers() -> dict[str, tuple[str, ...]]:
    """Each key of the ``common`` section and the algorithms that read it, as their folders declare
    (``Algorithm.common_keys``)."""
    readers: dict[str, tuple[str, ...]] = {}
    for algorithm in _REGISTERED:
        for key in algorithm.common_keys:
            readers[key] = (*readers.get(key, ()), algorithm.name)
    return readers


def _settings(cfg: Any, state: Resolution) -> dict[str, dict[str, Any]]:
    """``common`` and the sections of the applied algorithms, in full (MindSpore's defaults filled in)."""
    settings: dict[str, dict[str, Any]] = {"common": state.section("common").model_dump(exclude_none=True)}
    for key, readers in common_readers().items():
        if cfg.common and getattr(cfg.common, key, None) and not any(state.applied[name] for name in readers):
            which = "which is not applied" if len(readers) == 1 else "neither of which is applied"
            state.notes.append(f"common.{key} is used only by {' and '.join(readers)}, {which}")
    for algorithm in _sectioned():
        if state.applied[algorithm.name]:
            settings[algorithm.name] = state.section(algorithm.name).model_dump(exclude_none=True)
    return settings
