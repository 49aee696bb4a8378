"""A strict, typed model of everything ``mindspore.boost.AutoBoost`` reads (MindSpore 2.10).

MindSpore is lenient where it should not be: unknown keys are silently ignored, a string
``"false"`` is truthy, an invalid level becomes O0, and some switch combinations crash only at
graph-build time.  This module rejects all of that up front and computes the configuration
MindSpore will *effectively* apply.  It imports neither MindSpore nor Ray.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from boosttune.errors import ConfigError

__all__ = [
    "ALGORITHMS",
    "LEVELS",
    "MODES",
    "PRESETS",
    "BoostConfig",
    "EffectiveBoost",
    "parse_boost_config",
]

LEVELS = ("O0", "O1", "O2")
MODES = ("auto", "manual", "enable_all", "disable_all")
ALGORITHMS = ("less_bn", "grad_freeze", "adasum", "grad_accumulation", "dim_reduce", "loss_scale_group")

# mindspore/boost/boost.py `_boost_config_level` (2.10). Kept as a copy: MindSpore's own dict is
# mutated in place by manual mode, so it cannot be trusted after the first Model of a process.
PRESETS: dict[str, dict[str, bool]] = {
    "O0": dict.fromkeys(ALGORITHMS, False),
    "O1": {**dict.fromkeys(ALGORITHMS, False), "less_bn": True, "grad_freeze": True},
    "O2": {**dict.fromkeys(ALGORITHMS, False), "less_bn": True, "grad_freeze": True, "adasum": True},
}

# DimReduce's stage-2 fails after computing the PCA when weight_load_dir holds other characters.
_DIM_REDUCE_PATH = re.compile(r"^[_A-Za-z0-9/.\-]+$")


class _Section(BaseModel):
    """JSON types as MindSpore means them: no coercion, no unknown keys, immutable."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


class BoostSwitches(_Section):
    mode: Literal["auto", "manual", "enable_all", "disable_all"] = "auto"
    less_bn: bool | None = None
    grad_freeze: bool | None = None
    adasum: bool | None = None
    grad_accumulation: bool | None = None
    dim_reduce: bool | None = None
    loss_scale_group: bool | None = None


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


class LessBNSection(_Section):
    fn_flag: bool = True
    gc_flag: bool = True


class GradFreezeSection(_Section):
    param_groups: int = Field(10, ge=1)
    freeze_type: int = 1
    freeze_p: float = Field(0.7, ge=0.0, le=1.0)
    total_steps: int = Field(65536, ge=1)

    @field_validator("freeze_type")
    @classmethod
    def _known_strategy(cls, value: int) -> int:
        if value not in (0, 1):
            raise ValueError("must be 0 (continuous) or 1 (interval)")
        return value


class GradAccumulationSection(_Section):
    grad_accumulation_step: int = Field(1, ge=1)


class DimReduceSection(_Section):
    rho: float = Field(0.55, gt=0.0, lt=1.0)
    gamma: float = Field(0.9, ge=0.0, lt=1.0)
    alpha: float = Field(0.001, gt=0.0)
    sigma: float = Field(0.4, gt=0.0, lt=1.0)
    n_components: int = Field(32, ge=1)
    pca_mat_path: str | None = None
    weight_load_dir: str | None = None
    timeout: int = Field(1800, ge=1)

    @field_validator("pca_mat_path")
    @classmethod
    def _npy(cls, path: str | None) -> str | None:
        # MindSpore silently ignores a pca_mat_path that does not end in .npy and recomputes.
        if path is not None and not path.endswith(".npy"):
            raise ValueError("must be a .npy file written by an earlier DimReduce run")
        return path

    @field_validator("weight_load_dir")
    @classmethod
    def _portable_path(cls, path: str | None) -> str | None:
        if path is not None and not _DIM_REDUCE_PATH.fullmatch(path):
            raise ValueError("DimReduce accepts only the characters [_A-Za-z0-9/.-] in this path")
        return path


class LossScaleGroupSection(_Section):
    """AutoBoost reads no keys here: the groups come from ``GroupLossScaleManager``."""


class BoostConfigDict(_Section):
    boost: BoostSwitches | None = None
    common: CommonSection | None = None
    less_bn: LessBNSection | None = None
    grad_freeze: GradFreezeSection | None = None
    grad_accumulation: GradAccumulationSection | None = None
    dim_reduce: DimReduceSection | None = None
    loss_scale_group: LossScaleGroupSection | None = None


