"""The experiment's confirm stage, its policy: which searched recipes are candidates (the screen), which fresh
paired seeds they train on, fixed seeds or a race and its rules (budget, noise prior from the device's record).
The rounds are :mod:`boosttune.stages.rounds`; their figures and the race, :mod:`boosttune.stats.confirmed` and
:mod:`boosttune.stats.race`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Callable

import pandas as pd

from boosttune.config.experiment import (
    CONFIRM_SCREEN,
    LOSSY_DROP,
    RECOMMENDED_SEEDS,
    ExperimentConfig,
)
from boosttune.execution.runs import RecordStore, RunRecord, RunSpec
from boosttune.objective import Objective
from boosttune.tables.results import canonical_json
from boosttune.stages.baseline import last_epoch_gain
from boosttune.stages.rounds import (
    BASELINE_WHY,
    Candidate,
    TrainRound,
    baseline_candidate,
    pick_candidates,
    recipe_identity,
    run_paired,
    run_race,
)
from boosttune.tables.confirm_runs import BASELINE_NAME
from boosttune.stages.noise import NoiseRecord, RunMode, noise_record
from boosttune.search.speed import SpeedFloor
from boosttune.stats.handoff import MIN_P_ACCEPTABLE, slowest_handed_on
from boosttune.stats.race import REFERENCE_NOISE, Noise, Race, RaceRules
from boosttune.stats.race_plan import after_race, before_race, largest_noise
from boosttune.stats.margin import Margin, Tolerance

__all__ = ["ConfirmLength", "ConfirmOutcome", "confirm_length", "confirm_seeds", "default_budget_runs",
           "device_noise", "handoff", "judged_on_all", "race_rules", "run_confirm_stage", "run_mode"]


@dataclass(frozen=True)
class ConfirmOutcome:
    """The confirm stage's runs and its one decision: the race as it was decided live (None for fixed rounds, whose
    one look at every seed is taken where the runs are saved), and the rules it ran under."""

    records: list[RunRecord]
    rules: RaceRules | None = None
    race: Race | None = None


@dataclass(frozen=True)
class ConfirmLength:
    """How many epochs each confirm run trains, and why. ``planned``: trained at the planned job because the tuning
    job's accuracy does not predict it (the baseline was still improving at its end), so the handoff does not read
    a searched trial's accuracy gap beyond the search's lossy bound, and the race judges accuracy at this length."""

    epochs: int
    reason: str | None = None
    planned: bool = False


def confirm_length(config: ExperimentConfig, baseline_curve: list[dict], objective: Objective) -> ConfirmLength:
    """The confirm runs' length: ``confirm_epochs`` when set; else the planned job's (``base.planned_epochs``) when
    it is longer than the tuning job and the baseline was still improving at the end of it (a recipe's accuracy gap
    there says little about the planned job's: benchmarks/data/transfer/team-seq-12ep, an LSTM tuned at 3 epochs,
    GradientFreeze p=0.7 on 2 groups -5 to -12 pt behind O0 on its search seeds and +0.16 pt at the 12-epoch job);
    else the tuning job's own."""
    recipe = config.recipe
    planned = recipe.planned_epochs or recipe.epochs
    if config.confirm_epochs is not None:
        return ConfirmLength(config.confirm_epochs, f"confirm_epochs {config.confirm_epochs}",
                             planned=config.confirm_epochs == planned and planned != recipe.epochs)
    found = last_epoch_gain(baseline_curve, objective)
    if planned > recipe.epochs and found is not None and found[1]:
        return ConfirmLength(planned, f"the baseline was still improving at the end of the tuning job's "
                                      f"{recipe.epochs} epochs ({objective.format_gain(found[0])} in the last), so a "
                                      f"recipe's accuracy there does not predict the planned job's: the confirm race "
                                      f"trains the planned {planned} epochs (confirm_epochs to choose)", planned=True)
    return ConfirmLength(recipe.epochs)


def confirm_seeds(seed: int, count: int) -> list[int]:
    """Fresh seeds: none of them is the search's (so the confirmation is not fitted to it), and experiments with
    different ``seed`` values share none (``seed`` 0 gets 1000-1999, 1 gets 2000-2999, ...)."""
    return [(seed + 1) * 1000 + i for i in range(count)]


def default_budget_runs(seeds: int, recipes: int, presets: int, searched_places: int) -> int:
    """The race's default run budget: ``seeds`` paired seeds for every place, the baseline's, the ``presets``' and
    ``searched_places`` searched recipes' (or for the ``recipes`` raced, when more)."""
    return seeds * max(recipes, 1 + presets + searched_places)


