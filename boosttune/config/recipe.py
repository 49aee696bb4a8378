"""The typed recipe of one training trial: model, data, optimizer, precision, loss scale, boost.

Pure Python: it validates everything a trial needs before MindSpore is imported, so bad input
never reaches a trial.  Device support (what the capability probe found) is checked separately
by :func:`boosttune.probe.check_recipe`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from boosttune import algorithms
from boosttune.builder import BUILTIN_ENTRY, ENTRY_PATTERN, entry_of
from boosttune.config.boost import BoostConfig, format_validation_error, parse_boost_config
from boosttune.errors import BoosttuneError, ConfigError

__all__ = [
    "kin_of",
    "methods_of",
    "short_name",
    "DATASETS",
    "diverged_hint",
    "MODELS",
    "DataConfig",
    "LossScaleConfig",
    "ModelEntry",
    "OptimizerConfig",
    "TrialRecipe",
    "parse_recipe",
    "refuse_renamed",
]

MODELS = ("lenet5", "resnet8", "resnet20", "resnet18", "resnet50")
DATASETS = ("digits", "mnist5k", "fashion_mnist", "mnist_idx", "cifar10", "imagefolder")
DATASETS_WITH_PATH = ("fashion_mnist", "mnist_idx", "cifar10", "imagefolder")  # the others ship with a package
DEFAULT_FASHION_MNIST = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist: all 60,000 training images
# The main job's Fashion-MNIST rows, shipped in the package (benchmarks/build_fashion_subset.py cuts them from
# Debian's files): the first 4,096 training images and all 10,000 test images, so a fresh machine runs the job the
# committed tables measured with nothing installed.
SHIPPED_FASHION_MNIST = Path(__file__).resolve().parent.parent / "builtin" / "fashion_mnist"
SHIPPED_FASHION_TRAIN = 4096
DEFAULT_IMAGE_SIZE = {"lenet5": 32, "resnet8": 32, "resnet20": 32, "resnet18": 224, "resnet50": 224}


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)


class DataConfig(_Strict):
    name: Literal["digits", "mnist5k", "fashion_mnist", "mnist_idx", "cifar10", "imagefolder"] = Field(
        "digits", description="a built-in data set (the built-in models only; your builder reads its own data)")
    path: str | None = Field(None, description="the folder of mnist_idx, cifar10 or imagefolder (fashion_mnist "
                                                "when unset: the rows shipped in boosttune when train_limit <= 4096, "
                                                "else Debian's dataset-fashion-mnist)")
    val_fraction: float = Field(0.2, gt=0.0, lt=1.0, description="share held out for validation where the data "
                                                                  "set has no split of its own")
    train_limit: int | None = Field(None, ge=1, description="training samples used (unset: all)")
    val_limit: int | None = Field(None, ge=1, description="held-out samples of each epoch's evaluation (unset: all)")
    final_val_limit: int | Literal["all"] | None = Field(
        None, description="held-out samples of one evaluation after the last epoch, which the run's objective then "
                          "comes from ('all': every held-out sample; None: the last epoch's figure on val_limit)")
    image_size: int | None = Field(None, ge=8, description="images resized to this many pixels a side (unset: "
                                                           "the data set's own)")

    @model_validator(mode="after")
    def _path_when_needed(self) -> DataConfig:
        if self.name in ("mnist_idx", "cifar10", "imagefolder") and self.path is None:
            raise ValueError(f"data set {self.name!r} needs data.path (the folder that holds it)")
        if self.name not in DATASETS_WITH_PATH and self.path is not None:
            raise ValueError(f"data set {self.name!r} reads no folder (it ships with a Python package), so data.path "
                             f"would be ignored; data sets read from a folder: {', '.join(DATASETS_WITH_PATH)}")
        return self

    @property
    def resolved_path(self) -> str | None:
        if self.name == "fashion_mnist" and self.path is None:
            fits = self.train_limit is not None and self.train_limit <= SHIPPED_FASHION_TRAIN
            return str(SHIPPED_FASHION_MNIST) if fits and SHIPPED_FASHION_MNIST.is_dir() else DEFAULT_FASHION_MNIST
        return self.path


class ModelEntry(_Strict):
    """A team's own model and data: the builder ``entry`` (``package.module:function``, see
    :mod:`boosttune.builder`) and the ``kwargs`` it is given (``ctx.kwargs``)."""

    entry: str = Field(description="your builder, 'package.module:function', importable on every node")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="given to the builder as ctx.kwargs")

    @field_validator("entry")
    @classmethod
    def _module_function(cls, entry: str) -> str:
        if not re.match(ENTRY_PATTERN, entry):
            raise ValueError("expected 'package.module:function', a builder importable on every node "
                             "(see boosttune.builder)")
        return entry


class OptimizerConfig(_Strict):
    name: Literal["momentum", "sgd", "adam", "lamb", "thor"] = Field(
        "momentum", description="MindSpore's nn optimizer (thor: the second-order THOR)")
    learning_rate: float = Field(0.01, gt=0.0, description="the base learning rate")
    momentum: float = Field(0.9, ge=0.0, lt=1.0, description="momentum (momentum and thor)")
    weight_decay: float = Field(0.0, ge=0.0, description="weight decay")
    lr_schedule: Literal["constant", "cosine", "step"] = Field(
        "constant", description="the rate over the run's updates: constant, cosine decay to 0, or step decay")
    warmup_steps: int = Field(0, ge=0, description="updates of linear warm-up before the schedule")
    step_gamma: float = Field(0.1, gt=0.0, le=1.0, description="step schedule: the factor at each step")
    step_every_epochs: int = Field(1, ge=1, description="step schedule: epochs between steps")


class LossScaleConfig(_Strict):
    kind: Literal["none", "fixed", "dynamic", "group"] = Field(
        "none", description="none; FixedLossScaleManager; DynamicLossScaleManager; group: boost's "
                            "GroupLossScaleManager")
    loss_scale: float = Field(1024.0, ge=1.0, description="fixed: the scale")
    drop_overflow_update: bool = Field(False, description="fixed: skip an update whose gradients overflowed")
    init_loss_scale: float = Field(2.0**16, ge=1.0, description="dynamic and group: the first scale")
    scale_factor: int = Field(2, ge=2, description="dynamic and group: the factor the scale changes by")
    scale_window: int = Field(2000, ge=1, description="dynamic and group: updates without overflow before it grows")


class TrialRecipe(_Strict):
    """Everything one trial needs. Build it with :func:`parse_recipe`."""

    # A built-in network by name (on the built-in data set in ``data``), or a team's own builder.
    model: Annotated[
        Annotated[Literal["lenet5", "resnet8", "resnet20", "resnet18", "resnet50"], Tag("<name>")]
        | Annotated[ModelEntry, Tag("<builder>")],
        Discriminator(lambda v: "<builder>" if isinstance(v, (Mapping, ModelEntry)) else "<name>"),
    ] = Field("lenet5", description="a built-in network by name (trained on data), or your own builder: "
                                    "{entry: 'module:function', kwargs: {...}}")
    data: DataConfig = Field(DataConfig(), description="the built-in data set (built-in models only)")
    batch_size: int = Field(32, ge=1, description="batch size per rank")
    epochs: int = Field(1, ge=1, description="epochs per run")
    planned_epochs: int | None = Field(
        None, ge=1, description="the epochs your own training will run: the confirm stage judges each recipe by the "
                                "time of that job, compile included (unset: epochs, the run's own length)")
    steps_per_epoch: int | None = Field(None, ge=1, description="cap on steps per epoch (unset: the whole data set)")
    seed: int = Field(0, ge=0, description="the run's seed (the search and the confirm stage set it per trial)")
    optimizer: OptimizerConfig = Field(OptimizerConfig(), description="the optimizer and its schedule")
    amp_level: Literal["O0", "O1", "O2", "O3", "auto"] = Field("O0", description="MindSpore's mixed precision level")
    loss_scale: LossScaleConfig = Field(LossScaleConfig(), description="the loss scale manager")
    boost_level: Literal["O0", "O1", "O2"] = Field("O0", description="Model's boost_level (the search sets it)")
    boost_config_dict: dict[str, Any] = Field(default_factory=dict,
                                              description="Model's boost_config_dict (the search sets it)")
    device_target: Literal["CPU", "GPU", "Ascend"] = Field("CPU", description="the device every rank trains on")
    shuffle: bool = Field(True, description="shuffle the training data each epoch")
    warmup_steps: int = Field(3, ge=0, description="steps left out of the speed figure after the compile (the "
                                                    "first steps run slower)")
    # Stop once the objective reaches it (at least, or at most for a lower-is-better objective), in its own units.
    target: float | None = Field(None, description="stop once the objective reaches it, in its own units (the "
                                                   "time-to-accuracy objective sets it)")
    eval_every_epoch: bool = Field(True, description="evaluate after every epoch (the learning curve)")
    dim_reduce_stage1_steps: int | None = Field(None, ge=2, description="DimReduce: steps of its first stage "
                                                                        "(unset: its default)")

    @property
    def boost(self) -> BoostConfig:
        return parse_boost_config(self.boost_config_dict, self.boost_level)

    @model_validator(mode="after")
    def _data_belongs_to_the_builder(self) -> TrialRecipe:
        if isinstance(self.model, ModelEntry) and "data" in self.model_fields_set:
            raise ValueError(f"data: the builder {self.model.entry!r} reads its own data, so data would be ignored; "
                             "leave data out and pass what the builder needs in model.kwargs")
        return self

    @property
    def builtin(self) -> bool:
        """Whether the model is one of boosttune's own networks on its own data sets."""
        return isinstance(self.model, str)

    @property
    def entry(self) -> ModelEntry:
        """The builder every trial calls: the user's, or the built-in one with the model and data as kwargs."""
        if isinstance(self.model, ModelEntry):
            return self.model
        return ModelEntry(entry=BUILTIN_ENTRY, kwargs={"model": self.model, "data": self.data.model_dump(mode="json"),
                                                       "shuffle": self.shuffle})

    @property
    def model_name(self) -> str:
        """A short name for logs and folder names: the built-in model's, else the builder's function."""
        return self.model if isinstance(self.model, str) else self.model.entry.rsplit(":", 1)[1]

    @property
    def image_size(self) -> int:
        """The side the images are resized to: data.image_size, else the model's own (built-in models only)."""
        if not isinstance(self.model, str):
            raise ConfigError(f"image_size: the builder {self.model.entry!r} sizes its own inputs")
        return self.data.image_size or DEFAULT_IMAGE_SIZE[self.model]

    def to_dict(self) -> dict[str, Any]:
        """The recipe as data (it travels to the workers and into every record); a builder's has no ``data``."""
        return self.model_dump(mode="json", exclude={"data"} if not self.builtin else None)


