"""The typed configuration of a search experiment (``boosttune tune CONFIG.yaml`` and experiments/)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from boosttune.algorithms import fragment_names
from boosttune.config.boost import format_validation_error
from boosttune.config.recipe import RENAMED_RECIPE_FIELDS, TrialRecipe, parse_recipe, refuse_renamed, with_entry_names
from boosttune.errors import ConfigError

__all__ = ["CONFIRM_SCREEN", "EARLY_STOP_MARGIN", "LEGACY_MAX_DROP", "LOSSY_DROP", "MAX_DROP", "OBJECTIVES",
           "RACE_MIN_SEEDS", "RECOMMENDED_SEEDS", "SAMPLERS", "VERIFY_SEEDS", "ExperimentConfig", "VerifyConfig",
           "parse_experiment", "planned_job_note",
           "recorded_max_drop", "recorded_prefer_ties"]

# Every default tolerance, in one place. Left unset, a tolerance is that many points for a fraction objective
# (accuracy) and that many percent of the baseline's value otherwise (boosttune.objective.Objective.tolerance).
# max_drop is how far below the baseline a recipe may fall; early_stop_margin and confirm_screen are other
# concepts (a lead smaller than the noise at the first rung; the single-seed screen for confirm candidates).
#
# max_drop: 1 point (1% of the baseline's value for another metric), for the search, the confirm stage, the bench,
# the experiment scripts, export and report alike. Half a point is below what paired seeds can show here: one paired
# seed's accuracy gain moves by about 0.35 pt on the reference machine (benchmarks/data/confirm_table), so a recipe
# that truly keeps accuracy needs a margin a few standard errors wide to be shown within it at the default budget.
MAX_DROP, EARLY_STOP_MARGIN, CONFIRM_SCREEN = 1.0, 5.0, 3.0
# A trial this far below the baseline at the epoch it reached cannot train here (tens of points, not the lag of a slow
# first epoch): the search tells Optuna it is infeasible and leaves out the algorithm that made it so
# (boosttune.search.lossy). The main job's DimReduce trials lost 25-50 points at epoch 1.
LOSSY_DROP = 20.0
# What a results folder written before the one default (2026-11-25) was judged at when its file left max_drop unset:
# an experiment file 0.5 point, a bench 1 point. Later folders record the default in run_info.json
# (max_drop_default), so a report or an export re-judges a folder as its run did (recorded_max_drop).
LEGACY_MAX_DROP = {"bench.json": 1.0, "experiment.json": 0.5}
# Paired seeds recommended for a claim: fewer rarely separate a 10-20 % speed-up from run-to-run noise.
RECOMMENDED_SEEDS = 5
# Named so before the objective was the user's (they were accuracy points).
RENAMED_FIELDS = {
    "max_accuracy_drop_pt": "max_drop (in the objective's units: points for accuracy)",
    "early_stop_margin_pt": "early_stop_margin (in the objective's units: points for accuracy)",
    "confirm_screen_pt": "confirm_screen (in the objective's units: points for accuracy)",
}

OBJECTIVES = ("pareto", "constrained", "time_to_accuracy")
SAMPLERS = ("tpe", "gp", "nsga2", "random")


# Shared with the bench's file (boosttune.bench.BenchConfig).
WARM_WORKERS = Field(
    True, description="train every run on warm Ray Train workers that outlive one run (MindSpore imported and the "
                      "device set up once per slot); false: a fresh Ray Train run, workers and all, for each run")
CACHE_GRAPHS = Field(
    True, description="a warm worker trains a run that differs from an earlier one by its seed alone on that run's "
                      "compiled graph (where its algorithms allow: boosttune.trial.graphs); false: compile every run")


# What the command line alone decides about a storage location, checked as the file or the flags are read (before
# the preflight, the probe or Ray): a folder, or a URI whose scheme Ray's storage (pyarrow.fs) can open; an Optuna
# study storage, an SQLAlchemy URL of a database RDBStorage runs on. Whether it is reachable is checked later.
STORAGE_SCHEMES = ("file", "s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss")
STUDY_DIALECTS = ("sqlite", "postgresql", "postgres", "mysql", "mariadb", "oracle", "mssql")


def _scheme(value: str) -> str | None:
    head, sep, _ = value.partition("://")
    return head.lower() if sep else None


def _storage_location(value: str) -> str:
    scheme = _scheme(value)
    if not value.strip() or (scheme is not None and scheme not in STORAGE_SCHEMES):
        raise ValueError("not a folder or a storage URI Ray can open; allowed: a path, or a URI of "
                         + ", ".join(f"{s}://" for s in STORAGE_SCHEMES))
    return value


def _study_url(value: str) -> str:
    dialect = (_scheme(value) or "").split("+", 1)[0]
    if dialect not in STUDY_DIALECTS:
        raise ValueError("not a database URL Optuna's RDBStorage takes; allowed: "
                         + ", ".join(f"{d}://..." for d in STUDY_DIALECTS) + " (a driver as dialect+driver://)")
    return value


def _searchable(name: str) -> str:
    """A fragment name, as the algorithm folders declare them (boosttune.algorithms)."""
    names = fragment_names()
    if name not in names:
        allowed = ", ".join(repr(n) for n in names[:-1]) + f" or {names[-1]!r}"
        raise ValueError(f"Input should be {allowed}")
    return name


RACE_MIN_SEEDS = 3  # paired seeds a recipe needs to win the race (boosttune.stats.race.RaceRules.min_seeds)
VERIFY_SEEDS = 2  # `boosttune verify`'s default: a first look at the planned job; 5 for a claim (docs/verify.md)


class VerifyConfig(BaseModel):
    """The team's planned job, for ``boosttune verify``: its length, its data, and how many fresh paired seeds."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

    planned_epochs: int | None = Field(
        None, ge=1, description="epochs of the planned job (unset: base.planned_epochs, else base.epochs)")
    seeds: int = Field(VERIFY_SEEDS, ge=2, description="fresh paired seeds, none the run used (an interval needs two)")
    base: dict[str, Any] = Field(
        default_factory=dict, description="fields of base laid over the run's for the planned job, e.g. "
                                          "{data: {train_limit: 60000}} (the full data set)")