def race_rules(config: ExperimentConfig, recipes: int, noise: Noise, presets: int = 0) -> RaceRules:
    """The race's rules from the experiment and the device's measured noise. The budget defaults to what a fixed
    stage of confirm_seeds costs with every place the handoff has filled: the baseline, the ``presets`` raced and
    all confirm_candidates searched places (or the ``recipes`` raced, when more). A handoff that found fewer likely
    recipes does not shrink it: the few it hands on are the ones that need the seeds (benchmarks/pipeline_replay.py:
    a budget sized to what was handed left a third of the main jobs undecided)."""
    runs = config.confirm_budget_runs
    if runs is None and config.confirm_budget_minutes is None:
        runs = default_budget_runs(config.confirm_seeds, recipes, presets, config.confirm_candidates)
    return RaceRules.with_noise(noise, alpha=config.confirm_alpha, max_seeds=config.confirm_max_seeds, max_runs=runs,
                                max_minutes=config.confirm_budget_minutes)


def capacity_note(config: ExperimentConfig, margin: float, unit: str) -> str | None:
    """What the confirm stage's budget can show, said by ``check`` before anything trains: with the experiment's
    ``confirm_candidates`` raced, the largest objective noise per paired seed at which its cap and budget show a
    lossless recipe within the margin in most races (None for a fixed confirm stage)."""
    if config.confirm_mode == "fixed":
        return None
    candidates = max(1, config.confirm_candidates) + 1  # the searched places and the O1 preset the start races
    rules = race_rules(config, candidates + 1, REFERENCE_NOISE, presets=1)
    race = Race([f"c{i}" for i in range(candidates)], rules, margin)
    return (f"confirm: with up to {candidates} candidates (confirm_candidates and the O1 preset), a budget of "
            f"{rules.budget_text()} and its last look at {race.rules.max_seeds} paired seeds, the race shows a lossless "
            f"recipe within the margin ({margin:g} {unit}) in 80% of races if this network's objective moves by at most "
            f"{largest_noise(race):.2g} {unit} per paired seed; the race measures it and says if it is more "
            "(confirm_budget_runs, confirm_max_seeds)")


def device_noise(config: ExperimentConfig, baseline: Candidate, objective: Objective,
                 turns: bool = False) -> tuple[NoiseRecord, Noise]:
    """The noise record of this device and workload, and the prior it gives the race (the reference's gain sd is in
    accuracy points: none for another objective)."""
    record = noise_record(config.recipe.device_target, recipe_identity(canonical_json(baseline.recipe)),
                          run_mode(config, turns))
    noise = record.noise()
    if noise is REFERENCE_NOISE and not objective.fraction:
        noise = replace(noise, gain_sd=None)
    return record, noise


def run_mode(config: ExperimentConfig, turns: bool = False) -> RunMode:
    """How the confirm stage makes its runs: the experiment's worker mode and graph cache, its ranks per run, and
    whether a round's runs take their epochs in turn (else one run after another)."""
    return RunMode(config.warm_workers, config.cache_graphs, config.workers_per_trial, 1, turns)


def run_confirm_stage(config: ExperimentConfig, table: pd.DataFrame, margin: Margin, output: Path,
                      train: Callable[[RunSpec], RunRecord], log: Callable[[str], None],
                      train_round: TrainRound | None = None, length: ConfirmLength | None = None) -> ConfirmOutcome:
    """The experiment's confirm stage: the candidates that passed the screen, trained again on fresh paired seeds
    against the baseline, in a race (the default) or a fixed number of seeds; the runs and the decision.
    ``margin`` is the experiment's, on its model's objective; the screen is taken in the same objective.
    ``train_round``: a round's runs trained together, their epochs in turn (None: one after another); ``length``:
    the runs' epochs (:func:`confirm_length`; None: the tuning job's)."""
    turns = train_round is not None
    candidates, record, noise = handoff(config, table, margin, turns, length)
    store = RecordStore(output / "confirm")
    if config.confirm_mode == "fixed" or len(candidates) < 2:
        seeds = confirm_seeds(config.seed, config.confirm_seeds)
        log(f"confirm: {len(candidates)} recipes x {len(seeds)} paired seeds {seeds}, interleaved"
            + ("" if len(candidates) > 1 else " (only the baseline: no searched recipe was likely enough to be acceptable)")
            + ("" if len(seeds) >= RECOMMENDED_SEEDS else
               f" ({RECOMMENDED_SEEDS} or more seeds recommended: --confirm-seeds)"))
        log_candidates(candidates, log)
        return ConfirmOutcome(run_paired(candidates, seeds, store=store, role="confirm", train=train, log=log,
                                         train_round=train_round))
    presets = sum(c.preset not in (None, BASELINE_NAME) for c in candidates)
    rules = race_rules(config, len(candidates), noise, presets)
    cap = rules.within_budget(len(candidates) - 1).max_seeds
    seeds = confirm_seeds(config.seed, cap)
    log(f"confirm: a race of {len(candidates) - 1} candidates against the baseline, paired and interleaved rounds "
        f"on seeds {seeds[0]}, {seeds[1]}, ...; budget {rules.budget_text()}; a candidate wins when shown faster and "
        f"non-inferior (family-wise level {rules.alpha:g}, {rules.min_seeds} paired seeds at least), leaves when "
        f"likely slower or beyond the margin (one-sided {100 * rules.drop_confidence:g}%), and stops undecided at "
        f"{cap} seeds, the design's last look ("
        + ("confirm_max_seeds" if config.confirm_max_seeds is not None and cap == config.confirm_max_seeds
           else "what the budget pays one candidate" if rules.max_runs is not None else "the default cap") + ")")
    log(f"confirm: the noise the race starts from: {noise.text()}"
        + ("; it steers the drops only, and this race's runs are added to the device's record"
           if noise.df == 0 else "; the race's own runs join it"))
    planned = before_race(Race([c.name for c in candidates if c.name != BASELINE_NAME], rules, margin.value),
                          noise.gain_sd, noise.df, margin.objective.unit)
    if planned:
        log(f"confirm: {planned}")
    log_candidates(candidates, log)
    records, race = run_race(candidates, seeds, store=store, role="confirm", train=train, rules=rules, log=log,
                             margin=margin, train_round=train_round)
    if race is not None:
        if race.record_note():
            log(f"confirm: {race.record_note()}")
        if after_race(race, margin.objective.unit):
            log(f"confirm: {after_race(race, margin.objective.unit)}")
        record.add(race, race_id=str(output.resolve()), mode=run_mode(config, turns))
    return ConfirmOutcome(records, rules, race)


