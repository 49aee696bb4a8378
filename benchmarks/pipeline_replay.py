"""Does the main job give the same right answer on every run? Search, scheduler, handoff and race replayed together.

Every replay is one main job made of committed measurements instead of training:

- **the search** sees each recipe of the confirm table (benchmarks/data/confirm_table: 10 paired seeds of 10
  recipes, the main job's ResNet-8 on Fashion-MNIST) and O0 on one seed drawn at random, as the search trains every
  trial on the experiment's seed: the last epoch's accuracy on the val_limit slice, and each run's throughput spread
  in time as the search's runs are (SEARCH_TIME_SD);
- **the scheduler** (boosttune.search.scheduler's rung rule, as the search builds it) is fed each recipe's measured
  learning curve (its row of benchmarks/data/search_table, the same recipe trained by the search-table builder) in a
  random order; a recipe it stops is not handed on;
- **the handoff** (boosttune.stages.rounds.pick_candidates, as the confirm stage calls it) picks the
  candidates from that single-seed table;
- **the race** (boosttune.stats.race, the main job's default rules and budget) draws its rounds from the
  table's ten seeds in a random order, each candidate's figure per job at the planned length (or per step, for
  the pipeline as it was), and the answer is its fastest winner, kept only when 5% faster per job (a tie keeps O0).
  A third arm, the pipeline now, takes one O0 run as the search's speed reference and moves it as much as real
  searches' references moved (SEARCH_REFERENCE_SD): since 2026-12-07 that run is the search's own (O0 trained again
  first among its trials, ``remeasure_baseline``; the baseline stage's run, ~10% faster without a Tune trial beside
  it, no longer enters: boosttune.tables.results.search_reference); the fourth is the pipeline of 2026-12-06, the
  reference the geometric mean of both runs.

The truth is out of sample: each table's paired seeds are split in two halves (alternate rounds), a replay searches
and races on one half and is judged by what the other half shows, per job at the planned length with each recipe's
own fresh compile charged (boosttune.stats.job). An answer is **acceptable** when it names a recipe faster per job
with its mean accuracy within the margin, or keeps O0 when no recipe is 5% faster per job within the margin. The
confirm tables are judged at their own length (10 epochs, measured; ``--planned 100`` adds a longer planned training
extrapolated from those runs, said as such). A **workload** (benchmarks/data/replay/<name>/) is judged at a measured
full job instead: its tuning table (the recipes at the short tuning job's length) feeds the search and the race, and
its full table (the same recipes trained at the planned length, on other paired seeds) is the truth: a team's
sequence model (benchmarks/team_seq), tuned at 3 epochs for a 12-epoch job. Its baseline still improving at the end of
the tuning job, the pipeline now races the full job itself (boosttune.stages.confirm.confirm_length), handed on by
speed within the lossy bound: a second arm searches the tuning table, races one half of the full table's seeds and is
judged by the other half. Printed per truth, with targets: the
share of acceptable answers, the share of pairs of runs that agree (one recipe, or per-job speed-ups within 5% by
every seed), the realized speed-up over the best acceptable recipe's, and the race's runs; then a **fixed-answer
rule** (one answer whatever was measured) judged on every truth, which must miss the acceptable target, or the
truths cannot tell a pipeline from none.

    python benchmarks/pipeline_replay.py                  # a minute or two; --replays 400 by default
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from boosttune.stats.job import TIE, compile_charges  # noqa: E402
from transfer import first_fresh_charges  # noqa: E402  (the charge the committed benches applied: one rule)

CONFIRM_TABLE = HERE / "data" / "confirm_table"
REPLAY = HERE / "data" / "replay"  # workloads: a tuning job's table and its full job's
MAX_DROP = 1.0  # points: the main job's margin
TARGETS = {"acceptable": 0.90, "same": 0.80, "realized": 0.90}
SEARCH_LABEL = {"O1": "O1-equivalent"}  # confirm-table recipe -> search-table label where they differ


@dataclass(frozen=True)
class Measured:
    """Per round (rows) and recipe (columns): throughput, final accuracy (fraction), job seconds at 1 and 0 epochs."""

    throughput: pd.DataFrame
    accuracy: pd.DataFrame  # the final evaluation on every held-out image (the confirm stage's)
    epoch_accuracy: pd.DataFrame  # the last epoch's on the val_limit slice (what the search sees)
    per_epoch_s: pd.DataFrame  # training seconds per epoch, compile excluded
    charge_s: dict[str, float]  # the fresh compile each recipe's job is charged
    seeds: pd.Series
    recipes: dict[str, dict]  # each recipe as the handoff reads it (its family of boost algorithms)
    epochs: int  # the length every run trained

    def job_s(self, planned: int) -> pd.DataFrame:
        return self.per_epoch_s * planned + pd.Series(self.charge_s)[self.per_epoch_s.columns]

    @property
    def names(self) -> list[str]:
        return [n for n in self.throughput.columns if n != "O0"]

    def rounds(self, index: list) -> Measured:
        """The same recipes on some of the table's paired seeds only."""
        return Measured(self.throughput.loc[index], self.accuracy.loc[index], self.epoch_accuracy.loc[index],
                        self.per_epoch_s.loc[index], self.charge_s, self.seeds.loc[index], self.recipes, self.epochs)


