"""The HTML report: the scatter's data (no rendering), and a self-contained page."""

from __future__ import annotations

import re

import pytest
from test_results import RAY_VERSION, sample_records

from boosttune.errors import ConfigError
from boosttune.report import _get_scatter_info, write_report
from boosttune.results import build_results_table


@pytest.fixture
def table():
    return build_results_table(sample_records(), ray_version=RAY_VERSION)


def test_scatter_info_points_and_roles(table):
    info = _get_scatter_info(table, tolerance_pt=0.5)
    by_id = {p.trial_id: p for p in info.points}
    assert set(by_id) == {"t_00000", "t_00001", "t_00002", "t_00003", "t_00005"}  # not the failed one
    assert (by_id["t_00003"].x, by_id["t_00003"].y) == (pytest.approx(1.4), 0.78)
    assert by_id["t_00000"].is_baseline and by_id["t_00000"].is_preset and by_id["t_00000"].label == "O0"
    assert by_id["t_00001"].is_preset and by_id["t_00001"].label == "O1-equivalent"
    assert not by_id["t_00002"].is_preset and by_id["t_00002"].label == "t_00002"
    assert [p.trial_id for p in info.points if p.is_pareto] == ["t_00000", "t_00002", "t_00003", "t_00005"]
    assert [p.trial_id for p in info.points if p.is_selected] == ["t_00002"]
    assert [x for x, _ in info.pareto] == pytest.approx([0.9, 1.0, 1.2, 1.4])
    assert [y for _, y in info.pareto] == [0.81, 0.8, 0.797, 0.78]
    assert "speed-up 1.200x" in by_id["t_00002"].hover and "-0.30 pt" in by_id["t_00002"].hover
    assert "grad_accumulation.grad_accumulation_step=4" in by_id["t_00002"].hover


def test_scatter_info_baseline_band_and_failures(table):
    info = _get_scatter_info(table, tolerance_pt=0.5)
    assert info.x_label.startswith("speed-up") and info.baseline_val_acc == 0.8
    assert info.tolerance_val_acc == pytest.approx(0.795)
    assert info.not_plotted == (("t_00004", "failed", "trial failed in MindSpore: boom"),)
    assert info.selection_reason.startswith("trial t_00002")


def test_scatter_info_without_baseline_uses_throughput():
    records = sample_records()
    records[0] = {**records[0], "status": "failed", "reason": "baseline crashed", "metrics": {}}
    info = _get_scatter_info(build_results_table(records, ray_version=RAY_VERSION))
    assert info.x_label.startswith("throughput") and info.tolerance_val_acc is None
    assert info.selection_reason is None
    assert max(p.x for p in info.points) == 700.0
    assert [p.trial_id for p in info.points if p.is_pareto] == ["t_00002", "t_00003", "t_00005"]


def test_report_is_self_contained_html(table, tmp_path):
    path = write_report(table, tmp_path / "sub" / "report.html", title="LeNet <digits>")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<title>LeNet &lt;digits&gt;</title>" in page
    assert not re.search(r"<script[^>]*\bsrc=", page)  # no CDN: plotly.js is inline
    assert not re.search(r"<link[^>]*href=[\"']https?://", page)
    assert "* plotly.js v" in page and len(page) > 1_000_000
    for trial_id in (f"t_0000{i}" for i in range(6)):
        assert trial_id in page
    assert "trial failed in MindSpore: boom" in page
    assert "Pareto front" in page and "baseline - 0.5 pt" in page
    assert [p.name for p in tmp_path.joinpath("sub").iterdir()] == ["report.html"]


def test_report_rejects_negative_tolerance(table, tmp_path):
    with pytest.raises(ConfigError, match="tolerance_pt"):
        write_report(table, tmp_path / "r.html", tolerance_pt=-0.5)
    assert not (tmp_path / "r.html").exists()
