"""The search: Ray Tune + Optuna over boost recipes, each trial a Ray Train run of MindSpore.

The search's entry: it builds Ray Tune's Tuner from the trial function below and the hooks of
:mod:`boosttune.search.hooks`, runs it, and reads the outcome. Every trial writes its own record file under
``<output>/trials/`` as it ends, so an interrupted run loses nothing already finished. Recipes more than
``lossy_drop`` below O0 at the epoch they reached are told to Optuna as infeasible, and the algorithm that made
one so is left out of the rest of the search (:mod:`boosttune.search.lossy`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from ray import tune
from ray.tune.schedulers import ASHAScheduler
from ray.tune.search import Searcher
from ray.tune.search.optuna import OptunaSearch

from boosttune.config.experiment import ExperimentConfig
from boosttune.errors import BoosttuneError, ConfigError, TrialError, describe_error
from boosttune.execution.provenance import redact
from boosttune.execution.ray import trial_driver_resources
from boosttune.execution.ray_train import train_run
from boosttune.execution.runs import RecordStore, RunRecord, RunSpec
from boosttune.objective import ACCURACY, Objective
from boosttune.ray_internals import optuna_study, optuna_told, optuna_trial
from boosttune.search.hooks import (
    CancelEnded,
    FailureBudget,
    FailureStopper,
    Progress,
    RecordStopped,
    UnlearnedFirst,
    study_left_out,
)
from boosttune.search.lossy import CONSTRAINT, UNSETTLED, AvoidLossy, LossyJudge, constrainable
from boosttune.search.resume import beyond_state, left_to_run, not_recorded, set_aside, state_reads_back
from boosttune.search.scheduler import NOISE_FLOOR_PT, BaselineCurve, MultiObjectiveASHA
from boosttune.search.setup import CLOSING_RUN, SearchSetup
from boosttune.search.speed import stopped_for_speed
from boosttune.space import define_by_run
from boosttune.tables.confirm_runs import BASELINE_NAME
from boosttune.tables.states import RunStatus

# Ray's OptunaSearch (subclassed below) loads Optuna with it: about 0.2 s on top of ray.tune's own import.

__all__ = ["PROGRESS_COLUMNS", "progress_columns", "SearchOutcome", "make_sampler", "tune_metric",
           "progress_metrics", "run_search", "startup_trials"]

_TTA_PENALTY_S = 1e6


def tune_metric(config: ExperimentConfig, objective: Objective = ACCURACY) -> tuple[Any, Any]:
    """(metric, mode) as OptunaSearch takes them: the builder's objective in its own direction."""
    if config.objective == "pareto":
        return ["throughput_sps", "objective_value"], ["max", objective.sense]
    if config.objective == "constrained":
        return "constrained_score", "max"
    return "tta_score_s", "min"


def _scores(metrics: dict[str, Any], setup: SearchSetup) -> dict[str, float]:
    """Objective values for every report; never None (Optuna cannot tell a None)."""
    objective = setup.objective
    throughput = float(metrics.get("throughput_sps") or 0.0)
    value = metrics.get("objective_value")
    value = objective.worst if value is None or not math.isfinite(value) else float(value)
    shortfall = max(0.0, -setup.max_drop - objective.gain(value, setup.baseline_objective))
    time_to_target = metrics.get("time_to_target_s")
    return {
        "throughput_sps": throughput,
        "objective_value": value,
        "objective_score": objective.oriented(value),  # higher is better, whatever the objective's direction
        # Within the allowed drop, faster is better; beyond it, every unit (point) lost costs 10% of the speed.
        "constrained_score": throughput if shortfall == 0 else throughput / (1.0 + 0.1 * shortfall) - 1e3,
        "tta_score_s": float(time_to_target) if time_to_target is not None
        else _TTA_PENALTY_S + float(metrics.get("train_s") or 0.0),
    }


# Tune's progress table shows the first numeric metrics of a trial's report: these, in the user's terms.
PROGRESS_COLUMNS = ("epoch", "throughput_sps", "speedup_vs_baseline", "val_acc")


def progress_columns(objective: Objective = ACCURACY) -> tuple[str, ...]:
    """The progress columns for ``objective``: the last one is its held-out value under its own name."""
    return (*PROGRESS_COLUMNS[:-1], objective.label)


