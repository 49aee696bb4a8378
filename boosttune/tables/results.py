"""The results table: one row per trial, with a declared schema; the only input of report and export.

Speed is a ratio to the O0 baseline trained in the same experiment (``speedup_vs_baseline``) and the
objective (the builder's metric: accuracy for the built-in models) a difference to it, signed so that
positive is better, in points for a fraction and in the metric's units otherwise (``objective_gain``; see
:mod:`boosttune.objective`). The objective's name and direction are columns of every row. Pure: no Ray,
no MindSpore.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple

import numpy as np
import pandas as pd

from boosttune.errors import DataError
from boosttune.files import json_safe, write_atomically
from boosttune.objective import ACCURACY, Objective
from boosttune.tables.states import FINISHED, STATUSES

__all__ = [
    "BASELINE_PRESET",
    "PARAM_PREFIX",
    "SCHEMA",
    "Column",
    "baseline_row",
    "Reference",
    "build_results_table",
    "canonical_json",
    "check_cells",
    "finite",
    "fmt",
    "from_accuracy_schema",
    "load_results",
    "table_objective",
    "save_results",
    "schema_columns",
    "schema_dtypes",
    "search_reference",
    "with_later_columns",
]

BASELINE_PRESET = "O0"
# The results schema's version, written in every row. A new column is a new version; a table of an older version
# reads with the columns it lacks at their defaults (_ADDED_IN, _DEFAULTS):
#   1  written before the schema had a version: it may lack label, started_at, curve_json and rung
#   2  label, started_at, curve_json, rung and schema_version in every row
#   3  the builder's objective (objective, objective_higher_is_better, objective_fraction; val_acc ->
#      objective_value, val_acc_delta_pt -> objective_gain): versions 1 and 2 read as accuracy
#   4  graph_cached: versions 1 to 3 read as False (no run trained on a cached graph before it)
SCHEMA_VERSION = 4
PARAM_PREFIX = "param."
PARQUET_NAME, CSV_NAME = "results.parquet", "results.csv"


class Column(NamedTuple):
    name: str
    dtype: str  # a pandas dtype name; "string", "boolean" and "Int64" allow missing values
    description: str


SCHEMA: tuple[Column, ...] = (
    Column("trial_id", "string", "trial id, unique within the experiment"),
    Column("label", "string", "the recipe's name: a preset, a named start point (e.g. 'grad_freeze p=0.5') or the trial id"),
    Column("status", "string", f"one of {', '.join(STATUSES)}"),
    Column("reason", "string", "why the trial stopped or failed; missing when it completed"),
    Column("preset", "string", "O0 / O1-equivalent / O2-equivalent for the preset trials; missing for searched ones"),
    Column("is_baseline", "bool", "the first finished O0 trial (the baseline stage's run); speed-ups and accuracy "
                                  "deltas are relative to it pooled with any other O0 run of the search"),
    Column("boost_level", "string", "boost_level given to mindspore.Model: O0, O1 or O2"),
    Column("amp_level", "string", "mixed-precision level: O0, O1, O2, O3 or auto"),
    Column("loss_scale_kind", "string", "loss-scale manager: none, fixed, dynamic or group"),
    Column("optimizer_name", "string", "optimizer of the recipe (DimReduce trains with SGD(lr=1) instead)"),
    Column("learning_rate", "float64", "base learning rate of the recipe"),
    Column("batch_size", "Int64", "per-rank batch size, samples"),
    Column("epochs", "Int64", "epochs of the recipe"),
    Column("seed", "Int64", "random seed of the recipe"),
    Column("world_size", "Int64", "number of ranks that trained the trial"),
    Column("model", "string", "network name"),
    Column("dataset", "string", "data set name"),
    Column("throughput_sps", "float64", "steady-state training throughput, samples per second (warm-up excluded)"),
    Column("speedup_vs_baseline", "float64", "throughput_sps / O0's: in a search, its own O0 runs at the run's "
                                                "start (read off the line between the first and the closing one; "
                                                "the baseline stage's where it trained none); in a confirm table, "
                                                "the same round's O0 run"),
    Column("objective", "string", "the metric runs are judged on, the builder's name for it ('acc' for the built-in models)"),
    Column("objective_higher_is_better", "boolean", "the objective's direction"),
    Column("objective_fraction", "boolean", "the objective is a fraction in [0, 1] (accuracy, ...): gains in points"),
    Column("objective_value", "float64", "final held-out value of the objective, in its own units"),
    Column("objective_gain", "float64", "how much better than the baseline's objective_value (positive: better), "
                                        "in points (x100) for a fraction, else in the objective's units"),
    Column("val_loss", "float64", "final validation loss"),
    Column("train_loss", "float64", "final training loss"),
    Column("compile_s", "float64", "graph compile time, seconds (reported apart from training)"),
    Column("graph_cached", "boolean", "the run trained on a graph an earlier run of its recipe compiled in the same warm "
                                      "worker (compile_s is then the first step's time alone)"),
    Column("wall_s", "float64", "trial wall-clock time, seconds"),
    Column("time_to_target_s", "float64", "training time until the objective reached the recipe's target, seconds"),
    Column("peak_rss_mb", "float64", "peak resident memory, MiB"),
    Column("steady_steps", "Int64", "training steps the throughput was measured on"),
    Column("stage1_s", "float64", "DimReduce stage-1 training time, seconds"),
    Column("started_at", "float64", "when the run started, Unix time, seconds"),
    Column("curve_json", "string", "per epoch: epoch, train_s (cumulative training time, compile included), objective_value, "
                                   "val_loss, train_loss, throughput_sps; JSON list"),
    Column("rung", "Int64", "for a trial the multi-objective scheduler stopped: the epoch (rung) it reached"),
    Column("device_target", "string", "CPU, GPU or Ascend"),
    Column("mindspore_version", "string", "MindSpore version that trained the trial"),
    Column("ray_version", "string", "Ray version that ran the experiment"),
    Column("boosttune_version", "string", "boosttune version that ran the experiment"),
    Column("onednn_isa", "string", "ONEDNN_MAX_CPU_ISA in force ('default': oneDNN's choice)"),
    Column("schema_version", "Int64", "the version of this schema the table was written with"),
    Column("boost_config_dict_json", "string", "canonical boost_config_dict given to mindspore.Model, JSON"),
    Column("recipe_json", "string", "the full trial recipe, JSON"),
    Column("observed_boost_json", "string", "what MindSpore actually built, read back from the Model, JSON"),
)

_DTYPES = {column.name: column.dtype for column in SCHEMA}
# The schema version that added a column (the objective columns of version 3 are renamed ones, see
# from_accuracy_schema); a table of an earlier version may lack it. It then reads as missing, or as its default.
_ADDED_IN = {"label": 2, "started_at": 2, "curve_json": 2, "rung": 2, "schema_version": 2, "graph_cached": 4}
_DEFAULTS = {"graph_cached": False}


def schema_columns() -> list[str]:
    return [column.name for column in SCHEMA]


def schema_dtypes() -> dict[str, str]:
    """Each schema column's dtype, by name."""
    return dict(_DTYPES)


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, NaN and infinities as null: equal values give equal strings."""
    return json.dumps(json_safe(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def build_results_table(records: Iterable[Mapping[str, Any]], *, ray_version: str) -> pd.DataFrame:
    """One row per trial record, keyed by ``trial_id``, with ratios to the finished O0 baseline.

    Raises:
        DataError: a record is not a mapping, lacks a trial_id, repeats one, or has an unknown status.
    """
    rows = [_row(_checked(index, record), ray_version) for index, record in enumerate(records)]
    ids = [row["trial_id"] for row in rows]
    duplicates = sorted({tid for tid in ids if ids.count(tid) > 1})
    if duplicates:
        raise DataError(f"records: trial_id {duplicates[0]!r} appears more than once; trial ids must be unique")
    params = _param_columns(rows)
    table = pd.DataFrame([{k: v for k, v in row.items() if not k.startswith(PARAM_PREFIX)} for row in rows],
                         columns=schema_columns())
    table = _coerce(pd.concat([table, params], axis=1))
    return _with_baseline_ratios(table)


def _checked(index: int, record: Any) -> Mapping[str, Any]:
    if not isinstance(record, Mapping):
        raise DataError(f"records[{index}]: expected a trial record (mapping), got {type(record).__name__}")
    trial_id = record.get("trial_id")
    if not isinstance(trial_id, str) or not trial_id:
        raise DataError(f"records[{index}].trial_id: {trial_id!r} is invalid; expected a non-empty string")
    if record.get("status") not in STATUSES:
        raise DataError(f"records[{index}].status: {record.get('status')!r} is invalid; allowed: {', '.join(STATUSES)}")
    return record


def _row(record: Mapping[str, Any], ray_version: str) -> dict[str, Any]:
    recipe = record.get("recipe") or {}
    optimizer, loss_scale, data = (recipe.get(key) or {} for key in ("optimizer", "loss_scale", "data"))
    metrics = record.get("metrics") or {}
    environment = record.get("environment") or {}
    row: dict[str, Any] = {
        "trial_id": record["trial_id"], "schema_version": SCHEMA_VERSION,
        "label": record.get("label") or record.get("preset") or record["trial_id"],
        "status": record["status"], "reason": record.get("reason"), "started_at": record.get("started"),
        "curve_json": canonical_json(record.get("curve") or []),
        "rung": record.get("rung"),
        "preset": record.get("preset"), "is_baseline": False,
        "boost_level": recipe.get("boost_level"), "amp_level": recipe.get("amp_level"),
        "loss_scale_kind": loss_scale.get("kind"), "optimizer_name": optimizer.get("name"),
        "learning_rate": optimizer.get("learning_rate"), "batch_size": recipe.get("batch_size"),
        "epochs": recipe.get("epochs"), "seed": recipe.get("seed"), "world_size": metrics.get("world_size"),
        "model": recipe.get("model"), "dataset": data.get("name"),
        "device_target": environment.get("device_target", recipe.get("device_target")),
        "mindspore_version": environment.get("mindspore_version"), "ray_version": ray_version,
        "boosttune_version": environment.get("boosttune_version"),
        "onednn_isa": (environment.get("runtime_env") or {}).get("ONEDNN_MAX_CPU_ISA"),
        "boost_config_dict_json": canonical_json(record.get("boost_config_dict") or {}),
        "recipe_json": canonical_json(recipe),
        "observed_boost_json": canonical_json(record.get("observed_boost") or {}),
    }
    objective = Objective.from_metrics(metrics)
    if objective is not None:  # a run that failed before its parts were built has none
        row.update(objective=objective.name, objective_higher_is_better=objective.higher_is_better,
                   objective_fraction=objective.fraction)
    for name in ("throughput_sps", "objective_value", "val_loss", "train_loss", "compile_s", "graph_cached", "wall_s",
                 "time_to_target_s", "peak_rss_mb", "steady_steps", "stage1_s"):
        row[name] = metrics.get(name)
    for key, value in _flatten(record.get("params") or {}).items():
        row[PARAM_PREFIX + key] = value
    return row


def _flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = canonical_json(value) if isinstance(value, (list, tuple)) else value
    return flat


def _param_columns(rows: list[dict[str, Any]]) -> pd.DataFrame:
    names = sorted({key for row in rows for key in row if key.startswith(PARAM_PREFIX)})
    columns = {name: [row.get(name) for row in rows] for name in names}
    for name, values in columns.items():
        kinds = {_kind(v) for v in values if v is not None}
        if len(kinds) > 1:  # one type per column, or parquet cannot store it
            columns[name] = [None if v is None else json.dumps(v) for v in values]
    return pd.DataFrame(columns, index=range(len(rows)))


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    return "number" if isinstance(value, (int, float)) else type(value).__name__


def _coerce(table: pd.DataFrame) -> pd.DataFrame:
    table = table.copy()
    for name, dtype in _DTYPES.items():
        column = table[name]
        if dtype in ("float64", "Int64"):
            column = pd.to_numeric(column.astype(object).where(column.notna(), np.nan), errors="coerce")
        table[name] = column.astype(pd.api.types.pandas_dtype(dtype))
    return table


def baseline_row(table: pd.DataFrame) -> pd.Series | None:
    """The finished trial of preset O0 that started first (the baseline stage's, where the search trained O0 again;
    in table order when no start time says), or None."""
    finished = _o0_runs(table)
    return None if finished.empty else finished.iloc[0]


def _o0_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The finished O0 runs, the first started first."""
    finished = table[(table["preset"] == BASELINE_PRESET).fillna(False) & table["status"].isin(FINISHED)]
    if "started_at" in finished and len(finished) > 1:
        finished = finished.sort_values("started_at", kind="stable", na_position="last")
    return finished


