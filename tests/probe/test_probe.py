"""Capability probe on the real device, its cache, and the ISA choice."""

from __future__ import annotations

import json

import pytest

from boosttune.config.recipe import parse_recipe
from boosttune.probe import KNOBS, check_recipe, choose_isa, knobs_of, load_cached, run_probe


@pytest.mark.slow
def test_probe_finds_cpu_limits_and_caches_them(probe_report, tmp_path, monkeypatch):
    """The session's own probe (tests/helpers/probe.py: a real one, into the session's fresh cache), or, where the session
    was given a cache that held a report already, a probe made afresh here."""
    from boosttune.probe.report import cache_dir

    from tests.helpers.probe import PROBE_LINES

    report = probe_report
    if any("cached result" in line for line in PROBE_LINES):
        monkeypatch.setenv("BOOSTTUNE_CACHE_DIR", str(tmp_path))
        report = run_probe("CPU", refresh=True, log=lambda message: None)
    assert set(report.capabilities) == set(KNOBS)
    unsupported = {c.knob: c.reason for c in report.unsupported()}
    # What MindSpore 2.10 cannot do on CPU, each with MindSpore's own reason.
    assert "Centralization" in unsupported["boost.less_bn.gc_flag"]
    assert "boost.adasum" in unsupported and "16 ranks" in unsupported["boost.adasum"]
    assert "optimizer.thor" in unsupported
    assert "loss_scale.dynamic" in unsupported and "loss_scale.group" in unsupported
    # ... and what it can.
    for knob in ("boost.less_bn", "boost.grad_freeze", "boost.grad_accumulation", "boost.dim_reduce",
                 "loss_scale.fixed", "optimizer.momentum"):
        assert report.supports(knob), (knob, report.capabilities[knob].reason)
    assert set(report.isa_seconds) == {"default", "AVX512_CORE", "AVX2"}
    assert report.runtime_env["ONEDNN_MAX_CPU_ISA"] == choose_isa(report.isa_seconds)
    # Cached: a second call does not probe again and returns the same findings.
    cached_files = list(cache_dir().glob("cpu-*.json"))
    assert len(cached_files) == 1
    assert json.loads(cached_files[0].read_text())["capabilities"]["boost.less_bn.gc_flag"]["supported"] is False
    again: list[str] = []
    assert run_probe("CPU", log=again.append).capabilities == report.capabilities
    assert any("cached result" in line for line in again)
    assert load_cached("CPU").runtime_env == report.runtime_env
    assert "unsupported" in report.table() and "ONEDNN_MAX_CPU_ISA=AVX2" in report.table()


def test_isa_choice_keeps_default_unless_clearly_faster():
    assert choose_isa({"default": 0.26, "AVX512_CORE": 0.29, "AVX2": 0.004}) == "AVX2"
    assert choose_isa({"default": 0.010, "AVX512_CORE": 0.011, "AVX2": 0.0095}) == "default"
    assert choose_isa({"default": None, "AVX512_CORE": None, "AVX2": 0.01}) == "AVX2"
    assert choose_isa({"default": None}) == "default"


def test_knobs_of_a_recipe():
    recipe = parse_recipe({
        "optimizer": {"name": "adam"}, "amp_level": "O2", "loss_scale": {"kind": "fixed"}, "boost_level": "O1",
        "boost_config_dict": {"boost": {"mode": "manual", "grad_freeze": False}},
    })
    assert knobs_of(recipe) == ["optimizer.adam", "amp.O2", "loss_scale.fixed", "boost.less_bn",
                                "boost.less_bn.gc_flag"]


def test_check_recipe_passes_supported_recipes(probe_report):
    check_recipe(parse_recipe({"boost_level": "O1", "boost_config_dict": {"less_bn": {"gc_flag": False}}}),
                 probe_report)
    check_recipe(parse_recipe({"boost_level": "O2", "boost_config_dict": {"less_bn": {"gc_flag": False}}}),
                 probe_report)  # adasum is a silent no-op below 16 ranks, not a failure