def progress_metrics(report: dict[str, Any], baseline_sps: float | None, baseline_value: float | None,
                     objective: Objective = ACCURACY) -> dict[str, Any]:
    """Rank 0's report, flat, led by the progress columns (speed-up and objective gain added), then the rest."""
    flat = {k: v for k, v in report.items() if not isinstance(v, (dict, list))}
    sps, value = flat.get("throughput_sps"), flat.get("objective_value")
    flat["speedup_vs_baseline"] = sps / baseline_sps if sps and baseline_sps else None
    flat["objective_gain"] = (objective.gain(value, baseline_value)
                              if value is not None and baseline_value is not None else None)
    flat["stage"] = "search"
    if flat.get(objective.label) is None:  # a worker's report names it so; a replayed record may not
        flat[objective.label] = value
    return {**{k: flat.get(k) for k in progress_columns(objective)}, **flat}


def _tune_metrics(report: dict[str, Any], setup: SearchSetup) -> dict[str, Any]:
    """Rank 0's report as Tune gets it: the objective scores added, no nested values (Tune flattens poorly)."""
    flat = progress_metrics(report, search_throughput_reference(setup), setup.baseline_objective, setup.objective)
    flat.update(_scores(flat, setup))
    return flat


def _report_callback(setup: SearchSetup):
    """For a one-off Ray Train run: its controller hands every report of rank 0 to the trial."""
    from ray.tune.integration.ray_train import TuneReportCallback

    class ObjectiveReport(TuneReportCallback):
        def after_report(self, run_context, metrics, checkpoint):
            super().after_report(run_context, [_tune_metrics(metrics[0], setup)], checkpoint)

    return ObjectiveReport()


def _progress(metrics: dict[str, Any], setup: SearchSetup) -> dict[str, Any]:
    return progress_metrics(metrics, search_throughput_reference(setup), setup.baseline_objective, setup.objective)


def _trial(config: dict[str, Any], setup: SearchSetup) -> None:
    """One Tune trial: rebuild the recipe from Optuna's params, train it with Ray Train."""
    trial_id = tune.get_context().get_trial_id()
    spec = setup.spec(trial_id, dict(config))
    key = spec.key
    closing = bool(config.get(CLOSING_RUN))  # O0 timed again at the search's end: trained, never answered

    done = setup.records.get(trial_id)
    if done is not None:
        # Finished before the driver died but after Tune last saved its state: replay, do not retrain.
        if done.status == RunStatus.FAILED:
            raise TrialError(done.reason or "failed")
        tune.report({**_progress(done.metrics, setup), **_scores(done.metrics, setup), "replayed": True})
        return

    first = setup.first_of_key.get(key)
    again = closing or _remeasures_baseline(spec, first, setup)
    if first is not None and first.run_id != trial_id and not again:  # an equivalent recipe was trained: not twice
        tune.report({**_progress(first.metrics, setup), **_scores(first.metrics, setup),
                     "duplicate_of": first.run_id})
        setup.records.put(first.duplicate(spec))
        return

    record = train_run(spec, output=setup.output, num_workers=setup.workers, env=setup.env, storage=setup.storage,
                       accelerator_type=setup.accelerator_type, pool=setup.pool,
                       callbacks=None if setup.pool else [_report_callback(setup)],
                       on_report=lambda metrics: tune.report(_tune_metrics(metrics, setup)))
    earlier = setup.records.get(trial_id)
    if earlier is not None and earlier.status == RunStatus.STOPPED:
        return  # the scheduler stopped it and recorded where; what the interrupted run returned is not a result
    setup.records.put(record)
    if record.status == RunStatus.FAILED:
        raise TrialError(record.reason or "failed")
    if first is None:
        setup.first_of_key.put(record, name=key)
    if again and not closing:
        setup.first_of_key.put(record, name=f"{key}{REMEASURED}")


EXPERIMENT_STATE_PERIOD_S = 1  # how often Tune saves its experiment state (seconds; see _run_config)

# The Optuna trial's user attribute naming the Tune trial it was drawn for (its run record's id).
TUNE_TRIAL_ATTR = "tune_trial_id"

# Where the search's own O0 run is kept beside the baseline stage's (under the O0 key, in the dedup store).
REMEASURED = ".remeasured"


