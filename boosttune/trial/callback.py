"""Per-step timing and per-epoch metrics, forwarded to a reporter (``ray.train.report`` in a worker)."""

from __future__ import annotations

import math
import resource
import time
from typing import Any, Callable

import numpy as np
from mindspore.train.callback import Callback

from boosttune.objective import ACCURACY, Objective
from boosttune.trial.timing import summarize_steps

__all__ = ["MetricsCallback", "peak_rss_mb"]

Reporter = Callable[[dict[str, Any]], None]


def peak_rss_mb() -> float:
    """Peak resident memory of this process (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _loss_and_overflow(outputs: Any) -> tuple[float, bool | None]:
    # A loss-scale train cell returns (loss, overflow, scale); the others the loss alone.
    if isinstance(outputs, (tuple, list)):
        loss = outputs[0]
        overflow = bool(np.asarray(outputs[1].asnumpy()).any()) if len(outputs) > 1 else None
    else:
        loss, overflow = outputs, None
    if loss is None:
        return math.nan, overflow
    return float(np.mean(loss.asnumpy())), overflow


class MetricsCallback(Callback):
    """Times every step, evaluates after every epoch, stops on NaN loss or a reached target (the objective's value
    at least ``target``, or at most for a lower-is-better objective)."""

    def __init__(self, model, val_dataset, batch_size: int, warmup_steps: int, target: float | None,
                 reporter: Reporter | None, evaluate: bool, log: Callable[[str], None],
                 objective: Objective = ACCURACY) -> None:
        super().__init__()
        self.model = model
        self.val_dataset = val_dataset
        self.batch_size = batch_size
        self.warmup_steps = warmup_steps
        self.target = target
        self.reporter = reporter
        self.evaluate = evaluate
        self.log = log
        self.objective = objective
        self.step_durations: list[float] = []
        self.epoch_losses: list[float] = []
        self.overflow_steps: int | None = None
        self.records: list[dict[str, Any]] = []
        self.stop_reason: str | None = None
        self.time_to_target_s: float | None = None
        self._step_start = 0.0
        self._train_start = 0.0
        self.first_step_at: float | None = None  # wall clock (epoch s): start-up overhead is measured to it
        self.eval_s = 0.0
        self.final_figures: dict[str, Any] = {}  # the one evaluation after the last epoch on more held-out data

    def on_train_begin(self, run_context) -> None:
        self._train_start = time.perf_counter()

    def on_train_step_begin(self, run_context) -> None:
        if self.first_step_at is None:
            self.first_step_at = time.time()
        self._step_start = time.perf_counter()

    def on_train_step_end(self, run_context) -> None:
        outputs = run_context.original_args().net_outputs
        loss, overflow = _loss_and_overflow(outputs)  # reading the loss waits for the step to finish
        self.step_durations.append(time.perf_counter() - self._step_start)
        self.epoch_losses.append(loss)
        if overflow is not None:
            self.overflow_steps = (self.overflow_steps or 0) + int(overflow)
        if not math.isfinite(loss):
            self.stop_reason = f"non-finite loss ({loss}) at step {len(self.step_durations)}"
            run_context.request_stop()

    def on_train_epoch_end(self, run_context) -> None:
        epoch = run_context.original_args().cur_epoch_num
        record = self._epoch_record(epoch)
        self.records.append(record)
        self.log(
            f"epoch {epoch}: loss {record['train_loss']:.4f}"
            + (f", {self.objective.label} {self.objective.format_value(record['objective_value'])}"
               if record.get("objective_value") is not None else "")
            + (f", {record['throughput_sps']:.1f} samples/s" if record.get("throughput_sps") else "")
        )
        if self.reporter is not None:
            self.reporter(dict(record))
        if self.time_to_target_s is not None and self.stop_reason is None:
            self.stop_reason = f"target {self.objective.label} {self.target:g} reached"
            run_context.request_stop()

    def _epoch_record(self, epoch: int) -> dict[str, Any]:
        steps = summarize_steps(self.step_durations, self.batch_size, self.warmup_steps)
        finite = [x for x in self.epoch_losses if math.isfinite(x)]
        record: dict[str, Any] = {
            "epoch": epoch,
            "steps": len(self.step_durations),
            "train_loss": float(np.mean(finite)) if finite else math.nan,
            "first_step_s": steps.first_step_s,
            "compile_s": steps.compile_s,
            "compile_steps": steps.compile_steps,
            "steady_steps": steps.steady_steps,
            "throughput_sps": steps.throughput_sps,
            "throughput_mean_sps": steps.throughput_mean_sps,
            "throughput_windows": steps.windows,
            "throughput_rse": steps.throughput_rse,
            "train_s": sum(self.step_durations),
            "ended_unix": time.time(),  # the epoch's last step: runs that take turns show it in their order
            "peak_rss_mb": peak_rss_mb(),
            "overflow_steps": self.overflow_steps,
            "objective_value": None,
            "val_loss": None,
            "time_to_target_s": self.time_to_target_s,
            **self.objective.flat(),
        }
        self.epoch_losses = []
        if self.evaluate and self.stop_reason is None:
            record.update(self.evaluate_now())
            if (self.target is not None and self.time_to_target_s is None and record["objective_value"] is not None
                    and self.objective.reached(record["objective_value"], self.target)):
                # Training time only: evaluation is not part of what boost speeds up.
                self.time_to_target_s = record["train_s"]
                record["time_to_target_s"] = self.time_to_target_s
        return record

    def evaluate_now(self, dataset: Any = None) -> dict[str, Any]:
        """The held-out figures now: every metric under its own name (``val_<name>``), the objective's value again as
        ``objective_value`` (what the search judges, whatever its name), the loss when a metric named ``loss`` is
        there. ``dataset``: another held-out set than the per-epoch one (the final evaluation's)."""
        start = time.perf_counter()
        scores = self.model.eval(self.val_dataset if dataset is None else dataset, dataset_sink_mode=False)
        self.eval_s += time.perf_counter() - start
        figures = {f"val_{name}": _scalar(value) for name, value in scores.items()}
        figures["objective_value"] = _scalar(scores[self.objective.name])
        figures["val_loss"] = _scalar(scores["loss"]) if "loss" in scores else None
        return figures


def _scalar(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):  # a metric that returns an array (per-class): not a figure of the run
        return None
