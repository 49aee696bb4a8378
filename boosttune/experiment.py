"""An experiment end to end: probe, baseline, search, results table, best recipe, report."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import ray

from boosttune.config.experiment import ExperimentConfig
from boosttune.errors import ConfigError, TrialError

__all__ = ["ExperimentResult", "format_summary", "run_experiment"]


@dataclass
class ExperimentResult:
    output: Path
    results_path: Path
    report_path: Path | None
    best_config_path: Path | None
    best_recipe_path: Path | None
    selection: str
    aborted_reason: str | None
    trials: int


@ray.remote(num_cpus=1, max_calls=1)
def _trial_facts(base: dict[str, Any], workers: int, env: dict[str, str]) -> dict[str, int]:
    """Steps and parameter tensors of the base recipe, computed where MindSpore runs (a worker)."""
    from boosttune.runtime import apply_runtime_env

    apply_runtime_env(env)
    from boosttune.config.recipe import parse_recipe
    from boosttune.data import load_dataset
    from boosttune.models import build_network, default_image_size

    recipe = parse_recipe(base)
    size = recipe.data.image_size or default_image_size(recipe.model)
    data = load_dataset(recipe.data, size)
    steps = (len(data.train) // workers) // recipe.batch_size
    if recipe.steps_per_epoch:
        steps = min(steps, recipe.steps_per_epoch)
    if steps < 1:
        from boosttune.errors import DataError

        raise DataError(f"batch_size {recipe.batch_size} exceeds the {len(data.train) // workers} training samples "
                        f"each of {workers} worker(s) gets")
    network = build_network(recipe.model, data.num_classes, data.channels, size)
    return {"total_steps": steps * recipe.epochs, "param_count": len(network.trainable_params())}


def _record_from_summary(trial_id: str, preset: str | None, recipe: dict[str, Any], key: str,
                         summary: dict[str, Any]) -> dict[str, Any]:
    record = {"trial_id": trial_id, "params": {}, "preset": preset, "key": key, "recipe": recipe,
              "status": summary["status"], "reason": summary.get("reason") or None}
    if summary["status"] != "failed":
        record.update(metrics={k: v for k, v in summary.items() if not isinstance(v, (dict, list))},
                      boost_config_dict=summary["boost_config_dict"], observed_boost=summary["observed_boost"],
                      environment=summary["environment"])
    return record


def _check_resume(config: ExperimentConfig, output: Path, resume: bool) -> None:
    saved = output / "experiment.json"
    current = config.model_dump(mode="json")
    if saved.is_file():
        if not resume:
            raise ConfigError(f"--output: {output} holds an earlier experiment; pass --resume to continue it "
                              "or choose another folder")
        if json.loads(saved.read_text()) != current:
            raise ConfigError(f"--resume: {output} holds an experiment with a different configuration "
                              f"(see {saved}); resume with the same flags or choose another folder")
    elif resume:
        raise ConfigError(f"--resume: {output} holds no experiment to resume")
    output.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(current, indent=2))


def run_experiment(config: ExperimentConfig, output: str | Path, *, resume: bool = False,
                   log: Callable[[str], None] = print) -> ExperimentResult:
    from boosttune.probe import run_probe
    from boosttune.presets import device_presets
    from boosttune.ray_train import run_on_ray
    from boosttune.space import SpaceContext, equivalence_key, preset_params, recipe_from_params
    from boosttune.tune import connect_ray, run_search

    output = Path(output).resolve()
    _check_resume(config, output, resume)
    base = config.recipe.to_dict()
    report = run_probe(config.recipe.device_target, log=log)
    env = dict(report.runtime_env)
    unsupported = sorted(c.knob for c in report.unsupported())
    connect_ray(log)
    facts = ray.get(_trial_facts.remote(base, config.workers_per_trial, env))
    ctx_fields = {"total_steps": facts["total_steps"], "param_count": facts["param_count"],
                  "world_size": config.workers_per_trial, "enabled": frozenset(config.search or ()),
                  "base_learning_rate": config.recipe.optimizer.learning_rate}
    ctx = SpaceContext(unsupported=frozenset(unsupported), **ctx_fields)

    # The O0 baseline runs first: every speed figure is a ratio to it, and the constrained and
    # time-to-accuracy objectives need its accuracy.
    baseline_file = output / "trials" / "baseline.json"
    baseline_recipe = recipe_from_params(preset_params("O0", ctx, base), ctx, base)
    key = equivalence_key(baseline_recipe)
    if baseline_file.is_file():
        baseline = json.loads(baseline_file.read_text())
        log(f"baseline: reusing {baseline_file}")
    else:
        log(f"baseline: O0, {config.workers_per_trial} worker(s)")
        summary = run_on_ray(baseline_recipe.to_dict(), num_workers=config.workers_per_trial, env=env,
                             storage_path=str(output / "train"), name="baseline",
                             artifacts_dir=str(output / "artifacts" / "baseline"))
        baseline = _record_from_summary("baseline", "O0", baseline_recipe.to_dict(), key, summary)
        from boosttune.tune import _write_json

        _write_json(baseline_file, baseline)
        if baseline["status"] != "failed":
            _write_json(output / "dedup" / f"{key}.json", baseline)
    if baseline["status"] == "failed":
        raise TrialError(f"the O0 baseline failed, nothing to compare against: {baseline['reason']}")
    throughput = baseline["metrics"].get("throughput_sps")
    log(f"baseline: {f'{throughput:.1f} samples/s' if throughput else 'throughput n/a (too few steady steps)'}, "
        f"val_acc {baseline['metrics']['val_acc']:.4f}")

    presets = {key: "O0"}
    points = [preset_params("O0", ctx, base)]
    for preset in device_presets(report, config.workers_per_trial)[1:]:
        params = preset_params(preset.name, ctx, base)
        preset_key = equivalence_key(recipe_from_params(params, ctx, base))
        if preset_key not in presets:
            presets[preset_key] = preset.name
            points.append(params)
    drop = config.max_accuracy_drop_pt
    setup = {
        "base": base, "ctx": dict(ctx_fields), "unsupported": unsupported, "env": env,
        "workers": config.workers_per_trial, "output": str(output), "presets": presets,
        "baseline_val_acc": baseline["metrics"]["val_acc"], "max_accuracy_drop_pt": drop,
        "target_accuracy": (max(0.01, baseline["metrics"]["val_acc"] - drop / 100.0)
                            if config.objective == "time_to_accuracy" else None),
        "max_concurrent": config.max_concurrent_trials or _default_concurrency(config.workers_per_trial),
    }
    start = time.perf_counter()
    outcome = run_search(config, output, setup=setup, points=points, resume=resume, log=log)
    log(f"search: {len(outcome.records)} trial records in {time.perf_counter() - start:.0f} s")
    if outcome.aborted_reason:
        log(outcome.aborted_reason)
    return _finish(config, output, outcome.records, outcome.aborted_reason, log)


def _default_concurrency(workers: int) -> int:
    """One trial at a time on a single node: concurrent trials would skew each other's timings."""
    nodes = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) >= workers]
    return max(1, len(nodes))