@dataclass(frozen=True)
class Reference:
    """What a table's ratios are taken against: throughput from O0's runs in the search's own condition, objective
    from all its finished O0 runs (mean).

    Where the search timed O0 more than once at known times (at its start and, closing it, at its end), a run's
    reference is O0 at that run's start, read off the line through O0's runs in log throughput (flat before the first
    and after the last): the machine's speed drifts over a search (README runs, 2026-12-07: O0 lost 15% over a confirm
    stage's five rounds, and the search's readings fell from 0.91x to 0.82x of their confirmed figures from its first
    trials to its last), and a recipe timed late against O0 timed early read that drift as its own. Bracketing the
    trials with a reference measured before and after them is how drift is taken out of a measurement series
    (calibration standards run at both ends); ``throughput_sps`` (their geometric mean) remains the search's figure."""

    throughput_sps: float
    objective_value: float
    runs: tuple[float, ...]  # each O0 run's throughput, the first started first (the baseline stage's included)
    speed_runs: tuple[float, ...] = ()  # the runs ``throughput_sps`` pools; () read as ``runs``
    speed_times: tuple[float, ...] = ()  # when each of ``speed_runs`` started (Unix seconds); () where unknown

    @property
    def pooled(self) -> tuple[float, ...]:
        return self.speed_runs or self.runs

    @property
    def bracketed(self) -> bool:
        """Whether the reference moves with time: O0 timed at two times or more."""
        return len(self.speed_times) >= 2 and len(set(self.speed_times)) >= 2

    def at(self, started: Any) -> float:
        """O0's throughput for a run that started at ``started`` (Unix seconds): interpolated between O0's runs in
        log throughput where they bracket the search, else ``throughput_sps``."""
        if not self.bracketed or started is None or not np.isfinite(started):
            return self.throughput_sps
        order = np.argsort(self.speed_times)
        times = np.asarray(self.speed_times, dtype=float)[order]
        logs = np.log(np.asarray(self.speed_runs, dtype=float))[order]
        return float(np.exp(np.interp(float(started), times, logs)))