def handoff(config: ExperimentConfig, table: pd.DataFrame, margin: Margin, turns: bool = False,
            length: ConfirmLength | None = None) -> tuple[list[Candidate], NoiseRecord, Noise]:
    """The candidates (:func:`~boosttune.stages.rounds.pick_candidates`: the searched ones by how likely they
    are acceptable at ``margin`` given the device's noise), the device's noise record and the race's prior. The
    handoff reads a one-seed gain with the reference's accuracy noise when the record has measured none. Confirmed
    at the planned job because the tuning job's accuracy does not predict it (``length.planned``), a searched trial
    is screened by speed and by the search's lossy bound only, the scheduler's stopped trials included (stopped for
    the accuracy the tuning job read)."""
    length = length or ConfirmLength(config.recipe.epochs)
    baseline = baseline_candidate(table)
    record, noise = device_noise(config, _as_confirmed(config, baseline, length), margin.objective, turns)
    seen_with = noise if noise.gain_sd is not None or not margin.objective.fraction else \
        replace(noise, gain_sd=REFERENCE_NOISE.gain_sd)
    if length.planned:
        screen = Tolerance(margin.objective, None, LOSSY_DROP).on(table).value
        picked = pick_candidates(table, max_candidates=config.confirm_candidates, screen=screen, margin=margin,
                                 noise=seen_with, read_gain=False)
    else:
        screen = Tolerance(margin.objective, config.confirm_screen, CONFIRM_SCREEN).on(table).value
        picked = pick_candidates(table, max_candidates=config.confirm_candidates, screen=screen, margin=margin,
                                 noise=seen_with)
    return [_as_confirmed(config, c, length) for c in picked], record, noise


def speed_floor(config: ExperimentConfig, baseline: RunRecord, objective: Objective, turns: bool = False,
                length: ConfirmLength | None = None) -> SpeedFloor:
    """The search's speed floor at the handoff's bar (:mod:`boosttune.search.speed`): the device's noise as
    :func:`handoff` will read it for this baseline (its record for the confirm stage's runs, else the reference's)."""
    candidate = _as_confirmed(config, Candidate(BASELINE_NAME, baseline.recipe, BASELINE_WHY, BASELINE_NAME),
                              length or ConfirmLength(config.recipe.epochs))
    _, noise = device_noise(config, candidate, objective, turns)
    return SpeedFloor(partial(slowest_handed_on, noise.speed_sd), MIN_P_ACCEPTABLE)


def _as_confirmed(config: ExperimentConfig, candidate: Candidate, length: ConfirmLength | None = None) -> Candidate:
    """The candidate as the confirm stage trains it: for ``length.epochs`` (None: its own), judged on every
    held-out sample (``confirm_eval_all``) and evaluated after its last epoch only, unless ``confirm_curves`` asks
    for every epoch's."""
    if length is not None and candidate.recipe.get("epochs") != length.epochs:
        candidate = replace(candidate, recipe={**candidate.recipe, "epochs": length.epochs})
    candidate = judged_on_all(candidate) if config.confirm_eval_all else candidate
    if config.confirm_curves or candidate.recipe.get("eval_every_epoch") is False:
        return candidate
    return replace(candidate, recipe={**candidate.recipe, "eval_every_epoch": False})


def judged_on_all(candidate: Candidate) -> Candidate:
    """The candidate with its objective from every held-out sample of a built-in data set (a builder's own data
    keeps its own final evaluation, if it has one)."""
    data = candidate.recipe.get("data")
    if not isinstance(data, dict) or data.get("final_val_limit") is not None:
        return candidate
    return Candidate(candidate.name, {**candidate.recipe, "data": {**data, "final_val_limit": "all"}},
                     candidate.why, candidate.preset)


def log_candidates(candidates, log: Callable[[str], None]) -> None:
    for candidate in candidates:
        log(f"  {candidate.name}: {candidate.why}")
