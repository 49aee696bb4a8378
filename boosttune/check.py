"""The preflight: everything that can be wrong with an experiment file and a team's project, found in this process,
with no Ray cluster, in seconds (``boosttune check``; ``boosttune tune`` runs it before it starts Ray).

It parses nothing itself (the caller hands it a parsed :class:`~boosttune.config.experiment.ExperimentConfig`);
it reads the device's cached capability probe, builds the parts from the team's builder, trains one step and
evaluates one batch (:func:`boosttune.trial.parts.preflight`), checks the run is long enough to give a speed figure,
and works out which knobs the search would draw and which it leaves out, and why. The speed calibration stays in
``tune``.

What it checks, in full, and why: docs/design/start-up.md.
"""

from __future__ import annotations

import multiprocessing
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from boosttune import algorithms
from boosttune.algorithms.base import SpaceContext
from boosttune.builtin.data import check_data
from boosttune.config.experiment import ExperimentConfig, planned_job_note
from boosttune.devices import ACCELERATOR_RESOURCES
from boosttune.errors import ConfigError, UnsupportedError
from boosttune.objective import Objective
from boosttune.probe import load_cached, run_probe
from boosttune.runtime import apply_runtime_env
from boosttune.trial.parts import ModelFacts, preflight  # MindSpore is imported inside, after the runtime env is applied
from boosttune.trial.timing import FEW_STEADY_STEPS, steady_steps_needed

__all__ = ["CheckReport", "check_experiment", "check_in_fresh_process", "device_here", "search_plan"]


@dataclass
class CheckReport:
    """What the preflight found: the device, the objective, the steps, and the search's knobs in and out."""

    device_target: str
    built_on: str  # where the one step ran: the device, or CPU when the device is not on this machine
    objective: Objective
    steps_per_epoch: int
    epochs: int
    param_count: int
    searched: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # knob -> why the search does not draw it
    notes: list[str] = field(default_factory=list)
    model_facts: ModelFacts | None = None  # what the preflight learnt of the model

    def lines(self) -> list[str]:
        lines = [f"device: {self.device_target}" + ("" if self.built_on == self.device_target else
                                                       f" (not on this machine: built and stepped on {self.built_on})"),
                 f"objective: {self.objective.describe()}",
                 f"steps: {self.steps_per_epoch} per epoch x {self.epochs} epoch(s) = "
                 f"{self.steps_per_epoch * self.epochs}; {self.param_count} trainable parameter tensors",
                 f"searched: {', '.join(self.searched) or 'nothing'}"]
        lines += [f"left out: {knob}: {why}" for knob, why in self.left_out.items()]
        lines += [f"note: {note}" for note in self.notes]
        return lines


def device_here(device_target: str) -> bool:
    """Whether this machine has the device (Ray's own accelerator detection; no cluster needed)."""
    from boosttune.execution.capacity import local_resources

    if device_target not in ACCELERATOR_RESOURCES:
        return True
    return bool(local_resources().get(ACCELERATOR_RESOURCES[device_target][0]))