def search_reference(table: pd.DataFrame) -> Reference | None:
    """The O0 reference of a search's table (:class:`Reference`); None without a finished O0 run. A duplicate is
    not a run: answered from another record, it repeats its figures.

    Speed is a ratio to O0 timed in the same stage: where the search trained O0 itself (``remeasure_baseline``), its
    own O0 runs alone (at its start and at its end), not the baseline stage's, which trained apart from the search's
    trials (seen 2026-12-06: the baseline stage's O0 at 1,878 samples/s, the search's at 1,684; GradientFreeze read
    1.12x against the first, 1.25x against the second, 1.27x in the confirm stage). The objective pools every O0
    run: accuracy does not move with the stage."""
    finished = _o0_runs(table)
    if finished.empty:
        return None
    speeds = _speeds(finished)
    own_rows = finished.iloc[1:]  # the first started is the baseline stage's (baseline_row)
    own = _speeds(own_rows)
    pooled_runs = own or speeds
    values = pd.to_numeric(finished["objective_value"], errors="coerce").dropna()
    # one run is its own figure exactly (exp(log(x)) is not always x)
    pooled = (pooled_runs[0] if len(pooled_runs) == 1 else float(np.exp(np.mean(np.log(pooled_runs))))
              if pooled_runs else math.nan)
    times: tuple[float, ...] = ()
    if own and "started_at" in own_rows:
        rows = own_rows[_speed_mask(own_rows)]
        started = pd.to_numeric(rows["started_at"], errors="coerce")
        if started.notna().all():
            times = tuple(float(t) for t in started)
    return Reference(pooled, float(values.mean()) if len(values) else math.nan, tuple(speeds), tuple(pooled_runs),
                     times)


