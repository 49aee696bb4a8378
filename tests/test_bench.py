"""``boosttune bench``: the file, the default matrix, and a real paired run on Ray and MindSpore."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from boosttune.bench import bench_candidates, default_matrix, merge, parse_bench, recipe_override
from boosttune.errors import ConfigError
from tests.helpers.leftovers import assert_nothing_left, footprint

BASE = {"model": "lenet5", "epochs": 2, "batch_size": 32, "steps_per_epoch": 8, "data": {"name": "digits"},
        "optimizer": {"learning_rate": 0.05}}
FREEZE = {"boost_level": "O1", "boost_config_dict": {"boost": {"mode": "manual", "grad_freeze": True, "less_bn": False},
                                                     "grad_freeze": {"freeze_p": 0.4}}}


@pytest.mark.parametrize("document, message", [
    ({"seeds": [1]}, r"^seeds: .*at least 2"),
    ({"seeds": [1, 1]}, r"^seeds: .*distinct"),
    ({"base": {"boost_level": "O1"}}, r"^base: the base recipe is the O0 baseline"),
    ({"base": {"batch_size": 0}}, r"^base\.batch_size"),
    ({"recipes": {"O0": {"amp_level": "O2"}}}, r"^recipes\.O0: the baseline is the base recipe"),
    ({"recipe": {}}, r"^recipe: unknown key \(did you mean recipes\?\)"),
    ({"recipes": {"x": 3}}, r"^recipes\.x: 3 is invalid"),
    ({"interleave": "steps"}, r"^interleave: .*'auto', 'epochs' or 'runs'"),
    ({"interleave": "epochs", "workers_per_trial": 2}, r"^interleave: 'epochs' needs warm_workers true"),
])
def test_bad_bench_files_are_one_line(document, message):
    with pytest.raises(ConfigError, match=message):
        parse_bench(document)


def test_merge_lays_overrides_over_the_base_and_replaces_a_boost_config_whole():
    base = {"optimizer": {"name": "momentum", "learning_rate": 0.1}, "boost_config_dict": {"less_bn": {}}}
    merged = merge(base, {"optimizer": {"learning_rate": 0.2}, "boost_config_dict": {"grad_freeze": {}}})
    assert merged == {"optimizer": {"name": "momentum", "learning_rate": 0.2}, "boost_config_dict": {"grad_freeze": {}}}
    assert base["optimizer"]["learning_rate"] == 0.1  # the base is not mutated


def test_default_matrix_follows_the_probe(probe_report):
    matrix, skipped = default_matrix(probe_report)
    assert list(matrix)[0] == "O0" and matrix["O0"] == {}
    for algorithm in ("less_bn", "grad_freeze", "grad_accumulation"):
        assert matrix[algorithm]["boost_level"] == "O1"
    assert any(note.startswith("adasum:") for note in skipped)
    for knob, name in (("loss_scale.dynamic", "loss_scale dynamic"), ("amp.O2", "amp O2"),
                       ("boost.less_bn.gc_flag", None)):
        if name is not None:
            assert (name in matrix) == probe_report.supports(knob)
    if not probe_report.supports("boost.less_bn.gc_flag"):
        assert matrix["O1-equivalent"]["boost_config_dict"] == {"less_bn": {"gc_flag": False}}
        assert matrix["less_bn"]["boost_config_dict"]["less_bn"] == {"gc_flag": False}
    # Every default recipe is valid and runs on this device: checked before anything trains.
    plan = bench_candidates(parse_bench({"base": BASE}), probe_report)
    assert [c.name for c in plan.candidates] == list(matrix)


def test_a_recipe_the_device_cannot_run_is_refused_before_anything_starts(probe_report):
    from dataclasses import replace

    from boosttune.probe.report import Capability

    # MindSpore has no dynamic loss scale on a CPU; on a device that has one, its report is edited to say so.
    unsupported = Capability("loss_scale.dynamic", False, "Only `loss_scale_manager=None` on this device")
    report = replace(probe_report, capabilities={**probe_report.capabilities, "loss_scale.dynamic": unsupported}) \
        if probe_report.supports("loss_scale.dynamic") else probe_report
    config = parse_bench({"base": BASE, "recipes": {"dyn": {"loss_scale": {"kind": "dynamic"}}}})
    with pytest.raises(ConfigError, match=rf"^recipes\.dyn: loss_scale\.dynamic is not supported on "
                                          rf"{report.device_target}"):
        bench_candidates(config, report)
    with pytest.raises(ConfigError, match=r"^recipes\.bad: boost_config_dict\.grad_freeze\.freeze_p"):
        bench_candidates(parse_bench({"base": BASE, "recipes": {"bad": {
            "boost_level": "O1", "boost_config_dict": {"grad_freeze": {"freeze_p": 2}}}}}), report)


def test_an_exported_best_recipe_joins_the_matrix(probe_report):
    exported = {"boost_level": "O1", "boost_config_dict": FREEZE["boost_config_dict"], "amp_level": "O0",
                "loss_scale": {"kind": "none"}, "measured": {"objective_value": 0.9}, "provenance": {}}
    override = recipe_override(exported, "best_recipe.json")
    assert set(override) == {"boost_level", "boost_config_dict", "amp_level", "loss_scale"}
    plan = bench_candidates(parse_bench({"base": BASE, "recipes": {}}), probe_report, extra={"best_recipe": override})
    assert [c.name for c in plan.candidates] == ["O0", "best_recipe"]
    assert plan.candidates[1].recipe["boost_config_dict"]["grad_freeze"]["freeze_p"] == 0.4
    with pytest.raises(ConfigError, match="not a boosttune best_recipe.json"):
        recipe_override({"objective_value": 1}, "x.json")


@pytest.mark.slow
@pytest.mark.ray
def test_bench_runs_paired_seeds_on_ray_writes_the_summary_and_resumes(tmp_path):
    bench_file = tmp_path / "bench.yaml"
    bench_file.write_text(json.dumps({"name": "freeze", "base": BASE, "seeds": [5, 6, 7],
                                      "recipes": {"O0": {}, "freeze_p 0.4": FREEZE}}))
    output = tmp_path / "out"
    cmd = [sys.executable, "-m", "boosttune.cli.main", "bench", str(bench_file), "--output", str(output),
           "--seed-list", "3,4"]

    # The driver killed with SIGKILL once two runs are in: --resume trains the rest and nothing again.
    before_run = footprint()
    driver = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
                              start_new_session=True)
    deadline = time.time() + 400
    while time.time() < deadline and len(list((output / "runs").glob("*.json"))) < 2:
        time.sleep(0.2)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    assert_nothing_left(before_run)  # no Ray, MindSpore scheduler or port outlives the killed driver
    kept = {p.stem: json.loads(p.read_text())["started"] for p in (output / "runs").glob("*.json")}
    assert 2 <= len(kept) < 4
    done = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("kept from an earlier attempt") == len(kept)
    runs = {p.stem: json.loads(p.read_text()) for p in (output / "runs").glob("*.json")}
    assert sorted(runs) == ["bench-s3-O0", "bench-s3-freeze_p_0.4", "bench-s4-O0", "bench-s4-freeze_p_0.4"]
    assert all(runs[k]["started"] == v for k, v in kept.items())  # nothing finished was trained again
    assert all(r["status"] == "completed" and r["role"] == "bench" for r in runs.values())
    # on this one-node CPU cluster (interleave auto) a round's two runs took the machine's epochs in turn
    assert all(r["metrics"]["epochs_in_turn"] for r in runs.values())
    ends = sorted((e["ended_unix"], r["label"]) for r in runs.values() if r["round"] == 1 for e in r["curve"])
    assert [label for _, label in ends] == ["freeze_p 0.4", "O0"] * len(runs["bench-s4-O0"]["curve"])
    assert runs["bench-s4-freeze_p_0.4"]["observed_boost"]["grad_freeze"] is True
    assert runs["bench-s4-O0"]["observed_boost"]["grad_freeze"] is False
    summary = pd.read_csv(output / "summary.csv").set_index("recipe")
    row = summary.loc["freeze_p 0.4"]
    assert row["n_seeds"] == 2 and row["step_ci_low"] <= row["step_speedup"] <= row["step_ci_high"]
    assert isinstance(row["verdict"], str) and row["verdict"] != "no_data"
    assert "freeze_p 0.4" in done.stdout and "answer:" in done.stdout
    assert "Confirmed over paired seeds" in (output / "report.html").read_text()
    assert "taking the machine&#x27;s epochs in turn" in (output / "report.html").read_text() or \
        "taking the machine's epochs in turn" in (output / "report.html").read_text()
    assert_nothing_left(before_run)

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert again.returncode == 2 and "pass --resume" in again.stderr and again.stderr.count("\n") == 1

    exported = subprocess.run([sys.executable, "-m", "boosttune.cli.main", "export", str(output)], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    recipe = json.loads((output / "best_recipe.json").read_text())
    assert recipe["confirmed"]["seeds"] == [3, 4] and recipe["confirmed"]["recipe"] in ("O0", "freeze_p 0.4")
    assert json.loads((output / "best_boost_config.json").read_text()) == recipe["boost_config_dict"]

    # The report again, re-judged at another margin, from the tables alone.
    reported = subprocess.run([sys.executable, "-m", "boosttune.cli.main", "report", str(output), "--max-drop", "0.5"],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    assert reported.stdout.strip() == f"report written to {output / 'report.html'} (tables also in report.md)"
    text = (output / "report.md").read_text()
    assert text.startswith("# boosttune bench: freeze") and "within 0.5 pt" in text.splitlines()[2]  # the answer
    assert "- reproduce: `boosttune bench" in text and "freeze_p 0.4" in text
    info = json.loads((output / "run_info.json").read_text())
    assert len(info["resumed"]) == 1 and info["command"].startswith("boosttune bench")
