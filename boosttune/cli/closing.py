"""The experiment's closing lines in the terminal: the search's trials by speed-up, the confirmed summary, the
answer (the report's first screen in words), the stage times and where everything is."""

from __future__ import annotations

import pandas as pd

from boosttune.tables.results import load_results
from boosttune.outputs.summary import format_confirmed
from boosttune.experiment import ExperimentResult

__all__ = ["format_summary"]


def format_summary(result: ExperimentResult) -> str:
    """The closing lines: trials by speed-up, the confirmed summary, the selection, stage times, where things are."""
    table = load_results(result.results_path)
    columns = ["trial_id", "preset", "status", "throughput_sps", "speedup_vs_baseline", "objective_value",
               "objective_gain", "compile_s"]
    shown = table[columns].sort_values("speedup_vs_baseline", ascending=False, na_position="last")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        lines = ["", "search (one seed each):", shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"), ""]
    if result.summary_path is not None:
        lines += [format_confirmed(pd.read_csv(result.summary_path)), ""]
    lines += [f"answer: {line}" if i == 0 else line for i, line in enumerate(result.answer)]
    lines.append(f"best: {result.selection}")
    if result.aborted_reason:
        lines.append(result.aborted_reason)
    if result.baseline_note:
        lines.append(f"baseline: {result.baseline_note}")
    for why in result.left_out.values():
        lines.append(f"left out of the search: {why}")
    if result.stage_s:
        lines.append("time per stage: " + ", ".join(f"{k} {v:.0f} s" for k, v in result.stage_s.items())
                     + f" (total {sum(result.stage_s.values()):.0f} s)")
    if result.confirm_training_s is not None and result.stage_s.get("confirm"):
        stage = result.stage_s["confirm"]
        evaluating = result.confirm_eval_s or 0.0
        lines.append(f"confirm stage: {result.confirm_training_s:.0f} s of its {stage:.0f} s training steps "
                     f"({result.confirm_training_s / stage:.2f}), {evaluating:.0f} s evaluating "
                     f"({evaluating / stage:.2f}); the rest builds, waits and starts workers")
    lines += [f"results: {result.results_path} (and results.csv)",
              f"report:  {result.report_path} (tables also in report.md; again: boosttune report {result.output})"]
    if result.summary_path is not None:
        lines.append(f"confirmed: {result.summary_path} (runs in confirm.parquet / confirm.csv)")
    lines += [f"best boost_config_dict: {result.best_config_path}", f"best recipe: {result.best_recipe_path}"]
    return "\n".join(lines)
