"""Steady-state throughput arithmetic (pure)."""

import pytest

from boosttune.trial.timing import COMPILE_SPIKE_FACTOR, summarize_steps


def test_first_step_is_compile_and_warmup_is_excluded():
    summary = summarize_steps([3.0, 0.2, 0.1, 0.1, 0.1, 0.1], batch_size=10, warmup_steps=2)
    assert summary.first_step_s == 3.0
    assert summary.compile_s == 3.0 and summary.compile_steps == 1
    assert summary.steady_steps == 4
    assert summary.throughput_sps == pytest.approx(40 / 0.4)


def test_later_graph_compiles_are_not_counted_as_training():
    # GradientFreeze compiles one graph per group on first use: a late spike is a compile.
    durations = [2.0, 0.1, 0.1, 1.5, 0.1, 0.1, 0.1]
    summary = summarize_steps(durations, batch_size=8, warmup_steps=1)
    assert summary.compile_steps == 2
    assert summary.compile_s == pytest.approx(3.5)
    assert summary.steady_steps == 5
    assert summary.throughput_sps == pytest.approx(8 * 5 / 0.5)


def test_slower_but_not_spiking_steps_stay_in_the_average():
    durations = [1.0] + [0.1, 0.1 * (COMPILE_SPIKE_FACTOR - 1)] * 3
    summary = summarize_steps(durations, batch_size=1, warmup_steps=1)
    assert summary.steady_steps == 6 and summary.compile_steps == 1


def test_too_few_steps_gives_no_throughput():
    assert summarize_steps([], 4, 1).throughput_sps is None
    assert summarize_steps([1.0], 4, 1).throughput_sps is None
    assert summarize_steps([1.0, 0.5], 4, 3).throughput_sps is None


def test_throughput_is_the_median_over_windows_so_one_slow_stretch_does_not_decide_it():
    # 80 steady steps of 0.1 s, of which one stretch of 10 runs at half speed (another process).
    durations = [2.0] + [0.1] * 40 + [0.2] * 10 + [0.1] * 30
    summary = summarize_steps(durations, batch_size=10, warmup_steps=1)
    assert summary.windows == 8
    assert summary.throughput_sps == pytest.approx(100.0)  # the windows that were not disturbed
    assert summary.throughput_mean_sps == pytest.approx(10 * 80 / 9.0)  # the plain ratio is dragged down
    assert summary.throughput_mean_sps < summary.throughput_sps


def test_too_few_steps_for_windows_falls_back_to_the_plain_ratio():
    summary = summarize_steps([1.0] + [0.1] * 25, batch_size=4, warmup_steps=1)
    assert summary.windows == 0
    assert summary.throughput_sps == summary.throughput_mean_sps == pytest.approx(40.0)
