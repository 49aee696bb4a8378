"""The confirm stage: paired, interleaved seeds for the candidates and the baseline, and the verdict.

Each candidate and the O0 baseline train again over fresh seeds, **paired** (every recipe of a round gets the round's
seed) and **interleaved** (round by round, the order rotated each round). Per recipe, from the paired rounds: the
speed-up, the objective's gain (:mod:`boosttune.objective`), the speed-up per job (:mod:`boosttune.evaluation.job`),
the time to the target, a paired test and a verdict (:func:`boosttune.evaluation.stats.verdict`). ``boosttune bench``
runs the same rounds over a fixed matrix. Runs are records in a :class:`~boosttune.execution.runs.RecordStore`, so an
interrupted stage resumes; the training is injected (``train``), so neither Ray nor MindSpore is needed here.

Why, and what was measured: docs/design/race.md.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from boosttune.config.experiment import MAX_DROP
from boosttune.config.recipe import TrialRecipe, methods_of, short_name
from boosttune.errors import ConfigError, DataError
from boosttune.evaluation.job import TIE, break_even_steps, compile_charges, job_seconds, planned_epochs
from boosttune.evaluation.results import build_results_table, canonical_json, finite, table_objective
from boosttune.evaluation.handoff import MIN_P_ACCEPTABLE, Choice, choose, prospect, search_noise
from boosttune.evaluation.decisions import Exit, VerdictCode
from boosttune.evaluation.race import REFERENCE_NOISE, Noise, Race, RaceRules
from boosttune.evaluation.select import Tolerance
from boosttune.evaluation.stats import Interval, paired_delta, paired_ratio, ratio_interval, verdict
from boosttune.execution.runs import FINISHED, RecordStore, RunRecord, RunSpec
from boosttune.objective import ACCURACY, Objective

__all__ = [
    "BASELINE_NAME",
    "SUMMARY_COLUMNS",
    "TrainRound",
    "Candidate",
    "ConfirmedSelection",
    "baseline_candidate",
    "confirm_table",
    "paired_schedule",
    "pick_candidates",
    "recipe_identity",
    "replay_race",
    "run_paired",
    "run_race",
    "select_confirmed",
    "summarize",
    "time_to_accuracy",
]

BASELINE_NAME = "O0"
SUMMARY_COLUMNS = ("recipe", "n_seeds", "speedup", "speedup_ci_low", "speedup_ci_high", "e2e_speedup", "e2e_n",
                   "e2e_ci_low", "e2e_ci_high",
                   "objective_value", "objective_gain", "objective_gain_ci_low", "objective_gain_ci_high", "p_value",
                   "objective_p_value", "failed_runs", "seeds_to_show", "qualifies", "verdict", "verdict_text",
                   "objective", "gain_unit", "margin",  # margin: the max_drop judged at (named so on disk)
                   # per job at the planned length, compile charged fairly (boosttune.evaluation.job): the verdict's
                   # speed; break_even_steps: steps after which the recipe's job is the shorter
                   "job_speedup", "job_ci_low", "job_ci_high", "planned_epochs", "compile_charged_s",
                   "break_even_steps")


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


def pick_candidates(table: pd.DataFrame, *, max_candidates: int = 3, screen: float = 3.0,
                    max_drop: Tolerance | float | None = None, noise: Noise | None = None,
                    min_p: float = MIN_P_ACCEPTABLE) -> list[Candidate]:
    """The baseline, the O1/O2-equivalent presets, and the searched recipes the race can likely confirm.

    A searched candidate is a finished trial within ``screen`` of the baseline's objective on its one seed, at least
    ``min_p`` likely acceptable (:mod:`boosttune.evaluation.handoff`: truly faster and within ``max_drop``, read from
    its one seed with the search's noise, ``noise`` per paired seed widened by ``search_noise``; a trial a little
    slower on its seed may still be), by that chance times its log speed-up,
    one per family (the boost algorithms it switches on) before a second of any family. ``max_drop``: a Tolerance or a number in the
    objective's gain units (None: the experiment's default); ``noise``: the device's (None: the reference table's;
    its gain sd is in accuracy points, so another objective with no measured gain noise is judged by the screen).

    Raises:
        DataError: the table has no finished O0 baseline.
    """
    finished = table[table["status"].isin(FINISHED)]
    seen: set[str] = set()
    chosen = [_candidate(_baseline_row(table), BASELINE_NAME, BASELINE_WHY, BASELINE_NAME, seen)]
    presets = finished[finished["preset"].notna() & (finished["preset"] != BASELINE_NAME)]
    for _, row in presets.iterrows():  # MindSpore's own claims get a verdict on every run
        chosen.append(_candidate(row, str(row["preset"]), "MindSpore's preset as this device runs it",
                                 str(row["preset"]), seen))
    objective = table_objective(table)
    noise = noise or REFERENCE_NOISE
    gain_sd = noise.gain_sd if objective.fraction or noise is not REFERENCE_NOISE else None
    drop = Tolerance.of(max_drop, MAX_DROP, table).resolved_on(table)
    rows = {}  # not only those faster on their seed: a 1.09x recipe reads below 1 in one search in six
    screened = finished[(finished["speedup_vs_baseline"] > 0) & ~finished["is_baseline"].astype(bool)
                        & (finished["preset"] != BASELINE_NAME).fillna(True)  # O0 trained again: the reference
                        & (finished["objective_gain"] >= -screen)]
    for index, row in screened.sort_values("speedup_vs_baseline", ascending=False, kind="stable").iterrows():
        identity = recipe_identity(row["recipe_json"])
        if identity not in seen and identity not in rows:  # a preset, or a recipe again with another seed
            rows[identity] = (index, row)
    speed_sd, gain_sd = search_noise(noise.speed_sd, gain_sd, objective.fraction)
    prospects = [prospect(identity, methods_of(json.loads(row["recipe_json"])), float(row["speedup_vs_baseline"]),
                          float(row["objective_gain"]), max_drop=drop, speed_sd=speed_sd, gain_sd=gain_sd,
                          screen=screen) for identity, (_, row) in rows.items()]
    for choice in choose(prospects, max_candidates, min_p):
        row = rows[choice.prospect.key][1]
        chosen.append(_candidate(row, _trial_name(row), _why(choice, objective, drop, gain_sd), None, seen))
    return [c for c in chosen if c is not None]


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


def _why(choice: Choice, objective: Objective, max_drop: float, gain_sd: float | None) -> str:
    p = choice.prospect
    spec = "+.1f" if objective.fraction else "+.3g"
    within = (f"within {objective.format_gain(max_drop, '.1f' if objective.fraction else '.3g')} of O0"
              if gain_sd is not None
              else "within the screen (its noise unknown)")
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
               max_drop: Tolerance | float | None = None, default: float = MAX_DROP,
               train_round: TrainRound | None = None) -> list[RunRecord]:
    """Train every candidate once per seed, paired and interleaved; keep what an earlier attempt finished.

    ``max_drop`` (a :class:`~boosttune.evaluation.select.Tolerance`, or a number in the objective's gain units;
    None: ``default`` points, or percent of the baseline's value for a non-fraction objective) is only for the
    running summary printed after each round. ``train_round`` trains a round's runs together (their epochs in turn:
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
            log(_running_summary(list(store), max_drop, default, round_count=index + 1))
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


def round_figures(table: pd.DataFrame, index: int, names: Iterable[str]) -> dict[str, tuple[float, float] | None]:
    """name -> (job speed-up, objective gain) against round ``index``'s baseline; None where either is missing. The
    job speed-up is the baseline's job time over the recipe's at the planned length (:mod:`boosttune.evaluation.job`):
    what the race decides "faster" on."""
    rows = table[(table["round"] == index) & table["status"].isin(FINISHED)].drop_duplicates("recipe")
    rows = rows.set_index("recipe")
    figures: dict[str, tuple[float, float] | None] = {}
    for name in names:
        job, step, gain = (rows.at[name, c] if name in rows.index and c in rows else math.nan
                           for c in ("job_speedup_vs_baseline", "speedup_vs_baseline", "objective_gain"))
        ratio = job if finite(job) else step  # per job; a run without its curve or compile time: per step
        figures[name] = (float(ratio), float(gain)) if finite(ratio) and finite(gain) else None
    return figures


def replay_race(table: pd.DataFrame, rules: RaceRules | None, max_drop: float, alpha: float = 0.05) -> Race:
    """The race as its stored runs decided it, round by round (the same judgement at another ``max_drop``); for
    fixed rounds (``rules`` None) the same test at one look on every round, all of ``alpha`` spent there, so a
    fixed stage makes no claim the race's multiplicity control would not."""
    names = [n for n in dict.fromkeys(table["recipe"].dropna()) if n != BASELINE_NAME]
    rounds = sorted(int(i) for i in table["round"].dropna().unique())
    if rules is None:
        figures = [round_figures(table, index, names) for index in rounds
                   if BASELINE_NAME in set(table.loc[table["round"] == index, "recipe"].dropna())]
        nan = (math.nan, math.nan)
        return Race.one_look({n: [(f[n] or nan)[0] for f in figures] for n in names},
                            {n: [(f[n] or nan)[1] for f in figures] for n in names}, alpha, max_drop)
    race = Race(names, rules, max_drop)
    seeds = table.dropna(subset=["round"]).drop_duplicates("round").set_index("round")["seed"]
    for index in rounds:
        racing = set(race.racing)
        present = set(table.loc[table["round"] == index, "recipe"].dropna())
        if not racing or BASELINE_NAME not in present:
            break
        race.observe(int(seeds.loc[index]), round_figures(table, index, [n for n in race.racing if n in present]))
    race.out_of_budget()
    return race


def run_race(candidates: Sequence[Candidate], seeds: Sequence[int], *, store: RecordStore, role: str,
             train: Callable[[RunSpec], RunRecord], rules: RaceRules, log: Callable[[str], None] = print,
             max_drop: Tolerance | float | None = None, default: float = MAX_DROP,
             train_round: TrainRound | None = None) -> list[RunRecord]:
    """Race the candidates against the baseline (:mod:`boosttune.evaluation.race`): paired, interleaved rounds of
    the baseline and the candidates still racing, one seed of ``seeds`` each, until none races, the seeds run out
    or the budget cannot pay for the next round. Runs an earlier attempt finished are kept, not trained again;
    ``train_round`` as in :func:`run_paired`."""
    names = [c.name for c in candidates]
    if len(set(names)) != len(names) or BASELINE_NAME not in names or len(names) < 2:
        raise ConfigError(f"recipes: names must be distinct and include the baseline {BASELINE_NAME!r} and a "
                          f"candidate; got {names}")
    by_name = {c.name: c for c in candidates}
    race: Race | None = None
    runs_spent, seconds_spent = 0, 0.0
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
            race = Race([n for n in names if n != BASELINE_NAME], rules,
                        Tolerance.of(max_drop, default, table).resolved_on(table))
        for standing in race.observe(seed, round_figures(table, index, racing)):
            log(f"{role}: {standing.name} leaves the race after round {index + 1} with {standing.n} paired seeds: "
                f"{Exit.TEXT[standing.exit]} ({standing.why})")
        log(_race_line(race, runs_spent))
    return list(store)


def _race_line(race: Race, runs_spent: int) -> str:
    racing = [s for s in race.standings.values() if s.racing]
    text = "; ".join(f"{s.name} {s.speedup:.3f}x, gain {np.mean(s.gains):+.3g} over {s.n} seeds" for s in racing)
    won = ", ".join(s.name for s in race.winners) or "none"
    return (f"after round {race.rounds} ({runs_spent} runs): still racing: {text or 'none'}; won: {won}")


def _run_line(record: RunRecord) -> str:
    if record.status == "failed":
        return f"failed: {record.reason}"
    m = record.metrics
    sps, value = m.get("throughput_sps"), m.get("objective_value")
    objective = Objective.from_metrics(m) or ACCURACY
    return (f"{record.status}, {sps:.1f} samples/s, {objective.label} {objective.format_value(value)}, "
            f"compile {m.get('compile_s') or 0:.1f} s{' (cached)' if m.get('graph_cached') else ''}" if finite(sps) and finite(value) else record.status)


def _running_summary(records: list[RunRecord], max_drop: Tolerance | float | None, default: float,
                     round_count: int) -> str:
    table = confirm_table(records)
    tolerance = Tolerance.of(max_drop, default, table)
    objective = tolerance.objective
    summary = summarize(table, max_drop=tolerance.resolved_on(table))
    parts = [f"{row.recipe} {row.speedup:.3f}x ({row.speedup_ci_low:.3f}-{row.speedup_ci_high:.3f}), "
             f"{objective.format_gain(row.objective_gain, '+.1f' if objective.fraction else '+.3g')}"
             for row in summary.itertuples() if row.recipe != BASELINE_NAME and finite(row.speedup_ci_low)]
    return f"after {round_count} rounds: " + ("; ".join(parts) if parts else "no paired figures yet")


def confirm_table(records: Iterable[RunRecord | dict[str, Any]], *, ray_version: str = "") -> pd.DataFrame:
    """One row per run (the results schema plus recipe, round and the learning curve), ratios per round."""
    documents = [r.to_dict() if isinstance(r, RunRecord) else dict(r) for r in records]
    table = build_results_table(documents, ray_version=ray_version)
    table.insert(1, "recipe", pd.array([d.get("label") or d["trial_id"] for d in documents], dtype="string"))
    table.insert(2, "round", pd.array([d.get("round") for d in documents], dtype="Int64"))
    return _ratios_per_round(table)


def _ratios_per_round(table: pd.DataFrame) -> pd.DataFrame:
    table = table.copy()
    table["is_baseline"] = (table["recipe"] == BASELINE_NAME).fillna(False).astype(bool)
    table["speedup_vs_baseline"] = np.nan
    table["objective_gain"] = np.nan
    objective = table_objective(table)
    charges = compile_charges(table)
    table["job_s"] = [job_seconds(row, charges.get(str(row["recipe"]))) for _, row in table.iterrows()]
    table["job_speedup_vs_baseline"] = np.nan
    base = table[table["is_baseline"] & table["status"].isin(FINISHED)].drop_duplicates("round").set_index("round")
    for index, row in table.iterrows():
        if pd.isna(row["round"]) or row["round"] not in base.index:
            continue
        reference = base.loc[row["round"]]
        if finite(row["throughput_sps"]) and finite(reference["throughput_sps"]) and reference["throughput_sps"] > 0:
            table.at[index, "speedup_vs_baseline"] = row["throughput_sps"] / reference["throughput_sps"]
        if finite(row["job_s"]) and finite(reference["job_s"]) and row["job_s"] > 0:
            table.at[index, "job_speedup_vs_baseline"] = reference["job_s"] / row["job_s"]
        if finite(row["objective_value"]) and finite(reference["objective_value"]):
            table.at[index, "objective_gain"] = objective.gain(row["objective_value"], reference["objective_value"])
    return table


def with_job_figures(table: pd.DataFrame) -> pd.DataFrame:
    """A confirm table read from disk with the per-job figures of this version (a table written before had none)."""
    return _ratios_per_round(table)


def time_to_accuracy(curve: Sequence[dict[str, Any]], target: float,
                     objective: Objective = ACCURACY) -> float | None:
    """Training time (compile included, evaluation excluded) until objective_value first reached ``target`` (at
    least, or at most for a lower-is-better objective)."""
    for epoch in curve:
        if finite(epoch.get("objective_value")) and objective.reached(epoch["objective_value"], target) \
                and finite(epoch.get("train_s")):
            return float(epoch["train_s"])
    return None


def summarize(table: pd.DataFrame, *, max_drop: float, target: float | None = None,
              confidence: float = 0.95) -> pd.DataFrame:
    """One row per recipe (the baseline first) from the paired rounds of :func:`confirm_table`.

    ``max_drop`` is in the objective's gain units (points for accuracy). The end-to-end target is ``target``, or
    the baseline's mean objective_value less ``max_drop``.
    """
    objective = table_objective(table)
    finished = table[table["status"].isin(FINISHED) & table["throughput_sps"].map(finite)
                     & table["objective_value"].map(finite)]
    base = finished[finished["recipe"] == BASELINE_NAME].drop_duplicates("round").set_index("round")
    if target is None and not base.empty:
        target = objective.shifted(float(base["objective_value"].mean()), -max_drop)
    names = [BASELINE_NAME] + [n for n in dict.fromkeys(table["recipe"].dropna()) if n != BASELINE_NAME]
    rows = [_summary_row(name, table, finished, base, max_drop, target, confidence, objective) for name in names]
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def _summary_row(name: str, table: pd.DataFrame, finished: pd.DataFrame, base: pd.DataFrame, max_drop: float,
                 target: float | None, confidence: float, objective: Objective) -> dict[str, Any]:
    runs = finished[finished["recipe"] == name].drop_duplicates("round").set_index("round")
    failed = int(((table["recipe"] == name) & ~table["status"].isin(FINISHED)).sum())
    rounds = sorted(set(runs.index) & set(base.index))
    row: dict[str, Any] = dict.fromkeys(SUMMARY_COLUMNS, math.nan)
    row.update(recipe=name, n_seeds=len(rounds), failed_runs=failed, qualifies=False, e2e_n=0, seeds_to_show=None,
               objective=objective.label, gain_unit=objective.unit, margin=max_drop,
               objective_value=float(runs["objective_value"].mean()) if len(runs) else math.nan)
    if name == BASELINE_NAME:
        if len(base):
            row.update(planned_epochs=planned_epochs(base["recipe_json"].iloc[0], base["epochs"].iloc[0])
                       if "recipe_json" in base else None, job_speedup=1.0,
                       compile_charged_s=compile_charges(base.reset_index()).get(name, math.nan))
        row.update(n_seeds=len(base), speedup=1.0, objective_gain=0.0, verdict=VerdictCode.BASELINE,
                   verdict_text=f"the O0 baseline, {len(base)} seed(s)")
        return row
    if not rounds:
        row.update(verdict=VerdictCode.NO_DATA, verdict_text="no round where both this recipe and the baseline finished")
        return row
    speed = paired_ratio(runs.loc[rounds, "throughput_sps"].to_numpy(float),
                         base.loc[rounds, "throughput_sps"].to_numpy(float), confidence=confidence)
    delta = paired_delta(runs.loc[rounds, "objective_value"].to_numpy(float),
                         base.loc[rounds, "objective_value"].to_numpy(float),
                         scale=objective.sign * objective.scale, confidence=confidence)
    job = _job_figures(runs.loc[rounds], base.loc[rounds], confidence)
    row.update(job)
    judged = verdict(job["interval"] or speed, delta, max_drop, objective)
    row.pop("interval")
    e2e = _e2e(runs.loc[rounds, "curve_json"], base.loc[rounds, "curve_json"], target, confidence, objective)
    text = judged.text
    if e2e is not None and target is not None:
        reach = f"{100 * target:.2f}% {objective.label}" if objective.fraction else f"{objective.label} {target:.4g}"
        text += (f"; secondary, time to {reach}: {e2e.estimate:.2f}x (training time, compile "
                 f"included; {e2e.n} of {len(rounds)} rounds reached it)")
    elif target is not None and not _has_curves(runs.loc[rounds, "curve_json"]):
        text += "; secondary time to target not measured (evaluated after the last epoch only: confirm_curves)"
    row.update(speedup=speed.estimate, speedup_ci_low=speed.low, speedup_ci_high=speed.high, p_value=speed.p_value,
               objective_gain=delta.estimate, objective_gain_ci_low=delta.low, objective_gain_ci_high=delta.high,
               objective_p_value=delta.p_value, e2e_speedup=e2e.estimate if e2e else math.nan,
               e2e_n=e2e.n if e2e else 0, e2e_ci_low=e2e.low if e2e else math.nan,
               e2e_ci_high=e2e.high if e2e else math.nan, seeds_to_show=judged.seeds_needed, qualifies=judged.qualifies,
               verdict=judged.code, verdict_text=text)
    return row


def _job_figures(runs: pd.DataFrame, base: pd.DataFrame, confidence: float) -> dict[str, Any]:
    """The per-job speed-up over paired rounds (an interval, or None without job times), the planned length, the
    compile charged and the steps after which the recipe's job is the shorter."""
    paired = runs["job_s"].map(finite).to_numpy(bool) & base["job_s"].map(finite).to_numpy(bool) \
        if "job_s" in runs and "job_s" in base else np.zeros(len(runs), bool)
    interval = paired_ratio(base["job_s"].to_numpy(float)[paired], runs["job_s"].to_numpy(float)[paired],
                            confidence=confidence) if paired.any() else None
    planned = planned_epochs(runs["recipe_json"].iloc[0], runs["epochs"].iloc[0]) if "recipe_json" in runs else None
    charged = compile_charges(pd.concat([runs, base]).reset_index())
    name, base_name = str(runs["recipe"].iloc[0]), str(base["recipe"].iloc[0])
    batch = runs["batch_size"].astype(float).fillna(TrialRecipe.model_fields["batch_size"].default)
    samples = (batch * runs["world_size"].astype(float).fillna(1)).to_numpy()  # per step, every rank's
    step_s = float(np.mean(samples / runs["throughput_sps"].to_numpy(float)))
    base_step_s = float(np.mean(samples / base["throughput_sps"].to_numpy(float)))
    extra = charged.get(name, math.nan) - charged.get(base_name, math.nan)
    return {"interval": interval, "job_speedup": interval.estimate if interval else math.nan,
            "job_ci_low": interval.low if interval else math.nan, "job_ci_high": interval.high if interval else math.nan,
            "planned_epochs": planned, "compile_charged_s": charged.get(name, math.nan),
            "break_even_steps": break_even_steps(extra, base_step_s, step_s)}


def _has_curves(curves: pd.Series) -> bool:
    """Whether any run's curve holds an objective value (else its one evaluation came after the last epoch)."""
    for text in curves:
        try:
            curve = json.loads(text) if isinstance(text, str) else []
        except ValueError:
            continue
        if any(finite(epoch.get("objective_value")) for epoch in curve):
            return True
    return False


def _e2e(recipe_curves: pd.Series, base_curves: pd.Series, target: float | None,
         confidence: float, objective: Objective = ACCURACY) -> Interval | None:
    if target is None:
        return None
    ratios = []
    for recipe_curve, base_curve in zip(recipe_curves, base_curves):
        mine, theirs = (time_to_accuracy(json.loads(c), target, objective) for c in (recipe_curve, base_curve))
        if mine and theirs:
            ratios.append(theirs / mine)  # > 1: the recipe reaches the target sooner
    return ratio_interval(ratios, confidence=confidence) if ratios else None


@dataclass(frozen=True)
class ConfirmedSelection:
    """The recipe the confirmed figures support (the baseline when none), and why."""

    recipe: str
    row: pd.Series
    reason: str
    fell_back_to_baseline: bool
    max_drop: float
    tie: tuple[str, float] | None = None  # a winner less than TIE faster per job, and its job speed-up: O0 kept


def select_confirmed(summary: pd.DataFrame, max_drop: float, race: bool = False,
                     prefer_ties: bool = False) -> ConfirmedSelection:
    """The fastest recipe per job that qualifies: whose job speed-up interval lies above 1 and whose mean objective
    gain is within ``max_drop`` (fixed rounds), or that won the race (``race``: shown faster and non-inferior); a
    recipe less than :data:`~boosttune.evaluation.job.TIE` faster per job ties with the baseline, which is kept unless
    ``prefer_ties``."""
    speed = summary["job_speedup"].where(summary["job_speedup"].map(finite), summary["speedup"]) \
        if "job_speedup" in summary else summary["speedup"]
    qualifying = summary.assign(_speed=speed)[summary["qualifies"].astype(bool)]
    qualifying = qualifying.sort_values("_speed", ascending=False, kind="stable")
    baseline = summary[summary["recipe"] == BASELINE_NAME].iloc[0]
    if not qualifying.empty and (qualifying["_speed"].iloc[0] >= 1 + TIE or prefer_ties):
        best = qualifying.drop(columns="_speed").iloc[0]
        tied = "" if qualifying["_speed"].iloc[0] >= 1 + TIE else \
            f" (within {100 * TIE:.0f}% of O0 per job, a tie: the answer as prefer_ties asks)"
        return ConfirmedSelection(str(best["recipe"]), best, f"{best['recipe']}{tied}: {best['verdict_text']}", False,
                                  max_drop)
    if not qualifying.empty:  # shown faster, by less than the tie: the job takes about as long, O0 stays
        best = qualifying.iloc[0]
        return ConfirmedSelection(BASELINE_NAME, baseline, (
            f"{best['recipe']} and the O0 baseline are within {100 * TIE:.0f}% per job ({best['_speed']:.3f}x; a gain "
            f"under {100 * TIE:.0f}% is a tie), so the answer keeps the baseline ({best['recipe']}: "
            f"{best['verdict_text']})"), True, max_drop, (str(best["recipe"]), float(best["_speed"])))
    others = summary[summary["recipe"] != BASELINE_NAME]
    why = "; ".join(f"{r['recipe']}: {r['verdict_text']}" for _, r in others.iterrows()) or "no candidate ran"
    unit = baseline["gain_unit"] if isinstance(baseline.get("gain_unit"), str) else "pt"
    name = baseline["objective"] if isinstance(baseline.get("objective"), str) else "val_acc"
    shown = "won the race (shown faster and non-inferior, " if race else "is shown faster than the O0 baseline ("
    reason = (f"no recipe {shown}within {max_drop:.3g} {unit} of its {name}), so the answer is the baseline "
              f"({why})")
    return ConfirmedSelection(BASELINE_NAME, baseline, reason, True, max_drop)
