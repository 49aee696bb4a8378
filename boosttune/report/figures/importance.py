"""Which searched knobs mattered: Optuna's parameter importance, for the speed-up and for the objective."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import optuna
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from boosttune.tables.results import PARAM_PREFIX
from boosttune.report.figures._common import BLUE, LAYOUT, compared, inert, per_job, present, varies
from boosttune.report.inputs import ReportInputs

__all__ = ["ImportanceInfo", "draw_importance", "importance_info"]


MIN_TRIALS = 10  # below this many trials trained to the end, a forest's shares mean nothing


class ImportanceInfo(NamedTuple):
    objectives: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]  # (objective, ((param, importance), ...))
    evaluator: str
    trials: int
    note: str
    left_out: tuple[tuple[str, str], ...] = ()  # (param, why it got no share): it cannot act on this device


def importance_info(inputs: ReportInputs, evaluator: str = "fanova") -> ImportanceInfo | str | None:
    """Optuna's parameter importance for speed-up and for the objective, over the search trials trained to the end.

    Only knobs the device can act on, that every such trial has (Optuna's rule) and that vary, count. Returns why
    not, in a sentence, with fewer than :data:`MIN_TRIALS` such trials or no such knob; None without a search.
    """
    if inputs.search is None:
        return None
    finished, params = _importance_table(inputs.search)
    cannot = inert(inputs)
    left_out = tuple((c.removeprefix(PARAM_PREFIX), cannot[c.removeprefix(PARAM_PREFIX)]) for c in params
                     if c.removeprefix(PARAM_PREFIX) in cannot)
    params = [c for c in params if c.removeprefix(PARAM_PREFIX) not in cannot]
    if len(finished) < MIN_TRIALS:
        return (f"Parameter importance: not computed: {len(finished)} search trial(s) trained to the end, and "
                f"{MIN_TRIALS} are needed before a share means anything (more --trials, or --set num_trials=N).")
    if not params:
        return "Parameter importance: not computed: no knob this device can act on varied between the trials."
    distributions = {c.removeprefix(PARAM_PREFIX): _distribution(finished[c]) for c in params}
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["maximize", "maximize"])
    for _, row in finished.iterrows():
        values = {name: _param_value(row[PARAM_PREFIX + name], dist) for name, dist in distributions.items()}
        study.add_trial(optuna.trial.create_trial(params=values, distributions=distributions,
                                                  values=[per_job(row),
                                                          float(row["objective_gain"])]))
    chosen = (optuna.importance.PedAnovaImportanceEvaluator() if evaluator == "ped_anova"
              else optuna.importance.FanovaImportanceEvaluator(seed=0))
    objectives = []
    for index, name in enumerate(("speed-up per job", inputs.objective.noun)):
        scores = optuna.importance.get_param_importances(study, evaluator=chosen,
                                                         target=lambda t, i=index: t.values[i])
        objectives.append((name, tuple((k, float(v)) for k, v in scores.items())))
    note = (f"from {len(finished)} finished trials: indicative only" if len(finished) < 20
            else f"from {len(finished)} finished trials")
    return ImportanceInfo(tuple(objectives), type(chosen).__name__, len(finished), note, left_out)


def _importance_table(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The compared trials that drew a knob (a knob a trial did not draw as the category "(unset)"), and the
    param columns every one of them has and that vary."""
    finished = compared(table)
    param_columns = [c for c in finished.columns if c.startswith(PARAM_PREFIX)]
    finished = finished[finished[param_columns].notna().any(axis=1)] if param_columns else finished.iloc[:0]
    finished = finished.copy()
    for column in param_columns:  # a switch or choice a trial did not draw is a category of its own
        if finished[column].notna().any() and not _numeric(finished[column].dropna()):
            finished[column] = finished[column].map(lambda v: "(unset)" if not present(v) else str(v))
    params = [c for c in param_columns if finished[c].notna().all() and varies(finished[c])]
    return finished, params


def _numeric(values: pd.Series) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
               for v in values)


def _distribution(column: pd.Series) -> optuna.distributions.BaseDistribution:
    values = column.tolist()
    if _numeric(column):
        low, high = float(min(values)), float(max(values))
        if all(float(v).is_integer() for v in values):
            return optuna.distributions.IntDistribution(int(low), int(high))
        return optuna.distributions.FloatDistribution(low, high)
    return optuna.distributions.CategoricalDistribution(sorted({str(v) for v in values}))


def _param_value(value: Any, distribution: optuna.distributions.BaseDistribution) -> Any:
    if isinstance(distribution, optuna.distributions.IntDistribution):
        return int(value)
    if isinstance(distribution, optuna.distributions.FloatDistribution):
        return float(value)
    return str(value)


def draw_importance(info: ImportanceInfo) -> go.Figure:
    fig = make_subplots(rows=1, cols=len(info.objectives), subplot_titles=[n for n, _ in info.objectives])
    for col, (_, scores) in enumerate(info.objectives, start=1):
        ordered = sorted(scores, key=lambda kv: kv[1])
        fig.add_trace(go.Bar(x=[v for _, v in ordered], y=[k for k, _ in ordered], orientation="h",
                             marker_color=BLUE, showlegend=False), row=1, col=col)
    fig.update_layout(title=f"Parameter importance ({info.evaluator}, {info.note})",
                      height=160 + 28 * max(len(s) for _, s in info.objectives), **LAYOUT)
    return fig
