"""The confirm stage's rounds: paired, interleaved seeds for the candidates and the baseline, fixed or raced.

Each candidate and the O0 baseline train again over fresh seeds, **paired** (every recipe of a round gets the round's
seed) and **interleaved** (round by round, the order rotated each round). ``boosttune bench`` runs the same rounds over
a fixed matrix. Runs are records in a :class:`~boosttune.execution.runs.RecordStore`, so an interrupted stage resumes;
the training is injected (``train``), so neither Ray nor MindSpore is needed here. Their figures:
:mod:`boosttune.stats.confirmed`. Why, and what was measured: docs/design/race.md.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import numpy as np
import pandas as pd

from boosttune.config.recipe import kin_of, methods_of, short_name
from boosttune.errors import ConfigError, DataError
from boosttune.execution.runs import RecordStore, RunRecord, RunSpec
from boosttune.search.speed import stopped_for_speed
from boosttune.tables.states import FINISHED, RunStatus
from boosttune.objective import ACCURACY, Objective
from boosttune.tables.results import (
    canonical_json,
    finite,
    search_reference,
    table_objective,
)
from boosttune.stats.confirmed import confirm_table, round_figures, summarize
from boosttune.stats.decisions import Exit
from boosttune.stats.job import charge_variances
from boosttune.stats.handoff import (
    MIN_P_ACCEPTABLE,
    Choice,
    choose,
    observed_spread,
    prospect,
    search_noise,
)
from boosttune.stats.race import REFERENCE_NOISE, Noise, Race, RaceRules
from boosttune.stats.margin import Margin
from boosttune.tables.confirm_runs import BASELINE_NAME

__all__ = [
    "Candidate",
    "RaceOutcome",
    "TrainRound",
    "baseline_candidate",
    "paired_schedule",
    "pick_candidates",
    "recipe_identity",
    "run_paired",
    "run_race",
]


@dataclass(frozen=True)
class Candidate:
    """A recipe to confirm: its name in the tables, the recipe document, and why it was chosen."""

    name: str
    recipe: dict[str, Any]
    why: str
    preset: str | None = None


def recipe_identity(recipe_json: str) -> str:
    """The recipe as canonical JSON without its seed and target: what makes two runs the same recipe."""
    recipe = json.loads(recipe_json)
    for key in ("seed", "target", "target_accuracy", "planned_epochs"):
        recipe.pop(key, None)
    return canonical_json(recipe)


BASELINE_WHY = "the O0 baseline every figure is relative to"


def _baseline_row(table: pd.DataFrame) -> pd.Series:
    finished = table[table["status"].isin(FINISHED)]
    baseline = finished[finished["is_baseline"].astype(bool)]
    if baseline.empty:
        raise DataError("results: no finished O0 baseline to confirm against; rerun the experiment")
    return baseline.iloc[0]


def baseline_candidate(table: pd.DataFrame) -> Candidate:
    """The search's O0 baseline as the confirm stage trains it (the first of :func:`pick_candidates`).

    Raises:
        DataError: the table has no finished O0 baseline.
    """
    row = _baseline_row(table)
    return Candidate(BASELINE_NAME, json.loads(row["recipe_json"]), BASELINE_WHY, BASELINE_NAME)


def pick_candidates(table: pd.DataFrame, *, margin: Margin, max_candidates: int = 3, screen: float = 3.0,
                    noise: Noise | None = None,
                    min_p: float = MIN_P_ACCEPTABLE, read_gain: bool = True) -> list[Candidate]:
    """The baseline, the O1/O2-equivalent presets (finished, or stopped by the search for their speed alone:
    :mod:`boosttune.search.speed`), and the searched recipes the race can likely confirm.

    A searched candidate is a finished trial within ``screen`` of the baseline's objective on its one seed, at least
    ``min_p`` likely acceptable (:mod:`boosttune.stats.handoff`: truly faster and within ``margin``, read from
    its one seed with the search's noise, ``noise`` per paired seed widened by ``search_noise``; a trial a little
    slower on its seed may still be), by that chance times its log speed-up,
    one per family (the boost algorithms it switches on) before a second of any family, and no place for a
    near-copy of a chosen one (the same kin, figures within the search's noise:
    :func:`~boosttune.stats.handoff.near_copy`). ``noise``: the device's (None: the reference table's;
    its gain sd is in accuracy points, so another objective with no measured gain noise is judged by the screen).
    A search whose O0 runs lie further apart than the handoff assumes (SEARCH_SPREAD_SD a run) reads its speed-ups
    with the spread they show. ``read_gain`` False (the confirm race trains a longer job than the search's, whose
    accuracy the search's does not predict): a trial is screened by ``screen`` alone, its one-seed gain not read,
    and the scheduler's stopped trials are candidates too.

    Raises:
        DataError: the table has no finished O0 baseline.
    """
    finished = table[table["status"].isin(FINISHED if read_gain else (*FINISHED, RunStatus.STOPPED))]
    seen: set[str] = set()
    chosen = [_candidate(_baseline_row(table), BASELINE_NAME, BASELINE_WHY, BASELINE_NAME, seen)]
    # a preset the search stopped for its speed (boosttune.search.speed) is raced all the same
    reasons = table["reason"] if "reason" in table else pd.Series(None, index=table.index, dtype=object)
    slow = table[(table["status"] == RunStatus.STOPPED) & reasons.map(stopped_for_speed).astype(bool)]
    raced = pd.concat([finished, slow[~slow.index.isin(finished.index)]])
    presets = raced[raced["preset"].notna() & (raced["preset"] != BASELINE_NAME)]
    for _, row in presets.iterrows():  # MindSpore's own claims get a verdict on every run
        chosen.append(_candidate(row, str(row["preset"]), "MindSpore's preset as this device runs it",
                                 str(row["preset"]), seen))
    objective = table_objective(table)
    noise = noise or REFERENCE_NOISE
    gain_sd = noise.gain_sd if read_gain and (objective.fraction or noise is not REFERENCE_NOISE) else None
    drop = margin.value
    rows = {}  # not only those faster on their seed: a 1.09x recipe reads below 1 in one search in six
    screened = finished[(finished["speedup_vs_baseline"] > 0) & ~finished["is_baseline"].astype(bool)
                        & (finished["preset"] != BASELINE_NAME).fillna(True)  # O0 trained again: the reference
                        & (finished["objective_gain"] >= -screen)]
    for index, row in screened.sort_values("speedup_vs_baseline", ascending=False, kind="stable").iterrows():
        identity = recipe_identity(row["recipe_json"])
        if identity not in seen and identity not in rows:  # a preset, or a recipe again with another seed
            rows[identity] = (index, row)
    speed_sd, gain_sd = search_noise(noise.speed_sd, gain_sd, objective.fraction, spread=_spread(table))
    prospects = [prospect(identity, methods_of(json.loads(row["recipe_json"])), float(row["speedup_vs_baseline"]),
                          float(row["objective_gain"]), max_drop=drop, speed_sd=speed_sd, gain_sd=gain_sd,
                          screen=screen, kin=kin_of(json.loads(row["recipe_json"])))
                 for identity, (_, row) in rows.items()]
    for choice in choose(prospects, max_candidates, min_p, noise=(speed_sd, gain_sd)):
        row = rows[choice.prospect.key][1]
        chosen.append(_candidate(row, _trial_name(row), _why(choice, objective, drop, gain_sd, read_gain), None,
                                 seen))
    return [c for c in chosen if c is not None]


def _spread(table: pd.DataFrame) -> float:
    """A run's speed spread in this search, from its O0 runs (:func:`~boosttune.stats.handoff.observed_spread`)."""
    reference = search_reference(table) if "throughput_sps" in table else None  # a replay's table has no speeds
    return observed_spread(reference.runs if reference is not None else ())


def _candidate(row: pd.Series, name: str, why: str, preset: str | None, seen: set[str]) -> Candidate | None:
    """The row as a candidate; None when its recipe is one already chosen (``seen`` gains it)."""
    identity = recipe_identity(row["recipe_json"])
    if identity in seen:
        return None
    seen.add(identity)
    return Candidate(name=name, recipe=json.loads(row["recipe_json"]), why=why, preset=preset)


def _trial_name(row: pd.Series) -> str:
    name = next(str(row[c]) for c in ("preset", "label", "trial_id") if c in row and pd.notna(row[c]))
    if name == str(row["trial_id"]):  # a searched trial without a name: what it switches on, its id to look it up
        name = f"{short_name(json.loads(row['recipe_json']))} ({name})"
    return name


def _why(choice: Choice, objective: Objective, max_drop: float, gain_sd: float | None,
         read_gain: bool = True) -> str:
    p = choice.prospect
    spec = "+.1f" if objective.fraction else "+.3g"
    within = (f"within {objective.format_gain(max_drop, '.1f' if objective.fraction else '.3g')} of O0"
              if gain_sd is not None
              else "within the screen (its noise unknown)" if read_gain
              else "within the search's lossy bound (its accuracy judged by the race, at the planned job)")
    return (f"searched trial, {p.speedup:.2f}x, {objective.format_gain(p.gain, spec)} on one seed: "
            f"{100 * p.p_acceptable:.0f}% likely acceptable ({100 * p.p_faster:.0f}% faster, {100 * p.p_within:.0f}% "
            f"{within}); {choice.family_rule}")


def paired_schedule(names: Sequence[str], seeds: Sequence[int]) -> list[tuple[int, int, str]]:
    """(round, seed, recipe) in run order: every recipe once per round, the order rotated each round."""
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds: {list(seeds)} repeats a seed; paired rounds need distinct seeds")
    order = list(names)
    return [(index, seed, order[(index + k) % len(order)])
            for index, seed in enumerate(seeds) for k in range(len(order))]


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "recipe"


TrainRound = Callable[[list[RunSpec]], list[RunRecord]]  # a round's runs trained together, their records in order


def run_paired(candidates: Sequence[Candidate], seeds: Sequence[int], *, store: RecordStore, role: str,
               train: Callable[[RunSpec], RunRecord], log: Callable[[str], None] = print,
               train_round: TrainRound | None = None) -> list[RunRecord]:
    """Train every candidate once per seed, paired and interleaved; keep what an earlier attempt finished, and print
    the figures so far after each round (judged where the run finishes, not here). ``train_round`` trains a round's runs together (their epochs in turn:
    :meth:`~boosttune.execution.start.StartedRun.train_round`); without it they train one after another."""
    names = [c.name for c in candidates]
    if len(set(names)) != len(names) or BASELINE_NAME not in names:
        raise ConfigError(f"recipes: names must be distinct and include the baseline {BASELINE_NAME!r}; got {names}")
    by_name = {c.name: c for c in candidates}
    schedule = paired_schedule(names, seeds)
    done = 0
    for index, seed in enumerate(seeds):
        order = [name for i, s, name in schedule if i == index]
        for name, record, kept in _train_round([by_name[n] for n in order], index, seed, store=store, role=role,
                                               train=train, train_round=train_round):
            done += 1
            log(f"{role} [{done}/{len(schedule)}] round {index + 1}, seed {seed}, {name}: "
                + ("kept from an earlier attempt" if kept else _run_line(record)))
        if index > 0:
            log(_running_summary(list(store), round_count=index + 1))
    return list(store)


def _spec(candidate: Candidate, index: int, seed: int, role: str) -> RunSpec:
    recipe = {**{k: v for k, v in candidate.recipe.items() if k != "target_accuracy"}, "seed": seed, "target": None}
    return RunSpec(run_id=f"{role}-s{seed}-{_slug(candidate.name)}", role=role, recipe=recipe, label=candidate.name,
                   preset=candidate.preset, round=index)  # type: ignore[arg-type]


def _train_round(candidates: Sequence[Candidate], index: int, seed: int, *, store: RecordStore, role: str,
                 train: Callable[[RunSpec], RunRecord],
                 train_round: TrainRound | None) -> Iterator[tuple[str, RunRecord, bool]]:
    """The runs of round ``index`` in order, (name, record, kept): from the store where an earlier attempt finished
    them (kept), the others trained, together by ``train_round`` when given, else one after another as they are
    asked for."""
    specs = [_spec(c, index, seed, role) for c in candidates]
    missing = {spec.run_id for spec in specs if store.get(spec.run_id) is None}
    together = train_round is not None and len(missing) > 1
    if together:
        for record in train_round([spec for spec in specs if spec.run_id in missing]):
            store.put(record)
    for candidate, spec in zip(candidates, specs):
        if spec.run_id not in missing or together:
            yield candidate.name, store.get(spec.run_id), spec.run_id not in missing
        else:
            record = train(spec)
            store.put(record)
            yield candidate.name, record, False


class RaceOutcome(NamedTuple):
    """What a race trained and what it decided: the one decision every file, page and line of the run reads."""

    records: list[RunRecord]
    race: Race | None  # None: not one round ran (the budget could not pay for the first)


def run_race(candidates: Sequence[Candidate], seeds: Sequence[int], *, store: RecordStore, role: str,
             train: Callable[[RunSpec], RunRecord], rules: RaceRules, margin: Margin,
             log: Callable[[str], None] = print, train_round: TrainRound | None = None) -> RaceOutcome:
    """Race the candidates against the baseline (:mod:`boosttune.stats.race`): paired, interleaved rounds of
    the baseline and the candidates still racing, one seed of ``seeds`` each, until none races, the seeds run out
    or the budget cannot pay for the next round; a candidate still racing then leaves undecided; judged at ``margin``
    (the experiment's, resolved against its baseline stage's run). Runs an earlier
    attempt finished are kept, not trained again (and judged again in their rounds, as they were);
    ``train_round`` as in :func:`run_paired`."""
    names = [c.name for c in candidates]
    if len(set(names)) != len(names) or BASELINE_NAME not in names or len(names) < 2:
        raise ConfigError(f"recipes: names must be distinct and include the baseline {BASELINE_NAME!r} and a "
                          f"candidate; got {names}")
    by_name = {c.name: c for c in candidates}
    race: Race | None = None
    runs_spent, seconds_spent, noted = 0, 0.0, 0
    for index, seed in enumerate(seeds):
        racing = race.racing if race is not None else [n for n in names if n != BASELINE_NAME]
        if not racing:
            break
        order = [BASELINE_NAME, *racing]
        per_run = seconds_spent / runs_spent if runs_spent else None
        if not rules.fits(len(order), runs_spent, seconds_spent, per_run):
            log(f"{role}: the budget ({rules.budget_text()}) cannot pay for round {index + 1} ({len(order)} runs; "
                f"{runs_spent} spent)")
            break
        order = order[index % len(order):] + order[:index % len(order)]
        started = time.monotonic()
        for k, (name, record, kept) in enumerate(_train_round([by_name[n] for n in order], index, seed, store=store,
                                                              role=role, train=train, train_round=train_round),
                                                 start=1):
            runs_spent += 1
            seconds_spent += (float(record.metrics.get("wall_s") or 0.0) if kept else time.monotonic() - started)
            started = time.monotonic()
            log(f"{role} round {index + 1} [{k}/{len(order)}], seed {seed}, {name}: "
                + ("kept from an earlier attempt" if kept else _run_line(record)))
        table = confirm_table(list(store))
        if race is None:
            race = Race([n for n in names if n != BASELINE_NAME], rules, margin.value)
        race.charge_var = charge_variances(table)  # the compiles so far: more fresh ones, a smaller error
        for standing in race.observe(seed, round_figures(table, index, racing)):
            log(f"{role}: {standing.name} leaves the race after round {index + 1} with {standing.n} paired seeds: "
                f"{Exit.TEXT[standing.exit]} ({standing.why})")
        for note in race.notes[noted:]:
            log(f"{role}: {note}")
        noted = len(race.notes)
        log(_race_line(race, runs_spent))
    if race is not None:
        race.out_of_budget()
    return RaceOutcome(list(store), race)


def _race_line(race: Race, runs_spent: int) -> str:
    racing = [s for s in race.standings.values() if s.racing]
    text = "; ".join(f"{s.name} {s.speedup:.3f}x, gain {np.mean(s.gains):+.3g} over {s.n} seeds" for s in racing)
    won = ", ".join(s.name for s in race.winners) or "none"
    return (f"after round {race.rounds} ({runs_spent} runs): still racing: {text or 'none'}; won: {won}")


def _run_line(record: RunRecord) -> str:
    if record.status == RunStatus.FAILED:
        return f"failed: {record.reason}"
    m = record.metrics
    sps, value = m.get("throughput_sps"), m.get("objective_value")
    objective = Objective.from_metrics(m) or ACCURACY
    return (f"{record.status}, {sps:.1f} samples/s, {objective.label} {objective.format_value(value)}, "
            f"compile {m.get('compile_s') or 0:.1f} s{' (cached)' if m.get('graph_cached') else ''}" if finite(sps) and finite(value) else record.status)


def _running_summary(records: list[RunRecord], round_count: int) -> str:
    table = confirm_table(records)
    objective = table_objective(table)
    summary = summarize(table)
    parts = [f"{row.recipe} {row.step_speedup:.3f}x per step ({row.step_ci_low:.3f}-{row.step_ci_high:.3f}), "
             f"{objective.format_gain(row.objective_gain, '+.1f' if objective.fraction else '+.3g')}"
             for row in summary.itertuples() if row.recipe != BASELINE_NAME and finite(row.step_ci_low)]
    return f"after {round_count} rounds: " + ("; ".join(parts) if parts else "no paired figures yet")