def _remeasures_baseline(spec: RunSpec, first: RunRecord | None, setup: SearchSetup) -> bool:
    """Whether this trial is O0's start point training again: once per search, with ``remeasure_baseline``. Every
    searched speed-up is a ratio to O0 timed in the search, as its trials are: the baseline stage trains O0 without a
    Tune trial beside it, about 10% faster (2026-12-06), so a ratio to it reads every recipe low
    (:func:`~boosttune.tables.results.search_reference`)."""
    return (setup.remeasure_baseline and first is not None and first.role == "baseline"
            and spec.preset == first.preset and setup.first_of_key.get(f"{spec.key}{REMEASURED}") is None)


@dataclass
class SearchOutcome:
    output: Path
    records: list[RunRecord]
    aborted_reason: str | None
    left_out: dict[str, str] = field(default_factory=dict)  # boost.<name> -> why the lossy rule left it out


def startup_trials(num_trials: int, start_points: int) -> int:
    """Trials before the sampler models: the start points when there are some, else a third of the budget.

    Optuna's default (10 random trials for TPE and GP) is more than a small search's whole budget.
    """
    return max(2, start_points) if start_points else max(2, num_trials // 3)


def make_sampler(name: str, seed: int, n_startup: int):
    """The Optuna sampler ``name`` with ``n_startup`` trials before it models (GP needs PyTorch)."""
    import optuna

    if name == "gp":  # PyTorch is checked when the experiment is parsed, before anything trains
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=n_startup, deterministic_objective=False,
                                         warn_independent_sampling=False)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(2, n_startup))
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_startup)


def _storage(config: ExperimentConfig, output: Path):
    import optuna

    url = config.study_storage or f"sqlite:///{(output / 'optuna.db').resolve()}"
    try:
        return optuna.storages.RDBStorage(url), url
    except Exception as e:  # sqlalchemy raises many kinds for a bad URL
        raise ConfigError(f"study_storage: {redact(url)!r} is not a usable database URL ({type(e).__name__})") from None


def _settle_stale_trials(storage, config: ExperimentConfig, setup: SearchSetup, log: Callable[[str], None]) -> None:
    """Once the search has ended, settle the study's trials still RUNNING: an earlier driver stopped (killed, Ctrl-C)
    while they trained or before Tune took their end. One whose run record landed (the Tune trial id it carries,
    :data:`TUNE_TRIAL_ATTR`) is told that record's result, as OptunaSearch tells a trial's end; the rest are marked
    FAIL: Tune trained them again under other Optuna trials. The study then holds what the results do. (Done at the
    end, not on resume: Tune resumes its unfinished trials first.)"""
    import optuna

    try:
        study = optuna.load_study(study_name=config.name, storage=storage)
    except KeyError:  # the driver stopped before the study was created
        return
    metric, _ = tune_metric(config, setup.objective)
    told, failed = [], []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        record = setup.records.get(str(trial.user_attrs.get(TUNE_TRIAL_ATTR, "")))
        if record is None or record.role != "search" or record.status == RunStatus.FAILED:
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
            failed.append(str(trial.number))
            continue
        result = {**_progress(record.metrics, setup), **_scores(record.metrics, setup)}
        if setup.lossy is not None and constrainable(study):
            live = optuna.trial.Trial(study, trial._trial_id)  # Optuna 5.0 has no public accessor for the id
            live.set_constraint(CONSTRAINT, setup.lossy.violation(result))
            if stopped_for_speed(record.reason):
                live.set_user_attr(UNSETTLED, True)
        study.tell(trial.number, [result[m] for m in metric] if isinstance(metric, list) else result[metric])
        told.append(str(trial.number))
    if told:
        log(f"search: {len(told)} Optuna trial(s) whose run ended as a stopped driver's Tune saved its state told "
            f"their recorded result ({', '.join(told)})")
    if failed:
        log(f"search: {len(failed)} Optuna trial(s) left running by a stopped driver marked failed "
            f"({', '.join(failed)}); Tune trained them again")


