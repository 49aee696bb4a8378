"""The confirm table: one row per paired run of the confirm stage or a bench (the results schema plus ``recipe`` and
``round``), its builder from run records, and its reader and writer (``confirm.parquet``/``.csv``).

The ratios to each round's baseline are statistics (:func:`boosttune.stats.confirmed.with_job_figures`); this module
keeps the runs as they ended. Pure: pandas, no Ray, no MindSpore.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from boosttune.errors import DataError
from boosttune.files import write_atomically
from boosttune.tables.results import build_results_table, check_cells, from_accuracy_schema, schema_dtypes, \
    with_later_columns

__all__ = ["BASELINE_NAME", "CONFIRM_NAME", "confirm_rows", "read_confirm_runs", "write_confirm_runs"]

BASELINE_NAME = "O0"  # the baseline's recipe name in every confirm and bench table
CONFIRM_NAME = "confirm"  # confirm.parquet and confirm.csv
_NEEDED = ("recipe", "round", "status", "throughput_sps", "objective_value", "curve_json")


def confirm_rows(records: Iterable[Any], *, ray_version: str = "") -> pd.DataFrame:
    """One row per run (a :class:`~boosttune.execution.runs.RunRecord`, or its ``to_dict()``): the results schema,
    with ``recipe`` (the run's label) and ``round`` (its paired round) after ``trial_id``."""
    documents: list[Mapping[str, Any]] = [r.to_dict() if hasattr(r, "to_dict") else dict(r) for r in records]
    table = build_results_table(documents, ray_version=ray_version)
    table.insert(1, "recipe", pd.array([d.get("label") or d["trial_id"] for d in documents], dtype="string"))
    table.insert(2, "round", pd.array([d.get("round") for d in documents], dtype="Int64"))
    return table


def write_confirm_runs(table: pd.DataFrame, folder: str | Path) -> None:
    """``confirm.parquet`` and ``confirm.csv`` in ``folder``, each written atomically."""
    folder = Path(folder)
    write_atomically(folder / f"{CONFIRM_NAME}.parquet", lambda temp: table.to_parquet(temp, index=False))
    write_atomically(folder / f"{CONFIRM_NAME}.csv", lambda temp: table.to_csv(temp, index=False))


def read_confirm_runs(folder: str | Path) -> pd.DataFrame | None:
    """``folder``'s confirm runs, checked cell by cell and brought to this version's columns; None when it has none.

    Raises:
        DataError: the file cannot be read, or it is not a boosttune confirm table.
    """
    path = Path(folder) / f"{CONFIRM_NAME}.parquet"
    if not path.is_file():
        return None
    try:
        runs = pd.read_parquet(path)
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: cannot read the confirm runs: {str(e).splitlines()[0]}") from e
    runs = from_accuracy_schema(runs)
    missing = [c for c in _NEEDED if c not in runs]
    if missing:
        raise DataError(f"{path}: missing column {missing[0]!r}; not a boosttune confirm table")
    check_cells(runs, str(path), {**schema_dtypes(), "round": "Int64", "job_s": "float64"})
    return with_later_columns(runs)