def _speed_mask(runs: pd.DataFrame) -> pd.Series:
    speeds = pd.to_numeric(runs["throughput_sps"], errors="coerce")
    return np.isfinite(speeds) & (speeds > 0)


def _speeds(runs: pd.DataFrame) -> list[float]:
    speeds = pd.to_numeric(runs["throughput_sps"], errors="coerce")
    return [float(v) for v in speeds[_speed_mask(runs)]]


def _with_baseline_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """Speed-ups and objective gains against the O0 reference (:func:`search_reference`: each run's against O0 at its
    start where the search bracketed its trials with O0 runs); ``is_baseline`` on the first finished O0 run, the one
    the experiment trained first."""
    base = baseline_row(table)
    table["speedup_vs_baseline"] = np.nan
    table["objective_gain"] = np.nan
    if base is None:
        return table
    table["is_baseline"] = (table["trial_id"] == base["trial_id"]).astype(bool)
    reference = search_reference(table)
    base_sps, base_value = reference.throughput_sps, reference.objective_value
    if pd.notna(base_sps) and base_sps > 0:
        if reference.bracketed and "started_at" in table:
            at = pd.to_numeric(table["started_at"], errors="coerce").map(reference.at)
            table["speedup_vs_baseline"] = table["throughput_sps"] / at
        else:
            table["speedup_vs_baseline"] = table["throughput_sps"] / base_sps
    if pd.notna(base_value):
        objective = table_objective(table)
        table["objective_gain"] = objective.sign * objective.scale * (table["objective_value"] - base_value)
    return table


