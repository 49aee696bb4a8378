"""A stand-in for a confirm run's training in tests of the race (a unit of logic: no Ray, no MindSpore)."""

from __future__ import annotations

import math

import numpy as np

from boosttune.execution.runs import RunRecord


def fake_race_train(truth: dict[str, tuple[float, float]], calls: list[str]):
    """A training stand-in: throughput and accuracy from the truth, with a per-seed wobble (a unit of logic)."""
    def train(spec) -> RunRecord:
        calls.append(spec.run_id)
        rng = np.random.default_rng(spec.recipe["seed"] * 7 + len(spec.label))
        speed, gain = truth.get(spec.label, (1.0, 0.0))
        sps = 1000.0 * speed * math.exp(rng.normal(0, 0.03))
        acc = 0.85 + (gain + rng.normal(0, 0.2)) / 100
        return RunRecord(run_id=spec.run_id, role=spec.role, status="completed", recipe=spec.recipe,
                         label=spec.label, preset=spec.preset, round=spec.round,
                         metrics={"throughput_sps": sps, "objective_value": acc, "val_acc": acc, "wall_s": 1.0},
                         curve=[{"epoch": 1, "train_s": 1.0, "objective_value": acc}])
    return train