class ExperimentConfig(BaseModel):
    """A search: the base recipe, how many trials, on how many workers each, for which objective.

    objective:
      pareto: the best (throughput, objective) pairs together; the Pareto set is the answer.
      constrained: the fastest recipe within ``max_drop`` of the baseline's objective.
      time_to_accuracy: the least training time to reach the baseline's objective less the allowed drop.

    The objective is the builder's (accuracy for the built-in models; see :mod:`boosttune.objective`). The
    tolerances ``max_drop``, ``early_stop_margin`` and ``confirm_screen`` are in its units: points for a
    fraction such as accuracy, the metric's own units otherwise; left unset, their defaults (:data:`MAX_DROP`,
    :data:`EARLY_STOP_MARGIN` and :data:`CONFIRM_SCREEN`: 1, 5 and 3) are points for a fraction and percent of the
    baseline's value otherwise.

    :func:`parse_experiment` builds one; what it changed of the document (a race's seeds raised to its minimum) is
    in :attr:`adjusted`, one line each, which a run says before anything trains.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field("boosttune", pattern=r"^[A-Za-z0-9_.-]+$", description="the run's name (letters, digits, _ . -)")
    base: dict[str, Any] = Field(
        default_factory=dict,
        description="a recipe without boost: the O0 baseline; base.model names a built-in network or your own "
                    "builder, {entry: 'module:function', kwargs: {...}}")
    # 8: the budget benchmarks/search_efficiency.py measured (the main job's), where random sampling of the pruned
    # space after the informed start reached the best front
    num_trials: int = Field(8, ge=1, description="trials in all, baseline and presets included")
    workers_per_trial: int = Field(1, ge=1, description="Ray Train workers (MindSpore ranks) per trial")
    objective: Literal["pareto", "constrained", "time_to_accuracy"] = Field(
        "pareto", description="pareto: speed and the objective together; constrained: the fastest within max_drop of "
                              "the baseline; time_to_accuracy: the least time to the baseline's objective less max_drop")
    max_drop: float | None = Field(
        None, ge=0.0,
        description=f"how far below the baseline's objective a recipe may fall, in its units: points for accuracy "
                    f"(unset: {MAX_DROP:g} pt, or {MAX_DROP:g}% of the baseline's value for another metric)")
    # At the main job's budget (8 trials, half of them the informed start) random sampling of the pruned space
    # reached the best front in benchmarks/search_efficiency.py; TPE and GP exploited the start points' neighbours.
    sampler: Literal["tpe", "gp", "nsga2", "random"] = Field(
        "random", description="Optuna sampler after the informed start (random: best at this budget in "
                              "benchmarks/search_efficiency.py; tpe/gp model the results, gp needs PyTorch: "
                              "boosttune[gp])")
    seed: int = Field(0, ge=0, description="seed of the sampler and of every trial (base.seed, where base sets none)")
    time_budget_s: float | None = Field(None, gt=0, description="stop starting trials after this many seconds")
    max_failure_rate: float = Field(0.5, gt=0.0, le=1.0, description="abort once this share of trials failed")
    max_concurrent_trials: int | None = Field(
        None, ge=1, description="trials at once (unset: on CPU nodes one per node, so trials do not skew each other's "
                              "timings; with GPUs or NPUs as many as their accelerators hold, workers_per_trial each)")
    warm_workers: bool = WARM_WORKERS
    cache_graphs: bool = CACHE_GRAPHS
    search: list[Annotated[str, AfterValidator(_searchable)]] | None = Field(
        None, description="fragments to search (unset: all but those measured slow here); a fragment named here is "
                          "searched even when it is slow on this device")
    # The user's code, shipped to every node through Ray's runtime environment.
    working_dir: str | None = Field(
        None, description="your code's folder, shipped to every node (unset: the folder you run from, when "
                          "base.model is your builder)")
    py_modules: list[str] = Field(default_factory=list,
                                  description="more of your code shipped to every node: package folders, .py files")
    storage: Annotated[str, AfterValidator(_storage_location)] | None = Field(
        None, description="where Ray Train and Tune persist, reachable from every node: a shared folder or a bucket "
                          "URI such as s3://bucket/runs (unset: inside the output folder, enough on one machine)")
    study_storage: Annotated[str, AfterValidator(_study_url)] | None = Field(
        None, description="Optuna study RDB URL, e.g. postgresql://... (unset: sqlite:///OUTPUT/optuna.db)")
    accelerator_type: str | None = Field(
        None, pattern=r"^[A-Za-z0-9_.-]+$",
        description="Ray's accelerator model for GPU/Ascend ranks, e.g. A100 or Ascend910B (unset: any)")
    early_stopping: bool = Field(
        True, description="stop hopeless trials early: ASHA on one objective, multi-objective successive halving in "
                          "Pareto mode (a trial clearly beaten on both speed and the objective at a rung stops there, "
                          "and, before a confirm stage, one too slow for it to race)")
    reduction_factor: float = Field(2.0, gt=1.0, description="successive halving's reduction factor")
    early_stop_margin: float | None = Field(
        None, ge=0.0,
        description=f"a lead at the first rung smaller than this is noise, in the objective's units (unset: "
                    f"{EARLY_STOP_MARGIN:g} points, or {EARLY_STOP_MARGIN:g}% of the baseline's value); only when the "
                    "O0 baseline has no per-epoch curve, else trials are judged against that curve")
    prune_slow: bool = Field(
        True, description="leave out of the search the knobs this device measured clearly slower than O0 "
                          "(boosttune.probe.calibrate), unless named in search")
    informed_start: bool = Field(
        True, description="start from the presets and the variations a person would try first, then let the "
                          "sampler model")
    remeasure_baseline: bool = Field(
        True, description="train O0 again, first of the search's start points and once more as its last run (one "
                          "run beyond `num_trials`, not told to Optuna), and take each searched speed-up against O0 "
                          "at the trial's start, read off the line between the two: timed in the search as its "
                          "trials are, the machine's drift over the search taken out (false: the start point O0 is "
                          "answered from the baseline stage, two runs cheaper, and every speed-up is a ratio to that "
                          "run)")
    confirm_seeds: int = Field(
        5, ge=0, description="paired seeds per recipe of a fixed confirm stage; a race's default budget is what that "
                             "stage would cost (0 skips the confirm stage, and the answer then rests on one seed; 5: "
                             "the budget benchmarks/confirm_reliability.py judges against its targets, figures in "
                             "docs/benchmarks.md)")
    confirm_mode: Literal["race", "fixed"] = Field(
        "race", description="race: candidates leave as soon as their paired seeds decide them, the seeds go to the "
                            "undecided ones, and a recipe wins only when shown faster and non-inferior at the "
                            "family-wise level confirm_alpha; fixed: every recipe on confirm_seeds seeds")
    confirm_budget_runs: int | None = Field(
        None, ge=2, description="runs the race may spend, the baseline's included (unset: confirm_seeds x every "
                                "place: the baseline, the presets and confirm_candidates searched recipes)")
    confirm_budget_minutes: float | None = Field(
        None, gt=0, description="minutes the race may spend; no round starts that would not fit (unset: no limit)")
    confirm_max_seeds: int | None = Field(
        None, ge=3, le=1000, description="paired seeds after which a race candidate still undecided leaves: the "
                                         "design's last look (unset: what the run budget pays one candidate, the "
                                         "others leaving after the first round; 10 with a budget in minutes only)")
    confirm_alpha: float = Field(
        0.05, gt=0, lt=1, description="the race's chance of a false 'faster and non-inferior' claim, over all "
                                      "candidates and rounds")
    confirm_interleave: Literal["auto", "epochs", "runs"] = Field(
        "auto", description="epochs: a round's runs train at once on one machine and take its epochs in turn, so the "
                            "machine's drift meets every recipe alike (benchmarks/epoch_interleave.py); runs: with "
                            "warm workers on a cluster of several slots (the search's concurrency), a round's runs at "
                            "once, one per slot, each recipe on another slot from round to round; else one run after "
                            "another; auto: epochs on a one-node CPU cluster with warm workers and one rank per "
                            "trial, else runs")
    confirm_epochs: int | None = Field(
        None, ge=1, description="epochs each confirm run trains (unset: base.epochs, the tuning job's; or the planned "
                                "job's, base.planned_epochs, when it is longer and the baseline was still improving "
                                "at the end of base.epochs: the accuracy there does not predict the planned job's)")
    confirm_eval_all: bool = Field(
        True, description="confirm runs of a built-in data set take their objective from one evaluation after the "
                          "last epoch on every held-out sample (less noisy than the per-epoch slice, val_limit)")
    confirm_curves: bool = Field(
        False, description="confirm runs evaluate after every epoch too: learning curves for the report and the "
                           "secondary time-to-target figure, at about a fifth more confirm time on the built-in job "
                           "(off: one evaluation after the last epoch, which is all the decision reads)")
    prefer_ties: bool = Field(
        False, description="a recipe that won the race but whose per-job speed-up over O0 is under 1.05x (its "
                           "point estimate: a tie) is the answer instead of O0")
    # 5, with the race's budget sized to every place (confirm_stage.default_budget_runs): benchmarks/pipeline_replay.py
    # on the committed tables, acceptable answers 45.5% -> 73.8% of 10-epoch jobs together (docs/benchmarks.md).
    confirm_candidates: int = Field(
        5, ge=0, description="searched recipes confirmed next to the baseline and the O1/O2-equivalent presets")
    confirm_screen: float | None = Field(
        None, ge=0.0,
        description=f"a searched recipe is confirmed only if its one-seed objective is within this of the "
                    f"baseline's (unset: {CONFIRM_SCREEN:g} points, or {CONFIRM_SCREEN:g}% of the baseline's value)")

    verify: VerifyConfig = Field(
        VerifyConfig(), description="the planned job `boosttune verify RUN` trains the answer and O0 at: "
                                    "{planned_epochs, seeds, base: {...}}")

    _adjusted: tuple[str, ...] = PrivateAttr(default=())

    @property
    def adjusted(self) -> tuple[str, ...]:
        """What :func:`parse_experiment` changed of the document, one line each."""
        return self._adjusted

    @property
    def recipe(self) -> TrialRecipe:
        return parse_recipe(self.base)


def parse_experiment(document: Mapping[str, Any] | None = None, **overrides: Any) -> ExperimentConfig:
    """Validate an experiment (from YAML/JSON plus overrides); bad input is one ConfigError line."""
    raw = {**dict(document or {}), **{k: v for k, v in overrides.items() if v is not None}}
    refuse_renamed(raw, RENAMED_FIELDS)
    if isinstance(raw.get("base"), Mapping):
        refuse_renamed(raw["base"], RENAMED_RECIPE_FIELDS, prefix="base.")
        raw["base"] = with_entry_names(dict(raw["base"]))
        raw["base"].setdefault("seed", raw.get("seed", 0))  # the experiment's seed is every trial's, unless base sets one
    try:
        config = ExperimentConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, ExperimentConfig, prefix="")) from None
    try:
        recipe = config.recipe
    except ConfigError as e:
        raise ConfigError(f"base.{e}") from None
    if recipe.boost_level != "O0" or recipe.boost_config_dict:
        raise ConfigError("base.boost_level: the base recipe is the O0 baseline; boost settings are what the "
                          "search chooses (leave boost_level/boost_config_dict out of base)")
    if config.confirm_seeds == 1:
        raise ConfigError("confirm_seeds: 1 is invalid; allowed: 0 (no confirm stage) or >= 2 paired seeds "
                          f"(an interval needs two; {RECOMMENDED_SEEDS} or more recommended)")
    config = _race_minimum(config)
    if config.sampler == "gp" and importlib.util.find_spec("torch") is None:
        raise ConfigError("sampler: 'gp' needs PyTorch, which is not installed (pip install 'boosttune[gp]'); "
                          "allowed without it: tpe, nsga2, random")
    if config.confirm_interleave == "epochs" and (not config.warm_workers or config.workers_per_trial != 1):
        raise ConfigError("confirm_interleave: 'epochs' needs warm_workers true and workers_per_trial 1 (runs that take "
                          "turns share one machine, one rank each); allowed here: auto, runs")
    if config.num_trials < 2:
        raise ConfigError(f"num_trials: {config.num_trials} is invalid; the baseline plus at least one more trial")
    return config


def planned_job_note(config: ExperimentConfig) -> str | None:
    """Said before anything trains: a planned job longer than the tuning job, which the confirm race trains instead
    when the baseline is still improving at the end of the tuning job (boosttune.stages.confirm.confirm_length)."""
    recipe = config.recipe
    planned = recipe.planned_epochs or recipe.epochs
    if not config.confirm_seeds or config.confirm_epochs is not None or planned <= recipe.epochs:
        return None
    return (f"the planned job is {planned} epochs, the tuning job {recipe.epochs}: if the baseline is still improving "
            f"at the end of its {recipe.epochs}, the confirm race trains the planned {planned} (each confirm run about "
            f"{planned / recipe.epochs:.3g}x as long; confirm_epochs to choose)")


def _race_minimum(config: ExperimentConfig) -> ExperimentConfig:
    """A race that could never name a recipe is refused, or raised to what can, so that a keep-O0 answer is never
    read as "no recipe was faster": a recipe wins only on :data:`RACE_MIN_SEEDS` paired seeds. A run budget below
    one candidate's and the baseline's runs for them is refused; ``confirm_seeds`` below them (with no run budget
    of its own: the race's is ``confirm_seeds`` a place) is raised to them, said in :attr:`~ExperimentConfig.adjusted`
    (``confirm_mode: fixed`` decides on fewer)."""
    if config.confirm_mode != "race" or not config.confirm_seeds:
        return config
    need, runs = RACE_MIN_SEEDS, config.confirm_budget_runs
    least = 2 * need  # the baseline and one candidate, every round
    if runs is not None and runs < least:
        raise ConfigError(f"confirm_budget_runs: {runs} cannot name a recipe: one wins the race only on {need} paired "
                          f"seeds, {least} runs with the baseline's, so the answer would be keep O0 whatever the "
                          f"recipes do; allowed: {least} or more (or confirm_mode fixed)")
    if runs is None and config.confirm_seeds < need:
        said = (f"confirm_seeds: {config.confirm_seeds} raised to {need}, the race's minimum (a recipe wins only on "
                f"{need} paired seeds; confirm_mode fixed decides on {config.confirm_seeds})")
        raised = config.model_copy(update={"confirm_seeds": need})
        raised._adjusted = (*config.adjusted, said)
        return raised
    return config


def recorded_max_drop(folder: str | Path) -> tuple[float | None, float]:
    """The ``max_drop`` a results folder's run was judged at (None: left unset), and the default for its kind.

    Read from the folder's ``experiment.json`` or ``bench.json`` (older runs named it max_accuracy_drop_pt), so
    that ``boosttune report`` and ``boosttune export`` judge a folder as the run itself did; the default from its
    ``run_info.json`` (``max_drop_default``), or for a folder from before it was recorded, the one of its time
    (:data:`LEGACY_MAX_DROP`). A folder with neither file (a bare results table) gets today's default.
    """
    folder = Path(folder)
    try:
        info = json.loads((folder / "run_info.json").read_text())
    except (OSError, ValueError):
        info = {}
    info = info if isinstance(info, dict) else {}
    recorded, resolved = info.get("max_drop_default"), info.get("max_drop_resolved")
    rejudged = info.get("max_drop_rejudged")  # `boosttune export --max-drop` re-judged the folder in place
    if isinstance(rejudged, (int, float)) and not isinstance(rejudged, bool):
        return float(rejudged), recorded if isinstance(recorded, (int, float)) else MAX_DROP
    for name in ("bench.json", "experiment.json"):
        default = recorded if isinstance(recorded, (int, float)) else LEGACY_MAX_DROP[name]
        if (folder / name).is_file():
            try:
                document = json.loads((folder / name).read_text())
            except (OSError, ValueError):
                document = {}
            if not isinstance(document, dict):
                document = {}
            given = document.get("max_drop", document.get("max_accuracy_drop_pt"))
            if given is None and isinstance(resolved, (int, float)) and not isinstance(resolved, bool):
                given = float(resolved)  # the number the run resolved once (a share of its baseline's value)
            return given, default
    return None, MAX_DROP


def recorded_prefer_ties(folder: str | Path) -> bool:
    """Whether a results folder's experiment asked for a recipe that ties with O0 per job (``prefer_ties``)."""
    try:
        document = json.loads((Path(folder) / "experiment.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and document.get("prefer_ties") is True
