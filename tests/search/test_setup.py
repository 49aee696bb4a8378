"""What the search is given (boosttune/search/setup.py builds a SearchSetup): a baseline figure every trial is
scored against must be there, or the search refuses it by name before any trial."""

from __future__ import annotations

import math

import pytest


@pytest.mark.parametrize("field, value", [("baseline_objective", None), ("baseline_objective", math.nan),
                                          ("baseline_throughput_sps", None), ("baseline_throughput_sps", 0.0)])
def test_the_search_refuses_a_missing_baseline_figure_by_name_never_a_traceback_in_a_trial(field, value):
    from boosttune.errors import TrialError
    from boosttune.search.setup import SearchSetup

    figures = {"baseline_objective": 0.85, "baseline_throughput_sps": 900.0, field: value}
    with pytest.raises(TrialError, match=f"search: the O0 baseline's {field} is {value!r}; every trial is scored"):
        SearchSetup(base={}, ctx=None, env={}, workers=1, output="/nowhere", presets={}, max_drop=1.0, target=None,
                    max_concurrent=1, **figures)
