"""benchmarks/pairing.py: the seed's share of each measure's variance, recovered on planted tables (a seed effect
that is there, one that is not), and the page quoting what the script prints on the committed tables."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pandas as pd
import pytest

from tests.helpers.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("pairing")


def _planted(seed_sd: float, rounds: int = 400, recipes: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    seed = rng.normal(0, seed_sd, size=(rounds, 1))
    return pd.DataFrame(seed + rng.normal(0, 1.0, size=(rounds, recipes)) + np.arange(recipes))


def test_the_seed_share_is_recovered_where_it_is_planted_and_near_zero_where_it_is_not(bench):
    shared = bench.two_way(_planted(1.0))  # the seed's variance equals the run's own: a share of 50%
    assert abs(shared["share"] - 0.5) < 0.06 and shared["p"] < 1e-6
    none = bench.two_way(_planted(0.0))
    assert none["share"] < 0.03 and none["p"] > 0.001


def test_the_largest_block_of_complete_rounds_is_analysed():
    bench = load_benchmark("pairing")
    wide = pd.DataFrame({"O0": [1.0] * 5, "a": [1.0, 1.0, 1.0, None, None], "b": [None, None, None, 1.0, 1.0]})
    assert bench.complete(wide).shape == (3, 2)


def test_the_page_quotes_what_the_script_prints(bench):
    from tests.helpers import REPO

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert bench.main([]) == 0
    page = (REPO / "docs" / "benchmarks.md").read_text()
    quoted = page[page.index("### What pairing by seed buys"):]
    quoted = quoted[quoted.index("```") + 3:]
    quoted = quoted[:quoted.index("```")].strip().splitlines()
    assert quoted == printed.getvalue().strip().splitlines()