def parse_recipe(document: Mapping[str, Any] | None = None, **overrides: Any) -> TrialRecipe:
    """Validate a recipe (as loaded from JSON/YAML, plus keyword overrides).

    Raises:
        ConfigError: one line naming the field, the value and what is allowed.
    """
    raw = with_entry_names({**dict(document or {}), **overrides})
    refuse_renamed(raw, RENAMED_RECIPE_FIELDS)
    try:
        recipe = TrialRecipe.model_validate(raw)
    except ValidationError as e:
        message = format_validation_error(e, TrialRecipe, prefix="")
        if message.startswith("model: ") and "Input should be" in message:
            message += " (built-in models), or a builder of your own: {entry: 'package.module:function', kwargs: {...}}"
        raise ConfigError(message) from None
    try:
        boost = recipe.boost
    except ConfigError as e:
        message = str(e)
        if not message.startswith("boost_level"):
            message = "boost_config_dict." + message
        raise ConfigError(message) from None
    _check_combinations(recipe, boost)
    return recipe


# Fields renamed when the objective became the user's (any metric, either direction, its own units).
RENAMED_RECIPE_FIELDS = {"target_accuracy": "target (the objective's value to stop at, in its own units)"}


def refuse_renamed(raw: Mapping[str, Any], renamed: Mapping[str, str], prefix: str = "") -> None:
    """One line for a field of an older boosttune, naming what it is called now."""
    for old, new in renamed.items():
        if old in raw:
            raise ConfigError(f"{prefix}{old}: renamed; use {new}")


