"""The objective a run is judged on: the builder's metric, its direction and its units.

Everything that compares a recipe with the baseline goes through :class:`Objective`, so a lower-is-better metric is
tuned as well as accuracy: the **value** is the metric as MindSpore computes it (``objective_value``); the **gain**
is the difference to the baseline, positive is better, in points (x100) for a fraction metric such as accuracy and
the metric's own units otherwise (``objective_gain``); a **tolerance** (``max_drop``, ``early_stop_margin``,
``confirm_screen``) is a gain, and left unset is its default in points for a fraction and that number in percent of
the baseline's value otherwise (0.5 -> 0.5% of the baseline's MAE). Pure: no Ray, no MindSpore.

Why: docs/design/builder.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping

__all__ = ["ACCURACY", "FRACTION_METRICS", "Objective"]

# MindSpore's metrics whose value is a fraction in [0, 1], judged in points: mindspore.train.<class>.
FRACTION_METRICS = frozenset({"Accuracy", "Top1CategoricalAccuracy", "Top5CategoricalAccuracy",
                              "TopKCategoricalAccuracy", "Precision", "Recall", "F1", "Fbeta", "Dice"})


@dataclass(frozen=True)
class Objective:
    """The metric runs are judged on.

    Attributes:
        name: the builder's name for it (a key of ``TrialParts.metrics``), e.g. "acc", "mae".
        higher_is_better: its direction.
        fraction: True for a fraction in [0, 1] (accuracy, precision, ...): gains and tolerances in points.
    """

    name: str = "acc"
    higher_is_better: bool = True
    fraction: bool = True

    @classmethod
    def of(cls, value: Any) -> Objective:
        """An Objective from itself, its dict (``to_dict``), a name (higher is better, not a fraction), or None
        (accuracy: what boosttune judged before objectives were the user's)."""
        if isinstance(value, Objective):
            return value
        if value is None:
            return ACCURACY
        if isinstance(value, str):
            return ACCURACY if value == "acc" else cls(value, True, False)
        if isinstance(value, Mapping):
            return cls(str(value.get("name", "acc")), bool(value.get("higher_is_better", True)),
                       bool(value.get("fraction", True)))
        raise TypeError(f"objective: {value!r} is not an objective")

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Objective | None:
        """The objective a run's metrics name (``flat()``'s keys), or None when they name none."""
        name = metrics.get("objective")
        if isinstance(name, Mapping):
            return cls.of(name)
        if not isinstance(name, str) or not name:
            return None
        higher, fraction = metrics.get("objective_higher_is_better"), metrics.get("objective_fraction")
        return cls(name, True if higher is None else bool(higher), name == "acc" if fraction is None else bool(fraction))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def flat(self) -> dict[str, Any]:
        """The keys a run's metrics carry it in (scalars: Ray Train and Tune keep only those)."""
        return {"objective": self.name, "objective_higher_is_better": self.higher_is_better,
                "objective_fraction": self.fraction}

    @property
    def scale(self) -> float:
        """Value units -> gain units: 100 (points) for a fraction, 1 otherwise."""
        return 100.0 if self.fraction else 1.0

    @property
    def unit(self) -> str:
        """The gain's unit as printed: "pt" for a fraction, else the metric's name."""
        return "pt" if self.fraction else self.name

    @property
    def noun(self) -> str:
        """What texts call it: "accuracy" for the built-in models' objective, else its label ("val_mae")."""
        return "accuracy" if self == ACCURACY else self.label

    @property
    def gain_words(self) -> str:
        """What a gain is counted in, for sentences: "accuracy points", "points of val_f1", "val_mae"."""
        if self == ACCURACY:
            return "accuracy points"
        return f"points of {self.label}" if self.fraction else self.label

    @property
    def gain_spec(self) -> str:
        """The format of a gain: two decimals of a point, or three significant digits of another unit."""
        return "+.2f" if self.fraction else "+.3g"

    @property
    def label(self) -> str:
        """The held-out value's name as printed: "val_acc", "val_mae"."""
        return f"val_{self.name}"

    @property
    def sense(self) -> str:
        """Ray Tune's and Optuna's direction: "max" or "min"."""
        return "max" if self.higher_is_better else "min"

    @property
    def better(self) -> str:
        """"higher" or "lower": which way is better, for texts."""
        return "higher" if self.higher_is_better else "lower"

    @property
    def worst(self) -> float:
        """A value no run can be worse than (for a diverged run, where a maximiser needs a number)."""
        if self.fraction:
            return 0.0 if self.higher_is_better else 1.0
        return -1e30 if self.higher_is_better else 1e30

    @property
    def sign(self) -> float:
        return 1.0 if self.higher_is_better else -1.0

    def gain(self, value: Any, base: Any) -> float:
        """How much better ``value`` is than ``base``, in gain units (positive: better)."""
        return self.sign * self.scale * (float(value) - float(base))

    def oriented(self, value: Any) -> float:
        """``value`` on a higher-is-better scale (for Pareto fronts and maximisers), in gain units."""
        return self.sign * self.scale * float(value)

    def shifted(self, base: Any, gain: float) -> float:
        """The value that is ``gain`` better than ``base`` (e.g. the floor ``base`` minus the allowed drop)."""
        return float(base) + self.sign * gain / self.scale

    def reached(self, value: Any, target: Any) -> bool:
        """``value`` is at least as good as ``target``."""
        return self.gain(value, target) >= 0.0

    def tolerance(self, value: float | None, default: float, baseline: Any = None) -> float:
        """A tolerance in gain units: ``value`` when given; else ``default`` points for a fraction, or ``default``
        percent of the baseline's value otherwise (0 when the baseline is unknown)."""
        if value is not None:
            return float(value)
        if self.fraction:
            return float(default)
        try:
            base = abs(float(baseline))
        except (TypeError, ValueError):
            return 0.0
        return default / 100.0 * base if math.isfinite(base) else 0.0

    def format_value(self, value: Any) -> str:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return "n/a"
        return f"{number:.4f}" if self.fraction else f"{number:.4g}"

    def format_gain(self, gain: Any, spec: str = "+.2f") -> str:
        """A gain with its unit: "+0.40 pt", "-0.0031 mae"."""
        try:
            number = float(gain)
        except (TypeError, ValueError):
            return "n/a"
        if not self.fraction and spec in ("+.2f", "+.1f"):
            spec = "+.3g"
        return f"{format(number, spec)} {self.unit}"

    def describe(self) -> str:
        """One phrase: "val_acc (higher is better, points)", "val_mae (lower is better)"."""
        return f"{self.label} ({self.better} is better{', in points' if self.fraction else ''})"


ACCURACY = Objective()
