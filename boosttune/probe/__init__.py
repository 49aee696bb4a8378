"""Capability probe: which boost/amp/loss-scale/optimizer knobs work on this device, and the
fastest CPU runtime settings. Results are cached per device, CPU and MindSpore version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from importlib.metadata import version
from typing import Callable

from boosttune import algorithms
from boosttune.files import write_json
from boosttune.probe.report import (
    Capability,
    ProbeReport,
    cache_path,
    check_recipe,
    cpu_name,
    knobs_of,
    load_cached,
)

__all__ = [
    "ISA_CANDIDATES",
    "KNOBS",
    "Capability",
    "ProbeReport",
    "check_recipe",
    "knobs_of",
    "load_cached",
    "run_probe",
]

# Every algorithm folder's probe checks, in the order the probe has always listed them.
KNOBS = tuple(check.knob for algorithm in algorithms.listed() for check in algorithm.probe_checks)
ISA_CANDIDATES = ("default", "AVX512_CORE", "AVX2")
# Keep oneDNN's own choice unless another ISA is clearly faster (timings are noisy).
_ISA_MARGIN = 0.8


def _child_env(isa: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ONEDNN_MAX_CPU_ISA", None)
    if isa != "default":
        env["ONEDNN_MAX_CPU_ISA"] = isa
    env.setdefault("GLOG_v", "3")  # MindSpore's C++ warnings would bury the results
    return env


def _run_child(args: list[str], isa: str, timeout: float) -> tuple[int, str]:
    try:
        # A temp cwd: amp O1 writes its rewritten network source into the working directory.
        with tempfile.TemporaryDirectory(prefix="boosttune_probe_") as cwd:
            done = subprocess.run([sys.executable, "-m", "boosttune.probe.checks", *args], env=_child_env(isa),
                                  capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return -1, ""
    return done.returncode, done.stdout


def measure_isa(log: Callable[[str], None]) -> dict[str, float | None]:
    seconds: dict[str, float | None] = {}
    for isa in ISA_CANDIDATES:
        code, out = _run_child(["CPU", "conv"], isa, timeout=180)
        try:
            seconds[isa] = json.loads(out.strip().splitlines()[-1])["conv_seconds"]
        except (IndexError, ValueError, KeyError):
            seconds[isa] = None
        shown = f"{seconds[isa]:.4f} s" if seconds[isa] is not None else f"failed (exit {code})"
        log(f"  conv 16->16 3x3 with ONEDNN_MAX_CPU_ISA={isa}: {shown}")
    return seconds


def choose_isa(seconds: dict[str, float | None]) -> str:
    measured = {isa: s for isa, s in seconds.items() if s is not None}
    if not measured:
        return "default"
    best = min(measured, key=measured.__getitem__)
    default = measured.get("default")
    if default is not None and measured[best] > _ISA_MARGIN * default:
        return "default"
    return best


def _run_checks(device_target: str, knobs: list[str], isa: str) -> dict[str, Capability]:
    results: dict[str, Capability] = {}
    code, out = _run_child([device_target, *knobs], isa, timeout=600)
    for line in out.splitlines():
        if line.startswith("PROBE "):
            data = json.loads(line[len("PROBE "):])
            results[data["knob"]] = Capability(**data)
    missing = [k for k in knobs if k not in results]
    if missing and len(knobs) > 1:  # the child crashed: rerun the rest one by one to find the culprit
        for knob in missing:
            results.update(_run_checks(device_target, [knob], isa))
    elif missing:
        reason = "timed out" if code == -1 else f"MindSpore crashed the process (exit code {code})"
        results[missing[0]] = Capability(missing[0], False, reason)
    return results


def run_probe(device_target: str = "CPU", *, refresh: bool = False,
              log: Callable[[str], None] = print) -> ProbeReport:
    """Probe this device (or return the cached report) and cache the result."""
    from boosttune import __version__

    ms_version = version("mindspore")
    path = cache_path(device_target, ms_version, __version__)
    if not refresh:
        cached = load_cached(device_target)
        if cached is not None:
            log(f"probe: cached result from {cached.created} ({path}); --refresh to probe again")
            return cached
    start = time.perf_counter()
    isa_seconds: dict[str, float | None] = {}
    runtime_env = {"ONEDNN_MAX_CPU_ISA": "default"}
    if device_target == "CPU":
        log("probe: timing oneDNN instruction sets (each in a fresh process)")
        isa_seconds = measure_isa(log)
        runtime_env["ONEDNN_MAX_CPU_ISA"] = choose_isa(isa_seconds)
    log(f"probe: trying {len(KNOBS)} knobs on {device_target} with a tiny real compile each")
    halves = [list(KNOBS[0::2]), list(KNOBS[1::2])]
    with ThreadPoolExecutor(max_workers=2) as pool:
        parts = pool.map(lambda ks: _run_checks(device_target, ks, runtime_env["ONEDNN_MAX_CPU_ISA"]), halves)
        found: dict[str, Capability] = {}
        for part in parts:
            found.update(part)
    report = ProbeReport(
        device_target=device_target,
        cpu=cpu_name(),
        mindspore_version=ms_version,
        boosttune_version=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        capabilities={k: found[k] for k in KNOBS},
        isa_seconds=isa_seconds,
        runtime_env=runtime_env,
    )
    plain = report.capabilities["optimizer.momentum"]
    if not plain.supported:  # MindSpore cannot train here at all (no driver, a CPU-only wheel): not a finding to keep
        log(f"probe: MindSpore cannot train on {device_target} here ({plain.reason}); not cached")
        return report
    write_json(path, report.to_dict())
    log(f"probe: done in {time.perf_counter() - start:.0f} s; cached in {path}")
    return report
