"""The headless-Chromium page checker (tests/helpers/browser.py) passes good pages and catches bad ones."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import pytest

from tests.helpers.browser import check_page, find_chromium

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        find_chromium() is None,
        reason="no chromium or google-chrome found (install Debian's chromium or set $CHROMIUM)",
    ),
]


def _figure(title: str) -> go.Figure:
    return go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], name=title), layout={"title": title})


def _two_figure_page(tmp_path: Path, name: str, *, break_second: bool = False) -> Path:
    """A full page (plotly.js inlined) with two figures; optionally the second never plots."""
    page = _figure("first").to_html(include_plotlyjs=True, full_html=True)
    second = _figure("second").to_html(include_plotlyjs=False, full_html=False)
    if break_second:
        assert second.count("Plotly.newPlot(") == 1
        second = second.replace("Plotly.newPlot(", "void (")  # the div stays, the plot call goes
    assert page.count("</body>") == 1
    path = tmp_path / name
    path.write_text(page.replace("</body>", second + "</body>"), encoding="utf-8")
    return path


def _write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(f"<!DOCTYPE html><html><head></head><body>{body}</body></html>", "utf-8")
    return path


def test_good_page_renders_both_figures_offline(tmp_path):
    shot = tmp_path / "shot.png"
    result = check_page(_two_figure_page(tmp_path, "good.html"), screenshot=shot)
    assert result.figures == 2
    assert result.rendered == 2
    assert result.console_errors == ()
    assert result.network_requests == ()
    assert result.dom.count('class="main-svg"') >= 2
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000  # a blank 1400x1000 PNG is a few KB; two plots make it larger


def test_thrown_error_and_console_error_are_reported(tmp_path):
    thrown = check_page(_write(tmp_path, "throw.html", '<script>throw new Error("boom")</script>'))
    assert any("boom" in e for e in thrown.console_errors), thrown.console_errors
    logged = check_page(_write(tmp_path, "log.html", '<script>console.error("bad")</script>'))
    assert any("bad" in e for e in logged.console_errors), logged.console_errors
    assert thrown.figures == logged.figures == 0


def test_figure_whose_plot_call_is_missing_is_not_rendered(tmp_path):
    result = check_page(_two_figure_page(tmp_path, "broken.html", break_second=True))
    assert result.figures == 2
    assert result.rendered == 1


def test_network_attempts_are_reported(tmp_path):
    page = _write(
        tmp_path,
        "net.html",
        '<img src="https://example.com/x.png">'
        '<script src="https://cdn.plot.ly/plotly-2.35.2.min.js"></script>',
    )
    result = check_page(page)
    assert "https://example.com/x.png" in result.network_requests
    assert "https://cdn.plot.ly/plotly-2.35.2.min.js" in result.network_requests
    # The network is blocked, so the loads fail and Chromium logs that too.
    assert any("example.com" in e for e in result.console_errors), result.console_errors


def test_hung_page_times_out_with_a_clear_error(tmp_path):
    page = _write(tmp_path, "hang.html", "<script>while (true) {}</script>")
    with pytest.raises(RuntimeError, match=r"timed out.*\n.*command: .*--headless=new"):
        check_page(page, timeout_s=2)


def test_the_layout_probe_finds_overlapping_figure_text_a_wide_table_and_a_first_screen_pushed_down(tmp_path):
    """LAYOUT_JS on planted faults: two labels on one spot, a table wider than the page without a scroll box, and
    the answer below a tall block; and on the same page without them, nothing."""
    from tests.helpers.browser import LAYOUT_JS

    def page(name: str, *, faults: bool) -> Path:
        figure = _figure("labels")
        figure.add_annotation(x=2, y=2, text="grad_freeze p=0.5", showarrow=False)
        figure.add_annotation(x=2 if faults else 1.5, y=2 if faults else 2.9, text="less_bn", showarrow=False)
        if faults:  # a name over a drawn point (the line's point at (3, 2))
            figure.add_annotation(x=3, y=2, text="over", showarrow=False)
        html = figure.to_html(include_plotlyjs=True, full_html=True)
        cells = "".join(f"<td>column{i}</td>" for i in range(40 if faults else 3))
        table = f"<table><tr>{cells}</tr></table>"
        top = ('<div style="height:2000px"></div>' if faults else "") + '<p class="answer">Keep O0</p>' + \
            (table if faults else f'<div style="overflow-x:auto">{table}</div>')
        path = tmp_path / name
        path.write_text(html.replace("<body>", "<body>" + top, 1), encoding="utf-8")
        return path

    bad = check_page(page("bad.html", faults=True), width=800, height=600, evaluate=LAYOUT_JS).evaluated
    assert any('"grad_freeze p=0.5" / "less_bn"' in o or '"less_bn" / "grad_freeze p=0.5"' in o
               for o in bad["overlaps"]), bad
    assert any(o.endswith('"over" covers a point') for o in bad["overlaps"]), bad
    assert bad["unscrollable_wide_tables"] == 1 and bad["page_width"] > bad["width"]
    assert bad["answer"] > bad["height"]  # below the first screen
    good = check_page(page("good.html", faults=False), width=800, height=600, evaluate=LAYOUT_JS).evaluated
    assert good["overlaps"] == [] and good["unscrollable_wide_tables"] == 0 and good["answer"] <= good["height"]
