"""Speed calibration: how each device-dependent knob changes throughput on this device, measured once.

After the capability probe, a small ResNet (ResNet-8 with BatchNorm, on scikit-learn's 1,797 real 8x8
digits resized to 16x16, batch 32) trains for two short epochs in a fresh process per knob: O0 before
and after the others, then each amp level, LessBN, GradientFreeze, gradient accumulation and
DimReduce that the probe found supported. A knob whose throughput is below ``SLOW_BELOW`` times O0's
(the mean of the two O0 runs) is *slow here*: the default search does not draw it, and says why
("amp O2: 0.52x O0's throughput on this device, not searched; --search amp to force it"). A user's
``--search`` naming its fragment wins. The result is cached per device, CPU and MindSpore version,
next to the probe's.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from boosttune.probe.report import ProbeReport, cache_dir, cpu_name, node_type
from boosttune.files import write_json

__all__ = ["CALIBRATED", "SLOW_BELOW", "SpeedReport", "fragment_of", "run_calibration", "slow_knobs"]

SLOW_BELOW = 0.8  # clearly slower: this machine's throughput moves by about +-10% from run to run
CALIBRATION_REVISION = 1

# knob -> the space params (on top of O0's) that switch it on
CALIBRATED: dict[str, dict[str, Any]] = {
    "amp.O1": {"amp_level": "O1"},
    "amp.O2": {"amp_level": "O2"},
    "amp.O3": {"amp_level": "O3"},
    "boost.less_bn": {"boost.less_bn": True, "less_bn.fn_flag": True, "less_bn.gc_flag": False,
                      "less_bn.split_at_pct": 0},
    "boost.grad_freeze": {"boost.grad_freeze": True, "grad_freeze.freeze_type": 1, "grad_freeze.param_groups": 10,
                          "grad_freeze.freeze_p": 0.5},
    "boost.grad_accumulation": {"boost.grad_accumulation": True, "grad_accumulation.grad_accumulation_step": 4},
    "boost.dim_reduce": {"boost.dim_reduce": True, "dim_reduce.rho": 0.55, "dim_reduce.gamma": 0.9,
                         "dim_reduce.alpha": 0.001, "dim_reduce.sigma": 0.4, "dim_reduce.n_components": 4},
}
_BASE = {"model": "resnet8", "batch_size": 32, "epochs": 2, "seed": 0, "eval_every_epoch": False,
         "data": {"name": "digits", "image_size": 16},
         "optimizer": {"name": "momentum", "learning_rate": 0.05, "lr_schedule": "constant"}}
MEASURED_ON = "ResNet-8 (BatchNorm) on 1,797 real 8x8 digits at 16x16, batch 32, 2 epochs, one fresh process per run"


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
    ratios: dict[str, float | None]  # knob -> throughput / O0's; None: the run failed
    errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    baseline_spread: float = 0.0  # |O0 before - O0 after| / their mean: the machine's drift while measuring

    @property
    def trustworthy(self) -> bool:
        """Both O0 runs agree within the margin: nothing else was loading the machine meanwhile."""
        return self.baseline_sps is not None and self.baseline_spread <= 1.0 - SLOW_BELOW

    def slow(self, threshold: float = SLOW_BELOW) -> dict[str, str]:
        """Knobs measured clearly slower than O0 here, each with the one-line reason shown to the user.

        None when the two O0 runs disagree by more than the margin (a busy machine): then nothing is
        left out on this evidence.
        """
        if not self.trustworthy:
            return {}
        where = "this CPU" if self.device_target == "CPU" else f"this {self.device_target}"
        return {knob: f"{_label(knob)}: {ratio:.2f}x O0's throughput on {where}, not searched; "
                      f"--search {fragment_of(knob)} to force it"
                for knob, ratio in self.ratios.items() if ratio is not None and ratio < threshold}

    def table(self) -> str:
        lines = [f"speed on {self.device_target} ({self.measured_on}); O0: "
                 + (f"{self.baseline_sps:.0f} samples/s (two runs {100 * self.baseline_spread:.0f}% apart)"
                    if self.baseline_sps else "n/a")]
        if self.baseline_sps is not None and not self.trustworthy:
            lines.append("  the two O0 runs disagree by more than 20% (a busy machine?): nothing is left out; "
                         "measure again with `boosttune probe --refresh`")
        for knob, ratio in self.ratios.items():
            shown = f"{ratio:.2f}x" if ratio is not None else f"failed ({self.errors.get(knob, '?')})"
            flag = "  slow: not searched by default" if knob in self.slow() else ""
            lines.append(f"  {knob:<26}{shown}{flag}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def slow_knobs(report: SpeedReport | None, searched: list[str] | None = None,
               threshold: float = SLOW_BELOW) -> dict[str, str]:
    """The knobs the default search leaves out; a fragment named in ``searched`` (``--search``) is kept."""
    if report is None:
        return {}
    forced = set(searched or ())
    return {knob: why for knob, why in report.slow(threshold).items() if fragment_of(knob) not in forced}


def _cache_path(device_target: str, mindspore_version: str, boosttune_version: str) -> Path:
    key = f"{node_type(device_target)}|{mindspore_version}|{boosttune_version}|speed{CALIBRATION_REVISION}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_dir() / f"speed-{device_target.lower()}-ms{mindspore_version}-{digest}.json"


def _measure(params: dict[str, Any], device_target: str, env: dict[str, str]) -> tuple[float | None, str]:
    """Throughput of one run in a fresh process, or (None, why it failed)."""
    from boosttune.space import SpaceContext, recipe_from_params

    ctx = SpaceContext(total_steps=2 * (1437 // 32), param_count=1000)
    recipe = recipe_from_params(params, ctx, {**_BASE, "device_target": device_target}).to_dict()
    with tempfile.TemporaryDirectory(prefix="boosttune_speed_") as tmp:
        recipe_path, out = Path(tmp) / "recipe.json", Path(tmp) / "result.json"
        recipe_path.write_text(json.dumps(recipe))
        try:
            done = subprocess.run([sys.executable, "-m", "boosttune.cli", "trial", str(recipe_path), "--output",
                                   str(out), "--work-dir", str(Path(tmp) / "work")],
                                  env=env, capture_output=True, text=True, timeout=300, cwd=tmp)
        except subprocess.TimeoutExpired:
            return None, "timed out"
        if done.returncode != 0 or not out.is_file():
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            return None, (lines[-1] if lines else f"exit code {done.returncode}")[:200]
        sps = json.loads(out.read_text())["metrics"].get("throughput_sps")
    return (float(sps), "") if sps else (None, "too few steady steps")


def run_calibration(probe: ProbeReport, *, refresh: bool = False,
                    log: Callable[[str], None] = print) -> SpeedReport:
    """Measure (or load the cached) speed of each supported device-dependent knob relative to O0."""
    from importlib.metadata import version

    from boosttune import __version__
    from boosttune.probe import _child_env
    from boosttune.space import SpaceContext, preset_params

    path = _cache_path(probe.device_target, version("mindspore"), __version__)
    if path.is_file() and not refresh:
        try:
            report = SpeedReport(**json.loads(path.read_text()))
            log(f"calibration: cached result from {report.created} ({path})")
            return report
        except (TypeError, ValueError):
            pass  # an older layout: measure again
    env = _child_env(probe.runtime_env.get("ONEDNN_MAX_CPU_ISA", "default"))
    knobs = [k for k in CALIBRATED if probe.supports(k)]
    o0 = preset_params("O0", SpaceContext(total_steps=1, param_count=1000), _BASE)
    log(f"calibration: timing {len(knobs)} knobs against O0 on {probe.device_target} ({MEASURED_ON})")
    start = time.perf_counter()
    baseline: list[float] = []
    ratios: dict[str, float | None] = {}
    measured: dict[str, float | None] = {}
    errors: dict[str, str] = {}
    for name, params in [("O0", o0)] + [(k, {**o0, **CALIBRATED[k]}) for k in knobs] + [("O0", o0)]:
        sps, why = _measure(params, probe.device_target, env)
        if name == "O0":
            if sps is not None:
                baseline.append(sps)
        else:
            measured[name] = sps
            if sps is None:
                errors[name] = why
        log(f"  {name:<26}" + (f"{sps:.0f} samples/s" if sps is not None else f"failed: {why}"))
    reference = statistics.fmean(baseline) if baseline else None
    spread = abs(baseline[0] - baseline[-1]) / reference if len(baseline) == 2 and reference else 0.0
    for knob, sps in measured.items():
        ratios[knob] = sps / reference if sps is not None and reference else None
    report = SpeedReport(device_target=probe.device_target, cpu=cpu_name(),
                         created=datetime.now(timezone.utc).isoformat(timespec="seconds"), measured_on=MEASURED_ON,
                         baseline_sps=reference, ratios=ratios, errors=errors,
                         seconds=round(time.perf_counter() - start, 1), baseline_spread=round(spread, 3))
    write_json(path, report.to_dict())
    log(f"calibration: done in {report.seconds:.0f} s; cached in {path}")
    if not report.trustworthy:
        log("calibration: warning: the two O0 runs disagree by more than 20%, so nothing is left out of the search "
            "on this evidence; measure again on a quiet machine with `boosttune probe --refresh`")
    return report
