"""benchmarks/noise.py: the arithmetic of its figures (the runs themselves are the benchmark's, not a test's)."""

from __future__ import annotations

import math
import random

import pytest

from tests.helpers.benchmark_scripts import load_benchmark

noise = load_benchmark("noise")


def test_a_run_reads_its_epochs_from_the_cumulative_curve():
    curve = [{"train_s": 3.0}, {"train_s": 5.0}, {"train_s": 9.0}]  # epoch 1 holds the compile
    run = noise.run_of({"samples_per_epoch": 400, "throughput_sps": 150.0, "throughput_mean_sps": 140.0,
                        "wall_s": 12.0}, curve, seed=1, driver_s=13.0)
    assert run.epoch_speeds == [200.0, 100.0]
    assert run.speeds == {"windowed": 150.0, "steady mean": 140.0, "epochs 2+": pytest.approx(800 / 6)}


def test_series_figures_on_independent_noise_and_on_a_drift():
    rng = random.Random(0)
    speeds = [1000 * math.exp(rng.gauss(0, 0.05)) for _ in range(4000)]
    info = noise.series_info(speeds)
    assert info.sd_log == pytest.approx(0.05, rel=0.05)
    assert info.pair_sd == pytest.approx(0.05 * math.sqrt(2), rel=0.05)  # independent runs: sqrt(2) sd
    assert abs(info.autocorr) < 0.05
    assert info.aa_mean - info.aa_half < 0 < info.aa_mean + info.aa_half
    drift = noise.series_info([1000 * math.exp(0.01 * i) for i in range(20)])
    assert drift.autocorr > 0.8 and drift.pair_sd == pytest.approx(0.0, abs=1e-12)


def test_epoch_figures_separate_the_run_from_its_epochs():
    rng = random.Random(1)
    runs = []
    for _ in range(400):  # each run: its own level (sd 0.1), then 9 epochs around it (sd 0.03)
        level = rng.gauss(0, 0.1)
        runs.append([1000 * math.exp(level + rng.gauss(0, 0.03)) for _ in range(9)])
    info = noise.epoch_info(runs)
    assert info.within_sd == pytest.approx(0.03, rel=0.05)
    assert info.per_run_sd == pytest.approx(0.1, rel=0.1)
    assert abs(info.epoch_autocorr) < 0.05
    assert noise.epoch_info([[100.0], [110.0]]).runs == 0  # one epoch after the first: nothing to compare