def only(measured: Measured, names: tuple[str, ...]) -> Measured:
    """The same runs with some recipes only (O0 always)."""
    keep = [n for n in measured.throughput.columns if n == "O0" or n in names]
    return Measured(measured.throughput[keep], measured.accuracy[keep], measured.epoch_accuracy[keep],
                    measured.per_epoch_s[keep], {n: measured.charge_s[n] for n in keep}, measured.seeds,
                    {n: measured.recipes[n] for n in keep}, measured.epochs)


def folds(measured: Measured) -> tuple[Measured, Measured]:
    """The table's paired seeds split in two (alternate rounds): a replay draws its search and race from one half and
    is judged by the truth of the other, so no answer is graded on the runs it was made from."""
    rounds = sorted(measured.throughput.index)
    return measured.rounds(rounds[0::2]), measured.rounds(rounds[1::2])


def load_measured(folder: Path = CONFIRM_TABLE) -> Measured:
    """A confirm table (benchmarks/build_confirm_table.py's runs.csv) or a bench's runs (a ``boosttune bench``
    confirm.csv kept as runs.csv, with its recipes' recipe_json): the final accuracy is the bench's objective, and
    the search, which saw no other, reads the same."""
    runs = pd.read_csv(folder / "runs.csv")
    epochs = int(json.loads((folder / "meta.json").read_text())["base"]["epochs"])
    runs = runs[runs["status"] == "completed"].copy()
    charges = compile_charges(runs)  # the product's: each recipe's fresh compiles' median
    if "val_acc" not in runs:  # a bench's runs: its job_s is the charge the bench applied and the bench's epochs
        runs["val_acc"] = runs["epoch_val_acc"] = runs["objective_value"]
        applied = (runs["steps_s"] if "steps_s" in runs
                   else runs["job_s"] - runs["recipe"].map(first_fresh_charges(runs)))
        runs["per_epoch_s"] = applied / epochs
    else:
        runs["per_epoch_s"] = (runs["train_s"] - runs["compile_s"]) / epochs
    pivot = lambda column: runs.pivot_table(index="round", columns="recipe", values=column, aggfunc="first")  # noqa: E731
    throughput, accuracy, per_epoch = pivot("throughput_sps"), pivot("val_acc"), pivot("per_epoch_s")
    epoch_accuracy = pivot("epoch_val_acc")
    complete = throughput.dropna().index.intersection(accuracy.dropna().index)
    seeds = runs.drop_duplicates("round").set_index("round")["seed"].loc[complete]
    if "recipe_json" in runs:
        first = runs.dropna(subset=["recipe_json"]).drop_duplicates("recipe").set_index("recipe")["recipe_json"]
        recipes = {str(name): json.loads(doc) for name, doc in first.items()}
    else:
        recipes = {str(name): _recipe(str(name)) for name in throughput.columns}
    return Measured(throughput.loc[complete], accuracy.loc[complete], epoch_accuracy.loc[complete],
                    per_epoch.loc[complete], charges, seeds, recipes, epochs)


# --- the truth ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Truth:
    planned: int
    speed: dict[str, float]  # per job, all seeds: geometric mean of the paired ratios (O0: 1)
    gain: dict[str, float]  # accuracy points, all seeds

    @property
    def within(self) -> set[str]:
        return {n for n, g in self.gain.items() if g >= -MAX_DROP}

    def acceptable(self, answer: str) -> bool:
        if answer == "O0":
            return not any(self.speed[n] >= 1 + TIE for n in self.within)
        return answer in self.within and self.speed[answer] > 1

    @property
    def best(self) -> float:
        """The best acceptable answer's true per-job speed-up (O0's 1 when keeping it is right)."""
        return max([1.0] + [self.speed[n] for n in self.within if self.speed[n] > 1])

    def same(self, a: str, b: str) -> bool:
        speed = lambda n: 1.0 if n == "O0" else self.speed[n]  # noqa: E731
        return a == b or abs(speed(a) / speed(b) - 1) < TIE


def truth(measured: Measured, planned: int) -> Truth:
    job = measured.job_s(planned)
    speed = {n: float(np.exp(np.log(job["O0"] / job[n]).mean())) for n in measured.names}
    gain = {n: float(100 * (measured.accuracy[n] - measured.accuracy["O0"]).mean()) for n in measured.names}
    return Truth(planned, speed, gain)


