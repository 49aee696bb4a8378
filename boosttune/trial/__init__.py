"""One MindSpore training trial (imports MindSpore lazily: ``run_trial`` is in runner.py)."""

from boosttune.trial.timing import StepSummary, summarize_steps

__all__ = ["StepSummary", "TrialResult", "run_trial", "summarize_steps"]


def __getattr__(name: str):
    if name in ("run_trial", "TrialResult"):
        from boosttune.trial import runner

        return getattr(runner, name)
    raise AttributeError(name)
