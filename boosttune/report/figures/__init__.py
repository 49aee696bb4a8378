"""The report's figures and tables, one module each: the data computed from the results tables alone, then drawn.

Each ``<figure>_info(inputs)`` returns a small NamedTuple of numbers and names (pure pandas and numpy, tested without
rendering) and ``draw_<figure>(info)`` draws it with plotly; a drawer computes nothing but the words it shows. No
figure selects a recipe itself: the recommendation arrives with the inputs
(:attr:`~boosttune.report.inputs.ReportInputs.selection`). :mod:`boosttune.report.render` lays them out. Speed is a
ratio to the O0 baseline, the objective a gain over it (:mod:`boosttune.objective`).

Why, and what is text rather than a figure: docs/design/report.md.
"""

from boosttune.report.figures.ablation import AblationInfo, AblationRow, ablation_info, draw_ablation
from boosttune.report.figures.answer import AnswerInfo, AnswerRow, answer_info
from boosttune.report.figures.apply import ApplyInfo, apply_info
from boosttune.report.figures.claims import CLAIMS, ClaimInfo, claims_info, judge_claim
from boosttune.report.figures.curves import CurveInfo, CurveSeries, curves_info, draw_curves
from boosttune.report.figures.failures import FailedRun, failures_info
from boosttune.report.figures.header import HeaderInfo, header_info
from boosttune.report.figures.hypervolume import HypervolumeInfo, draw_hypervolume, hypervolume_info
from boosttune.report.figures.importance import ImportanceInfo, draw_importance, importance_info
from boosttune.report.figures.parallel import ParallelInfo, draw_parallel, parallel_info
from boosttune.report.figures.scatter import (
    ConfirmedPoint,
    ScatterInfo,
    ScatterPoint,
    confirmed_points,
    draw_scatter,
    scatter_info,
)
from boosttune.report.figures.timeline import TimelineBar, TimelineInfo, draw_timeline, timeline_info
from boosttune.report.figures.verified import VerifiedInfo, VerifiedRow, verified_info

__all__ = [
    "CLAIMS", "AblationInfo", "AblationRow", "AnswerInfo", "AnswerRow", "ApplyInfo", "ClaimInfo", "ConfirmedPoint", "CurveInfo", "CurveSeries",
    "FailedRun", "HeaderInfo", "HypervolumeInfo", "ImportanceInfo", "ParallelInfo", "ScatterInfo", "ScatterPoint",
    "TimelineBar", "TimelineInfo", "VerifiedInfo", "VerifiedRow",
    "ablation_info", "answer_info", "apply_info", "claims_info", "confirmed_points", "curves_info", "failures_info", "header_info",
    "hypervolume_info", "importance_info", "judge_claim", "parallel_info", "scatter_info", "timeline_info", "verified_info",
    "draw_ablation", "draw_curves", "draw_hypervolume", "draw_importance", "draw_parallel", "draw_scatter",
    "draw_timeline",
]