_SECTION_DEFAULTS: dict[str, _Section] = {
    "common": CommonSection(),
    "less_bn": LessBNSection(),
    "grad_freeze": GradFreezeSection(),
    "grad_accumulation": GradAccumulationSection(),
    "dim_reduce": DimReduceSection(),
    "loss_scale_group": LossScaleGroupSection(),
}


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
    config: BoostConfigDict = BoostConfigDict()

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
    if level not in LEVELS:
        raise ConfigError(f"boost_level: {level!r} is not a boost level; allowed: {', '.join(LEVELS)}")
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
        hint = difflib.get_close_matches(loc[-1], allowed, n=1, cutoff=0.6)
        suggestion = f" (did you mean {hint[0]}?)" if hint else ""
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
    model: Any = root
    for part in loc:
        model = _model_in(model.model_fields[part].annotation)
    return list(model.model_fields)


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
    cfg, level = config.config, config.level
    switches_in = cfg.boost or BoostSwitches()
    given = {name: getattr(switches_in, name) for name in ALGORITHMS if getattr(switches_in, name) is not None}
    notes: list[str] = []

    mode = switches_in.mode
    if mode == "manual":
        switches = {**PRESETS[level], **given}
    elif mode == "enable_all":
        switches = dict.fromkeys(ALGORITHMS, True)
    elif mode == "disable_all":
        switches = dict.fromkeys(ALGORITHMS, False)
    else:
        switches = dict(PRESETS[level])
        if given:
            notes.append(
                f"mode auto ignores the switches in 'boost' ({', '.join(given)}); preset {level} applies "
                "- set mode: manual to use them"
            )

    if level == "O0":
        if cfg.model_dump(exclude_none=True):
            notes.append("boost_level O0: Model skips boost entirely and ignores boost_config_dict; use O1 or O2")
        applied = dict.fromkeys(ALGORITHMS, False)
    else:
        applied = dict(switches)

    def section(name: str) -> Any:
        return getattr(cfg, name) or _SECTION_DEFAULTS[name]

    if applied["dim_reduce"]:
        skipped = [n for n in ("less_bn", "grad_freeze", "adasum") if applied[n]]
        for name in skipped:
            applied[name] = False
        if skipped:
            notes.append(f"dim_reduce replaces the optimizer and skips {', '.join(skipped)}")
        notes.append("dim_reduce trains with SGD(learning_rate=1) in place of the recipe's optimizer")
        dr = section("dim_reduce")
        if dr.pca_mat_path is None and dr.weight_load_dir is None:
            notes.append(
                "dim_reduce needs weight_load_dir (stage-1 checkpoints) or pca_mat_path; "
                "a boosttune trial produces them"
            )

    if applied["grad_accumulation"] and section("grad_accumulation").grad_accumulation_step <= 1:
        applied["grad_accumulation"] = False
        notes.append("grad_accumulation is on but grad_accumulation_step is 1: MindSpore turns it off")

    if applied["grad_freeze"] and applied["grad_accumulation"]:
        raise ConfigError(
            "boost: grad_freeze and grad_accumulation cannot both be on: MindSpore 2.10 fails to build "
            "the network ('_TrainFreezeCell' object has no attribute 'optimizer'); switch one off "
            "(O1/O2 presets switch grad_freeze on)"
        )

    if applied["grad_freeze"]:
        gf = section("grad_freeze")
        if gf.freeze_type == 0 and gf.freeze_p >= 1.0:
            raise ConfigError(
                f"grad_freeze.freeze_p: {gf.freeze_p!r} is invalid with freeze_type 0: MindSpore divides by "
                "(1 - freeze_p); use freeze_p < 1 or freeze_type 1"
            )
        if gf.freeze_p >= 1.0 or gf.param_groups == 1:
            notes.append("grad_freeze freezes nothing (freeze_p 1 or param_groups 1): every step trains all layers")

    if applied["adasum"]:
        notes.append(
            "adasum takes effect only with >= 16 ranks where ranks/8 is a power of two; "
            "below that MindSpore runs plain data parallel"
        )
    if applied["loss_scale_group"]:
        notes.append("loss_scale_group needs a GroupLossScaleManager (GPU/Ascend only)")
    if applied["less_bn"] and section("less_bn").gc_flag:
        notes.append("less_bn.gc_flag true needs the Centralization kernel (GPU/Ascend; not on CPU)")

    for name in ("less_bn", "grad_freeze", "grad_accumulation", "dim_reduce", "loss_scale_group"):
        if getattr(cfg, name) is not None and not applied[name] and level != "O0":
            notes.append(f"section '{name}' is ignored because {name} is not applied")

    settings: dict[str, dict[str, Any]] = {}
    common = section("common").model_dump(exclude_none=True)
    settings["common"] = common
    if cfg.common and cfg.common.gradient_split_groups and not applied["less_bn"]:
        notes.append("common.gradient_split_groups is used only by less_bn, which is not applied")
    for name in ("less_bn", "grad_freeze", "grad_accumulation", "dim_reduce"):
        if applied[name]:
            settings[name] = section(name).model_dump(exclude_none=True)
    if applied["loss_scale_group"]:
        settings["loss_scale_group"] = {}

    return EffectiveBoost(
        level=level,
        mode=mode,
        switches=switches,
        applied=applied,
        settings=settings,
        notes=tuple(notes),
    )
