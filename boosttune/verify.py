"""``boosttune verify RUN``: does a tuning run's answer hold at the team's planned job?

The answer and O0 train at the planned job itself (its length, and where given its full data) on fresh paired seeds,
through the bench's machinery (its start-up, warm workers, epochs in turn, ``--resume``); what the run's race predicted
for that length is put beside what the job measured (:mod:`boosttune.stats.holds`). A "keep O0" answer is verified
with the fastest recipe the race dropped. The folder is a bench folder with ``verify.json``; the run's report gains a
section (run_info.json ``verified``). Why, and what was measured: docs/design/verify.md.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from boosttune.bench import BenchConfig, merge, parse_bench
from boosttune.config.experiment import ExperimentConfig, parse_experiment
from boosttune.errors import ConfigError, DataError
from boosttune.execution.provenance import load_run_info, record_run_info
from boosttune.files import write_json
from boosttune.objective import Objective
from boosttune.tables.results import table_objective
from boosttune.outputs.summary import load_confirmed
from boosttune.stats.decide import Decision, at_planned_epochs
from boosttune.stages.baseline import last_epoch_gain
from boosttune.tables.confirm_runs import BASELINE_NAME
from boosttune.stats.holds import JobFigures, Verification, judge_verification

__all__ = ["VERIFY_NAME", "VerifyPlan", "plan_verify", "run_verify"]

VERIFY_NAME = "verify.json"
_NOT_RECIPE = ("seed", "target", "target_accuracy", "planned_epochs")  # what a run sets, not what a recipe is


@dataclass(frozen=True)
class VerifyPlan:
    """What verify trains and what it compares with, all decided before anything starts."""

    run: Path  # the tuning run's folder
    config: ExperimentConfig  # its experiment, as it ran
    answer: str  # its answer: a recipe's name, or O0
    recipe: str  # the recipe trained against O0 (the answer, or the fastest recipe a keep-O0 race dropped)
    planned_epochs: int
    bench: BenchConfig  # O0 and the recipe at the planned job, on fresh paired seeds
    predicted: JobFigures  # the run's race at the planned length
    objective: Objective
    base_overrides: dict[str, Any]  # laid over the run's base for the planned job (verify.base, then --set)
    asked: bool = False  # the recipe was named (--recipe), not the answer's

    @property
    def default_output(self) -> Path:
        named = "-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", self.recipe).strip("_") if self.asked else ""
        return self.run / f"verify-{self.planned_epochs}ep{named}"


def plan_verify(run: str | Path, *, seeds: int | None = None, planned_epochs: int | None = None,
                base: Mapping[str, Any] | None = None, recipe: str | None = None) -> VerifyPlan:
    """The verification of ``run``'s answer: ``seeds`` fresh paired seeds (default: the experiment's
    ``verify.seeds``), at ``planned_epochs`` (default: ``verify.planned_epochs``, else the run's planned length),
    ``base`` laid over the run's base after the experiment's ``verify.base``. ``recipe``: another recipe the run's
    confirm stage raced, trained against O0 instead of the one the answer names.

    Raises:
        DataError: ``run`` is not a finished experiment with a confirm stage, or has nothing to verify.
        ConfigError: a field of the planned job is invalid.
    """
    folder = Path(run).resolve()
    config, confirmed = _read_run(folder)
    answer = confirmed.selection.recipe if not confirmed.selection.fell_back_to_baseline else BASELINE_NAME
    raced = [str(n) for n in confirmed.summary["recipe"] if n != BASELINE_NAME]
    if recipe is not None and recipe not in raced:
        raise ConfigError(f"--recipe: {recipe!r} was not raced in {folder.name}; allowed: {', '.join(raced)}")
    asked = recipe is not None
    recipe = recipe or (answer if answer != BASELINE_NAME else _fastest_dropped(confirmed, folder))
    own_planned = _run_planned(confirmed, config)
    planned = planned_epochs or config.verify.planned_epochs or own_planned
    overrides = merge(config.verify.base, dict(base or {}))
    fresh = _fresh_seeds(folder, confirmed, config, seeds or config.verify.seeds)
    o0, trained = _recipe_document(confirmed, BASELINE_NAME), _recipe_document(confirmed, recipe)
    job = merge(merge(o0, overrides), {"epochs": planned, "planned_epochs": planned})
    try:
        bench = parse_bench({"name": f"{config.name}-verify", "base": job, "seeds": fresh,
                             "recipes": {BASELINE_NAME: {}, recipe: _difference(trained, o0)},
                             "workers_per_trial": config.workers_per_trial, "warm_workers": config.warm_workers,
                             "cache_graphs": config.cache_graphs, "interleave": config.confirm_interleave,
                             "max_drop": confirmed.max_drop})
    except ConfigError as e:
        raise ConfigError(f"the planned job: {e}") from None
    at_length = confirmed if planned == own_planned else at_planned_epochs(confirmed, planned)
    predicted = JobFigures.from_summary(_row(at_length, recipe))
    return VerifyPlan(folder, config, answer, recipe, planned, bench, predicted, table_objective(confirmed.runs),
                      overrides, asked)


def unconverged_baseline(folder: Path, objective: Objective) -> str | None:
    """How much the run's baseline gained in its last epoch, in words, when it was still improving at its end (None
    when it converged or its curve cannot be read)."""
    try:
        table = pd.read_csv(folder / "results.csv")
        row = table[table["is_baseline"].astype(bool)].iloc[0]
        curve = json.loads(row["curve_json"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    found = last_epoch_gain(curve, objective)
    return f"{objective.format_gain(found[0])} in the last epoch" if found and found[1] else None


def _read_run(folder: Path) -> tuple[ExperimentConfig, Decision]:
    if not folder.is_dir():
        raise DataError(f"{folder}: no such run folder; give the --output of boosttune tune or experiments/*.py")
    if (folder / "bench.json").is_file():
        raise DataError(f"{folder}: a bench folder; verify reads a tuning run's folder (boosttune tune, "
                        "experiments/*.py), whose answer it trains at the planned job")
    try:
        document = json.loads((folder / "experiment.json").read_text())
    except (OSError, ValueError):
        raise DataError(f"{folder}: no readable experiment.json; not the folder of a boosttune tuning run") from None
    config = parse_experiment(document)
    confirmed = load_confirmed(folder)  # judged at the run's own margin
    if confirmed is None or not (confirmed.summary["recipe"] != BASELINE_NAME).any():
        raise DataError(f"{folder}: no confirm stage ran (confirm_seeds 0, or the run stopped before it), so its "
                        "answer rests on one seed; nothing to verify. Run it with confirm_seeds >= 2")
    return config, confirmed


def _fastest_dropped(confirmed: Decision, folder: Path) -> str:
    """The recipe a keep-O0 answer is verified with: the fastest per job the race dropped."""
    rows = confirmed.summary[(confirmed.summary["recipe"] != BASELINE_NAME)
                             & confirmed.summary["job_speedup"].map(lambda v: isinstance(v, float) and math.isfinite(v))]
    if rows.empty:
        raise DataError(f"{folder}: the answer is to keep O0 and no recipe of its confirm stage has a per-job figure; "
                        "nothing to verify")
    return str(rows.sort_values("job_speedup", ascending=False, kind="stable").iloc[0]["recipe"])


def _row(confirmed: Decision, recipe: str) -> pd.Series:
    return confirmed.summary[confirmed.summary["recipe"] == recipe].iloc[0]


def _run_planned(confirmed: Decision, config: ExperimentConfig) -> int:
    """The job length the run judged at (its summary's, else its recipe's)."""
    planned = [int(v) for v in confirmed.summary.get("planned_epochs", pd.Series(dtype=float)).dropna()]
    return planned[0] if planned else (config.recipe.planned_epochs or config.recipe.epochs)


def _recipe_document(confirmed: Decision, recipe: str) -> dict[str, Any]:
    """The recipe as the confirm stage trained it (its evaluation settings included), without what a run sets."""
    runs = confirmed.runs[(confirmed.runs["recipe"] == recipe) & confirmed.runs["recipe_json"].notna()]
    document = json.loads(runs.iloc[0]["recipe_json"])
    return {k: v for k, v in document.items() if k not in _NOT_RECIPE}


def _difference(recipe: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``recipe`` that differ from ``base``'s (a bench override)."""
    return {k: v for k, v in recipe.items() if base.get(k) != v}