def table_objective(table: pd.DataFrame) -> Objective:
    """The objective a table's runs were judged on (accuracy for a table without one)."""
    if "objective" not in table.columns:
        return ACCURACY
    named = table[table["objective"].notna()]
    if named.empty:
        return ACCURACY
    row = named.iloc[0]
    return Objective(str(row["objective"]), bool(row["objective_higher_is_better"]), bool(row["objective_fraction"]))


def save_results(df: pd.DataFrame, folder: str | Path) -> tuple[Path, Path]:
    """Write ``results.parquet`` and ``results.csv`` into ``folder`` (created if needed)."""
    _check_schema(df, "results table")
    folder = Path(folder)
    parquet = write_atomically(folder / PARQUET_NAME, lambda temp: df.to_parquet(temp, index=False))
    csv = write_atomically(folder / CSV_NAME, lambda temp: df.to_csv(temp, index=False))
    return parquet, csv


def load_results(folder_or_file: str | Path) -> pd.DataFrame:
    """Read a results table (a folder holding results.parquet or results.csv, or either file).

    Raises:
        DataError: the file is missing or unreadable, or a schema column is missing.
    """
    path = _results_file(Path(folder_or_file))
    try:
        if path.suffix == ".parquet":
            table = pd.read_parquet(path)
        else:
            strings = {c.name: "string" for c in SCHEMA if c.dtype == "string"}
            table = pd.read_csv(path, dtype=strings, float_precision="round_trip")
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: cannot read the results table: {str(e).splitlines()[0]}") from e
    table = from_accuracy_schema(table)
    _check_schema(table, str(path), older_may_miss=True)  # before filling: a foreign table is named, not filled
    table = with_later_columns(table)
    check_cells(table, str(path), _DTYPES)
    _check_rows(table, str(path))
    return _coerce(table)


_TRUTH = {"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False}


def check_cells(table: pd.DataFrame, source: str, dtypes: Mapping[str, str]) -> None:
    """Every cell of a typed column parses as its type, or the table is refused, naming the file, the row (its
    trial id), the column and the value: a damaged cell is never read as missing.

    Raises:
        DataError: the first cell that does not parse.
    """
    ids = table["trial_id"].astype(str).tolist() if "trial_id" in table else [str(i) for i in range(len(table))]
    for name, dtype in dtypes.items():
        if name not in table.columns:
            continue
        column = table[name]
        if dtype in ("float64", "Int64"):
            parsed = pd.to_numeric(column.astype(object).where(column.notna(), np.nan), errors="coerce")
            bad = column.notna() & parsed.isna()
            if dtype == "Int64":
                bad |= parsed.notna() & (parsed != parsed.round())
            expected = "a number" if dtype == "float64" else "a whole number"
        elif dtype in ("bool", "boolean"):
            bad = column.notna() & ~column.map(lambda v: isinstance(v, (bool, np.bool_)) or str(v).strip().lower()
                                               in _TRUTH)
            expected = "True or False"
        else:
            continue
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"{source}: row {row + 1} (trial {ids[row]}), column {name!r}: {column.iloc[row]!r} is "
                            f"not {expected}")