def run_search(config: ExperimentConfig, output: Path, *, setup: SearchSetup, points: list[dict[str, Any]],
               resume: bool, log: Callable[[str], None]) -> SearchOutcome:
    """Run (or resume) the Tune experiment in ``output``; trial records land in output/trials."""
    metric, mode = tune_metric(config, setup.objective)
    n_startup = startup_trials(config.num_trials, len(points) + len(setup.outside))
    storage, url = _storage(config, output)
    single = isinstance(metric, str)
    scheduler = _scheduler(config, setup, single=single)
    tune_root = f"{setup.storage.rstrip('/')}/tune" if setup.storage else str((output / "tune").resolve())
    _log_start(config, setup, metric, n_startup, url, scheduler, log)
    closing = closing_point(setup, points)
    total = config.num_trials + bool(closing)  # the trials, and O0 closing the search
    run_config = _run_config(config, setup, tune_root, log, storage, trials=total)
    experiment_path = f"{tune_root}/{config.name}"
    restore, num_samples = resume and tune.Tuner.can_restore(experiment_path), total
    if restore and not state_reads_back(experiment_path):
        restore = False
        num_samples, points, setup, closing = _resume_from_study(
            config, setup, points, closing, experiment_path, log,
            why="does not read back whole (a driver stopped while Tune saved it)")
    elif restore and (late := beyond_state(experiment_path, _search_landed(setup))):
        restore = False
        num_samples, points, setup, closing = _resume_from_study(
            config, setup, points, closing, experiment_path, log,
            why=f"is older than {len(late)} trial record(s) ({', '.join(late)}: added and ended after Tune last "
                "saved it; restored, Tune would draw them again)")
    # StartedRun afresh, a seeded sampler would draw its first trials again: its seed moves on by the trials recorded.
    sampler = make_sampler(config.sampler, config.seed + total - num_samples, n_startup)
    trainable = tune.with_resources(tune.with_parameters(_trial, setup=setup), trial_driver_resources())
    if restore:
        log(f"search: resuming {experiment_path}")
        _fit(tune.Tuner.restore(experiment_path, trainable=trainable, resume_unfinished=True, resume_errored=False,
                                restart_errored=False), output)
    elif num_samples:
        # Built only for a new search: OptunaSearch enqueues its start points in the study as it is made, and a
        # restored search (its searcher restored with it) would leave those copies WAITING for ever.
        searcher = _searcher(config, setup, metric, mode, points, sampler, storage, closing, num_samples)
        _fit(tune.Tuner(
            trainable,
            tune_config=tune.TuneConfig(
                search_alg=searcher, scheduler=scheduler, num_samples=num_samples,
                metric=metric if single else None, mode=mode if single else None,
                max_concurrent_trials=setup.max_concurrent, time_budget_s=config.time_budget_s,
                # On warm workers a trial's Tune actor only waits on its run: the next trial takes it, not a fresh
                # Python process each (~3 s on 2 cores). Not without them: a stopped trial's thread then waits on
                # its Ray Train run's teardown past the 2 s Tune gives a reused actor, and Tune errors the next trial.
                reuse_actors=setup.pool is not None,
            ),
            run_config=run_config,
        ), output)
    _settle_stale_trials(storage, config, setup, log)
    return _outcome(config, setup, output, storage)


def _search_landed(setup: SearchSetup) -> dict[str, float]:
    """Each search record's run id -> when its record landed (the file's time)."""
    return {record.run_id: setup.records.path(record.run_id).stat().st_mtime
            for record in setup.records if record.role == "search"}