BOOST_ALGORITHMS = ("less_bn", "grad_freeze", "adasum", "grad_accumulation", "dim_reduce")


def _recipe(name: str) -> dict:
    """A recipe the handoff reads the family of (the boost algorithms meta.json says it switches on)."""
    family = [m for m in _families().get(name, ()) if not m.startswith("amp ")]
    return {"recipe": name, "boost_level": "O1" if family else "O0",
            "boost_config_dict": {"boost": {"mode": "manual", **{m: m in family for m in BOOST_ALGORITHMS}}}
            if family else {}}


def _families() -> dict[str, tuple[str, ...]]:
    from confirm_reliability import families

    return families(CONFIRM_TABLE / "runs.csv")


# --- one main job, replayed --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pipeline:
    """How each stage decides: the pipeline as it stands, or as it was (``per_job`` False, no tie)."""

    name: str
    per_job: bool
    tie: float
    stopper: Callable[[list[str], np.random.Generator], set[str]] | None  # names the scheduler stops
    handoff: bool = True  # boosttune's handoff as it is (else the fastest within the screen, as it was)
    reference_sd: float = 0.0  # more log-sd on the baseline stage's O0 run, which every recipe's speed-up shares
    reference_runs: int = 1  # 2: O0 trains again in the search (remeasure_baseline), the reference their geometric mean
    read_gain: bool = True  # False: the race trains the planned job, the handoff reads no one-seed accuracy gap


def search_table_stopper(against_baseline: bool = True) -> Callable[[list[str], np.random.Generator], set[str]]:
    """The search's rung rule fed each recipe's measured curve (benchmarks/data/search_table) in a random order:
    judged against O0's curve with its noise (``against_baseline``, as the search does now), or against the other
    trials alone (as it did)."""
    from search_efficiency import DEFAULT_MF, curve_of, load_table

    from boosttune.search.scheduler import RungLadder

    table = load_table()
    curves = {row.label: row for row in table.rows}
    eta, grace, margin = (float(x) for x in DEFAULT_MF.split(":"))
    baseline = curve_of(table) if against_baseline else None

    def stopped(names: list[str], rng: np.random.Generator) -> set[str]:
        ladder = RungLadder(int(grace), eta, table.epochs, True, (0.0, margin / 100), baseline)
        for name in rng.permutation(names):
            row = curves.get(SEARCH_LABEL.get(name, name.removeprefix("search ")))
            if row is None:
                continue
            for epoch, (speed, acc) in enumerate(zip(row.speedup, row.val_acc), start=1):
                if not ladder.report(name, epoch, (speed, acc)):
                    break
        return set(ladder.stopped_at)
    return stopped


# The search's runs are spread in time more than the confirm table's interleaved rounds: O0's throughput has a log-sd
# of 0.0755 over the 12 reference reruns of benchmarks/data/search_table (one seed, spread over the whole search)
# against 0.057 over the confirm table's 10 rounds. Each run of the search view gets the difference on top.
SEARCH_TIME_SD = math.sqrt(0.0755 ** 2 - 0.057 ** 2)
# What benchmarks/search_scale.py measured on four README runs (2026-11-27: each search's recipes over their confirmed
# per-step speed-ups, geometric means 0.86, 0.92, 0.83 and, in session 5's run, about 1.13): a log-sd of 0.138
# shared by every recipe of one search, against the 0.075 (O0's table noise and SEARCH_TIME_SD) the view draws.
SEARCH_REFERENCE_SD = math.sqrt(0.138 ** 2 - 0.057 ** 2 - SEARCH_TIME_SD ** 2)


def search_view(measured: Measured, rng: np.random.Generator, reference_sd: float = 0.0,
                reference_runs: int = 1) -> pd.DataFrame:
    """The search's results table: every recipe and the baseline on one seed (a round of the table drawn at random, as
    the search trains every trial on the experiment's seed), each run's throughput spread in time as the search's are
    (SEARCH_TIME_SD) and its objective the last epoch's on the val_limit slice, as the search sees them.
    ``reference_sd``: more log-sd on the baseline stage's O0 run, which every recipe's speed-up shares
    (SEARCH_REFERENCE_SD); ``reference_runs`` 2: O0 trains again among the search's trials (spread in time as they
    are, without that shift) and the reference is the geometric mean of its two runs, as the search takes it."""
    at = rng.choice(list(measured.throughput.index))  # the experiment's seed: every trial and the baseline on it
    sps = {n: float(measured.throughput.at[at, n]) * math.exp(rng.normal(0, SEARCH_TIME_SD)) for n in ["O0", *measured.names]}
    if reference_sd:
        sps["O0"] *= math.exp(rng.normal(0, reference_sd))
    if reference_runs == 2:
        again = float(measured.throughput.at[at, "O0"]) * math.exp(rng.normal(0, SEARCH_TIME_SD))
        sps["O0"] = math.sqrt(sps["O0"] * again)
    return pd.DataFrame([_row(n, measured, at, sps[n], sps["O0"]) for n in sps])


