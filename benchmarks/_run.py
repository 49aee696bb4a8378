"""Helpers for the benchmark scripts: run a trial or the bare script in a fresh process."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def probe_env() -> dict[str, str]:
    """The environment trials run with: the probe's runtime choice applied (cached after once)."""
    from boosttune.probe import run_probe

    report = run_probe("CPU", log=lambda m: print(m, file=sys.stderr))
    env = dict(os.environ, GLOG_v="3")
    isa = report.runtime_env.get("ONEDNN_MAX_CPU_ISA", "default")
    env.pop("ONEDNN_MAX_CPU_ISA", None)
    if isa != "default":
        env["ONEDNN_MAX_CPU_ISA"] = isa
    return env


def trial_or_failure(recipe: dict[str, Any], env: dict[str, str], timeout: float | None) -> dict[str, Any]:
    """``boosttune trial`` in a fresh process and scratch folder: its result.json, or ``{"status": "failed",
    "reason": ...}`` when it timed out or exited without one (the table builders keep going)."""
    with tempfile.TemporaryDirectory(prefix="bt_table_") as tmp:
        recipe_path, out = Path(tmp) / "recipe.json", Path(tmp) / "result.json"
        recipe_path.write_text(json.dumps(recipe))
        cmd = [sys.executable, "-m", "boosttune.cli.main", "trial", str(recipe_path), "--output", str(out),
               "--work-dir", str(Path(tmp) / "work")]
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": "failed", "reason": f"timed out after {timeout:.0f} s"}
        if done.returncode != 0 or not out.is_file():
            lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
            return {"status": "failed", "reason": (lines[-1] if lines else f"exit {done.returncode}")[:300]}
        return json.loads(out.read_text())


def run_trial_process(recipe: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """:func:`trial_or_failure` with no time limit, for scripts that cannot go on without the run."""
    result = trial_or_failure(recipe, env, timeout=None)
    if "metrics" not in result:
        raise RuntimeError(f"trial failed: {result['reason']}")
    return result


def run_bare_process(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, str(HERE / "bare_mindspore.py"), *args], env=env,
                              capture_output=True, text=True, cwd=tmp)
    if done.returncode != 0:
        raise RuntimeError(f"bare script failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f}, n={len(values)})"
