"""Speed calibration: how each device-dependent knob changes throughput on this device, for this network.

The experiment's own network and data train a few dozen steps per supported knob, with an O0 run before and after
every knob, so machine drift moves both sides of the ratio. A knob below ``SLOW_BELOW`` times its neighbours' is
*slow here*: the default search does not draw it, and says why (a user's ``--search`` naming it wins). A verdict is
*clear* when the two O0 neighbours agree within ``1 - SLOW_BELOW`` and the ratio is outside ``AMBIGUOUS_BAND`` of
the threshold; an unclear knob is measured once more, and left in the search if still unclear. The report is cached
per node type, MindSpore version and model fingerprint; only its clear verdicts count as cached.

Why, and what was measured: docs/design/probe.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from boosttune import algorithms
from boosttune.config.recipe import OptimizerConfig, diverged_hint
from boosttune.errors import BoosttuneError, TrialError
from boosttune.files import write_json
from boosttune.probe.report import ProbeReport, cache_dir, cpu_name, node_type
from boosttune.runtime import apply_runtime_env
from boosttune.space import SpaceContext, preset_params, recipe_from_params
from boosttune.trial.graphs import GraphCache
from boosttune.trial.runner import run_trial
from boosttune.tables.states import RunStatus

__all__ = ["AMBIGUOUS_BAND", "CALIBRATED", "SLOW_BELOW", "SpeedReport", "calibration_base", "fragment_of", "judge",
           "run_calibration", "slow_knobs"]

SLOW_BELOW = 0.8  # clearly slower: this machine's throughput moves by about +-10% from run to run
AMBIGUOUS_BAND = 0.1  # a ratio within this of SLOW_BELOW is measured again
CALIBRATION_REVISION = 2
STEPS = 30  # per epoch of a run: a few warm-up steps, then steady windows
MIN_STEADY_S = 1.5  # a run shorter than this (a fast network) is timed over more epochs of STEPS steps

# knob -> the space params (on top of O0's) that switch it on, from every algorithm folder's calibration point
CALIBRATED: dict[str, dict[str, Any]] = {knob: dict(params) for algorithm in algorithms.listed()
                                         for knob, params in algorithm.calibration.items()}
_DEFAULT_BASE = {"model": "resnet8", "batch_size": 32, "data": {"name": "digits", "image_size": 16},
                 "optimizer": {"name": "momentum", "learning_rate": 0.05, "lr_schedule": "constant"}}
DEFAULT_MEASURED_ON = ("a stand-in for the built-in models: ResNet-8 (BatchNorm) on 1,797 real 8x8 digits at 16x16, "
                       "batch 32")


def fragment_of(knob: str) -> str:
    """The search-space fragment (``--search`` name) a knob belongs to: amp.O2 -> amp, boost.less_bn -> less_bn."""
    return "amp" if knob.startswith("amp.") else knob.split(".")[1]


def _label(knob: str) -> str:
    return f"amp {knob.split('.')[1]}" if knob.startswith("amp.") else fragment_of(knob)


@dataclass
class SpeedReport:
    device_target: str
    cpu: str
    created: str
    measured_on: str
    baseline_sps: float | None
    ratios: dict[str, float | None]  # knob -> throughput / its O0 neighbours'; None: the run failed
    errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    baseline_spread: float = 0.0  # (max - min) / mean of every O0 run: the machine's drift while measuring
    unclear: list[str] = field(default_factory=list)  # knobs whose verdict stayed unclear: never left out
    fingerprint: str = ""  # the model it was measured on (builder, kwargs, batch size, source hash)

    @property
    def trustworthy(self) -> bool:
        """Every knob got a clear verdict (its O0 neighbours agreed, its ratio was not at the threshold)."""
        return self.baseline_sps is not None and not self.unclear

    def slow(self, threshold: float = SLOW_BELOW) -> dict[str, str]:
        """Knobs measured clearly slower than O0 here, each with the one-line reason shown to the user.

        A knob with an unclear verdict (a busy machine) is never among them: nothing is left out on that evidence.
        """
        where = "this CPU" if self.device_target == "CPU" else f"this {self.device_target}"
        return {knob: f"{_label(knob)}: {ratio:.2f}x O0's throughput on {where} (timed by the calibration on "
                      f"{self.measured_on}), not searched; "
                      f"--search {fragment_of(knob)} to force it"
                for knob, ratio in self.ratios.items()
                if ratio is not None and ratio < threshold and knob not in self.unclear}

    def table(self) -> str:
        lines = [f"speed on {self.device_target} ({self.measured_on}); O0: "
                 + (f"{self.baseline_sps:.0f} samples/s (its runs {100 * self.baseline_spread:.0f}% apart)"
                    if self.baseline_sps else "n/a")]
        slow = self.slow()
        for knob, ratio in self.ratios.items():
            shown = f"{ratio:.2f}x" if ratio is not None else f"failed ({self.errors.get(knob, '?')})"
            flag = ("  slow: not searched by default" if knob in slow else
                    "  unclear (a busy machine?): searched; measure again with `boosttune probe --speed --refresh`"
                    if knob in self.unclear else "")
            lines.append(f"  {knob:<26}{shown}{flag}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge(knob_sps: float, before: float, after: float, threshold: float = SLOW_BELOW) -> tuple[float, bool]:
    """A knob's ratio to the mean of its two O0 neighbours, and whether that verdict is clear.

    Clear: the neighbours agree within ``1 - threshold`` (the machine did not drift across the knob's run)
    and the ratio is more than ``AMBIGUOUS_BAND`` away from the threshold.
    """
    reference = (before + after) / 2.0
    ratio = knob_sps / reference
    spread = abs(before - after) / reference
    return ratio, spread <= 1.0 - threshold and abs(ratio - threshold) > AMBIGUOUS_BAND


def slow_knobs(report: SpeedReport | None, searched: list[str] | None = None,
               threshold: float = SLOW_BELOW) -> dict[str, str]:
    """The knobs the default search leaves out; a fragment named in ``searched`` (``--search``) is kept."""
    if report is None:
        return {}
    forced = set(searched or ())
    return {knob: why for knob, why in report.slow(threshold).items() if fragment_of(knob) not in forced}


def calibration_base(base: dict[str, Any] | None) -> tuple[dict[str, Any], str, str]:
    """The recipe the knobs are timed on, what it is called, and its fingerprint.

    A builder of the user's own is timed on its own network and data at the experiment's batch size and
    optimizer; a built-in model (or none given) on a small ResNet over digits, which stands in for it.
    """
    model = (base or {}).get("model")
    if not isinstance(model, dict):
        recipe, measured_on = dict(_DEFAULT_BASE), DEFAULT_MEASURED_ON
    else:
        recipe = {"model": model, "batch_size": base.get("batch_size", 32), "optimizer": base.get("optimizer", {})}
        measured_on = f"{model['entry']} {json.dumps(model.get('kwargs') or {}, sort_keys=True)}, batch " \
                      f"{recipe['batch_size']}"
    recipe.update(epochs=1, steps_per_epoch=STEPS, seed=0, eval_every_epoch=False)
    source = ""
    if isinstance(model, dict):
        source = _source_digest(model["entry"].split(":")[0])
    key = json.dumps({"recipe": recipe, "source": source}, sort_keys=True)
    return recipe, measured_on, hashlib.sha256(key.encode()).hexdigest()[:12]


def _source_digest(module: str) -> str:
    """A hash of the builder module's file (a changed network is measured again); empty when not found."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return ""
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        return ""
    return hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()


def _cache_path(device_target: str, mindspore_version: str, boosttune_version: str, fingerprint: str) -> Path:
    key = f"{node_type(device_target)}|{mindspore_version}|{boosttune_version}|speed{CALIBRATION_REVISION}|{fingerprint}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_dir() / f"speed-{device_target.lower()}-ms{mindspore_version}-{digest}.json"


def _base_rate(base: dict[str, Any]) -> float:
    """The base recipe's learning rate (the recipe model's default when it names none)."""
    return float((base.get("optimizer") or {}).get("learning_rate", OptimizerConfig().learning_rate))


def _measure(params: dict[str, Any], base: dict[str, Any], device_target: str,
             strict: bool = False, graphs: GraphCache | None = None) -> tuple[float | None, str]:
    """Throughput of one short run in this process, or (None, why it failed); ``strict``: a failure raises.
    ``graphs``: the calibration's compiled Models: O0 trains between every knob, and compiles once."""
    ctx = SpaceContext(total_steps=STEPS * base.get("epochs", 1), param_count=1000,
                       base_learning_rate=_base_rate(base))
    recipe = recipe_from_params(params, ctx, {**base, "device_target": device_target})
    with tempfile.TemporaryDirectory(prefix="boosttune_speed_") as tmp:
        try:
            result = run_trial(recipe, work_dir=tmp, log=lambda message: None, evaluate=False, graph_cache=graphs)
        except BoosttuneError as e:
            if strict:
                raise
            return None, str(e)[:200]
        except Exception as e:  # a knob that fails here is reported, not fatal to the calibration
            if strict:
                raise TrialError(f"calibration: the O0 run failed: {type(e).__name__}: {' '.join(str(e).split())}"
                                 [:300]) from e
            return None, f"{type(e).__name__}: {' '.join(str(e).split())}"[:200]
    if result.status == RunStatus.STOPPED and result.reason:  # a diverged run: its few steps say nothing about speed
        if strict:
            raise TrialError(f"calibration: the O0 run of the base recipe diverged: {result.reason}; "
                             f"{diverged_hint(recipe.optimizer.learning_rate)}")
        return None, f"stopped: {result.reason}"
    sps = result.metrics.get("throughput_sps")
    return (float(sps), "") if sps else (None, f"too few steady steps ({result.metrics.get('steady_steps')})")


@dataclass(frozen=True)
class _RunSetup:
    """What every run of one calibration shares: O0's space params, the recipe timed, the device, the log, and the
    compiled O0 Model (:mod:`boosttune.trial.graphs`: the O0 runs between the knobs train it again, not compile it
    again; the knobs' own graphs are compiled, and timed only once steady)."""

    o0: dict[str, Any]
    recipe: dict[str, Any]
    device_target: str
    log: Callable[[str], None]
    graphs: GraphCache = field(default_factory=lambda: GraphCache(size=1))


@dataclass(frozen=True)
class _KnobTiming:
    """One knob's verdict, and the O0 runs after its runs."""

    ratio: float | None  # throughput / its O0 neighbours' (the mean of its measurements); None: a run failed
    error: str  # why a run failed; "" when none did
    unclear: bool  # measured twice without a clear verdict: never left out
    o0_sps: tuple[float, ...]  # the O0 runs after it that trained, for the baseline
    last_o0_sps: float | None  # the last of them (None: it failed): the next knob's O0 neighbour before


@dataclass
class _Timings:
    """Every knob's verdict in one calibration, and every O0 run that trained."""

    ratios: dict[str, float | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    unclear: list[str] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)


def run_calibration(probe: ProbeReport, *, base: dict[str, Any] | None = None, refresh: bool = False,
                    log: Callable[[str], None] = print) -> SpeedReport:
    """Measure (or load the cached) speed of each supported device-dependent knob relative to O0, on ``base``'s
    network (the experiment's base recipe; None: the built-in stand-in)."""
    from importlib.metadata import version

    from boosttune import __version__

    recipe, measured_on, fingerprint = calibration_base(base)
    path = _cache_path(probe.device_target, version("mindspore"), __version__, fingerprint)
    cached = None if refresh else _read_cache(path)
    if cached is not None and not cached.unclear:
        log(f"calibration: cached result from {cached.created} for {cached.measured_on} ({path})")
        return cached
    apply_runtime_env(probe.runtime_env)  # before MindSpore loads in this process (a no-op, warned, after)
    knobs = _knobs_to_time(probe, cached, log)
    # At the base recipe's learning rate: the space's O0 takes its rate from the context.
    o0 = preset_params("O0", SpaceContext(total_steps=1, param_count=1000, base_learning_rate=_base_rate(recipe)),
                       recipe)
    log(f"calibration: timing {len(knobs)} knobs on {probe.device_target} for {measured_on}, each between two O0 "
        f"runs ({STEPS} steps an epoch)")
    start = time.perf_counter()
    timings = _time_knobs(knobs, _RunSetup(o0, recipe, probe.device_target, log))
    report = _speed_report(timings, cached, probe.device_target, measured_on, fingerprint,
                           seconds=round(time.perf_counter() - start, 1))
    write_json(path, report.to_dict())  # clear verdicts are kept; unclear knobs are measured again next time
    if report.trustworthy:
        log(f"calibration: done in {report.seconds:.0f} s; cached in {path}")
    else:
        log(f"calibration: done in {report.seconds:.0f} s; cached in {path}, except {', '.join(report.unclear)}: "
            "unclear (a busy machine?), so they stay in the search and the next experiment measures them again")
    return report


def _read_cache(path: Path) -> SpeedReport | None:
    """The report cached at ``path``; None when there is none, or it has an older layout (measure again)."""
    if not path.is_file():
        return None
    try:
        return SpeedReport(**json.loads(path.read_text()))
    except (TypeError, ValueError):
        return None


def _knobs_to_time(probe: ProbeReport, cached: SpeedReport | None, log: Callable[[str], None]) -> list[str]:
    """The knobs the probe found supported; with a cached report, only those it left unclear (its clear verdicts
    are kept)."""
    knobs = [k for k in CALIBRATED if probe.supports(k)]
    if cached is not None:
        knobs = [k for k in knobs if k in cached.unclear]
        log(f"calibration: cached result from {cached.created}; measuring again what was unclear then: "
            f"{', '.join(knobs)}")
    return knobs


def _time_knobs(knobs: list[str], setup: _RunSetup) -> _Timings:
    """The first O0 run, then each knob followed by an O0 run: every knob has an O0 neighbour on each side."""
    setup, before = _first_o0_run(setup)
    timings = _Timings(baseline=[before] if before is not None else [])
    for knob in knobs:
        timing = _time_knob(knob, before, setup)
        timings.ratios[knob] = timing.ratio
        if timing.ratio is None:
            timings.errors[knob] = timing.error
        if timing.unclear:
            timings.unclear.append(knob)
        timings.baseline += timing.o0_sps
        before = timing.last_o0_sps
    return timings


def _first_o0_run(setup: _RunSetup) -> tuple[_RunSetup, float | None]:
    """The first O0 run's throughput, and the setup the knobs are timed with.

    The first O0 run must train: a builder that fails here is refused now, in one line, with nothing cached. A fast
    network is timed over more epochs (or the noise is the measurement), and its first O0 run is timed again so.
    """
    before = _time_o0_run(setup, strict=True)
    steady_s = (STEPS - 3) * setup.recipe["batch_size"] / before if before else MIN_STEADY_S
    if steady_s < MIN_STEADY_S:
        setup = replace(setup, recipe={**setup.recipe, "epochs": min(20, math.ceil(MIN_STEADY_S / steady_s))})
        setup.log(f"  a run of {STEPS} steps trains for {steady_s:.2f} s here: timing {setup.recipe['epochs']} "
                  f"epochs of {STEPS} steps a run")
        before = _time_o0_run(setup, strict=True)
    return setup, before


def _time_o0_run(setup: _RunSetup, strict: bool = False) -> float | None:
    """One O0 run's throughput (None: it failed), logged; ``strict``: a failure raises."""
    sps, why = _measure(setup.o0, setup.recipe, setup.device_target, strict, graphs=setup.graphs)
    setup.log(f"  {'O0':<26}" + (f"{sps:.0f} samples/s" if sps is not None else f"failed: {why}"))
    return sps


def _time_knob(knob: str, before: float | None, setup: _RunSetup) -> _KnobTiming:
    """``knob``'s run between ``before`` (the O0 run's throughput before it) and a new O0 run; when that verdict is
    unclear, once more before another O0 run: two measurements on the same side of the threshold, each between
    steady neighbours, make it clear."""
    measured: list[tuple[float, bool]] = []  # (ratio, neighbours agreed)
    o0_sps: list[float] = []
    for attempt in (1, 2):
        sps, why = _measure({**setup.o0, **CALIBRATED[knob]}, setup.recipe, setup.device_target)
        after = _time_o0_run(setup)
        if after is not None:
            o0_sps.append(after)
        if sps is None or before is None or after is None:
            error = why or "the O0 run beside it failed"
            setup.log(f"  {knob:<26}failed: {error}")
            return _KnobTiming(None, error, False, tuple(o0_sps), after)
        ratio, clear = judge(sps, before, after)
        steady = abs(before - after) / ((before + after) / 2.0) <= 1.0 - SLOW_BELOW
        before = after
        measured.append((ratio, steady))
        if attempt == 2:  # twice on the same side of the threshold, with steady neighbours: that is the verdict
            clear = all(ok for _, ok in measured) and len({r < SLOW_BELOW for r, _ in measured}) == 1
        setup.log(f"  {knob:<26}{sps:.0f} samples/s: {ratio:.2f}x its O0 neighbours"
                  + ("" if clear else " (unclear" + (": measuring again)" if attempt == 1 else ")")))
        if clear:
            break
    return _KnobTiming(statistics.fmean(r for r, _ in measured), "", not clear, tuple(o0_sps), before)


def _speed_report(timings: _Timings, cached: SpeedReport | None, device_target: str, measured_on: str,
                  fingerprint: str, seconds: float) -> SpeedReport:
    """What was timed, on top of the cached report's clear verdicts when only its unclear knobs were timed again."""
    ratios, errors, baseline = timings.ratios, timings.errors, timings.baseline
    if cached is not None:
        ratios = {**cached.ratios, **ratios}
        errors = {**{k: v for k, v in cached.errors.items() if k not in ratios or ratios[k] is None}, **errors}
        baseline = baseline or ([cached.baseline_sps] if cached.baseline_sps else [])
    reference = statistics.fmean(baseline) if baseline else None
    spread = (max(baseline) - min(baseline)) / reference if len(baseline) > 1 and reference else 0.0
    return SpeedReport(device_target=device_target, cpu=cpu_name(),
                       created=datetime.now(timezone.utc).isoformat(timespec="seconds"), measured_on=measured_on,
                       baseline_sps=reference, ratios=ratios, errors=errors, seconds=seconds,
                       baseline_spread=round(spread, 3), unclear=timings.unclear, fingerprint=fingerprint)