PRESETS = {"O0": "O0", "O1": "O1", "O1-equivalent": "O1"}  # a table's name for a preset -> the preset


def _row(name: str, measured: Measured, at: int, sps: float, base_sps: float) -> dict:
    acc = measured.epoch_accuracy
    return {"trial_id": f"t-{name}", "label": name, "status": "completed", "preset": PRESETS.get(name),
            "is_baseline": name == "O0", "recipe_json": json.dumps(measured.recipes[name]), "objective": "val_acc",
            "objective_higher_is_better": True,
            "objective_fraction": True, "objective_value": float(acc.at[at, name]),
            "speedup_vs_baseline": sps / base_sps, "objective_gain": float(100 * (acc.at[at, name] - acc.at[at, "O0"]))}


def handoff(view: pd.DataFrame, stopped: set[str], new: bool, read_gain: bool = True) -> list[str]:
    """The confirm stage's choice from the search's table: as it is (the chance of being acceptable at the margin,
    with the reference noise a device that measured nothing has; ``read_gain`` False: by speed within the lossy
    bound, as when the race trains the planned job), or as it was (the fastest within the screen)."""
    from boosttune.objective import ACCURACY
    from boosttune.stages.rounds import pick_candidates
    from boosttune.stats.margin import Margin
    from boosttune.stats.race import REFERENCE_NOISE

    table = view.assign(status=["stopped" if n in stopped else "completed" for n in view["label"]])
    if new:
        from boosttune.config.experiment import LOSSY_DROP, ExperimentConfig

        k = int(ExperimentConfig.model_fields["confirm_candidates"].default)
        chosen = pick_candidates(table, margin=Margin(ACCURACY, MAX_DROP), max_candidates=k, noise=REFERENCE_NOISE,
                                 read_gain=read_gain, **({} if read_gain else {"screen": LOSSY_DROP}))
        label = {PRESETS.get(n, n): n for n in table["label"]}  # a preset is handed on by its preset's name
        return [label.get(c.name, c.name) for c in chosen if c.name != "O0"]
    from boosttune.stats.select import pareto_front

    front = pareto_front(table)  # as it was: the fastest Pareto trials within 3 pt on their seed, and the preset
    fast = front[(front["speedup_vs_baseline"] > 1) & front["preset"].isna() & (front["objective_gain"] >= -3.0)]
    searched = list(fast.sort_values("speedup_vs_baseline", ascending=False)["label"][:3])  # 3: the default then
    return [*table.loc[table["preset"].notna() & (table["label"] != "O0") & (table["status"] == "completed"),
                       "label"], *searched]


def race(names: list[str], measured: Measured, pipeline: Pipeline, planned: int,
         rng: np.random.Generator) -> tuple[str, int]:
    """The race on the table's rounds in a random order: its answer (after the tie) and the runs it spent."""
    from boosttune.stats.race import REFERENCE_NOISE, Race, RaceRules

    from boosttune.config.experiment import ExperimentConfig
    from boosttune.stages.confirm import default_budget_runs

    fields = ExperimentConfig.model_fields
    seeds, places = fields["confirm_seeds"].default, len(names) + 1
    presets = sum(n in PRESETS for n in names)
    budget = (default_budget_runs(seeds, places, presets, int(fields["confirm_candidates"].default))
              if pipeline.handoff else seeds * places)  # as it was: what a fixed stage of the recipes raced costs
    rules = RaceRules.with_noise(REFERENCE_NOISE, alpha=0.05, max_seeds=fields["confirm_max_seeds"].default,
                                 max_runs=budget)
    job = measured.job_s(planned)
    speed = (job.rdiv(job["O0"], axis=0) if pipeline.per_job
             else measured.throughput.div(measured.throughput["O0"], axis=0))
    gain = 100 * measured.accuracy.sub(measured.accuracy["O0"], axis=0)
    order = list(rng.permutation(list(measured.throughput.index)))
    contest, spent, r = Race(names, rules, MAX_DROP), 0, 0
    while contest.racing and r < len(order):
        cost = 1 + len(contest.racing)
        if not rules.fits(cost, spent, 0.0, None):
            break
        spent += cost
        at = order[r]
        contest.observe(r, {n: (float(speed.at[at, n]), float(gain.at[at, n])) for n in contest.racing})
        r += 1
    contest.out_of_budget()
    winners = sorted(((math.exp(contest.figures(w.name, 0.05)[0].estimate), w.name) for w in contest.winners),
                     reverse=True)
    if not winners or winners[0][0] < 1 + pipeline.tie:
        return "O0", spent
    return winners[0][1], spent


