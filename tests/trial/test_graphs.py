"""Cached graphs on real MindSpore: a run that trains a kept, compiled Model with another seed's values ends where a
run on a freshly compiled Model of that seed ends, to the last digit, for every kind of recipe; a graph whose
constants depend on the seed is compiled again."""

from __future__ import annotations

import pytest

from boosttune.config.recipe import parse_recipe

pytestmark = pytest.mark.slow

import mindspore as ms

from boosttune.trial.graphs import GraphCache  # noqa: E402
from boosttune.trial.runner import run_trial  # noqa: E402

BASE = {"model": "lenet5", "epochs": 2, "batch_size": 32, "steps_per_epoch": 6, "warmup_steps": 2}


def _manual(**switches):
    return {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": False, **switches}}


RECIPES = {
    "O0": {},
    "resnet8-batchnorm": {"model": "resnet8"},  # BatchNorm's moving statistics are parameters too
    "less_bn": {"boost_level": "O2", "boost_config_dict": {**_manual(less_bn=True), "less_bn": {"gc_flag": False}}},
    "adam-fixed-scale": {"optimizer": {"name": "adam", "learning_rate": 0.001},
                         "loss_scale": {"kind": "fixed", "loss_scale": 128.0}},
}
# Algorithms whose graph_state says no: GradientFreeze holds a train cell and an optimizer per group in plain tuples
# (state the parameters do not list); a kept accumulation Model trained to other figures than a fresh one.
NEVER_KEPT = {
    "accumulate": {"boost_level": "O1", "boost_config_dict": {
        **_manual(grad_accumulation=True), "grad_accumulation": {"grad_accumulation_step": 3}}},
    "O1": {"boost_level": "O1", "boost_config_dict": {"less_bn": {"gc_flag": False}}},
    "freeze-continuous": {"boost_level": "O1", "boost_config_dict": {
        **_manual(grad_freeze=True), "grad_freeze": {"param_groups": 2, "freeze_type": 0}}},
}


def _run(name: str, seed: int, digits, cache: GraphCache | None):
    recipe = parse_recipe({**BASE, **{**RECIPES, **NEVER_KEPT}[name], "seed": seed})
    return run_trial(recipe, data=digits, log=lambda m: None, graph_cache=cache)


def _figures(result):
    return [(e["train_loss"], e["objective_value"], e["val_loss"]) for e in result.epochs], result.observed_boost


@pytest.mark.parametrize("name", list(RECIPES))
def test_a_cached_graph_trains_as_a_fresh_one(name, digits):
    cache = GraphCache()
    first = _run(name, 1, digits, cache)
    cached = _run(name, 2, digits, cache)
    fresh = _run(name, 2, digits, None)

    assert not first.metrics["graph_cached"] and cached.metrics["graph_cached"] and not fresh.metrics["graph_cached"]
    assert _figures(cached) == _figures(fresh)  # another seed's values, nothing of the first run's
    assert _figures(cached)[0] != _figures(first)[0]  # the seeds do differ
    # (How much sooner a cached graph's first step ends is benchmarks/warm_workers.py's to measure, not a test's: under
    # pytest-xdist the tests beside this one made a cached first step take longer than a fresh compile once.)
    if name == "O0":  # and the first seed again, after the second, as it trained the first time
        again = _run(name, 1, digits, cache)
        assert again.metrics["graph_cached"] and _figures(again) == _figures(first)


@pytest.mark.parametrize("name", list(NEVER_KEPT))
def test_a_model_with_state_outside_its_parameters_is_compiled_every_run(name, digits):
    cache = GraphCache()
    runs = [_run(name, 1, digits, cache) for _ in range(2)]
    assert [r.metrics["graph_cached"] for r in runs] == [False, False]
    assert _figures(runs[0]) == _figures(runs[1])


def test_the_fingerprint_tells_graphs_whose_constants_depend_on_the_seed():
    """``nn.Dropout`` takes its seeds when it is built: they are attributes of its primitive, constants of the graph."""
    from mindspore import nn

    from boosttune.trial.graphs import _fingerprint

    class Built:  # what the fingerprint reads of a Model
        def __init__(self, seed: int, dropout: bool):
            ms.set_seed(seed)
            cells = [nn.Dense(4, 3, weight_init="normal")] + ([nn.Dropout(p=0.5)] if dropout else [])
            self._train_network, self._eval_network = nn.SequentialCell(cells), None

    assert _fingerprint(Built(1, True)) == _fingerprint(Built(1, True))
    assert _fingerprint(Built(1, True)) != _fingerprint(Built(2, True))
    assert _fingerprint(Built(1, False)) == _fingerprint(Built(2, False))  # weights are values, not constants
    assert _fingerprint(Built(1, False)) != _fingerprint(Built(1, True))


def test_the_cache_keeps_its_size_and_a_recipe_change_compiles(digits):
    cache = GraphCache(size=1)
    _run("O0", 1, digits, cache)
    assert not _run("less_bn", 1, digits, cache).metrics["graph_cached"]  # another recipe, another graph
    assert not _run("O0", 2, digits, cache).metrics["graph_cached"]  # O0's Model was dropped for less_bn's
    assert _run("O0", 3, digits, cache).metrics["graph_cached"]
    assert cache.hits == 1
