"""One MindSpore training trial (``run_trial`` in runner.py imports MindSpore when it runs)."""

from boosttune.trial.runner import TrialResult, run_trial
from boosttune.trial.timing import StepSummary, summarize_steps

__all__ = ["StepSummary", "TrialResult", "run_trial", "summarize_steps"]