@dataclass(frozen=True)
class Job:
    answer: str
    runs: int
    stopped: frozenset[str]  # by the scheduler
    raced: tuple[str, ...]  # handed to the race


def main_job(measured: Measured | tuple[Measured, Measured], pipeline: Pipeline, planned: int,
             rng: np.random.Generator) -> Job:
    """One main job: the search on ``measured``, the race on it too; a pair (the search's table, the race's): the race
    trains another job (the planned one) on its own seeds."""
    searched, raced = measured if isinstance(measured, tuple) else (measured, measured)
    view = search_view(searched, rng, pipeline.reference_sd, pipeline.reference_runs)
    stopped = pipeline.stopper(list(searched.names), rng) if pipeline.stopper else set()
    names = [n for n in handoff(view, stopped, pipeline.handoff, pipeline.read_gain) if n in raced.names]
    answer, runs = race(names, raced, pipeline, planned, rng) if names else ("O0", 0)
    return Job(answer, runs, frozenset(stopped), tuple(names))


# --- the figures ---------------------------------------------------------------------------------------------------

def wilson(k: int, n: int) -> str:
    if n == 0:
        return "n/a"
    p, z = k / n, 1.96
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{100 * p:.1f}% [{100 * (centre - half):.1f}, {100 * (centre + half):.1f}]"


def judge(sources: list[Measured | tuple[Measured, Measured]], held_out: list[Truth], pipeline: Pipeline, planned: int,
          whole: Truth,
          replays: int, seed: int) -> dict[str, float]:
    """Replays take turns over ``sources``, each judged by the truth beside it in ``held_out``, from seeds it never
    drew: the halves of one table's seeds (each searches and races on one half and is judged by the other's), or a
    tuning job's table and the full job's, measured on other seeds. Two runs agree by ``whole``."""
    rng = np.random.default_rng(seed)
    jobs = [main_job(sources[i % len(sources)], pipeline, planned, rng) for i in range(replays)]
    answers, runs = [j.answer for j in jobs], [j.runs for j in jobs]
    judged_by = [held_out[i % len(held_out)] for i in range(replays)]
    ok = sum(t.acceptable(a) for a, t in zip(answers, judged_by))
    pairs = [(answers[i], answers[i + 1]) for i in range(0, len(answers) - 1, 2)]
    same = sum(whole.same(a, b) for a, b in pairs)
    realized = [(1.0 if a == "O0" else t.speed[a]) / t.best for a, t in zip(answers, judged_by)]
    counts = pd.Series(answers).value_counts()
    print(f"  {pipeline.name}:")
    print(f"    acceptable answers   {wilson(ok, len(answers)):<24} target >= {100 * TARGETS['acceptable']:.0f}%"
          f"  {_met(ok / len(answers), TARGETS['acceptable'])}")
    print(f"    same answer, 2 runs  {wilson(same, len(pairs)):<24} target >= {100 * TARGETS['same']:.0f}%"
          f"  {_met(same / len(pairs), TARGETS['same'])}")
    print(f"    realized speed-up    {100 * np.mean(realized):.1f}% of the best acceptable's"
          f"{'':<5} target >= {100 * TARGETS['realized']:.0f}%  {_met(float(np.mean(realized)), TARGETS['realized'])}")
    print(f"    race runs            {np.mean(runs):.1f} on average; answers: "
          + ", ".join(f"{name} {100 * c / len(answers):.0f}%" for name, c in counts.items()))
    good = sorted(n for n in whole.speed if whole.acceptable(n))
    for name in good:
        stopped = sum(name in j.stopped for j in jobs)
        raced = sum(name in j.raced for j in jobs)
        print(f"    {name} (acceptable): stopped by the scheduler in {100 * stopped / len(jobs):.0f}% of runs, "
              f"raced in {100 * raced / len(jobs):.0f}%")
    raced_seeds = max(len((src[1] if isinstance(src, tuple) else src).seeds) for src in sources)
    print(f"    why: {why(jobs, judged_by)}; the race had at most {raced_seeds} paired seeds to draw")
    return {"acceptable": ok / len(answers), "same": same / len(pairs), "realized": float(np.mean(realized))}


