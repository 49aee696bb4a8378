"""benchmarks/stage_speed.py's arithmetic on constructed pairs (its runs are the benchmark itself, minutes each): a
stage that trains as the plain job does meets every target; one that reads every recipe as fast as O0 (a fixed
answer) or trains slower misses them, by the amounts it prints."""

from __future__ import annotations

import math

import pytest

from tests.helpers.benchmark_scripts import load_benchmark

PLAIN = {"O0": 3000.0, "grad_freeze": 3750.0, "less_bn": 2700.0, "grad_accumulation": 3300.0}


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("stage_speed")


def _pairs(stage_of, n=6):
    """``n`` pairs, the plain processes moving by a few percent from pair to pair, each stage as ``stage_of`` reads
    the pair's plain figures."""
    pairs = []
    for i in range(n):
        wobble = 1 + 0.02 * math.sin(i * 1.7)
        plain = {name: sps * (1 + 0.01 * ((i + j) % 3 - 1)) * wobble for j, (name, sps) in enumerate(PLAIN.items())}
        pair = {"plain": plain, "seconds": {stage: 30.0 + i for stage in ("baseline", "search", "rounds")}}
        for stage in ("baseline", "search", "rounds"):
            pair.update(stage_of(stage, plain))
        pairs.append(pair)
    return pairs


def _as_plain(stage, plain):
    return {stage: {name: 0.97 * sps for name, sps in plain.items()}}


def test_a_stage_that_trains_as_the_plain_job_meets_every_target(bench):
    lines = bench.report(_pairs(_as_plain), {})
    for stage in ("baseline", "search", "rounds"):
        throughput = next(line for line in lines if line.startswith(f"{stage}: throughput"))
        step = next(line for line in lines if line.startswith(f"{stage}: per-step"))
        assert "0.970" in throughput and "met)" in throughput, throughput
        assert "1.000" in step and ": met)" in step, step


def test_a_fixed_answer_and_a_slow_stage_miss_their_targets_by_what_they_are_off(bench):
    """The search reading every recipe at 1.0x O0 (its speed-ups a constant), and rounds training at 0.8x plain."""
    def stage_of(stage, plain):
        if stage == "search":
            return {"search": dict(plain), "search_speedup": {name: 1.0 for name in plain}}
        return {stage: {name: (0.8 if stage == "rounds" else 1.0) * sps for name, sps in plain.items()}}

    lines = bench.report(_pairs(stage_of), {})
    search = next(line for line in lines if line.startswith("search: per-step"))
    expected = math.exp(sum(math.log(PLAIN["O0"] / PLAIN[n]) for n in PLAIN if n != "O0") / 3)
    assert f"{expected:.3f}" in search and "missed: the mean is" in search, search
    rounds = next(line for line in lines if line.startswith("rounds: throughput"))
    assert "0.800" in rounds and "missed by 0.100" in rounds, rounds


def test_the_search_is_read_as_its_results_table_reads_it(bench):
    """A pair with the search's table speed-ups is judged by them, not by throughput over the stage's O0 figure."""
    pair = {"plain": dict(PLAIN), "search": {**PLAIN, "O0": 2000.0}, "search_speedup": {"grad_freeze": 1.25}}
    assert bench.stage_speedup(pair, "search", "grad_freeze") == pytest.approx(1.25)
    assert bench.stage_speedup(pair, "search", "less_bn") == pytest.approx(2700.0 / 2000.0)


def _run_folder(tmp_path, name, stage_s):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "run_info.json").write_text(__import__("json").dumps({"stage_s": stage_s}))
    return folder


def test_the_job_level_targets_are_read_from_run_folders_and_missed_by_what_they_are_off(bench, tmp_path):
    fast = _run_folder(tmp_path, "readme-fast", {"probe": 4.2, "baseline": 21.2, "search": 146.4, "confirm": 258.6})
    slow = _run_folder(tmp_path, "readme-slow", {"probe": 5.0, "baseline": 30.0, "search": 400.0, "confirm": 815.0})
    team = _run_folder(tmp_path, "team", {"probe": 494.0, "baseline": 30.0, "search": 200.0, "confirm": 271.0})
    lean = _run_folder(tmp_path, "team-lean", {"probe": 60.0, "baseline": 30.0, "search": 200.0, "confirm": 310.0})
    lines = bench.job_report([fast, slow], [team, lean], 1213.0)
    assert "stages 430 s" in lines[0] and lines[0].endswith("met)")
    assert "stages 1250 s" in lines[1] and "missed by 250 s" in lines[1]
    assert "494 s of 995 s of stages = 49.6%" in lines[2] and "missed by 34.6 pt" in lines[2]
    assert "= 10.0%" in lines[3] and lines[3].endswith("met)")
    assert "1213 s" in lines[4] and "missed by 13 s" in lines[4]
    assert bench.job_report([], [], 1100.0)[0].endswith("met)")


def test_a_folder_that_is_no_run_is_refused_before_any_pair_runs(bench, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(["--pairs", "0", "--readme-run", str(tmp_path)])
    assert stop.value.code == 2 and "no run_info.json there" in capsys.readouterr().err
    unfinished = _run_folder(tmp_path, "unfinished", {})
    with pytest.raises(SystemExit, match="records no stage_s"):
        bench.main(["--pairs", "0", "--team-run", str(unfinished)])
