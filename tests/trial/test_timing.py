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


def test_how_sure_the_figure_is_shrinks_with_more_steady_steps():
    """Short epochs of a small data set still give a figure, with its standard error; more steps, a smaller one."""
    rng = __import__("random").Random(0)
    short = [1.0] + [0.1 * (1 + rng.gauss(0, 0.1)) for _ in range(20)]
    long = [1.0] + [0.1 * (1 + rng.gauss(0, 0.1)) for _ in range(160)]
    few, many = summarize_steps(short, 8, 1), summarize_steps(long, 8, 1)
    assert few.throughput_sps and many.throughput_sps
    assert 0 < many.throughput_rse < few.throughput_rse < 0.1
    assert summarize_steps([1.0] + [0.1] * 20, 8, 1).throughput_rse == 0.0  # identical steps: no doubt left
    assert summarize_steps([1.0, 0.1], 8, 1).throughput_rse is None  # one steady step: no spread to tell


def test_a_run_too_short_for_a_speed_figure_is_told_what_to_raise():
    from boosttune.trial.timing import MIN_STEADY_STEPS, steady_steps_needed

    assert steady_steps_needed(44, 3, 3) is None  # the project: 44 steps x 3 epochs is plenty
    assert steady_steps_needed(MIN_STEADY_STEPS + 3, 1, 3) is None
    assert steady_steps_needed(2, 3, 3) is None  # 3 steady steps: a figure, if a noisy one (its rse says so)
    why = steady_steps_needed(1, 4, 3)  # 4 steps, 3 of them warm-up
    assert why.startswith("a run of 4 epoch(s) x 1 step(s) leaves 1 steady step(s) after 3 warm-up step(s)")
    assert f"at least {MIN_STEADY_STEPS}" in why and "--set base.epochs=5" in why and "batch_size" in why