def why(jobs: list[Job], judged_by: list[Truth]) -> str:
    """Where the unacceptable answers went wrong, counted from these replays (never a stored text): no recipe the
    held-out truth accepts reached the race (stopped by the scheduler, or not handed on), one did and the race kept
    O0 (undecided, or its winner a tie), or the race named a recipe the held-out truth does not accept (the seeds it
    raced on and the ones that judge it disagree), or kept O0 where the truth has a faster recipe it never saw."""
    wrong = [(j, t) for j, t in zip(jobs, judged_by) if not t.acceptable(j.answer)]
    if not wrong:
        return "every answer acceptable"
    causes = {"no acceptable recipe reached the race": 0, "scheduler stopped one": 0,
              "one raced and the race kept O0": 0, "the race named one the held-out seeds do not accept": 0}
    for job, truth_ in wrong:
        good = {n for n in truth_.speed if n != "O0" and truth_.acceptable(n)}
        if job.answer != "O0":
            causes["the race named one the held-out seeds do not accept"] += 1
        elif good & set(job.raced):
            causes["one raced and the race kept O0"] += 1
        else:
            causes["no acceptable recipe reached the race"] += 1
            causes["scheduler stopped one"] += bool(good & job.stopped)
    n = len(wrong)
    first = ", ".join(f"{100 * k / n:.0f}% {what}" for what, k in causes.items() if what != "scheduler stopped one")
    return (f"of {n} unacceptable answers ({100 * n / len(jobs):.0f}%): {first} (the scheduler had stopped one in "
            f"{100 * causes['scheduler stopped one'] / n:.0f}%)")


def _met(share: float, target: float) -> str:
    return "met" if share >= target else f"MISSED by {100 * (target - share):.1f} pt"


def fixed_answers(truths: list[Truth]) -> dict[str, float]:
    """A rule that gives one answer whatever it measures (a recipe, or keep O0): the share of ``truths`` (one workload's
    planned lengths and held-out halves) by which that answer is acceptable. Its runs always agree, so only the truths
    can fail it: if one constant answer met the acceptable target on a workload's truths, they would not tell a
    pipeline from no pipeline at all there."""
    names = sorted({"O0", *(n for t in truths for n in t.speed)})
    return {n: float(np.mean([n in t.speed and t.acceptable(n) or (n == "O0" and t.acceptable("O0"))
                              for t in truths])) for n in names}


def print_fixed(workloads: dict[str, list[Truth]]) -> bool:
    """The best fixed answer on each workload's truths (names are not pooled across workloads: a recipe of one table
    is no answer on another); True when it misses the acceptable target on every workload (as it must)."""
    misses_all = True
    for workload, truths in workloads.items():
        shares = fixed_answers(truths)
        best = max(shares, key=shares.get)
        misses = shares[best] < TARGETS["acceptable"]
        misses_all &= misses
        print(f"== the fixed-answer rule on {workload} ({len(truths)} out-of-sample truths): the best constant answer, "
              f"{best}, is acceptable on {100 * shares[best]:.0f}%: "
              f"{'misses' if misses else 'MEETS'} the {100 * TARGETS['acceptable']:.0f}% target"
              + ("" if misses else ": these truths cannot tell a pipeline from a fixed answer") + "; keep O0 "
              f"{100 * shares['O0']:.0f}%")
    return misses_all


def print_truth(truth_: Truth) -> None:
    print(f"truth per job at {truth_.planned} epochs (every seed of the table; compile charged fresh): "
          + "; ".join(f"{n} {truth_.speed[n]:.3f}x {truth_.gain[n]:+.2f} pt" for n in sorted(truth_.speed)))
    right = sorted(n for n in truth_.speed if truth_.acceptable(n))
    print(f"  acceptable answers: {', '.join(right) or 'none'}" + ("; keep O0" if truth_.acceptable("O0") else ""))


RUN_COLUMNS = ["round", "seed", "recipe", "status", "throughput_sps", "objective_value", "compile_s", "job_s",
               "graph_cached", "recipe_json", "steps_s"]


