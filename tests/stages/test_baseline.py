"""The baseline stage's judgement (boosttune/stages/baseline.py): a baseline nothing can be compared against
is refused in one line that says what happened, where, and what to change; one still learning as it stopped is
noted."""

from __future__ import annotations

import math

from boosttune.stages.baseline import baseline_problem, convergence_note
from boosttune.execution.runs import RunRecord
from boosttune.objective import ACCURACY, Objective

MAE = Objective("mae", higher_is_better=False, fraction=False)


def _baseline(status="completed", reason=None, losses=(1.2, 0.8, 0.6), value=0.85, sps=900.0, steady=120):
    curve = [{"epoch": i + 1, "train_loss": loss, "objective_value": value} for i, loss in enumerate(losses)]
    return RunRecord(run_id="baseline", role="baseline", status=status, recipe={}, reason=reason,
                     metrics={"objective_value": value, "throughput_sps": sps, "steady_steps": steady}, curve=curve)


def test_a_sound_baseline_has_no_problem():
    assert baseline_problem(_baseline(), ACCURACY, learning_rate=0.05, steps_per_epoch=44) is None
    assert baseline_problem(_baseline(value=0.31), MAE, learning_rate=0.05, steps_per_epoch=44) is None


def test_a_diverged_baseline_names_the_epoch_the_step_and_a_lower_learning_rate():
    """The issue's project: a non-finite loss at the third step of a 44-step epoch, at learning rate 0.05."""
    record = _baseline(status="stopped", reason="non-finite loss (inf) at step 3", losses=(math.nan,), value=0.1)
    line = baseline_problem(record, ACCURACY, learning_rate=0.05, steps_per_epoch=44)
    assert line.startswith("the O0 baseline diverged: non-finite loss (inf) at step 3 (epoch 1, step 3 of 44); "
                           "it trained at learning rate 0.05 (base.optimizer.learning_rate")
    assert "--set base.optimizer.learning_rate=0.005" in line and "\n" not in line
    later = _baseline(status="stopped", reason="non-finite loss (nan) at step 90", losses=(1.0, math.nan))
    assert "(epoch 3, step 2 of 44)" in baseline_problem(later, ACCURACY, learning_rate=0.1, steps_per_epoch=44)


def test_an_exploding_but_finite_loss_is_a_divergence_too():
    line = baseline_problem(_baseline(losses=(1.0, 3.0, 40.0)), ACCURACY, learning_rate=0.3, steps_per_epoch=10)
    assert line.startswith("the O0 baseline diverged: its training loss rose from 1 (epoch 1) to 40 (epoch 3)")
    assert "--set base.optimizer.learning_rate=0.03" in line
    assert baseline_problem(_baseline(losses=(1.0, 3.0, 9.0)), ACCURACY, learning_rate=0.3,
                            steps_per_epoch=10) is None  # below the factor: noisy, not diverged


def test_a_baseline_without_an_objective_value_or_a_speed_figure_is_refused_by_name():
    line = baseline_problem(_baseline(value=None), MAE, learning_rate=0.05, steps_per_epoch=44)
    assert line.startswith("the O0 baseline gave no value of the objective val_mae (got None) after 3 epoch(s)")
    line = baseline_problem(_baseline(sps=None, steady=0), ACCURACY, learning_rate=0.05, steps_per_epoch=1)
    assert line.startswith("the O0 baseline gave no throughput figure (0 steady steps of 1 per epoch x 3 epoch(s))")
    assert "base.epochs" in line
    failed = _baseline(status="failed", reason="TrialError: out of memory")
    assert baseline_problem(failed, ACCURACY, learning_rate=0.05, steps_per_epoch=44) == (
        "the O0 baseline failed, nothing to compare against: TrialError: out of memory")


def test_the_experiment_says_whether_its_baseline_converged():
    curve = [{"objective_value": a} for a in (0.70, 0.80, 0.849, 0.850, 0.8515)]
    assert convergence_note(curve).startswith("converged (last epoch +0.15 pt")
    climbing = [{"objective_value": a} for a in (0.5, 0.6, 0.7)]
    assert "still improving" in convergence_note(climbing) and "--epochs" in convergence_note(climbing)
    assert convergence_note(climbing[:2]) is None  # too short to tell
    raced = convergence_note(climbing, confirmed_at=12)  # the confirm race trained the planned job instead
    assert "the confirm race trained the planned 12 epochs" in raced and "--epochs" not in raced
