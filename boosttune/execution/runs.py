"""Runs: what one training run is (a :class:`RunSpec`), what it left (a :class:`RunRecord`), where it is kept.

Every kind of run goes down the same path: the O0 baseline, the search's trials, the confirm stage's
paired seeds and ``boosttune bench``'s matrix. A spec says which recipe, with which seed, in which
role; :func:`boosttune.execution.ray_train.train_run` trains it on Ray and returns a record; a
:class:`RecordStore` keeps one JSON file per record, written atomically as the run ends, so an
interrupted experiment resumes without losing or retraining a finished run. Pure: no Ray, no MindSpore.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Iterator, Literal

from boosttune.config.boost import parse_boost_config
from boosttune.errors import BoosttuneError, DataError
from boosttune.files import write_json
from boosttune.tables.states import FINISHED, RunStatus

__all__ = ["CURVE_KEYS", "RecordStore", "RunRecord", "RunSpec", "Role"]

Role = Literal["baseline", "search", "confirm", "bench"]
# Per epoch, kept in every record: the learning curve gives the time to any target accuracy afterwards
# (train_s is cumulative training time, first-step compile included, evaluation excluded; steps the cumulative
# training steps of a rank, so a job's length reads in steps).
CURVE_KEYS = ("epoch", "steps", "train_s", "objective_value", "val_loss", "train_loss", "throughput_sps", "ended_unix")


@dataclass(frozen=True)
class RunSpec:
    """One run to train: a validated recipe document, its role, and the names it is reported under.

    ``label`` names the recipe across runs (a preset, a search trial's id, a bench recipe's name);
    ``round`` is the paired round of a confirm or bench run (every recipe of a round shares its seed).
    """

    run_id: str
    role: Role
    recipe: dict[str, Any]
    label: str | None = None
    preset: str | None = None
    key: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    round: int | None = None

    @property
    def seed(self) -> int:
        return int(self.recipe.get("seed", 0))


def _given_boost_config(recipe: dict[str, Any]) -> dict[str, Any]:
    """The canonical boost_config_dict a run's recipe gives ``mindspore.Model`` ({} where the recipe does not
    parse: the run's own failure says why)."""
    try:
        return parse_boost_config(recipe.get("boost_config_dict") or {},
                                  recipe.get("boost_level") or "O0").to_boost_config_dict()
    except BoosttuneError:  # a record is still written for a recipe that failed to parse
        return {}


@dataclass(frozen=True)
class RunRecord:
    """What a run left: its status and figures, what MindSpore built, and the learning curve.

    Its JSON names ``run_id`` ``trial_id``, as the results table's column does (the documented schema).
    """

    run_id: str
    role: Role
    status: str
    recipe: dict[str, Any]
    reason: str | None = None
    label: str | None = None
    preset: str | None = None
    key: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    round: int | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    curve: list[dict[str, Any]] = field(default_factory=list)  # per epoch: train_s (cumulative), objective_value, ...
    boost_config_dict: dict[str, Any] = field(default_factory=dict)
    observed_boost: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    started: float | None = None
    duplicate_of: str | None = None
    rung: int | None = None  # the epoch a scheduler stopped it at (status "stopped")

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def seed(self) -> int:
        return int(self.recipe.get("seed", 0))

    @classmethod
    def _from_spec(cls, spec: RunSpec, **values: Any) -> RunRecord:
        # a run that did not reach its end (stopped at a rung, failed) has no summary's boost_config_dict: the one
        # its recipe gives Model, canonical, so the results table names its boost algorithms all the same
        if not values.get("boost_config_dict"):
            values["boost_config_dict"] = _given_boost_config(spec.recipe)
        return cls(run_id=spec.run_id, role=spec.role, recipe=spec.recipe, label=spec.label, preset=spec.preset,
                   key=spec.key, params=dict(spec.params), round=spec.round, **values)

    @classmethod
    def from_summary(cls, spec: RunSpec, summary: dict[str, Any], started: float | None = None) -> RunRecord:
        """A record from rank 0's end-of-training summary (see :mod:`boosttune.execution.ray_train`)."""
        if summary.get("status") == RunStatus.FAILED:
            return cls.failed(spec, summary.get("reason") or "failed", started)
        return cls._from_spec(
            spec, status=summary["status"], reason=summary.get("reason") or None,
            metrics={k: v for k, v in summary.items() if not isinstance(v, (dict, list))},
            curve=list(summary.get("curve") or []), boost_config_dict=summary.get("boost_config_dict") or {},
            observed_boost=summary.get("observed_boost") or {}, environment=summary.get("environment") or {},
            started=started)

    @classmethod
    def failed(cls, spec: RunSpec, reason: str, started: float | None = None) -> RunRecord:
        return cls._from_spec(spec, status=RunStatus.FAILED, reason=reason, started=started)

    @classmethod
    def stopped_early(cls, spec: RunSpec, *, rung: int, reason: str, metrics: dict[str, Any],
                      curve: list[dict[str, Any]], started: float | None = None) -> RunRecord:
        """A run a scheduler stopped at epoch ``rung``: its figures so far, not comparable with finished runs."""
        return cls._from_spec(spec, status=RunStatus.STOPPED, reason=reason, metrics=dict(metrics), curve=list(curve),
                              rung=rung, started=started)

    def duplicate(self, spec: RunSpec) -> RunRecord:
        """``spec`` answered by this record's figures: it trains exactly like this run."""
        return replace(self, run_id=spec.run_id, role=spec.role, label=spec.label, preset=spec.preset,
                       params=dict(spec.params), round=spec.round, status=RunStatus.DUPLICATE,
                       reason=f"trains like {self.run_id}", duplicate_of=self.run_id)

    def to_dict(self) -> dict[str, Any]:
        document = asdict(self)
        return {"trial_id": document.pop("run_id"), **document}

    @classmethod
    def from_dict(cls, document: dict[str, Any], source: str = "record") -> RunRecord:
        if isinstance(document, dict) and "run_id" in document and "trial_id" not in document:
            document = {"trial_id": document["run_id"], **document}  # the Python name, written by hand
        if not isinstance(document, dict) or "trial_id" not in document or "status" not in document:
            raise DataError(f"{source}: not a boosttune run record (needs trial_id and status)")
        known = {f.name for f in fields(cls)} - {"run_id"}
        values = {k: v for k, v in document.items() if k in known and v is not None}
        values["run_id"] = document["trial_id"]
        values.setdefault("role", "baseline" if document["trial_id"] == "baseline" else "search")
        values.setdefault("recipe", {})
        return cls(**values)


class RecordStore:
    """One JSON file per run record in ``folder``; written atomically, read back whole."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def path(self, run_id: str) -> Path:
        return self.folder / f"{run_id}.json"

    def get(self, run_id: str) -> RunRecord | None:
        path = self.path(run_id)
        return self._read(path) if path.is_file() else None

    def put(self, record: RunRecord, name: str | None = None) -> Path:
        """Keep ``record`` under its run id, or under ``name`` (e.g. an equivalence key)."""
        return write_json(self.path(name or record.run_id), record.to_dict())

    def __iter__(self) -> Iterator[RunRecord]:
        if self.folder.is_dir():
            for path in sorted(self.folder.glob("*.json")):
                yield self._read(path)

    def __len__(self) -> int:
        return len(list(self.folder.glob("*.json"))) if self.folder.is_dir() else 0

    @staticmethod
    def _read(path: Path) -> RunRecord:
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: cannot read the run record: {e}") from None
        return RunRecord.from_dict(document, str(path))