def _check_rows(table: pd.DataFrame, source: str) -> None:
    """One row per trial id, a baseline row (finished or failed), and at most one baseline (per round, in a
    confirm or bench table's runs)."""
    ids = table["trial_id"].astype(str)
    if table.empty:
        raise DataError(f"{source}: the results table holds no trials, so no finished O0 baseline to compare with; "
                        "rerun the experiment")
    if not (table["preset"].astype("string") == BASELINE_PRESET).fillna(False).any():
        raise DataError(f"{source}: no O0 baseline row, so no finished O0 baseline to compare with; a results table "
                        "holds its baseline's row, finished or failed")
    repeated = ids[ids.duplicated()]
    if not repeated.empty:
        raise DataError(f"{source}: trial {repeated.iloc[0]!r} appears in more than one row; a results table has one "
                        "row per trial")
    if "is_baseline" in table.columns:
        flags = table["is_baseline"].map(lambda v: v is True or str(v).strip().lower() in ("true", "1", "1.0"))
        groups = table["round"].astype(str) if "round" in table.columns else pd.Series("", index=table.index)
        for group, marked in flags.groupby(groups):
            if int(marked.sum()) > 1:
                where = f" in round {group}" if group else ""
                raise DataError(f"{source}: {int(marked.sum())} rows are marked is_baseline{where} (trials "
                                f"{', '.join(ids[marked.index[marked.to_numpy()]].tolist())}); a results table has "
                                f"one baseline{' per round' if group else ''}")


def from_accuracy_schema(table: pd.DataFrame) -> pd.DataFrame:
    """A table of schema 1 or 2 (accuracy, in val_acc and val_acc_delta_pt) in the columns of schema 3."""
    if "val_acc" not in table.columns or "objective_value" in table.columns:
        return table
    table = table.rename(columns={"val_acc": "objective_value", "val_acc_delta_pt": "objective_gain"})
    table["objective"] = pd.array([ACCURACY.name] * len(table), dtype="string")
    table["objective_higher_is_better"] = pd.array([True] * len(table), dtype="boolean")
    table["objective_fraction"] = pd.array([True] * len(table), dtype="boolean")
    return table


def with_later_columns(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the columns added to the schema since it was written, at their defaults (else missing)."""
    missing = [name for name in _ADDED_IN if name not in table.columns]
    if not missing:
        return table
    table = table.copy()
    for name in missing:
        table[name] = pd.Series([_DEFAULTS.get(name)] * len(table), index=table.index,
                                dtype=object).astype(_DTYPES[name])
    if "schema_version" in missing:
        table["schema_version"] = pd.array([1] * len(table), dtype="Int64")  # written before the schema had one
    if "label" in missing:
        table["label"] = table["preset"].fillna(table["trial_id"]).astype("string")
    return table


def _results_file(path: Path) -> Path:
    if path.is_dir():
        for name in (PARQUET_NAME, CSV_NAME):
            if (path / name).is_file():
                return path / name
        raise DataError(f"{path}: no {PARQUET_NAME} or {CSV_NAME} in this folder; run an experiment first")
    if path.suffix not in (".parquet", ".csv"):
        raise DataError(f"{path}: expected a results folder, a .parquet or a .csv file")
    if not path.is_file():
        raise DataError(f"{path}: no such results file")
    return path


def _check_schema(table: pd.DataFrame, source: str, older_may_miss: bool = False) -> None:
    """Every column of the schema is there, but (``older_may_miss``) those added after the table's version."""
    version = _version_of(table)
    written_with = version or 1  # no version column: written before it, as version 1
    missing = [name for name in schema_columns() if name not in table.columns
               and not (older_may_miss and _ADDED_IN.get(name, 1) > written_with)]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise DataError(f"{source}: missing column {missing[0]!r}{more}; not a boosttune results table "
                        f"(it says schema version {version}; this boosttune reads versions 1 to {SCHEMA_VERSION})"
                        if version else
                        f"{source}: missing column {missing[0]!r}{more}; not a boosttune results table of any "
                        f"schema version (this boosttune reads versions 1 to {SCHEMA_VERSION})")
    if version and version > SCHEMA_VERSION:
        raise DataError(f"{source}: written with results schema version {version}, newer than this boosttune reads "
                        f"(1 to {SCHEMA_VERSION}); upgrade boosttune")


def _version_of(table: pd.DataFrame) -> int | None:
    if "schema_version" not in table.columns:
        return None
    versions = pd.to_numeric(table["schema_version"], errors="coerce").dropna()
    return int(versions.max()) if len(versions) else None


def fmt(value: Any, spec: str, missing: str = "n/a") -> str:
    """``value`` formatted with ``spec``, or ``missing`` when it is not a finite number."""
    return format(float(value), spec) if finite(value) else missing


def finite(value: Any) -> bool:
    """True for a real number that is not NaN or infinite."""
    try:
        return value is not None and value is not pd.NA and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