def collect_workload(name: str, tuning: Path, full: Path, describe: str, command: str) -> Path:
    """Write benchmarks/data/replay/<name>/{tuning,full} from two ``boosttune bench`` folders of the same recipes: the
    tuning job's length and the full job's, on different paired seeds."""
    folder = REPLAY / name
    for part, bench_folder in (("tuning", tuning), ("full", full)):
        (folder / part).mkdir(parents=True, exist_ok=True)
        runs = pd.read_csv(bench_folder / "confirm.csv")
        charged = pd.read_csv(bench_folder / "summary.csv").set_index("recipe")["compile_charged_s"]
        runs["steps_s"] = runs["job_s"] - runs["recipe"].map(charged)  # the bench's own charge taken off
        runs[RUN_COLUMNS].to_csv(folder / part / "runs.csv", index=False)
        bench = json.loads((bench_folder / "bench.json").read_text())
        (folder / part / "meta.json").write_text(json.dumps({
            "workload": describe, "command": command, "seeds": bench["seeds"], "base": bench["base"],
            "recipes": sorted(bench["recipes"])}, indent=2) + "\n")
    return folder


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["collect"]:
        take = argparse.ArgumentParser(prog="pipeline_replay.py collect",
                                       description="write a workload's tables from its two bench folders")
        take.add_argument("name")
        take.add_argument("--tuning", type=Path, required=True, help="the bench at the tuning job's length")
        take.add_argument("--full", type=Path, required=True, help="the bench at the full job's, on other seeds")
        take.add_argument("--describe", required=True)
        take.add_argument("--command", default="")
        a = take.parse_args(argv[1:])
        print(f"written: {collect_workload(a.name, a.tuning, a.full, a.describe, a.command)}")
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=400, help="main jobs replayed per pipeline and truth")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--planned", type=int, nargs="+", default=[10],
                        help="planned lengths the confirm tables are judged at (epochs; their own 10 is measured, a "
                             "longer one extrapolated from it)")
    parser.add_argument("--table", type=Path, action="append", default=None,
                        help="a confirm table folder to take the truth and the runs from (repeat for several; default: "
                             "benchmarks/data/confirm_table and every benchmarks/data/confirm_table_* beside it, each a "
                             "day's measurement of the same recipes)")
    parser.add_argument("--workload", nargs=2, type=Path, action="append", default=None, metavar=("TUNING", "FULL"),
                        help="a tuning job's table and its full job's (a longer one, on other seeds): replays race on "
                             "the first and are judged by the second (default: every benchmarks/data/replay/* pair)")
    args = parser.parse_args(argv)
    workloads: dict[str, list[Truth]] = {}
    for table in args.table or default_tables():
        workloads[f"table {table.name}"] = replay_table(table, args)
    for tuning, full in args.workload or default_workloads():
        workloads[f"workload {full.parent.name}"] = replay_workload(tuning, full, args)
    if not args.workload and not args.table and (REPLAY / "team_seq" / "tuning" / "runs.csv").is_file():
        workloads["workload team_seq"] += replay_short_job(REPLAY / "team_seq" / "tuning", BOOST_ONLY, args)
    print_fixed(workloads)
    return 0



def default_workloads() -> list[tuple[Path, Path]]:
    """The committed pairs: benchmarks/data/replay/<workload>/{tuning,full}."""
    return [(w / "tuning", w / "full") for w in sorted(REPLAY.glob("*")) if (w / "full" / "runs.csv").is_file()]


# The team's boost recipes alone (no learning-rate or amp trial of its searches): a team that searches the boost
# algorithms only (`search: [less_bn, grad_freeze, grad_accumulation, dim_reduce]`) for a 3-epoch job.
BOOST_ONLY = ("O1-equivalent", "grad_accumulation x4", "grad_freeze p=0.5 on 2 groups", "grad_freeze p=0.7 on 2 groups")


def replay_short_job(folder: Path, names: tuple[str, ...], args: argparse.Namespace) -> list[Truth]:
    """A truth where keeping O0 is right, measured: the team's tuning table as the job itself (3 epochs), its boost
    recipes only, each 1.0-1.05x per job or far outside the margin. Out of sample as the confirm tables are (the
    halves of its 10 paired seeds); the scheduler is not replayed (its curves are the main job's)."""
    measured = only(load_measured(folder), names)
    planned = measured.epochs
    print(f"== the team's boost recipes at its {planned}-epoch job ({folder.parent.name}/tuning, "
          f"{len(measured.names)} recipes x {len(measured.seeds)} paired seeds: halves of {len(measured.seeds) // 2})")
    whole = truth(measured, planned)
    print_truth(whole)
    halves = folds(measured)
    held_out = [truth(halves[1], planned), truth(halves[0], planned)]
    pipeline = Pipeline("now (the scheduler not replayed)", True, TIE, None, reference_sd=SEARCH_REFERENCE_SD)
    judge(list(halves), held_out, pipeline, planned, whole, args.replays, args.seed)
    return held_out


