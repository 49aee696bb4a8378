"""``boosttune bench``: a fixed matrix of recipes over paired, interleaved seeds, to check a claim.

Not a search: the file names the recipes (overrides of one base recipe), or the default matrix is
O0, MindSpore's presets as this device runs them, each boost algorithm alone, and each amp level and
loss-scale manager the device supports. Every recipe is checked against the recipe model and the
capability probe before anything trains. The runs go through the same Ray Train path and the same
statistics as the experiment's confirm stage, and write the same ``summary.csv``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from boosttune import algorithms
from boosttune.builtin.data import check_data
from boosttune.config.boost import format_validation_error
from boosttune.config.experiment import CACHE_GRAPHS, MAX_DROP, RECOMMENDED_SEEDS, WARM_WORKERS
from boosttune.config.recipe import TrialRecipe, parse_recipe
from boosttune.errors import BoosttuneError, ConfigError
from boosttune.stages.rounds import Candidate
from boosttune.tables.confirm_runs import BASELINE_NAME
from boosttune.execution.provenance import record_run_info
from boosttune.execution.runs import RecordStore
from boosttune.probe import check_recipe
from boosttune.probe.presets import device_presets

__all__ = ["BenchConfig", "bench_candidates", "default_matrix", "merge", "parse_bench", "run_bench"]


class BenchConfig(BaseModel):
    """A bench file: a base recipe (the O0 baseline), paired seeds, and named recipes as overrides of it."""

    @cached_property
    def recipe(self) -> TrialRecipe:
        """The base recipe, typed: parsed once (:func:`parse_bench` checks it, the start-up and the runs read it)."""
        return parse_recipe(self.base)

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field("bench", pattern=r"^[A-Za-z0-9_.-]+$", description="the bench's name (letters, digits, _ . -)")
    base: dict[str, Any] = Field(default_factory=dict, description="the O0 recipe every other is relative to")
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2], min_length=2,
                             description="paired seeds: one round per seed, every recipe once in each")
    recipes: dict[str, dict[str, Any]] | None = Field(
        None, description="name: overrides of base (unset: O0, the presets, each boost algorithm alone, each amp "
                          "level and loss-scale manager the device supports)")
    workers_per_trial: int = Field(1, ge=1, description="Ray Train workers (MindSpore ranks) per run")
    warm_workers: bool = WARM_WORKERS
    cache_graphs: bool = CACHE_GRAPHS
    interleave: Literal["auto", "epochs", "runs"] = Field(
        "auto", description="epochs: a round's runs train at once on one machine and take its epochs in turn, so the "
                            "machine's drift meets every recipe alike; runs: with warm workers on a cluster of several "
                            "slots, a round's runs at once, one per slot, each recipe on another slot from round to "
                            "round; else one run after another; auto: epochs on a "
                            "one-node CPU cluster with warm workers and one rank per run, else runs")
    max_drop: float | None = Field(
        None, ge=0.0,
        description=f"how far below the baseline's objective a recipe may fall, in its units: points for accuracy "
                    f"(unset: {MAX_DROP:g} point, or {MAX_DROP:g}% of the baseline's value for another "
                    f"metric)")

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, seeds: list[int]) -> list[int]:
        if any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be distinct integers >= 0 (paired rounds), got {seeds}")
        return seeds


def parse_bench(document: Mapping[str, Any] | None, *, seeds: list[int] | None = None) -> BenchConfig:
    raw = {**dict(document or {}), **({"seeds": seeds} if seeds is not None else {})}
    try:
        config = BenchConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, BenchConfig, prefix="")) from None
    try:
        base = config.recipe
    except ConfigError as e:
        raise ConfigError(f"base.{e}") from None
    if base.boost_level != "O0" or base.boost_config_dict or base.amp_level != "O0":
        raise ConfigError("base: the base recipe is the O0 baseline; put boost and amp settings in recipes")
    if config.recipes is not None and BASELINE_NAME in config.recipes and config.recipes[BASELINE_NAME]:
        raise ConfigError(f"recipes.{BASELINE_NAME}: the baseline is the base recipe itself; leave it empty or out")
    if config.interleave == "epochs" and (not config.warm_workers or config.workers_per_trial != 1):
        raise ConfigError("interleave: 'epochs' needs warm_workers true and workers_per_trial 1 (runs that take turns "
                          "share one machine, one rank each); allowed here: auto, runs")
    return config


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` laid over it, mapping by mapping (a boost_config_dict is replaced whole)."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping) and key != "boost_config_dict":
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def default_matrix(report, world_size: int = 1) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The default recipes (name -> override) for this device, and a note for each one left out."""

    matrix: dict[str, dict[str, Any]] = {BASELINE_NAME: {}}
    skipped: list[str] = []
    for preset in device_presets(report, world_size)[1:]:
        if any(note.startswith("trains the same as") for note in preset.notes):
            skipped.append(f"{preset.name}: {'; '.join(preset.notes)}")
            continue
        matrix[preset.name] = {"boost_level": preset.boost_level, "boost_config_dict": preset.boost_config_dict}
    # Each algorithm's own setting (boosttune/algorithms/<name>): the boost algorithms alone, then amp and loss scale.
    for algorithm in sorted(algorithms.listed(), key=lambda a: a.kind != "boost"):
        if algorithm.bench is not None:
            entries, left_out = algorithm.bench(report, world_size)
            matrix.update(entries)
            skipped += left_out
    return matrix, skipped


