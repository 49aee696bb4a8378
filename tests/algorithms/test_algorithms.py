"""The algorithm folders: every registered algorithm has its parts, and adding one is adding one folder."""

from __future__ import annotations

import sys
import textwrap
from contextlib import contextmanager

import pytest

from boosttune import algorithms
from boosttune.algorithms import adasum
from boosttune.algorithms.base import Algorithm
from boosttune.config.boost import ALGORITHMS, PRESETS, BoostConfigDict, config_dict_model
from boosttune.probe.report import Capability, ProbeReport

BASE = {"model": "lenet5", "epochs": 1, "optimizer": {"learning_rate": 0.05}}


def _report(unsupported: frozenset[str] = frozenset()) -> ProbeReport:
    knobs = [check.knob for algorithm in algorithms.listed() for check in algorithm.probe_checks]
    caps = {k: Capability(k, k not in unsupported, "no kernel here" if k in unsupported else "") for k in knobs}
    return ProbeReport(device_target="CPU", cpu="test", mindspore_version="2.10", boosttune_version="0",
                       created="", capabilities=caps)


def test_the_registry_finds_every_folder_in_mindsporess_order():
    assert algorithms.boost_names() == ("less_bn", "grad_freeze", "adasum", "grad_accumulation", "dim_reduce",
                                        "loss_scale_group")
    assert ALGORITHMS == algorithms.boost_names()
    assert [a.name for a in algorithms.knobs()] == ["amp", "loss_scale", "optimizer"]
    assert algorithms.get("adasum").name == "adasum"
    with pytest.raises(KeyError, match="no algorithm 'nope'"):
        algorithms.get("nope")


def test_presets_are_written_once_in_the_folders():
    assert PRESETS == {
        "O0": dict.fromkeys(ALGORITHMS, False),
        "O1": {**dict.fromkeys(ALGORITHMS, False), "less_bn": True, "grad_freeze": True},
        "O2": {**dict.fromkeys(ALGORITHMS, False), "less_bn": True, "grad_freeze": True, "adasum": True},
    }
    assert algorithms.manual(dim_reduce=True) == {
        "boost": {"mode": "manual", "less_bn": False, "grad_freeze": False, "dim_reduce": True}}


@pytest.mark.parametrize("algorithm", algorithms.registry(), ids=lambda a: a.name)
def test_contract(algorithm: Algorithm):
    """Each algorithm has every part its kind needs, or says why not; the parts fit the rest of boosttune."""
    from boosttune.probe import KNOBS
    from boosttune.report.method_notes import notes
    from boosttune.space import SpaceContext, preset_params, recipe_from_params

    assert algorithms.check_contract(algorithm) == []
    assert set(algorithm.without) <= set(algorithms.REQUIRED_PARTS[algorithm.kind])
    assert all(why for why in algorithm.without.values())
    knobs = [check.knob for check in algorithm.probe_checks]
    assert set(knobs) <= set(KNOBS)
    assert set(algorithm.calibration) <= set(KNOBS)
    ctx = SpaceContext(total_steps=30, param_count=1000)
    o0 = preset_params("O0", ctx, BASE)
    for knob, params in algorithm.calibration.items():  # a calibration point is a point of the space
        recipe_from_params({**o0, **params}, ctx, BASE)
    for note in algorithm.notes:
        assert notes()[note.key] is note
        assert note.match.measured_by((algorithm.name,)) or algorithm.kind == "knob"
    if algorithm.kind == "boost":
        assert algorithm.name in BoostConfigDict.model_fields["boost"].annotation.__args__[0].model_fields
        if algorithm.section is not None:
            assert algorithm.name in BoostConfigDict.model_fields
    if algorithm.bench is not None:
        matrix, skipped = algorithm.bench(_report(), 1)
        assert matrix or skipped
        _, skipped = algorithm.bench(_report(frozenset(knobs)), 1)
        assert not any(name in matrix for name in _)
    if algorithm.fragment is not None:
        assert algorithm.fragment in algorithms.fragments()


def test_an_algorithm_without_its_parts_fails_the_contract():
    half = Algorithm(name="half", kind="boost")
    problems = algorithms.check_contract(half)
    assert {"section", "fragment", "off_params", "probe_checks", "calibration", "bench", "observe",
            "notes"} <= set(problems)
    excused = Algorithm(name="half", kind="knob",
                        without={"fragment": "", "off_params": "why", "probe_checks": "why", "notes": "why"})
    assert algorithms.check_contract(excused) == ["fragment"]  # an empty reason is no reason


def test_adasums_rank_rule_is_one_function_used_by_presets_and_bench():
    from boosttune.bench import default_matrix
    from boosttune.probe.presets import device_presets

    assert [n for n in range(1, 70) if adasum.adasum_applies(n)] == [16, 32, 64]
    for world_size, applies in ((8, False), (16, True), (24, False), (32, True)):
        o2 = device_presets(_report(), world_size)[2]
        assert any(note.startswith("adasum is plain data parallel") for note in o2.notes) is not applies
        _, skipped = default_matrix(_report(), world_size)
        assert any(note.startswith("adasum:") for note in skipped) is not applies


