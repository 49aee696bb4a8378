"""A stand-in for a confirm run's training in tests of the race (a unit of logic: no Ray, no MindSpore)."""

from __future__ import annotations

import math

import numpy as np

from boosttune.execution.runs import RunRecord


def fake_race_train(truth: dict[str, tuple[float, float]], calls: list[str], compile_s: float | None = None):
    """A training stand-in: throughput and accuracy from the truth, with a per-seed wobble (a unit of logic).
    ``compile_s``: each run compiles for about that long (a wide spread from run to run) within a job of 10 s of
    steps, so each recipe's compile charge, and the charge's error, move as its runs come in."""
    def train(spec) -> RunRecord:
        calls.append(spec.run_id)
        rng = np.random.default_rng(spec.recipe["seed"] * 7 + len(spec.label))
        speed, gain = truth.get(spec.label, (1.0, 0.0))
        sps = 1000.0 * speed * math.exp(rng.normal(0, 0.03))
        acc = 0.85 + (gain + rng.normal(0, 0.2)) / 100
        metrics = {"throughput_sps": sps, "objective_value": acc, "val_acc": acc, "wall_s": 1.0}
        curve = [{"epoch": 1, "train_s": 1.0, "objective_value": acc}]
        if compile_s is not None:
            compiled = compile_s * math.exp(rng.normal(0, 0.8))
            metrics["compile_s"] = compiled
            curve = [{"epoch": 1, "train_s": compiled + 10.0 / speed, "objective_value": acc}]
        return RunRecord(run_id=spec.run_id, role=spec.role, status="completed", recipe=spec.recipe,
                         label=spec.label, preset=spec.preset, round=spec.round, metrics=metrics, curve=curve)
    return train
