"""A run finished, in one place: the best recipe exported and the report written from one judged run.

Every kind of run ends here: the experiment and the bench with what they trained and decided, ``boosttune export``
(a folder re-judged in place, or its recipe written elsewhere) and ``boosttune report`` with a folder read again
(:func:`boosttune.outputs.judged.read_judged`). Nothing is decided here: the decision is
:func:`boosttune.stats.decide.decide`'s, the recipe :func:`boosttune.outputs.judged.judge_run`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from boosttune.outputs.export import write_best
from boosttune.outputs.judged import Judged
from boosttune.outputs.summary import write_decision
from boosttune.report import figures, report_inputs, write_report
from boosttune.report.inputs import ReportInputs

__all__ = ["Finished", "finish_run"]


@dataclass(frozen=True)
class Finished:
    """What finishing wrote (None: not written) and the report's inputs, which the closing lines read."""

    inputs: ReportInputs
    best_config_path: Path | None = None
    best_recipe_path: Path | None = None
    summary_path: Path | None = None
    report_path: Path | None = None

    @property
    def answer(self) -> tuple[str, ...]:
        """The report's first screen in words: the answer, why the confirm stage stopped, the noise."""
        first = figures.answer_info(self.inputs)
        answer = (figures.header_info(self.inputs).answer, *((first.stopped, first.noise) if first is not None else ()))
        return tuple(a for a in answer if a)


def finish_run(judged: Judged, folder: str | Path, *, export: bool = True, decision: bool = False,
               report: bool = True, target: str | Path | None = None,
               log: Callable[[str], None] | None = None) -> Finished:
    """Write ``judged``'s files: its decision (summary.csv, race.json; ``decision``, for a folder re-judged), its
    best recipe (``export``) and its report (``report``), into ``target`` (default: the run's ``folder``)."""
    folder = Path(folder)
    out = Path(target) if target is not None else folder
    summary = write_decision(judged.decision, out) if decision and judged.decision is not None else None
    paths: tuple[Path | None, Path | None] = (None, None)
    if export and judged.best is not None:
        paths = write_best(judged.best.document, out)
    inputs = report_inputs(judged, folder)
    html = write_report(inputs, out)[0] if report else None
    finished = Finished(inputs, *paths, summary_path=summary, report_path=html)
    if log is not None:
        for label, path in (("summary", summary), ("best recipe", paths[1]), ("report", html)):
            if path is not None:
                log(f"{label} written to {path}")
    return finished