@dataclass(frozen=True)
class _Plan:
    candidates: list[Candidate]
    skipped: list[str]


def bench_candidates(config: BenchConfig, report, *, extra: Mapping[str, dict[str, Any]] | None = None) -> _Plan:
    """Every recipe of the bench, validated and checked against the probe: bad input fails here, not in a run."""

    if config.recipes is not None:
        matrix, skipped = {BASELINE_NAME: {}, **config.recipes}, []
    else:
        matrix, skipped = default_matrix(report, config.workers_per_trial)
    matrix.update(extra or {})
    candidates = []
    for name, override in matrix.items():
        if not isinstance(override, Mapping):
            raise ConfigError(f"recipes.{name}: expected a mapping of recipe fields, got {type(override).__name__}")
        try:
            recipe = parse_recipe(merge(config.base, override))
            check_recipe(recipe, report)
        except BoosttuneError as e:
            raise ConfigError(f"recipes.{name}: {e}") from None
        candidates.append(Candidate(name=name, recipe=recipe.to_dict(), why="bench recipe",
                                    preset=name if name == BASELINE_NAME else None))
    return _Plan(candidates, skipped)


def recipe_override(best_recipe: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The recipe fields of an exported best_recipe.json, as a bench override."""
    fields = ("boost_level", "boost_config_dict", "amp_level", "loss_scale", "optimizer")
    if not isinstance(best_recipe, Mapping) or "boost_level" not in best_recipe:
        raise ConfigError(f"--recipe: {source} is not a boosttune best_recipe.json (no boost_level)")
    return {name: best_recipe[name] for name in fields if name in best_recipe}


def run_bench(config: BenchConfig, output: str | Path, *, resume: bool = False, log: Callable[[str], None] = print,
              extra: Mapping[str, dict[str, Any]] | None = None, command: str | None = None, project: Any = None):
    """Run (or resume) the bench in ``output``; write confirm.parquet/.csv, summary.csv, report.html and report.md.

    ``project``: where the user's code comes from (an experiment's ``working_dir`` and ``py_modules``; default: the
    folder the command runs in, for a builder of the user's own)."""
    import ray

    from boosttune.execution.start import ROUNDS_ACROSS_SLOTS, ROUNDS_IN_TURN, ROUNDS_ONE_BY_ONE, RunRequest, start_run
    from boosttune.finish import finish_run
    from boosttune.outputs.judged import judge_run
    from boosttune.outputs.summary import save_confirmed
    from boosttune.stages.rounds import run_paired
    from boosttune.stats.confirmed import confirm_table
    from boosttune.stats.margin import Margin

    recipe = config.recipe
    if config.recipes is not None:  # named recipes are checked before Ray starts (the probe checks them again)
        bench_candidates(config, None, extra=extra)
    document = {**config.model_dump(mode="json"), "extra": dict(extra or {})}
    launch = RunRequest(what="bench", document=document, device_target=recipe.device_target,
                    workers=config.workers_per_trial, project=project or config, warm_workers=config.warm_workers,
                    cache_graphs=config.cache_graphs)
    preflight = (lambda: check_data(recipe, config.workers_per_trial)) if recipe.builtin else None  # read as the
    # runs will (a builder reads its own data on the workers)
    with start_run(launch, output, resume=resume, log=log, command=command, preflight=preflight) as started:
        plan = bench_candidates(config, started.report, extra=extra)  # every recipe checked before anything starts
        output = started.output
        record_run_info(output, device=f"{started.report.device_target}: {started.report.cpu}",
                        left_out=dict(note.split(": ", 1) for note in plan.skipped))
        for note in plan.skipped:
            log(f"bench: not in the matrix: {note}")
        log(f"bench: {len(plan.candidates)} recipes x {len(config.seeds)} paired seeds {config.seeds}, interleaved"
            + ("" if len(config.seeds) >= RECOMMENDED_SEEDS else f" ({RECOMMENDED_SEEDS} or more seeds recommended)"))
        turns = started.interleaves(config.interleave)
        slots = 1 if turns else started.round_slots()
        record_run_info(output, rounds=ROUNDS_IN_TURN if turns else ROUNDS_ONE_BY_ONE if slots == 1 else
                        f"{ROUNDS_ACROSS_SLOTS} ({slots})")
        with started.warm_pool(log, turns=turns, slots=slots):
            records = run_paired(plan.candidates, config.seeds, store=RecordStore(output / "runs"), role="bench",
                                 train=started.train, log=log,
                                 train_round=started.train_round if turns or slots > 1 else None)
        margin = Margin.on(confirm_table(records), config.max_drop, MAX_DROP)  # resolved once, on its O0 runs
        decision = save_confirmed(records, output, margin=margin, ray_version=ray.__version__)
        finish_run(judge_run("bench", margin, decision=decision), output, export=False)
    return decision
