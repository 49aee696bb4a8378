"""benchmarks/race_design.py grades the shipped race and cannot grade a fixed answer as passing: always O0 misses
every power target, always the fastest candidate misses the false-answer and tie targets; a clear-cut recipe is
answered by the shipped race in every replay of a short run."""

from __future__ import annotations

import pytest

from tests.helpers.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("race_design")


def _fixed(bench, name: str, answer: str | None, replays: int = 100) -> dict:
    truth = bench.SCENARIOS[name][0]
    acceptable = {n for n, (s, g) in truth.items() if s >= bench.TIE and g > -bench.MAX_DROP}
    bad = {n for n, (s, g) in truth.items() if s <= 1.0 or g <= -bench.MAX_DROP}
    return {"counts": {n: replays * (n == answer) for n in truth}, "acceptable": replays * (answer in acceptable),
            "false": replays * (answer in bad), "replays": replays}


def test_always_o0_misses_every_power_target_and_answering_the_recipe_misses_the_false_and_tie_targets(bench):
    assert all("missed" in bench.target_line(n, _fixed(bench, n, None))
               for n in ("main job", "0.3 pt inside", "power 1.15x / -0.3 pt", "team workload"))
    assert "missed" in bench.target_line("nulls at the boundary", _fixed(bench, "nulls at the boundary", "both"))
    assert "missed" in bench.target_line("a tie, 1.03x / 0 pt", _fixed(bench, "a tie, 1.03x / 0 pt", "planted"))


def test_the_shipped_race_answers_a_clear_cut_recipe_and_scores_it_against_the_truth(bench):
    result = bench.scenario("clear-cut 2.0x", -2.0, 30, 0)
    assert result["counts"]["planted"] == 30 and result["false"] == 0 and 8 <= result["runs"] <= 25


def test_the_page_quotes_what_the_script_prints_for_the_shipped_design(bench):
    """docs/benchmarks.md's output of `race_design.py --stresses` (the shipped design, its default 400 replays and
    seed 0): two of its scenarios re-run here must print the page's lines; a change to the race that moves them
    fails here until the page is regenerated."""
    from tests.helpers import REPO

    page = (REPO / "docs" / "benchmarks.md").read_text()
    quoted = page[page.index("### Futility by predictive power"):]
    quoted = quoted[quoted.index("```") + 3:]
    quoted = quoted[:quoted.index("```")]
    from boosttune.stats.race import SPENDING_GAMMA

    assert f"== spending gamma {SPENDING_GAMMA:g} ==" in quoted
    for name in ("main job", "a tie, 1.03x / 0 pt"):
        assert bench.scenario_line(name, bench.scenario(name, SPENDING_GAMMA, 400, 0)) in quoted.splitlines(), name
