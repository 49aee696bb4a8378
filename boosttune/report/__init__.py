"""The report: one self-contained HTML page (and report.md) that answers "which boost recipe, and how sure are we?".

Built only from a folder's results tables (search, confirm, bench) and its ``run_info.json``:
:mod:`~boosttune.report.figures` holds one module per figure, each computing its data (tested without
rendering) and drawing it; :mod:`~boosttune.report.render` lays out the page.
"""

from boosttune.report.inputs import ReportInputs, load_report_inputs, report_inputs
from boosttune.report.render import HTML_NAME, MARKDOWN_NAME, write_report

__all__ = ["HTML_NAME", "MARKDOWN_NAME", "ReportInputs", "load_report_inputs", "report_folder", "report_inputs",
           "write_report"]


def report_folder(folder, *, max_drop: float | None = None):
    """Load a results folder's tables and write its report.html and report.md there; return both paths."""
    return write_report(load_report_inputs(folder, max_drop=max_drop))
