"""boosttune.search.hooks' searcher wrapper, on its own: the order it hands trials out, what the sampler hears."""

from __future__ import annotations


def test_o0_leads_the_given_configs_and_closes_the_search_unseen_by_the_sampler():
    """The wrapper around Optuna's searcher (boosttune.search.hooks.UnlearnedFirst) as the search builds it with a
    closing O0 run: the wrapped searcher's first trial (O0's start point) first, then the start points it cannot draw,
    then its own draws, and O0 once more as the last of ``after + 1`` trials; the sampler hears only of its own
    trials. Its state travels with Tune's saved state."""
    from ray.tune.search import Searcher

    from boosttune.search.hooks import UnlearnedFirst

    class Drawn(Searcher):  # a pure stand-in for OptunaSearch: it hands out numbered draws and records what it heard
        def __init__(self):
            super().__init__(metric="m", mode="max")
            self.drawn, self.heard = 0, []

        def suggest(self, trial_id):
            self.drawn += 1
            return {"draw": self.drawn}

        def on_trial_complete(self, trial_id, result=None, error=False):
            self.heard.append(trial_id)

    inner = Drawn()
    wrapper = UnlearnedFirst(inner, [{"outside": 1}], closing=[{"draw": 1, "closing_reference_run": True}], after=4,
                             lead=True)
    handed = [wrapper.suggest(f"t{i}") for i in range(5)]
    assert handed == [{"draw": 1}, {"outside": 1}, {"draw": 2}, {"draw": 3},
                      {"draw": 1, "closing_reference_run": True}]
    for i in range(5):
        wrapper.on_trial_complete(f"t{i}", {"m": 1.0})
    assert inner.heard == ["t0", "t2", "t3"]
    again = UnlearnedFirst(Drawn(), [])
    again.set_state(wrapper.get_state())
    assert (again.closing, again.handed, again.lead, again.own) == ([], 5, True, {"t1", "t4"})