TOY = '''
"""A toy boost algorithm: one folder, nothing else edited."""

from boosttune.algorithms import manual
from boosttune.algorithms.base import (Algorithm, MethodNote, ProbeCheck, SpaceContext, _Section, alone_in_bench,
                                       asks, boost_switches)


class ToySection(_Section):
    strength: int = 1


class ToyFragment:
    name = "toy_boost"
    requires = ("boost.toy_boost",)

    def suggest(self, trial, ctx: SpaceContext, document: dict) -> None:
        if asks(trial, ctx, "boost.toy_boost", "boost.toy_boost") and trial.suggest_categorical(
                "boost.toy_boost", [False, True]):
            boost_switches(document)["toy_boost"] = True
            document["boost_config_dict"]["toy_boost"] = {"strength": trial.suggest_int("toy_boost.strength", 1, 3)}


ALGORITHM = Algorithm(
    name="toy_boost", kind="boost", fragment=ToyFragment(), section=ToySection,
    off_params=lambda ctx, base: {"boost.toy_boost": False},
    probe_checks=(ProbeCheck("boost.toy_boost", switches=("toy_boost",)),),
    calibration={"boost.toy_boost": {"boost.toy_boost": True, "toy_boost.strength": 2}},
    bench=lambda report, world_size: alone_in_bench("toy_boost", report, manual(toy_boost=True)),
    observe=lambda model: {"toy_boost": False},
    notes=(MethodNote(key="toy_boost", title="Toy", what="Nothing.", knobs=(), devices="Any.", source=(),
                      algorithms=("toy_boost",)),),
)
'''


@contextmanager
def registered_toy(tmp_path):
    """``toy_boost/`` written into a folder the registry searches, as a new algorithm folder would be; gone after."""
    folder = tmp_path / "toy_boost"
    folder.mkdir()
    (folder / "__init__.py").write_text(textwrap.dedent(TOY))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(algorithms, "__path__", [*algorithms.__path__, str(tmp_path)])
        algorithms.clear_cache()
        try:
            yield
        finally:
            sys.modules.pop("boosttune.algorithms.toy_boost", None)
    algorithms.clear_cache()


@pytest.fixture
def toy_folder(tmp_path):
    with registered_toy(tmp_path):
        yield


def test_a_new_algorithm_is_one_folder(toy_folder):
    from boosttune.bench import default_matrix
    from boosttune.cli.search import script_parser
    from boosttune.config.experiment import parse_experiment
    from boosttune.probe.checks import checks
    from boosttune.report.method_notes import notes
    from boosttune.space import SpaceContext, fragments, preset_params

    toy = algorithms.get("toy_boost")
    assert algorithms.check_contract(toy) == []
    # config: its switch, its section, the presets
    assert algorithms.boost_names()[-1] == "toy_boost"
    model = config_dict_model()
    assert "toy_boost" in model.model_fields
    assert model.model_validate({"boost": {"mode": "manual", "toy_boost": True}, "toy_boost": {"strength": 2}})
    assert algorithms.presets()["O1"]["toy_boost"] is False
    # the space: its fragment, after the listed ones (no order names it), and its params when off
    assert [f.name for f in fragments()][-1] == "toy_boost"
    assert algorithms.listed()[-1].name == "toy_boost" and list(notes())[-1] == "toy_boost"
    assert preset_params("O0", SpaceContext(total_steps=1, param_count=10), BASE)["boost.toy_boost"] is False
    # the probe and the bench
    assert "boost.toy_boost" in checks()
    matrix, _ = default_matrix(_report(), 1)
    assert matrix["toy_boost"] == {"boost_level": "O1", "boost_config_dict": {
        "boost": {"mode": "manual", "less_bn": False, "grad_freeze": False, "toy_boost": True}}}
    # the method cards and the CLI
    assert notes()["toy_boost"].title == "Toy"
    assert "toy_boost" in script_parser("lenet5", "test").format_help().replace("\n", "")
    assert parse_experiment({"search": ["toy_boost", "less_bn"]}).search == ["toy_boost", "less_bn"]


def test_the_registry_forgets_the_toy(tmp_path):
    with registered_toy(tmp_path):
        assert "toy_boost" in algorithms.boost_names()
    assert "toy_boost" not in algorithms.boost_names()


def test_every_order_names_known_folders_once_and_the_registry_follows_them():
    from boosttune.algorithms import order
    from boosttune.report.method_notes import notes

    folders = {a.name for a in algorithms.registry()}
    for name in ("BOOST_SWITCHES", "KNOB_FAMILIES", "PROBE", "RESOLUTION", "SUGGESTION", "INFORMED"):
        listed = getattr(order, name)
        assert len(set(listed)) == len(listed), f"{name} names a folder twice"
        assert set(listed) <= folders, f"{name} names no folder: {set(listed) - folders}"
    assert set(order.CARDS) == set(notes())
    assert algorithms.boost_names() == order.BOOST_SWITCHES
    assert [a.name for a in algorithms.knobs()] == list(order.KNOB_FAMILIES)
    assert [a.name for a in algorithms.listed()] == list(order.PROBE)
    assert list(notes()) == list(order.CARDS)
    # a name no order lists comes after the listed ones, by name
    assert sorted(["zeta", "grad_freeze", "alpha"], key=lambda n: order.place(order.INFORMED, n)) == [
        "grad_freeze", "alpha", "zeta"]