def _fresh_seeds(folder: Path, confirmed: Decision, config: ExperimentConfig, count: int) -> list[int]:
    """``count`` seeds above every one the run used (its search's, its confirm stage's): runs it never saw."""
    if count < 2:
        raise ConfigError(f"--seeds: {count} is invalid; allowed: 2 or more paired seeds (an interval needs two)")
    used = {int(s) for s in confirmed.runs["seed"].dropna()} | {config.seed}
    search = folder / "results.parquet"
    if search.is_file():
        try:
            used |= {int(s) for s in pd.read_parquet(search, columns=["seed"])["seed"].dropna()}
        except (OSError, ValueError, KeyError):
            pass  # the confirm stage's seeds and the experiment's are the ones a paired round drew
    start = max(used) + 1
    return list(range(start, start + count))


def run_verify(plan: VerifyPlan, output: str | Path | None = None, *, resume: bool = False,
               log: Callable[[str], None] = print, command: str | None = None) -> Verification:
    """Train ``plan``'s paired rounds (or resume them) in ``output`` (default: RUN/verify-<E>ep), judge them beside the
    prediction, and write verify.json, the folder's report and the run's report with its new section."""
    from boosttune.bench import run_bench
    from boosttune.report import report_folder

    target = Path(output).resolve() if output is not None else plan.default_output
    still = unconverged_baseline(plan.run, plan.objective)
    if still:
        log(f"verify: note: the run's baseline was still improving at the end ({still}), so its recipes' accuracy "
            f"changes are not their final ones: a recipe its race dropped as too lossy, or never raced, may win at "
            f"the planned job, and this checks {plan.recipe} only (benchmarks/data/transfer/team-seq-12ep)")
    log(f"verify: {plan.recipe} against O0 at the planned job ({plan.planned_epochs} epochs"
        + (f", base {json.dumps(plan.base_overrides)}" if plan.base_overrides else "") + f") on fresh paired seeds "
        f"{plan.bench.seeds}; the run's answer: {'keep O0' if plan.answer == BASELINE_NAME else plan.answer}")
    log(f"verify: the race predicted {plan.predicted.words(plan.objective)} at {plan.planned_epochs} epochs")
    confirmed = run_bench(plan.bench, target, resume=resume, log=log, command=command, project=plan.config)
    row = _row(confirmed, plan.recipe)
    measured = JobFigures.from_summary(row)
    to_show = row.get("seeds_to_show")
    judged = plan.answer if plan.answer in (BASELINE_NAME, plan.recipe) else plan.recipe  # --recipe: that one's case
    verification = judge_verification(judged, plan.recipe, plan.predicted, measured,
                                      max_drop=confirmed.max_drop, planned_epochs=plan.planned_epochs,
                                      objective=plan.objective,
                                      seeds_to_show=int(to_show) if isinstance(to_show, (int, float))
                                      and math.isfinite(to_show) else None)
    write_json(target / VERIFY_NAME, {**verification.to_dict(), "run": str(plan.run), "run_answer": plan.answer,
                                      "seeds": plan.bench.seeds,
                                      "objective": plan.objective.to_dict(), "base": plan.base_overrides})
    verified = [str(p) for p in load_run_info(plan.run).get("verified") or [] if str(p) != str(target)]
    record_run_info(plan.run, verified=[*verified, str(target)])
    report_folder(target)
    report_folder(plan.run)
    return verification
