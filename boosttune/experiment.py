"""An experiment end to end: probe, baseline, search, confirm, results table, best recipe, report.

Every stage's runs are run records (:mod:`boosttune.execution.runs`) trained by one function
(:func:`boosttune.execution.ray_train.train_run`) and kept as they end, so ``--resume`` continues any stage
without losing or retraining a finished run.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import pandas as pd
import ray

from boosttune.algorithms.adasum import adasum_applies
from boosttune.check import CheckReport, check_experiment
from boosttune.config.experiment import (
    CONFIRM_SCREEN,
    EARLY_STOP_MARGIN,
    LOSSY_DROP,
    MAX_DROP,
    RECOMMENDED_SEEDS,
    ExperimentConfig,
)
from boosttune.config.recipe import diverged_hint
from boosttune.errors import ConfigError, TrialError, UnsupportedError
from boosttune.evaluation.confirm import (
    Candidate,
    confirm_table,
    pick_candidates,
    recipe_identity,
    replay_race,
    resolve_max_drop,
    run_paired,
    run_race,
)
from boosttune.evaluation.noise import NoiseRecord, noise_record
from boosttune.evaluation.export import export_best
from boosttune.evaluation.race import REFERENCE_NOISE, Noise, RaceRules
from boosttune.evaluation.results import build_results_table, canonical_json, load_results, objective_of, save_results
from boosttune.evaluation.select import resolve_tolerance
from boosttune.evaluation.summary import format_confirmed, save_confirmed
from boosttune.execution.cluster import (
    WorkerProbe,
    check_storage,
    default_concurrency,
    facts_on_worker,
    probe_on_worker,
)
from boosttune.execution.provenance import load_run_info, record_run_info
from boosttune.execution.ray import (
    check_local_capacity,
    check_placeable,
    code_runtime_env,
    connect_ray,
    describe_code,
    worker_resources,
)
from boosttune.execution.ray_train import train_run
from boosttune.execution.runs import RecordStore, RunRecord, RunSpec
from boosttune.execution.warm import WarmPool
from boosttune.files import check_folder, claim_folder
from boosttune.objective import ACCURACY, Objective
from boosttune.probe.calibrate import slow_knobs
from boosttune.probe.presets import device_presets
from boosttune.report import ReportInputs, figures, write_report
from boosttune.search.tune import SearchSetup, run_search
from boosttune.space import (
    SpaceContext,
    equivalence_key,
    informed_points,
    preset_params,
    recipe_from_params,
    searchable,
)

__all__ = ["ExperimentResult", "StartPoints", "baseline_problem", "format_summary", "run_experiment", "start_points"]


@dataclass
class ExperimentResult:
    output: Path
    results_path: Path
    report_path: Path | None
    best_config_path: Path | None
    best_recipe_path: Path | None
    selection: str
    aborted_reason: str | None
    trials: int
    summary_path: Path | None = None
    stage_s: dict[str, float] = field(default_factory=dict)
    baseline_note: str | None = None
    left_out: dict[str, str] = field(default_factory=dict)  # knob -> why the search did not draw it
    answer: tuple[str, ...] = ()  # the report's first screen in words: the answer, why the stage stopped, the noise


@contextmanager
def _stage(name: str, times: dict[str, float], log: Callable[[str], None]) -> Iterator[None]:
    start = time.perf_counter()
    yield
    times[name] = times.get(name, 0.0) + time.perf_counter() - start
    log(f"{name}: done in {times[name]:.0f} s")


def run_experiment(config: ExperimentConfig, output: str | Path, *, resume: bool = False,
                   log: Callable[[str], None] = print, command: str | None = None) -> ExperimentResult:
    output = _output_folder(output)
    check_folder(output, "experiment.json", config.model_dump(mode="json"), resume=resume, what="experiment",
                 command=command)
    check_local_capacity(worker_resources(config.recipe.device_target), config.workers_per_trial)
    checked = _check_apart(config)  # the parts built and stepped on this machine, before Ray starts
    for line in checked.lines():
        log(f"check: {line}")
    code = code_runtime_env(config, Path.cwd(), output)  # the user's project, shipped to every node
    storage = check_storage(config.storage) if config.storage else None  # before anything is written
    output = claim_folder(output, "experiment.json", config.model_dump(mode="json"), resume=resume,
                          what="experiment", command=command)
    record_run_info(output, resumed=resume, model=config.recipe.entry.entry, max_drop_default=MAX_DROP,
                    shipped=describe_code(code) if code else None)
    with _driver_in(output):  # the driver's own folder: its start folder may vanish (a Ray job's working_dir)
        return _run_experiment(config, output, storage, resume=resume, log=log, code=code, checked=checked)


def _check_apart(config: ExperimentConfig) -> CheckReport:
    """:func:`~boosttune.check.check_experiment` in a fresh process: MindSpore, once imported, installs its own
    signal handlers, and a driver holding it died of SIGABRT on Ctrl-C instead of saving what it had and exiting 130
    (tests/e2e/test_faults.py). Its errors come back as themselves."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(check_experiment, config, log=_to_stderr).result()


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _output_folder(output: str | Path) -> Path:
    """The output folder, absolute; refused where it would be lost (relative, inside a Ray job's working_dir)."""
    job = json.loads(os.environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR") or "{}")
    if not Path(output).is_absolute() and (job.get("runtime_env") or {}).get("working_dir"):
        raise ConfigError(f"--output: {str(output)!r} is relative, so under `ray job submit --working-dir` it would "
                          "land in Ray's temporary copy of the project, deleted when the job ends; allowed: an "
                          "absolute folder on the head (or shared storage), e.g. --output /home/ray/runs/resnet")
    return Path(output).resolve()


def _check_device(report, config: ExperimentConfig, where: str) -> None:
    """Refuse a device MindSpore cannot train on at all, before the baseline, with MindSpore's reason."""
    knob = f"optimizer.{config.recipe.optimizer.name}"
    if not report.supports(knob):
        raise UnsupportedError(f"base.device_target: MindSpore cannot train {config.recipe.optimizer.name!r} on "
                               f"{report.device_target} on node {where}: {report.capabilities[knob].reason}")


@contextmanager
def _driver_in(folder: Path) -> Iterator[None]:
    """Run the driver inside ``folder``, then go back to where it started if that still exists.

    Ray Tune resolves paths against the working directory (``os.path.relpath`` calls ``os.getcwd``);
    under ``ray job submit --working-dir`` that directory is Ray's unpacked copy of the project, which
    the runtime-env agent may delete and re-create while the job runs.
    """
    try:
        before = os.getcwd()
    except FileNotFoundError:
        before = None
    os.chdir(folder)
    try:
        yield
    finally:
        if before is not None and os.path.isdir(before):
            os.chdir(before)


def _run_experiment(config: ExperimentConfig, output: Path, storage: str | None, *, resume: bool,
                    log: Callable[[str], None], code: dict[str, Any] | None = None,
                    checked: CheckReport | None = None) -> ExperimentResult:
    times: dict[str, float] = {}
    base = config.recipe.to_dict()
    per_rank = worker_resources(config.recipe.device_target)
    with _stage("probe", times, log):
        found = _probe(config, output, base, per_rank, code, log, checked)
    ctx = _space_context(config, output, found, log)
    with _warm_pool(config, found, output, storage, log) as pool:
        client = pool.client() if pool is not None else None

        def train(spec: RunSpec) -> RunRecord:
            return train_run(spec, output=output, num_workers=config.workers_per_trial, env=found.env,
                             storage=storage, accelerator_type=config.accelerator_type, pool=client)

        with _stage("baseline", times, log):
            baseline = _baseline(config, ctx, base, output, train, log)
        note = _judge_baseline(baseline, found.objective, config, _steps_per_epoch(config, found), log)
        start = _start(config, output, found, ctx, base, log)
        setup = _search_setup(config, output, found, ctx, base, baseline, start, per_rank, storage, log)
        if pool is not None:
            pool.ensure(setup.max_concurrent)
            setup = replace(setup, pool=client)
        with _stage("search", times, log):
            outcome = run_search(config, output, setup=setup, points=start.points, resume=resume, log=log)
        if pool is not None:
            client.cancel_all()  # trials the search dropped as it stopped (time budget, failures)
        log(f"search: {len(outcome.records)} trial records")
        if outcome.aborted_reason:
            log(outcome.aborted_reason)
        if outcome.left_out:  # algorithms whose trials could not train here: the report lists them with the slow knobs
            record_run_info(output, left_out={**(load_run_info(output).get("left_out") or {}), **outcome.left_out})
        table = _search_table(outcome.records)
        confirm = None
        if config.confirm_seeds and not outcome.aborted_reason:
            with _stage("confirm", times, log):
                confirm = _confirm(config, table, output, train, log)
    with _stage("export and report", times, log):
        result = _finish(config, output, table, confirm, outcome.aborted_reason)
    result.stage_s, result.baseline_note, result.left_out = times, note, {**found.slow, **outcome.left_out}
    return result


@contextmanager
def _warm_pool(config: ExperimentConfig, found: _Found, output: Path, storage: str | None,
               log: Callable[[str], None]) -> Iterator[WarmPool | None]:
    """The experiment's warm workers (one slot now, for the baseline; the search adds its concurrency), or None
    with ``warm_workers: false``."""
    if not config.warm_workers:
        yield None
        return
    log(f"workers: warm Ray Train worker groups of {config.workers_per_trial} rank(s) take run after run "
        "(MindSpore imported and the device set up once per group)")
    with WarmPool(slots=1, num_workers=config.workers_per_trial, device_target=config.recipe.device_target,
                  env=found.env, storage_path=f"{storage.rstrip('/')}/train" if storage else str(output / "train"),
                  accelerator_type=config.accelerator_type, cache_graphs=config.cache_graphs, log=log) as pool:
        yield pool
    if pool.replaced:
        log(f"workers: {pool.replaced} warm worker group(s) replaced after a run failed or a worker died")


@dataclass(frozen=True)
class _Found:
    """What the probe stage found on a node where trials run: the device, its runtime settings, the knobs measured
    slow there, and the model's facts (steps, parameter tensors, objective)."""

    placed: WorkerProbe
    env: dict[str, str]
    slow: dict[str, str]
    facts: dict[str, Any]
    objective: Objective

    @property
    def report(self):
        return self.placed.report


def _probe(config: ExperimentConfig, output: Path, base: dict[str, Any], per_rank: dict[str, float],
           code: dict[str, Any] | None, log: Callable[[str], None], checked: CheckReport | None = None) -> _Found:
    """Connect to Ray, probe (and calibrate) a node that holds a trial rank, and build the model there once (on a
    local instance, the trials' node is this machine: the preflight's build in this process stands for it)."""
    where = connect_ray(log, runtime_env=code)
    if where.startswith("a local"):  # a local instance never grows: a trial it cannot hold would wait forever
        check_placeable(ray.nodes(), per_rank, config.workers_per_trial)
    placed = probe_on_worker(config.recipe.device_target, calibrate=config.prune_slow,
                             accelerator_type=config.accelerator_type, log=log, base=base)
    _check_device(placed.report, config, placed.hostname)
    env = dict(placed.report.runtime_env)
    slow = slow_knobs(placed.speed, config.search) if config.prune_slow else {}
    if where.startswith("a local") and checked is not None and checked.built_on == config.recipe.device_target:
        facts = checked.facts
        log(f"model: {config.recipe.entry.entry} built here as {config.workers_per_trial} rank(s), one step trained "
            f"and one batch evaluated (the check); objective {Objective.of(facts['objective']).describe()}")
    else:
        facts = facts_on_worker(config.recipe.device_target, base, config.workers_per_trial, env,
                                str(output / "work"), accelerator_type=config.accelerator_type)
        log(f"model: {config.recipe.entry.entry} built on a worker as {config.workers_per_trial} rank(s), one step "
            f"trained and one batch evaluated; objective {Objective.of(facts['objective']).describe()}")
    objective = Objective.of(facts["objective"])
    return _Found(placed=placed, env=env, slow=slow, facts=facts, objective=objective)


def _steps_per_epoch(config: ExperimentConfig, found: _Found) -> int:
    return max(1, found.facts["total_steps"] // max(1, config.recipe.epochs))


def _space_context(config: ExperimentConfig, output: Path, found: _Found, log: Callable[[str], None]) -> SpaceContext:
    """What the search space may draw here: the knobs this device supports and does not run slow, sized to the model."""
    report = found.report
    unsupported = {c.knob: c.reason for c in report.unsupported()}
    unsupported.update(found.facts.get("left_out") or {})  # the model's own limits (its optimizer under boost)
    if adasum_applies(config.workers_per_trial):  # the probe's one rank cannot show it; the trials' ranks can
        unsupported.pop("boost.adasum", None)
    record_run_info(output, device=f"{report.device_target}: {report.cpu}", left_out=found.slow,
                    probed_on=f"{found.placed.hostname} ({found.placed.node_ip})", unsupported=unsupported)
    for why in found.slow.values():
        log(f"search space: {why}")
    return SpaceContext(unsupported=frozenset(unsupported), total_steps=found.facts["total_steps"],
                        param_count=found.facts["param_count"], world_size=config.workers_per_trial,
                        enabled=frozenset(config.search or ()),
                        base_learning_rate=config.recipe.optimizer.learning_rate, slow=frozenset(found.slow),
                        device_target=config.recipe.device_target)


def _baseline(config: ExperimentConfig, ctx: SpaceContext, base: dict[str, Any], output: Path,
              train: Callable[[RunSpec], RunRecord], log: Callable[[str], None]) -> RunRecord:
    """The O0 baseline, trained first (or kept from an earlier attempt): every speed figure is a ratio to it, and
    the constrained and time-to-accuracy objectives need its objective value."""
    trials, first_of_key = RecordStore(output / "trials"), RecordStore(output / "dedup")
    baseline_recipe = recipe_from_params(preset_params("O0", ctx, base), ctx, base)
    key = equivalence_key(baseline_recipe)
    baseline = trials.get("baseline")
    if baseline is not None:
        log(f"baseline: kept from an earlier attempt ({trials.path('baseline')})")
        return baseline
    log(f"baseline: O0, {config.workers_per_trial} worker(s), {config.recipe.epochs} epoch(s)")
    baseline = train(RunSpec(run_id="baseline", role="baseline", recipe=baseline_recipe.to_dict(),
                             label="O0", preset="O0", key=key))
    trials.put(baseline)
    if baseline.status != "failed":
        first_of_key.put(baseline, name=key)
    return baseline


def _judge_baseline(baseline: RunRecord, objective: Objective, config: ExperimentConfig, steps_per_epoch: int,
                    log: Callable[[str], None]) -> str | None:
    """Refuse a baseline nothing can be compared against (:func:`baseline_problem`); say its speed and objective,
    and whether it had converged (the note)."""
    problem = baseline_problem(baseline, objective, learning_rate=config.recipe.optimizer.learning_rate,
                               steps_per_epoch=steps_per_epoch)
    if problem is not None:
        raise TrialError(problem)
    throughput, rse = baseline.metrics["throughput_sps"], baseline.metrics.get("throughput_rse")
    sure = ", ".join(([f"+-{100 * rse:.1f}% standard error"] if rse else [])
                     + [f"{baseline.metrics.get('steady_steps')} steady steps"])
    log(f"baseline: {throughput:.1f} samples/s ({sure}), {objective.label} "
        f"{objective.format_value(baseline.metrics['objective_value'])}")
    note = _convergence_note(baseline.curve, objective)
    if note:
        log(f"baseline: {note}")
    return note


# A finite training loss this many times its first epoch's mean is a divergence, not learning.
EXPLODED_LOSS_FACTOR = 10.0
_STEP = re.compile(r"at step (\d+)")


def baseline_problem(baseline: RunRecord, objective: Objective, *, learning_rate: float,
                     steps_per_epoch: int) -> str | None:
    """Why every comparison against this O0 baseline would be meaningless, in one line that says what happened,
    where, and what to change; None when it can be compared against.

    A baseline that failed, diverged (a non-finite loss, or a training loss that grew more than
    ``EXPLODED_LOSS_FACTOR`` times its first epoch's), gave no value of the objective, or no throughput figure.
    """
    if baseline.status == "failed":
        return f"the O0 baseline failed, nothing to compare against: {baseline.reason}"
    fix = diverged_hint(learning_rate)
    reason = baseline.reason or ""
    if reason.startswith("non-finite loss"):
        step = _STEP.search(reason)
        where = ""
        if step:
            n = int(step.group(1))
            where = f" (epoch {(n - 1) // max(1, steps_per_epoch) + 1}, step {(n - 1) % max(1, steps_per_epoch) + 1} " \
                    f"of {steps_per_epoch})"
        return f"the O0 baseline diverged: {reason}{where}; {fix}"
    losses = [(int(e["epoch"]), float(e["train_loss"])) for e in baseline.curve
              if e.get("epoch") is not None and e.get("train_loss") is not None]
    if losses and losses[0][1] > 0:
        first = losses[0][1]
        worst_epoch, worst = max(losses, key=lambda pair: pair[1] if math.isfinite(pair[1]) else math.inf)
        if not math.isfinite(worst) or worst > EXPLODED_LOSS_FACTOR * first:
            return (f"the O0 baseline diverged: its training loss rose from {first:.4g} (epoch {losses[0][0]}) to "
                    f"{worst:.4g} (epoch {worst_epoch}); {fix}")
    value = baseline.metrics.get("objective_value")
    if value is None or not math.isfinite(float(value)):
        return (f"the O0 baseline gave no value of the objective {objective.label} (got {value!r}) after "
                f"{len(baseline.curve)} epoch(s) ({baseline.status}{f': {reason}' if reason else ''}): the metric "
                f"{objective.name!r} must return one finite number on the eval set")
    if not baseline.metrics.get("throughput_sps"):
        steady = baseline.metrics.get("steady_steps")
        return (f"the O0 baseline gave no throughput figure ({steady if steady is not None else 'no'} steady steps "
                f"of {steps_per_epoch} per epoch x {len(baseline.curve)} epoch(s)): speed needs steps after the "
                "first (compiling) ones; raise base.epochs or the data's batches per epoch")
    return None


def _start(config: ExperimentConfig, output: Path, found: _Found, ctx: SpaceContext, base: dict[str, Any],
           log: Callable[[str], None]) -> StartPoints:
    """The search's start points, and why a preset is not trained apart (in run_info.json)."""
    start = start_points(found.report, ctx, base, config)
    if start.same_as:  # MindSpore's claims are judged per preset: say why one of them is not trained apart
        record_run_info(output, left_out={**found.slow, **start.same_as})
    log(f"search: starts from {', '.join(start.labels_in_order) or 'nothing fixed'}"
        + (f" ({', '.join(start.outside_labels)} outside the searched space: trained, not modelled)"
           if start.outside_labels else ""))
    return start


def _search_setup(config: ExperimentConfig, output: Path, found: _Found, ctx: SpaceContext, base: dict[str, Any],
                  baseline: RunRecord, start: StartPoints, per_rank: dict[str, float], storage: str | None,
                  log: Callable[[str], None]) -> SearchSetup:
    """What the search needs: the start points, the baseline's figures, the allowed drop, trials at once."""
    objective = found.objective
    base_value = baseline.metrics["objective_value"]
    drop = objective.tolerance(config.max_drop, MAX_DROP, base_value)
    if config.max_drop is None and not objective.fraction:
        log(f"search: max_drop {drop:.4g} {objective.unit} ({MAX_DROP:g}% of the baseline's {objective.label}; "
            "set max_drop in its units to choose)")
    return SearchSetup(
        base=base, ctx=ctx, env=found.env, workers=config.workers_per_trial, output=str(output),
        presets=start.presets, labels=start.labels, outside=start.outside, objective=objective,
        baseline_objective=base_value, max_drop=drop,
        early_stop_margin=objective.tolerance(config.early_stop_margin, EARLY_STOP_MARGIN, base_value),
        baseline_throughput_sps=baseline.metrics.get("throughput_sps"),
        baseline_by_epoch={int(e["epoch"]): float(e["objective_value"]) for e in baseline.curve
                           if e.get("epoch") is not None and e.get("objective_value") is not None},
        lossy_drop=objective.tolerance(None, LOSSY_DROP, base_value),
        target=(objective.shifted(base_value, -drop) if config.objective == "time_to_accuracy" else None),
        max_concurrent=config.max_concurrent_trials or default_concurrency(ray.nodes(), per_rank,
                                                                            config.workers_per_trial),
        storage=storage, accelerator_type=config.accelerator_type,
    )


@dataclass
class StartPoints:
    """The search's first trials: the presets, then the variations a person would try first."""

    presets: dict[str, str] = field(default_factory=dict)  # equivalence key -> preset name
    labels: dict[str, str] = field(default_factory=dict)  # equivalence key -> label, for every start point
    points: list[dict[str, Any]] = field(default_factory=list)  # the searched space can draw them: modelled
    outside: list[dict[str, Any]] = field(default_factory=list)  # it cannot (a slow knob): trained only
    labels_in_order: list[str] = field(default_factory=list)
    outside_labels: list[str] = field(default_factory=list)
    same_as: dict[str, str] = field(default_factory=dict)  # preset -> why it is not trained apart


def start_points(report, ctx, base: dict[str, Any], config: ExperimentConfig) -> StartPoints:
    """O0 and each preset that trains differently here (by equivalence key), then, with ``informed_start``,
    the informed variations the searched space can draw, up to half the trial budget in all."""
    start = StartPoints()
    presets = device_presets(report, config.workers_per_trial)
    candidates = [(p.name, preset_params(p.name, ctx, base), True) for p in presets]
    notes = {p.name: "; ".join(p.notes) for p in presets}
    if config.informed_start:
        candidates += [(label, params, False) for label, params in informed_points(ctx, base)
                       if searchable(params, ctx, base)]
    budget = max(sum(preset for *_, preset in candidates), config.num_trials // 2)
    for label, params, preset in candidates:
        key = equivalence_key(recipe_from_params(params, ctx, base))
        if key in start.labels and preset:
            start.same_as[label] = f"trains the same as {start.labels[key]} on this device ({notes[label]})"
        if key in start.labels or (not preset and len(start.labels) >= budget):
            continue
        start.labels[key] = label
        start.labels_in_order.append(label)
        if preset:
            start.presets[key] = label
        if searchable(params, ctx, base):
            start.points.append(params)
        else:
            start.outside.append(params)
            start.outside_labels.append(label)
    return start


def _convergence_note(curve: list[dict[str, Any]], objective: Objective = ACCURACY) -> str | None:
    """Whether the baseline was still learning when it stopped (then every recipe is compared too early): its last
    epoch better than every epoch before it by more than 0.5 points (0.5% of the value for a non-fraction)."""
    values = [e["objective_value"] for e in curve if e.get("objective_value") is not None]
    if len(values) < 3:
        return None
    best_before = max(values[:-1], key=objective.oriented)
    gain = objective.gain(values[-1], best_before)
    return (f"still improving at the end ({objective.format_gain(gain)} in the last epoch): train longer (--epochs) "
            "so recipes are compared at convergence" if gain > objective.tolerance(None, 0.5, values[-1]) else
            f"converged (last epoch {objective.format_gain(gain)} vs the best before it)")


def _search_table(records):
    return build_results_table([r.to_dict() for r in records], ray_version=ray.__version__)


def confirm_seeds(seed: int, count: int) -> list[int]:
    """Fresh seeds: none of them is the search's (so the confirmation is not fitted to it), and experiments with
    different ``seed`` values share none (``seed`` 0 gets 1000-1999, 1 gets 2000-2999, ...)."""
    return [(seed + 1) * 1000 + i for i in range(count)]


def race_rules(config: ExperimentConfig, recipes: int, noise: Noise) -> RaceRules:
    """The race's rules from the experiment and the device's measured noise: the budget defaults to what a fixed
    stage of confirm_seeds costs."""
    runs = config.confirm_budget_runs
    if runs is None and config.confirm_budget_minutes is None:
        runs = config.confirm_seeds * recipes
    return RaceRules.with_noise(noise, alpha=config.confirm_alpha, max_seeds=config.confirm_max_seeds, max_runs=runs,
                                max_minutes=config.confirm_budget_minutes)


def _device_noise(config: ExperimentConfig, baseline: Candidate, objective: Objective) -> tuple[NoiseRecord, Noise]:
    """The noise record of this device and workload, and the prior it gives the race (the reference's gain sd is in
    accuracy points: none for another objective)."""
    record = noise_record(config.recipe.device_target, recipe_identity(canonical_json(baseline.recipe)))
    noise = record.noise()
    if noise is REFERENCE_NOISE and not objective.fraction:
        noise = replace(noise, gain_sd=None)
    return record, noise


def _confirm(config: ExperimentConfig, table, output: Path, train,
             log: Callable[[str], None]) -> tuple[list[RunRecord], RaceRules | None]:
    screen = resolve_tolerance(table, config.confirm_screen, CONFIRM_SCREEN)
    candidates = [_judged_on_all(c) if config.confirm_eval_all else c
                  for c in pick_candidates(table, max_candidates=config.confirm_candidates, screen=screen)]
    store = RecordStore(output / "confirm")
    if config.confirm_mode == "fixed" or len(candidates) < 2:
        seeds = confirm_seeds(config.seed, config.confirm_seeds)
        log(f"confirm: {len(candidates)} recipes x {len(seeds)} paired seeds {seeds}, interleaved"
            + ("" if len(candidates) > 1 else " (only the baseline: no searched recipe passed the screen)")
            + ("" if len(seeds) >= RECOMMENDED_SEEDS else
               f" ({RECOMMENDED_SEEDS} or more seeds recommended: --confirm-seeds)"))
        _log_candidates(candidates, log)
        return run_paired(candidates, seeds, store=store, role="confirm", train=train, log=log,
                          max_drop=config.max_drop, default_drop=MAX_DROP), None
    objective = objective_of(table)
    record, noise = _device_noise(config, candidates[0], objective)
    rules = race_rules(config, len(candidates), noise)
    seeds = confirm_seeds(config.seed, rules.max_seeds)
    log(f"confirm: a race of {len(candidates) - 1} candidates against the baseline, paired and interleaved rounds "
        f"on seeds {seeds[0]}, {seeds[1]}, ...; budget {rules.budget_text()}; a candidate wins when shown faster and "
        f"non-inferior (family-wise level {rules.alpha:g}, {rules.min_seeds} paired seeds at least), leaves when "
        f"likely slower or beyond the margin (one-sided {100 * rules.drop_confidence:g}%), and stops undecided at "
        f"{rules.max_seeds} seeds")
    log(f"confirm: the noise the race starts from: {noise.text()}"
        + ("; it steers the drops only, and this race's runs are added to the device's record"
           if noise.df == 0 else "; the race's own runs join it"))
    _log_candidates(candidates, log)
    records = run_race(candidates, seeds, store=store, role="confirm", train=train, rules=rules, log=log,
                       max_drop=config.max_drop, default_drop=MAX_DROP)
    runs = confirm_table(records)
    record.add(replay_race(runs, rules, resolve_max_drop(runs, config.max_drop, MAX_DROP)), race_id=str(output.resolve()))
    return records, rules


def _judged_on_all(candidate: Candidate) -> Candidate:
    """The candidate with its objective from every held-out sample of a built-in data set (a builder's own data
    keeps its own final evaluation, if it has one)."""
    data = candidate.recipe.get("data")
    if not isinstance(data, dict) or data.get("final_val_limit") is not None:
        return candidate
    return Candidate(candidate.name, {**candidate.recipe, "data": {**data, "final_val_limit": "all"}},
                     candidate.why, candidate.preset)


def _log_candidates(candidates, log: Callable[[str], None]) -> None:
    for candidate in candidates:
        log(f"  {candidate.name}: {candidate.why}")


def _finish(config: ExperimentConfig, output: Path, table, confirm, aborted: str | None) -> ExperimentResult:
    parquet, _ = save_results(table, output)
    confirmed = None
    summary_path = None
    confirm_records, rules = confirm or (None, None)
    if confirm_records:
        confirmed = save_confirmed(confirm_records, output, max_drop=config.max_drop, default_drop=MAX_DROP,
                                   ray_version=ray.__version__, rules=rules)
        summary_path = confirmed.summary_path
    best_config, best_recipe = export_best(table, output, max_drop=config.max_drop, default=MAX_DROP,
                                           experiment_path=str(output), confirmed=confirmed)
    reason = json.loads(best_recipe.read_text())["selection"]["reason"]
    inputs = ReportInputs(kind="experiment", title=f"boosttune experiment: {config.name}",
                          max_drop=(confirmed.max_drop if confirmed is not None else
                                    resolve_tolerance(table, config.max_drop, MAX_DROP)),
                          search=table, confirmed=confirmed, config=config.model_dump(mode="json"),
                          run_info=load_run_info(output), folder=output)
    report, _ = write_report(inputs)
    first = figures.answer_info(inputs)
    answer = (figures.header_info(inputs).answer, *((first.stopped, first.noise) if first is not None else ()))
    return ExperimentResult(output=output, results_path=parquet, report_path=report, best_config_path=best_config,
                            best_recipe_path=best_recipe, selection=reason, aborted_reason=aborted,
                            trials=len(table), summary_path=summary_path, answer=tuple(a for a in answer if a))


def format_summary(result: ExperimentResult) -> str:
    """The closing lines: trials by speed-up, the confirmed summary, the selection, stage times, where things are."""
    table = load_results(result.results_path)
    columns = ["trial_id", "preset", "status", "throughput_sps", "speedup_vs_baseline", "objective_value",
               "objective_gain", "compile_s"]
    shown = table[columns].sort_values("speedup_vs_baseline", ascending=False, na_position="last")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        lines = ["", "search (one seed each):", shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"), ""]
    if result.summary_path is not None:
        lines += [format_confirmed(pd.read_csv(result.summary_path)), ""]
    lines += [f"answer: {line}" if i == 0 else line for i, line in enumerate(result.answer)]
    lines.append(f"best: {result.selection}")
    if result.aborted_reason:
        lines.append(result.aborted_reason)
    if result.baseline_note:
        lines.append(f"baseline: {result.baseline_note}")
    for why in result.left_out.values():
        lines.append(f"left out of the search: {why}")
    if result.stage_s:
        lines.append("time per stage: " + ", ".join(f"{k} {v:.0f} s" for k, v in result.stage_s.items())
                     + f" (total {sum(result.stage_s.values()):.0f} s)")
    lines += [f"results: {result.results_path} (and results.csv)",
              f"report:  {result.report_path} (tables also in report.md; again: boosttune report {result.output})"]
    if result.summary_path is not None:
        lines.append(f"confirmed: {result.summary_path} (runs in confirm.parquet / confirm.csv)")
    lines += [f"best boost_config_dict: {result.best_config_path}", f"best recipe: {result.best_recipe_path}"]
    return "\n".join(lines)
