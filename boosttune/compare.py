"""Train a base recipe under several boost presets and compare them with the O0 baseline.

Speed is a ratio to the baseline trained in the same run on the same machine; accuracy is a
difference in points. (The Ray Tune search of the next stage builds on the same rows.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

from boosttune.config.recipe import TrialRecipe
from boosttune.presets import DevicePreset

__all__ = ["compare_presets", "format_comparison"]


def compare_presets(base: TrialRecipe, presets: Sequence[DevicePreset], *, work_dir: Path,
                    log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    from boosttune.errors import TrialError
    from boosttune.trial.runner import run_trial

    rows: list[dict[str, Any]] = []
    baseline: dict[str, Any] | None = None
    for preset in presets:
        if any(note.startswith("trains the same as") for note in preset.notes):
            log(f"== {preset.name}: skipped, {preset.notes[-1]}")
            continue
        log(f"== {preset.name}: boost_level {preset.boost_level}, boost_config_dict {json.dumps(preset.boost_config_dict)}")
        recipe = base.model_copy(update={"boost_level": preset.boost_level,
                                         "boost_config_dict": preset.boost_config_dict})
        row: dict[str, Any] = {"name": preset.name, "boost_level": preset.boost_level, "notes": list(preset.notes)}
        try:
            result = run_trial(recipe, work_dir=work_dir, log=lambda m: log(f"   {m}"))
        except TrialError as e:
            row.update(status="failed", reason=str(e))
            rows.append(row)
            log(f"   failed: {e}")
            continue
        m = result.metrics
        row.update(
            status=result.status, reason=result.reason, throughput_sps=m["throughput_sps"], val_acc=m["val_acc"],
            compile_s=m["compile_s"], wall_s=m["wall_s"], peak_rss_mb=m["peak_rss_mb"],
            boost_config_dict=result.boost_config_dict, observed_boost=result.observed_boost,
            runtime_env=result.environment["runtime_env"],
        )
        if baseline is None and preset.boost_level == "O0":
            baseline = row
        if baseline is not None and baseline.get("throughput_sps") and row["throughput_sps"]:
            row["speedup_vs_baseline"] = row["throughput_sps"] / baseline["throughput_sps"]
            row["val_acc_delta_pt"] = 100.0 * (row["val_acc"] - baseline["val_acc"])
        rows.append(row)
    return rows


def format_comparison(rows: Sequence[dict[str, Any]]) -> str:
    header = f"{'recipe':<16}{'status':<11}{'samples/s':>10}{'speedup':>9}{'val_acc':>9}{'Δacc pt':>9}{'compile s':>11}"
    lines = [header, "-" * len(header)]
    for row in rows:
        def fmt(key: str, spec: str) -> str:
            value = row.get(key)
            return format(value, spec) if isinstance(value, (int, float)) else "-"
        lines.append(
            f"{row['name']:<16}{row['status']:<11}{fmt('throughput_sps', '10.1f')}{fmt('speedup_vs_baseline', '9.3f')}"
            f"{fmt('val_acc', '9.4f')}{fmt('val_acc_delta_pt', '+9.2f')}{fmt('compile_s', '11.2f')}"
        )
    return "\n".join(lines)
