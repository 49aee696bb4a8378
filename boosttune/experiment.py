"""An experiment end to end, as a run order: start-up (checks, Ray, probe), the model's facts, baseline, search,
confirm, results table, best recipe, report.

Each stage's policy lives in its package: the start-up in :mod:`boosttune.execution.start`, the baseline in
:mod:`boosttune.stages.baseline`, the start points and the search's setup in :mod:`boosttune.search.start_points` and
:mod:`boosttune.search.setup`, the confirm stage in :mod:`boosttune.stages.confirm`. Every stage's runs are
run records (:mod:`boosttune.execution.runs`) trained by one function
(:func:`boosttune.execution.ray_train.train_run`) and kept as they end, so ``--resume`` continues any stage without
losing or retraining a finished run.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import pandas as pd
import ray

from boosttune.check import CheckReport, check_in_fresh_process
from boosttune.config.experiment import MAX_DROP, ExperimentConfig
from boosttune.errors import UnsupportedError
from boosttune.stages.baseline import convergence_note, judge_baseline, train_baseline
from boosttune.stages.confirm import ConfirmOutcome, capacity_note, confirm_length, run_confirm_stage, speed_floor
from boosttune.finish import finish_run
from boosttune.outputs.judged import judge_run
from boosttune.outputs.summary import SUMMARY_NAME, save_confirmed
from boosttune.objective import Objective
from boosttune.stats.margin import Margin, Tolerance
from boosttune.tables.results import build_results_table, save_results, search_reference
from boosttune.execution.cluster import facts_on_worker
from boosttune.execution.provenance import load_run_info, record_run_info
from boosttune.execution.runs import RunRecord
from boosttune.tables.states import FINISHED
from boosttune.execution.start import (
    ROUNDS_ACROSS_SLOTS,
    ROUNDS_IN_TURN,
    ROUNDS_ONE_BY_ONE,
    RunRequest,
    StartedRun,
    start_run,
)
from boosttune.probe.calibrate import slow_knobs
from boosttune.search.setup import search_setup, space_context
from boosttune.search.start_points import plan_start
from boosttune.search.tune import SearchOutcome, run_search
from boosttune.trial.parts import ModelFacts

__all__ = ["ExperimentResult", "check_device", "run_experiment"]


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
    confirm_training_s: float | None = None  # the confirm runs' training steps (compile included), summed
    confirm_eval_s: float | None = None  # the confirm runs' evaluations, summed


def run_experiment(config: ExperimentConfig, output: str | Path, *, resume: bool = False,
                   log: Callable[[str], None] = print, command: str | None = None) -> ExperimentResult:
    for line in config.adjusted:  # what parse_experiment changed, said before anything trains
        log(f"note: {line}")
    base = config.recipe.to_dict()
    launch = RunRequest(what="experiment", document=config.model_dump(mode="json"),
                    device_target=config.recipe.device_target, workers=config.workers_per_trial, project=config,
                    accelerator_type=config.accelerator_type, storage=config.storage,
                    warm_workers=config.warm_workers, cache_graphs=config.cache_graphs, calibrate=config.prune_slow,
                    base=base, run_info={"model": config.recipe.entry.entry})

    def preflight() -> CheckReport:  # the parts built and stepped on this machine, before Ray starts
        checked = check_in_fresh_process(config)
        for line in checked.lines():
            log(f"check: {line}")
        return checked

    with start_run(launch, output, resume=resume, log=log, command=command, preflight=preflight) as started:
        return _run(config, started, base, resume=resume, log=log)


def _run(config: ExperimentConfig, started: StartedRun, base: dict[str, Any], *, resume: bool,
         log: Callable[[str], None]) -> ExperimentResult:
    times: dict[str, float] = {}
    with _stage("probe", times, log, already_s=started.probe_s):
        check_device(started.report, config, started.placed.hostname)
        facts = _model_facts(config, started, base, log)
    slow = slow_knobs(started.placed.speed, config.search) if config.prune_slow else {}
    ctx = space_context(config, started, facts, slow, log)
    with started.warm_pool(log) as pool:
        with _stage("baseline", times, log):
            baseline = train_baseline(config, ctx, base, started.output, started.train, log)
        note = judge_baseline(baseline, facts.objective, config, facts.steps_per_epoch(config.recipe.epochs), log)
        max_drop = _max_drop(config, facts, baseline, started.output, log)
        length = confirm_length(config, baseline.curve, facts.objective)
        if length.reason and config.confirm_seeds:
            log(f"confirm: {length.reason}")
        record_run_info(started.output, confirm_epochs=length.epochs, confirm_at_planned=length.planned)
        speed = started.placed.speed.ratios if started.placed.speed is not None else None
        start = plan_start(config, started.output, started.report, ctx, base, slow, log, speed)
        setup = search_setup(config, started, facts, ctx, base, baseline, start, max_drop.value, log)
        if config.confirm_seeds:  # a trial the confirm stage would never race stops in the search
            setup = replace(setup, speed_floor=speed_floor(config, baseline, facts.objective,
                                                           started.interleaves(config.confirm_interleave), length))
        if pool is not None:
            pool.ensure(setup.max_concurrent)
            setup = replace(setup, pool=started.client)
        with _stage("search", times, log):
            outcome = run_search(config, started.output, setup=setup, points=start.points, resume=resume, log=log)
        table = _search_table(outcome, started, log)
    confirm = None
    if config.confirm_seeds and not outcome.aborted_reason:
        turns = started.interleaves(config.confirm_interleave)
        slots = 1 if turns else started.round_slots(config.max_concurrent_trials)
        record_run_info(started.output, rounds=ROUNDS_IN_TURN if turns else ROUNDS_ONE_BY_ONE if slots == 1 else
                        f"{ROUNDS_ACROSS_SLOTS} ({slots})")
        with _stage("confirm", times, log), started.warm_pool(log, turns=turns, slots=slots):
            confirm = run_confirm_stage(config, table, max_drop, started.output, started.train, log,
                                        train_round=started.train_round if turns or slots > 1 else None,
                                        length=length)
    with _stage("export and report", times, log):
        result = _finish(config, started.output, table, max_drop, confirm, outcome.aborted_reason)
    if confirm is not None and length.planned:
        note = convergence_note(baseline.curve, facts.objective, confirmed_at=length.epochs)
    result.stage_s, result.baseline_note, result.left_out = times, note, {**slow, **outcome.left_out}
    if confirm is not None:
        result.confirm_training_s = training_seconds(confirm.records)
        result.confirm_eval_s = training_seconds(confirm.records, "eval_s")
        record_run_info(started.output, confirm_training_share=round(result.confirm_training_s / times["confirm"], 3),
                        confirm_eval_share=round(result.confirm_eval_s / times["confirm"], 3))
    record_run_info(started.output, stage_s={name: round(seconds, 1) for name, seconds in times.items()})
    return result


def training_seconds(records: list[RunRecord], figure: str = "train_s") -> float:
    """The training steps' seconds (compile included, evaluation and waiting not) of the runs that finished; or
    another of their figures in seconds, summed (``eval_s``: their evaluations')."""
    return float(sum(r.metrics.get(figure) or 0.0 for r in records if r.status in FINISHED))


def confirm_capacity(config: ExperimentConfig, objective: Objective) -> str | None:
    """What the confirm stage's budget can show at this experiment's margin, for ``boosttune check`` (None without a
    confirm stage, or where the margin waits for the baseline: another metric's default is 1% of its value)."""
    if not config.confirm_seeds or (config.max_drop is None and not objective.fraction):
        return None
    margin = Tolerance(objective, config.max_drop, MAX_DROP).at()
    return capacity_note(config, margin.value, objective.unit)


def _max_drop(config: ExperimentConfig, facts: ModelFacts, baseline: RunRecord, output: Path,
              log: Callable[[str], None]) -> Margin:
    """The one margin of the run: ``max_drop`` on the model's objective, resolved once against the baseline stage's
    run and recorded (``max_drop_resolved`` in run_info.json), so a folder read later is judged at the same number."""
    objective = facts.objective
    margin = Tolerance(objective, config.max_drop, MAX_DROP).at(baseline.metrics.get("objective_value"))
    if config.max_drop is None and not objective.fraction:
        log(f"max_drop: {margin.value:.4g} {objective.unit} ({MAX_DROP:g}% of the baseline's {objective.label}; "
            "set max_drop in its units to choose)")
    record_run_info(output, max_drop_resolved=margin.value)
    return margin


@contextmanager
def _stage(name: str, times: dict[str, float], log: Callable[[str], None], already_s: float = 0.0) -> Iterator[None]:
    start = time.perf_counter() - already_s
    yield
    times[name] = times.get(name, 0.0) + time.perf_counter() - start
    log(f"{name}: done in {times[name]:.0f} s")


def check_device(report, config: ExperimentConfig, where: str) -> None:
    """Refuse a device MindSpore cannot train on at all, before the baseline, with MindSpore's reason."""
    knob = f"optimizer.{config.recipe.optimizer.name}"
    if not report.supports(knob):
        raise UnsupportedError(f"base.device_target: MindSpore cannot train {config.recipe.optimizer.name!r} on "
                               f"{report.device_target} on node {where}: {report.why_unsupported(knob)}")


def _model_facts(config: ExperimentConfig, started: StartedRun, base: dict[str, Any],
                 log: Callable[[str], None]) -> ModelFacts:
    """The model built once where trials run (on a local instance, the trials' node is this machine: the preflight's
    build in this process stands for it): its steps, parameter tensors and objective."""
    checked = started.checked
    if started.local and checked is not None and checked.built_on == config.recipe.device_target:
        log(f"model: {config.recipe.entry.entry} built here as {config.workers_per_trial} rank(s), one step trained "
            f"and one batch evaluated (the check); objective {checked.model_facts.objective.describe()}")
        return checked.model_facts
    facts = facts_on_worker(config.recipe.device_target, base, config.workers_per_trial, started.env,
                            str(started.output / "work"), accelerator_type=config.accelerator_type,
                            per_rank=started.per_rank)
    log(f"model: {config.recipe.entry.entry} built on a worker as {config.workers_per_trial} rank(s), one step "
        f"trained and one batch evaluated; objective {facts.objective.describe()}")
    return facts


def _search_table(outcome: SearchOutcome, started: StartedRun, log: Callable[[str], None]) -> pd.DataFrame:
    """The search's results table; the trials it dropped as it stopped cancelled, what it left out recorded."""
    if started.client is not None:
        started.client.cancel_all()  # trials the search dropped as it stopped (time budget, failures)
    log(f"search: {len(outcome.records)} trial records")
    if outcome.aborted_reason:
        log(outcome.aborted_reason)
    if outcome.left_out:  # algorithms whose trials could not train here: the report lists them with the slow knobs
        record_run_info(started.output,
                        left_out={**(load_run_info(started.output).get("left_out") or {}), **outcome.left_out})
    table = build_results_table([r.to_dict() for r in outcome.records], ray_version=ray.__version__)
    reference = search_reference(table)
    if reference is not None and reference.bracketed:
        timed = [sps for _, sps in sorted(zip(reference.speed_times, reference.pooled))]
        log(f"search: speed reference: O0 timed in the search before and after its trials, {timed[0]:.0f} and "
            f"{timed[-1]:.0f} samples/s (the machine {timed[-1] / timed[0] - 1:+.0%} over the search); each searched "
            f"speed-up is a ratio to O0 at the trial's start, read off the line between them (the baseline stage's "
            f"O0 read {reference.runs[0]:.0f} samples/s)")
    elif reference is not None and len(reference.runs) > len(reference.pooled):
        own = ", ".join(f"{sps:.0f}" for sps in reference.pooled)
        first = reference.runs[0]
        log(f"search: speed reference: the search's own O0 run(s), {own} samples/s; every searched speed-up is a "
            f"ratio to {reference.throughput_sps:.0f} samples/s, timed in the search as its trials were (the baseline "
            f"stage's O0 read {first:.0f} samples/s: {first / reference.throughput_sps:.2f}x of it)")
    return table


def _finish(config: ExperimentConfig, output: Path, table: pd.DataFrame, margin: Margin,
            confirm: ConfirmOutcome | None, aborted: str | None) -> ExperimentResult:
    """The tables saved, the confirm stage's runs decided once, and the run finished (:func:`~boosttune.finish.
    finish_run`: the best recipe exported and the report made from that one decision)."""
    parquet, _ = save_results(table, output)
    decision = (save_confirmed(confirm.records, output, margin=margin, ray_version=ray.__version__,
                               rules=confirm.rules, race=confirm.race, prefer_ties=config.prefer_ties)
                if confirm is not None and confirm.records else None)
    judged = judge_run("experiment", margin, search=table, decision=decision, experiment_path=str(output))
    finished = finish_run(judged, output)
    return ExperimentResult(output=output, results_path=parquet, report_path=finished.report_path,
                            best_config_path=finished.best_config_path, best_recipe_path=finished.best_recipe_path,
                            selection=judged.best.selection.reason if judged.best is not None else "nothing to export",
                            aborted_reason=aborted, trials=len(table),
                            summary_path=output / SUMMARY_NAME if decision is not None else None,
                            answer=finished.answer)