def replay_workload(tuning: Path, full: Path, args: argparse.Namespace) -> list[Truth]:
    """A tuning job replayed on its own table and judged by its full job, measured (not extrapolated) on seeds the
    tuning table never drew: the race's per-job figure is the tuning runs' moved to the full job's length, as the
    pipeline moves it (``planned_epochs``). The scheduler is not replayed (its committed curves are the main job's):
    every recipe of the table reaches the handoff."""
    short, long = load_measured(tuning), load_measured(full)
    meta = json.loads((full / "meta.json").read_text())
    print(f"== workload {full.parent.name}: {meta.get('workload', '')}")
    print(f"  tuning job: {len(short.names) + 1} recipes x {len(short.seeds)} paired seeds at {short.epochs} epochs; "
          f"full job (the truth): {len(long.seeds)} other paired seeds at {long.epochs} epochs, measured")
    planned = long.epochs
    whole = truth(long, planned)
    print_truth(whole)
    pipeline = Pipeline("now: the likely acceptable handed on, a per-job race at the full job's length, a 5% tie, "
                        "the search's own O0 run its reference", True, TIE, None, reference_sd=SEARCH_REFERENCE_SD)
    judge([short], [whole], pipeline, planned, whole, args.replays, args.seed)
    # Its baseline still improving at the end of the tuning job (the team's: +4.64 pt in its last epoch), the pipeline
    # races the planned job itself: the search's table read for speed within the lossy bound, the race on one half of
    # the full job's seeds, judged by the other half (boosttune.stages.confirm.confirm_length).
    halves = folds(long)
    at_planned = Pipeline("now, its tuning job still improving: the race trains the full job (half its seeds; judged "
                          "by the other half), handed on by speed", True, TIE, None,
                          reference_sd=SEARCH_REFERENCE_SD, read_gain=False)
    halves_truths = [truth(halves[1], planned), truth(halves[0], planned)]
    judge([(short, halves[0]), (short, halves[1])], halves_truths, at_planned, planned, whole, args.replays, args.seed)
    return [whole, *halves_truths, *replay_without_answers(short, long, whole, at_planned, args)]


def default_tables() -> list[Path]:
    """The committed confirm tables: the first one, then each later day's (``confirm_table_<date>``)."""
    return [CONFIRM_TABLE, *sorted(CONFIRM_TABLE.parent.glob(CONFIRM_TABLE.name + "_*"))]


def replay_table(table: Path, args: argparse.Namespace) -> list[Truth]:
    meta = json.loads((table / "meta.json").read_text())
    runs = pd.read_csv(table / "runs.csv")
    o0 = runs.loc[runs["recipe"] == "O0", "throughput_sps"]
    print(f"== table {table.relative_to(HERE.parent) if table.is_relative_to(HERE.parent) else table}: "
          f"{runs['recipe'].nunique()} recipes x {runs['round'].nunique()} paired seeds, measured "
          f"{meta.get('started', 'n/a')}; O0 at {o0.median():.0f} samples/s (median)")
    measured = load_measured(table)
    pipelines = [Pipeline("as it was: the old scheduler, the fastest handed on, a per-step race, no tie", False, 0.0,
                          search_table_stopper(False), handoff=False),
                 Pipeline("the scheduler against O0's curve, the likely acceptable handed on, a per-job race, "
                          "a 5% tie (the search's O0 reference as steady as the table's)", True, TIE,
                          search_table_stopper()),
                 Pipeline(f"now: the same, the search's own O0 run its reference, moving as measured "
                          f"(search_scale.py: {SEARCH_REFERENCE_SD:.3f} more log-sd on it)", True, TIE,
                          search_table_stopper(), reference_sd=SEARCH_REFERENCE_SD),
                 Pipeline("2026-12-06: the same, the reference the geometric mean of the baseline stage's O0 run and "
                          "the search's", True, TIE, search_table_stopper(),
                          reference_sd=SEARCH_REFERENCE_SD, reference_runs=2)]
    halves, judged = folds(measured), []
    for planned in args.planned:
        whole = truth(measured, planned)
        if planned != measured.epochs:
            print(f"(at {planned} epochs the truth is extrapolated from the {measured.epochs}-epoch runs, not "
                  "measured: benchmarks/data/replay/ holds measured full jobs)")
        print_truth(whole)
        held_out = [truth(halves[1], planned), truth(halves[0], planned)]
        judged += held_out
        for pipeline in pipelines:
            judge(list(halves), held_out, pipeline, planned, whole, args.replays, args.seed)
        judged += replay_without_answers(measured, measured, whole, pipelines[2], args)
    return judged


def replay_without_answers(searched: Measured, raced: Measured, whole: Truth, pipeline: Pipeline,
                           args: argparse.Namespace) -> list[Truth]:
    """The same workload with every recipe its truth accepts taken out of both tables (measured runs, nothing
    planted): keep O0 is right there unless a recipe the truth put in a tie is faster on the held-out seeds, so a
    fixed answer that names a recipe fails here and "always O0" fails on the workload itself; the pipeline must get
    both right. Searched and raced as the workload's own replay is; judged by the held-out halves."""
    names = tuple(n for n in raced.names if not (n in whole.speed and whole.acceptable(n)))
    short, long = only(searched, names), only(raced, names)
    kept = truth(long, whole.planned)
    print(f"  the same workload without its acceptable recipes ({len(names)} recipes left):")
    print_truth(kept)
    halves = folds(long)
    held_out = [truth(halves[1], whole.planned), truth(halves[0], whole.planned)]
    sources = [(short, halves[0]), (short, halves[1])] if searched is not raced else list(halves)
    judge(sources, held_out, pipeline, whole.planned, kept, args.replays, args.seed)
    return held_out


if __name__ == "__main__":
    sys.exit(main())