def with_entry_names(recipe: dict[str, Any]) -> dict[str, Any]:
    """``recipe`` with a builder function in ``model.entry`` written as its ``module:function`` name (the Python
    API takes the function; a recipe travels to the workers, and into experiment.json, as data)."""
    model = recipe.get("model")
    if isinstance(model, Mapping) and callable(model.get("entry")):
        return {**recipe, "model": {**model, "entry": entry_of(model["entry"])}}
    return recipe


def _check_combinations(recipe: TrialRecipe, boost: BoostConfig) -> None:
    applied = boost.effective().applied
    kind = recipe.loss_scale.kind
    for algorithm in algorithms.boost_algorithms():  # each algorithm's rule on the recipe's other knobs
        if algorithm.recipe_rule is not None:
            algorithm.recipe_rule(recipe, applied[algorithm.name])
    if recipe.optimizer.name == "thor" and recipe.boost_level != "O0":
        raise ConfigError("optimizer.name: 'thor' is invalid with boost_level O1/O2; THOR runs with boost_level O0")
    if recipe.optimizer.name == "thor" and kind != "none":
        raise ConfigError(f"loss_scale.kind: {kind!r} is invalid with THOR; allowed: 'none'")


def diverged_hint(learning_rate: float) -> str:
    """What to change after a run of the base recipe diverged at ``learning_rate``: one clause, for an error line."""
    return (f"it trained at learning rate {learning_rate:g} (base.optimizer.learning_rate; a builder's optimizer "
            f"factory gets it too): try a lower one, e.g. --set base.optimizer.learning_rate={learning_rate / 10:.3g}, "
            "or check the data and the loss")


