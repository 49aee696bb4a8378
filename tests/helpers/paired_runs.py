"""Paired runs without training: a deterministic stand-in for MindSpore (:func:`fake_train`) whose true effects are
known, the recipes it runs, and an experiment folder built from them. The ``search`` and ``confirmed`` fixtures
(tests/conftest.py) are made with these."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from boosttune.config.boost import parse_boost_config
from boosttune.tables.results import save_results
from boosttune.outputs.summary import save_confirmed
from boosttune.execution.provenance import record_run_info
from boosttune.execution.runs import RunRecord, RunSpec
from boosttune.objective import ACCURACY
from boosttune.outputs.judged import judge_run
from boosttune.report import ReportInputs
from boosttune.stats.margin import Margin

RECIPE = {"model": "lenet5", "epochs": 3, "seed": 0, "data": {"name": "digits"}, "optimizer": {"learning_rate": 0.05}}
GF = {**RECIPE, "boost_level": "O1",
      "boost_config_dict": {"boost": {"mode": "manual", "less_bn": False, "grad_freeze": True}}}
O1 = {**RECIPE, "boost_level": "O1", "boost_config_dict": {"less_bn": {"gc_flag": False}}}
# True effects of the fake training: throughput multiplier and accuracy delta (fraction).
EFFECTS = {"O0": (1.0, 0.0), "O1-equivalent": (0.9, -0.001), "grad_freeze p=0.5": (1.25, -0.002)}
# Fresh graph compile seconds (a warm worker's cache loads O0's in 0.1 s after its first run; boost's are compiled
# each run), small beside the 3.8 s of training so that grad_freeze p=0.5 is faster per job too.
COMPILE_S = {"O0": 0.4, "O1-equivalent": 0.6, "grad_freeze p=0.5": 0.5}


def fake_train(spec: RunSpec) -> RunRecord:
    """The run of ``spec`` as training would record it: per-seed machine drift shared by the round's recipes, the
    recipe's true effect (:data:`EFFECTS`, by label), a little noise of its own, a three-epoch learning curve."""
    rng = np.random.default_rng(spec.seed)  # the round's machine drift, shared by its recipes
    machine, acc = rng.uniform(0.9, 1.1), rng.normal(0.9, 0.005)
    own = np.random.default_rng(zlib.crc32(f"{spec.seed}-{spec.label}".encode()))
    speed, delta = EFFECTS[spec.label]
    sps = 500.0 * machine * speed * (1 + own.normal(0, 0.01))
    final = acc + delta + own.normal(0, 0.001)
    cached = spec.label == "O0" and spec.round not in (None, 0)
    compile_s = 0.1 if cached else COMPILE_S[spec.label]
    curve = [{"epoch": e, "train_s": compile_s + e * 640 / sps, "objective_value": final - 0.05 * (3 - e)}
             for e in (1, 2, 3)]
    boost = parse_boost_config(spec.recipe.get("boost_config_dict"), spec.recipe.get("boost_level", "O0"))
    return RunRecord.from_summary(spec, {"status": "completed", "throughput_sps": sps, "objective_value": final,
                                         "wall_s": 3 * 640 / sps + 5, "curve": curve, "world_size": 1,
                                         "compile_s": compile_s, "graph_cached": cached,
                                         "boost_config_dict": boost.to_boost_config_dict()},  # as a trial records it
                                  started=1_800_000_000.0 + 100 * spec.seed + 10 * len(spec.label))


def report_inputs(search=None, confirmed=None, max_drop=1.0, kind="experiment", **extra) -> ReportInputs:
    """What the report reads, given directly instead of from a folder: the run judged at ``max_drop``."""
    table = search if search is not None else confirmed.runs
    margin = confirmed.margin if confirmed is not None and max_drop == confirmed.max_drop else \
        Margin.on(table, max_drop, 1.0)
    return ReportInputs(judge_run(kind, margin, search=search, decision=confirmed), "LeNet <digits>", **extra)


def experiment_folder(tmp_path, search, confirmed_dir) -> Path:
    """An experiment's folder as a finished run leaves it: the search's table, the confirm stage's, run_info.json."""
    folder = tmp_path / "exp"
    save_results(search, folder)
    save_confirmed([RunRecord.from_dict(json.loads(p.read_text()))
                    for p in sorted((confirmed_dir / "runs").glob("*.json"))], folder, margin=Margin(ACCURACY, 1.0))
    (folder / "experiment.json").write_text(json.dumps({"name": "lenet-digits", "max_drop": 1.0}))
    record_run_info(folder, left_out={"amp.O2": "amp O2: 0.52x O0's throughput on this CPU, not searched"})
    return folder