def closing_point(setup: SearchSetup, points: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The config of the O0 run that closes the search (``remeasure_baseline``: its speed reference timed again after
    its trials, :class:`~boosttune.tables.results.Reference`), or None: O0's start point with :data:`CLOSING_RUN`."""
    if not setup.remeasure_baseline:
        return None
    o0 = next((point for point in points if setup.spec("closing", point).preset == BASELINE_NAME), None)
    return None if o0 is None else {**o0, CLOSING_RUN: True}


def _resume_from_study(config: ExperimentConfig, setup: SearchSetup, points: list[dict[str, Any]],
                       closing: dict[str, Any] | None, experiment_path: str, log: Callable[[str], None],
                       why: str) -> tuple[int, list[dict[str, Any]], SearchSetup, dict[str, Any] | None]:
    """Tune's saved state cannot be restored as it is (``why``: :mod:`boosttune.search.resume`): it is set aside, and
    the trials the records do not hold start afresh, from the Optuna study; (trials left, start points left, the
    setup, the closing O0 run where it is still to run)."""
    records = [record for record in setup.records if record.role == "search"]
    recorded = [record.key for record in records]
    closed = any(record.params.get(CLOSING_RUN) for record in records)  # trained: counted, not run again

    def key_of(point: dict[str, Any]) -> str:
        return setup.spec("start point", point).key

    left, points = left_to_run(config.num_trials + bool(closing or closed), recorded, points, key_of)
    closing = None if closed or not left else closing
    outside = not_recorded(setup.outside, recorded, key_of)
    aside = set_aside(experiment_path)
    log(f"search: Tune's saved state in {experiment_path} {why}; set aside in {aside}. The {left} trial(s) that the "
        f"{len(recorded)} trial records do not hold start afresh, from the Optuna study")
    return left, points, replace(setup, outside=outside), closing


def _scheduler(config: ExperimentConfig, setup: SearchSetup, *, single: bool):
    """Early stopping at epoch milestones: ASHA on one metric, the multi-objective ladder on two; None without."""
    epochs = setup.base.get("epochs", 1)
    if not config.early_stopping or epochs <= 1:
        return None
    if single:
        return ASHAScheduler(time_attr="epoch", max_t=epochs, grace_period=1, reduction_factor=2)
    scheduler = MultiObjectiveASHA(["throughput_sps", "objective_score"], time_attr="epoch", max_t=epochs,
                                   grace_period=1, reduction_factor=config.reduction_factor,
                                   margin=(0.0, setup.early_stop_margin), baseline=baseline_curve(setup),
                                   on_stop=RecordStopped(setup))
    scheduler.too_slow = _too_slow(setup, scheduler.ladder.milestones[-1])  # its own ladder's last rung
    return scheduler


def _too_slow(setup: SearchSetup, last_rung: int) -> Callable[[Any, dict[str, Any]], str | None] | None:
    """The speed floor as the scheduler asks it at each rung (:mod:`boosttune.search.speed`); None without one."""
    floor = setup.speed_floor
    if floor is None:
        return None

    def judge(trial: Any, result: dict[str, Any]) -> str | None:
        speeds, complete = o0_speeds(setup)
        return floor.verdict(preset=setup.spec(trial.trial_id, dict(trial.config)).preset,
                             throughput=result.get("throughput_sps"), rse=result.get("throughput_rse"),
                             epoch=int(result["epoch"]), o0_speeds=speeds, complete=complete,
                             last_rung=int(result["epoch"]) == last_rung)

    return judge


def o0_speeds(setup: SearchSetup) -> tuple[list[float], bool]:
    """O0's throughputs the search's speed-ups are ratios to, as far as known now, and whether that is final: the
    search's own O0 run once it finished (``remeasure_baseline``: timed in the search, as its trials are;
    :func:`~boosttune.tables.results.search_reference`), the baseline stage's run until then or without one."""
    baseline = [float(setup.baseline_throughput_sps)]
    if not setup.remeasure_baseline:
        return baseline, True
    keys = [key for key, name in setup.presets.items() if name == BASELINE_NAME]
    again = [setup.first_of_key.get(f"{key}{REMEASURED}") for key in keys]
    found = [r.metrics.get("throughput_sps") for r in again if r is not None]
    own = [float(v) for v in found if isinstance(v, (int, float)) and v > 0]
    return (own, True) if own else (baseline, False)


def search_throughput_reference(setup: SearchSetup) -> float:
    """The throughput a search trial's live speed-up is a ratio to (:func:`o0_speeds`, geometric mean)."""
    speeds, _ = o0_speeds(setup)
    return speeds[0] if len(speeds) == 1 else math.exp(sum(math.log(v) for v in speeds) / len(speeds))


def baseline_curve(setup: SearchSetup) -> BaselineCurve | None:
    """The O0 baseline's per-epoch objective as the scheduler judges trials by it (``objective_score``'s scale:
    gain units, higher is better); None without the baseline's curve (the scheduler then compares trials only)."""
    if not setup.baseline_by_epoch:
        return None
    objective = setup.objective
    by_epoch = {epoch: objective.oriented(value) for epoch, value in setup.baseline_by_epoch.items()}
    # The curve's own last epoch, not the final evaluation (often on more samples): the noise model's "final".
    return BaselineCurve(by_epoch, by_epoch[max(by_epoch)], setup.max_drop,
                         objective.tolerance(None, NOISE_FLOOR_PT, setup.baseline_objective))


def _scheduler_line(config: ExperimentConfig, setup: SearchSetup, scheduler: MultiObjectiveASHA) -> str:
    """What the multi-objective scheduler stops, in the user's units."""
    rungs, label, unit = ", ".join(map(str, scheduler.ladder.milestones)), setup.objective.label, setup.objective.unit
    how = f"multi-objective successive halving, reduction factor {config.reduction_factor:g}"
    curve = scheduler.ladder.baseline
    if curve is None:
        return (f"search: trials beaten on both speed and {label} (by more than {setup.early_stop_margin:.3g} {unit} "
                f"at epoch 1) at epoch {rungs} stop there ({how})")
    first, last = min(curve.by_epoch), max(curve.by_epoch)
    return (f"search: at epoch {rungs} a trial is judged against O0's {label} at the same epoch: one further behind "
            f"than {curve.allowed(first):.3g} {unit} at epoch {first} ({curve.allowed(last):.3g} {unit} at epoch "
            f"{last}: the allowed drop plus {curve.z:g} x an early reading's noise) and not closing its gap stops "
            f"there, as does one beaten on both speed and {label} by more than the noise ({how})")


def _floor_line(setup: SearchSetup, scheduler: MultiObjectiveASHA) -> str:
    """What the speed floor stops (:mod:`boosttune.search.speed`), at the bar O0's runs known now give."""
    floor, (speeds, complete) = setup.speed_floor, o0_speeds(setup)
    first, last = scheduler.ladder.milestones[0], scheduler.ladder.milestones[-1]
    later = "" if complete else ", and once the search's own O0 run is in (the reference moves)"
    return (f"search: a trial below {floor.slowest(speeds, 0.0):.2f}x O0 is too slow for the confirm stage to race "
            f"(less than {100 * floor.min_p:.0f}% likely faster with the search's noise): a preset stops at epoch "
            f"{first} (the confirm stage races it all the same), a searched trial at epoch {last}, where its speed has "
            f"settled{later}; O0 never")


def _log_start(config: ExperimentConfig, setup: SearchSetup, metric: Any, n_startup: int, url: str, scheduler: Any,
               log: Callable[[str], None]) -> None:
    how = "drawing at random" if config.sampler == "random" else f"modelling after {n_startup} trials"
    log(f"search: {config.num_trials} trials, objective {config.objective} ({metric}), sampler {config.sampler} "
        f"(seed {config.seed}, {how}), {setup.workers} worker(s) per trial, Optuna study {config.name!r} in {redact(url)}")
    if isinstance(scheduler, MultiObjectiveASHA):
        log(_scheduler_line(config, setup, scheduler))
        if scheduler.too_slow is not None:
            log(_floor_line(setup, scheduler))
    if setup.lossy is not None:
        objective = setup.objective
        log(f"search: a trial more than {setup.lossy_drop:.3g} {objective.unit} of {objective.label} below O0 at the "
            "epoch it reached is infeasible to Optuna (constraint 'lossy'); a boost algorithm that made one so, not "
            "shown to train in another trial, is left out of the rest of the search"
            + (f" unless named in search ({', '.join(sorted(setup.ctx.enabled))})" if setup.ctx.enabled else ""))


def _run_config(config: ExperimentConfig, setup: SearchSetup, tune_root: str, log: Callable[[str], None],
                storage: Any = None, trials: int | None = None):
    """Where Tune keeps the experiment, the progress lines, and the failure budget that ends a failing search."""
    budget = FailureBudget(config.max_failure_rate)
    progress = Progress(setup, trials or config.num_trials, log, storage, config.name)
    run_config = tune.RunConfig(
        name=config.name, storage_path=tune_root,
        callbacks=[budget, progress, *([CancelEnded(setup.pool)] if setup.pool else [])],
        stop=FailureStopper(budget),
        failure_config=tune.FailureConfig(max_failures=0, fail_fast=False), verbose=1,
    )
    # Tune saves its experiment state (which trials exist, the searcher's queue) on its own period, 10 s or more;
    # a driver killed between a trial's end and that save resumed into a search that suggested the trial again.
    # Once a second leaves a window in which a trial can be added and end (a duplicate answered from its twin's
    # record, a run shorter than a second): its record is then newer than the state, and a resumed search sets the
    # state aside and goes on from the Optuna study (boosttune.search.resume.beyond_state). Not at every step (0): Tune's loop steps ten times a
    # second, and saving at each took 4% of a core in the driver, at nice 0, beside the training ranks
    # (benchmarks/stage_speed.py's search condition, 2026-12-07: the driver's CPU 3.2-3.6 s over 36 s at every
    # step, 2.1 s once in 5 s).
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", str(EXPERIMENT_STATE_PERIOD_S))
    return run_config


def _searcher(config: ExperimentConfig, setup: SearchSetup, metric: Any, mode: Any, points: list[dict[str, Any]],
              sampler: Any, storage: Any, closing: dict[str, Any] | None = None, num_samples: int = 0) -> Searcher:
    """Optuna over the searched space, from the start points; the ones it cannot draw (slow knobs) first, the O0 run
    that closes the search (``closing``) last of ``num_samples``. With the lossy rule, the sampler leaves out the
    algorithms it convicts and every trial carries its ``lossy`` constraint."""
    judge = setup.lossy
    if judge is not None:
        sampler = AvoidLossy(sampler, judge.forced)
    searcher = _OptunaSearch(space=define_by_run(setup.ctx, setup.base), metric=metric, mode=mode,
                             points_to_evaluate=points, sampler=sampler, study_name=config.name, storage=storage,
                             judge=judge, records=setup.records)
    if not setup.outside and closing is None:
        return searcher
    return UnlearnedFirst(searcher, setup.outside, closing=[closing] if closing else None,
                          after=max(num_samples - 1, 0), lead=closing is not None and bool(points)
                          and setup.spec("lead", points[0]).preset == BASELINE_NAME)


class _OptunaSearch(OptunaSearch):
    """Ray Tune's OptunaSearch that also tells Optuna each trial's ``lossy`` constraint, just before it tells the trial.

    Tune calls ``on_trial_complete`` for a finished trial and for one its scheduler stopped (with the stopped trial's
    last result: its rung's figures), so both carry it. A study whose earlier trials lack it (begun before it
    existed) gets none: GP and NSGA-II need the same constraints on every trial.
    """

    def __init__(self, *args: Any, judge: LossyJudge | None = None, records: RecordStore | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.judge = judge
        self.records = records  # the search's run records: a stop for speed is marked UNSETTLED

    def suggest(self, trial_id: str) -> dict | None:
        """OptunaSearch's draw, the Optuna trial marked with Tune's ``trial_id`` (:func:`_settle_stale_trials`)."""
        config = super().suggest(trial_id)
        trial = optuna_trial(self, trial_id)
        if trial is not None and TUNE_TRIAL_ATTR not in trial.user_attrs:
            trial.set_user_attr(TUNE_TRIAL_ATTR, trial_id)
        return config

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        trial = optuna_trial(self, trial_id)
        if (self.judge is not None and result and not error and trial is not None
                and not optuna_told(self, trial_id) and constrainable(optuna_study(self))):
            trial.set_constraint(CONSTRAINT, self.judge.violation(result))
            record = self.records.get(trial_id) if self.records is not None else None
            if record is not None and stopped_for_speed(record.reason):
                trial.set_user_attr(UNSETTLED, True)
        super().on_trial_complete(trial_id, result=result, error=error)


def _fit(tuner: Any, output: Path) -> None:
    """``tuner.fit()``; a failure of Tune's own, as one line with the command that resumes."""
    try:
        tuner.fit()
    except BoosttuneError:
        raise
    except Exception as e:
        raise TrialError(f"the search stopped: {describe_error(e)}; resume with --resume --output {output}") from e


def _outcome(config: ExperimentConfig, setup: SearchSetup, output: Path, storage: Any = None) -> SearchOutcome:
    """The trial records, why the search was aborted when more of them failed than allowed, and what the lossy rule
    left out."""
    records = list(setup.records)
    # Judged from the records: Tune runs copies of the callback and stopper, not the budget it was given.
    searched = [r for r in records if r.role == "search"]
    failed = sum(r.status == RunStatus.FAILED for r in searched)
    aborted = None
    if len(searched) < config.num_trials and FailureBudget(config.max_failure_rate).judge(len(searched), failed):
        aborted = (f"aborted: {failed} of {len(searched)} trials failed, more than max_failure_rate "
                   f"{config.max_failure_rate}")
    left_out = study_left_out(setup, storage, config.name) if storage is not None else {}
    return SearchOutcome(output=output, records=records, aborted_reason=aborted, left_out=left_out)