def _finish(config: ExperimentConfig, output: Path, records: list[dict[str, Any]], aborted: str | None,
            log: Callable[[str], None]) -> ExperimentResult:
    from boosttune.export import export_best
    from boosttune.report import write_report
    from boosttune.results import build_results_table, save_results
    from boosttune.select import select_best

    table = build_results_table(records, ray_version=ray.__version__)
    parquet, _ = save_results(table, output)
    selection = select_best(table, tolerance_pt=config.max_accuracy_drop_pt)
    best_config, best_recipe = export_best(table, output, tolerance_pt=config.max_accuracy_drop_pt,
                                           experiment_path=str(output))
    report = write_report(table, output / "report.html", title=f"boosttune: {config.name}",
                          tolerance_pt=config.max_accuracy_drop_pt)
    return ExperimentResult(output=output, results_path=parquet, report_path=report, best_config_path=best_config,
                            best_recipe_path=best_recipe, selection=selection.reason, aborted_reason=aborted,
                            trials=len(records))


def format_summary(result: ExperimentResult) -> str:
    """The closing lines: trials by speed-up, the selection, where everything is."""
    import pandas as pd

    from boosttune.results import load_results

    table = load_results(result.results_path)
    columns = ["trial_id", "preset", "status", "throughput_sps", "speedup_vs_baseline", "val_acc",
               "val_acc_delta_pt", "compile_s"]
    shown = table[columns].sort_values("speedup_vs_baseline", ascending=False, na_position="last")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        lines = ["", shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"), ""]
    lines.append(f"best: {result.selection}")
    if result.aborted_reason:
        lines.append(result.aborted_reason)
    lines += [f"results: {result.results_path} (and results.csv)", f"report:  {result.report_path}",
              f"best boost_config_dict: {result.best_config_path}", f"best recipe: {result.best_recipe_path}"]
    return "\n".join(lines)