def check_in_fresh_process(config: ExperimentConfig) -> CheckReport:
    """:func:`check_experiment` in a fresh process: MindSpore, once imported, installs its own signal handlers, and a
    driver holding it died of SIGABRT on Ctrl-C instead of saving what it had and exiting 130
    (tests/e2e/test_faults.py). Its errors come back as themselves; its lines go to stderr as it prints them.

    Everything the child unpickles lives in this module's imports (not the driver's experiment, whose import of
    Ray Train, SciPy and the report would cost the child ~3 s)."""
    pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    try:
        return pool.submit(check_experiment, config, log=_to_stderr).result()
    finally:  # the child, MindSpore loaded, takes ~0.7 s to exit: the run goes on meanwhile
        pool.shutdown(wait=False)


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def check_experiment(config: ExperimentConfig, *, log: Callable[[str], None] = print) -> CheckReport:
    """Run the preflight on ``config`` from the current folder (the project's, as the workers will see it).

    Raises:
        ConfigError, BuilderError, DataError, UnsupportedError: one line naming what is wrong and what to change.
    """

    recipe = config.recipe
    device = recipe.device_target
    here = device_here(device)
    built_on = device if here else "CPU"
    if recipe.builtin:
        check_data(recipe, config.workers_per_trial)
    _project_on_path(config)
    report = load_cached(built_on)
    if report is None:
        log(f"check: no capability probe cached for {built_on}: probing once (about 20 s)")
        report = run_probe(built_on, log=log)
    apply_runtime_env(report.runtime_env)  # before MindSpore is imported, as a worker does
    knob = f"optimizer.{recipe.optimizer.name}"
    if here and not report.supports(knob):
        raise UnsupportedError(f"base.device_target: MindSpore cannot train {recipe.optimizer.name!r} on {device}: "
                               f"{report.why_unsupported(knob)}")
    checked = recipe if here else recipe.model_copy(update={"device_target": "CPU"})
    with tempfile.TemporaryDirectory(prefix="boosttune_check_") as work_dir:
        facts = preflight(checked, config.workers_per_trial, work_dir)
    steps_per_epoch = facts.steps_per_epoch(recipe.epochs)
    if (why := steady_steps_needed(steps_per_epoch, recipe.epochs, recipe.warmup_steps)) is not None:
        raise ConfigError(f"base.epochs: {why}")
    unsupported = {c.knob: c.reason for c in report.unsupported()} if here else {}
    unsupported.update(facts.left_out)
    searched, left_out = search_plan(config, unsupported, facts.total_steps, facts.param_count)
    notes = []
    steady = steps_per_epoch * recipe.epochs - max(1, recipe.warmup_steps)
    if steady < FEW_STEADY_STEPS:
        notes.append(f"a run has {steady} steady steps (after {max(1, recipe.warmup_steps)} warm-up): its speed figure "
                     f"will be noisy (each says its standard error); {FEW_STEADY_STEPS} or more steady it (base.epochs, "
                     "more data)")
    if not here:
        notes.append(f"{device}'s knobs are probed by `boosttune tune` on a node that has it")
    notes.extend(config.adjusted)
    if (length := planned_job_note(config)) is not None:
        notes.append(length)
    if config.prune_slow:
        notes.append("tune also times each knob against O0 on the trials' node and leaves out those clearly slower "
                     "(prune_slow)")
    return CheckReport(device_target=device, built_on=built_on, objective=facts.objective,
                       steps_per_epoch=steps_per_epoch, epochs=recipe.epochs, param_count=facts.param_count,
                       searched=searched, left_out=left_out, notes=notes, model_facts=facts)


def _project_on_path(config: ExperimentConfig) -> None:
    """Put what Ray will ship to the workers (``working_dir``, ``py_modules``) first on this process's path, so the
    builder is imported from where they will import it."""
    from boosttune.execution.ray import code_runtime_env

    shipped = code_runtime_env(config, Path.cwd()) or {}
    folders = [shipped["working_dir"]] if "working_dir" in shipped else []
    folders += [str(Path(module).parent) for module in shipped.get("py_modules", ())]
    for folder in reversed(folders):
        if folder not in sys.path:
            sys.path.insert(0, folder)


def search_plan(config: ExperimentConfig, unsupported: dict[str, str], total_steps: int,
                param_count: int) -> tuple[list[str], dict[str, str]]:
    """The search space's parts the search would draw, and the knobs it leaves out -> why (the device, the ranks,
    the optimizer): what ``unsupported`` (knob -> reason) and the experiment's ranks leave of it."""
    ctx = SpaceContext(unsupported=frozenset(unsupported), total_steps=total_steps, param_count=param_count,
                       world_size=config.workers_per_trial, enabled=frozenset(config.search or ()),
                       base_learning_rate=config.recipe.optimizer.learning_rate,
                       device_target=config.recipe.device_target)
    searched: list[str] = []
    left_out: dict[str, str] = {}
    for algorithm in algorithms.registry():
        fragment = algorithm.fragment
        if fragment is None or (ctx.enabled and fragment.name not in ctx.enabled):
            continue
        missing = [knob for knob in fragment.requires if not ctx.supported(knob)]
        ranks = algorithm.ranks_rule(ctx.world_size) if algorithm.ranks_rule is not None else None
        if missing:
            left_out[fragment.name] = "; ".join(unsupported[knob] for knob in missing)
        elif ranks:
            left_out[fragment.name] = ranks
        else:
            searched.append(fragment.name)
    for knob, why in unsupported.items():  # a searched part's own knob (LessBN's gc_flag, amp O2): the rest is drawn
        part = knob.split(".")[1] if knob.startswith("boost.") else knob.split(".")[0]
        if part in searched:
            left_out[knob] = why
    return searched, left_out