# --- what a recipe is, in words (the report, the confirm stage's candidate names) ----------------------------

def methods_of(recipe: dict[str, Any]) -> tuple[str, ...]:
    """The speed-up methods a recipe switches on: boost algorithms MindSpore applies, amp level, loss scale."""
    try:
        active = parse_boost_config(recipe.get("boost_config_dict") or {}, recipe.get("boost_level") or "O0").effective()
        methods = list(active.active)
    except BoosttuneError:
        methods = []
    amp = recipe.get("amp_level") or "O0"
    if amp != "O0":
        methods.append(f"amp {amp}")
    kind = (recipe.get("loss_scale") or {}).get("kind") or "none"
    if kind not in ("none", "group"):  # group is loss_scale_group, a boost algorithm
        methods.append(f"loss_scale {kind}")
    return tuple(methods)


def kin_of(recipe: dict[str, Any]) -> tuple[Any, ...]:
    """What a recipe is apart from its continuous knobs: the methods it switches on (a loss scale at amp O0 left
    out: in fp32 it scales the loss and unscales the gradients, the same arithmetic up to rounding), each active
    boost algorithm's discrete settings (GradientFreeze's param_groups and freeze_type, accumulation's steps, ...),
    the optimizer and its schedule. Two recipes of one kin differ only by numbers like freeze_p or the learning rate,
    which a search's one seed each cannot tell apart (:func:`boosttune.stats.handoff.choose`)."""
    amp = recipe.get("amp_level") or "O0"
    methods = tuple(sorted(m for m in methods_of(recipe) if amp != "O0" or not m.startswith("loss_scale")))
    try:
        settings = parse_boost_config(recipe.get("boost_config_dict") or {},
                                      recipe.get("boost_level") or "O0").effective().settings
    except BoosttuneError:
        settings = {}
    steps = {"total_steps"}  # the job's length, not a knob
    discrete = tuple(sorted((f"{name}.{key}", value) for name, values in settings.items()
                            for key, value in dict(values).items()
                            if key not in steps and isinstance(value, (bool, int, str)) and not isinstance(value, float)))
    optimizer = recipe.get("optimizer") or {}
    return methods, discrete, optimizer.get("name"), optimizer.get("lr_schedule")


def short_name(recipe: dict[str, Any]) -> str:
    """A recipe's name for labels and tables: the methods it switches on, GradientFreeze with its freeze_p and
    gradient accumulation with its steps ("grad_freeze p=0.42 + less_bn"); "no boost" for plain training."""
    try:
        settings = parse_boost_config(recipe.get("boost_config_dict") or {},
                                      recipe.get("boost_level") or "O0").effective().settings
    except BoosttuneError:
        settings = {}
    labels = {a.name: a.label for a in algorithms.registry() if a.label is not None}
    parts = []
    for method in methods_of(recipe):
        label = labels.get(method)
        parts.append((label(settings.get(method) or {}) if label is not None else None) or method)
    return " + ".join(parts) or "no boost"


