"""What the search adds to Ray Tune's loop, each through Tune's public extension points: a line per finished trial
(:class:`Progress`), the failed-trial budget that stops the search (:class:`FailureBudget`, :class:`FailureStopper`),
a warm run cancelled when Tune ends its trial (:class:`CancelEnded`), the record of a trial the scheduler stopped
(:class:`RecordStopped`), and start points trained unseen by the sampler (:class:`UnlearnedFirst`).
:mod:`boosttune.search.tune` builds the search from them and runs it.
"""

from __future__ import annotations

from typing import Any, Callable

from ray import tune
from ray.tune.search import Searcher

from boosttune.execution.runs import CURVE_KEYS, RunRecord
from boosttune.objective import ACCURACY, Objective
from boosttune.ray_internals import adopt_search_properties
from boosttune.search.setup import CLOSING_RUN, SearchSetup
from boosttune.search.speed import TOO_SLOW, stopped_for_speed

__all__ = ["CancelEnded", "FailureBudget", "FailureStopper", "Progress", "RecordStopped", "UnlearnedFirst", "figures",
           "study_left_out"]


def study_left_out(setup: SearchSetup, storage: Any, study_name: str) -> dict[str, str]:
    """``boost.<name>`` -> why, for every algorithm the lossy rule leaves out, read from the Optuna study."""
    import optuna

    judge = setup.lossy
    if judge is None:
        return {}
    try:
        study = optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:  # the driver stopped before the study was created
        return {}
    return judge.left_out(study)


class Progress(tune.Callback):
    """One line per finished trial, in the user's terms, and the best recipe within the margin so far; a line when
    the lossy rule leaves an algorithm out (read from the study, which Tune's searcher has just told)."""

    def __init__(self, setup: SearchSetup, num_trials: int, log: Callable[[str], None], storage: Any = None,
                 study_name: str | None = None) -> None:
        # Not self.setup: tune.Callback.setup is a method Tune calls.
        self.search, self.num_trials, self.log = setup, num_trials, log
        self.storage, self.study_name = storage, study_name
        self.done = 0
        self.best: tuple[float, str] | None = None
        self.said: set[str] = set()  # algorithms said to be left out (a resumed search says them again)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.done += 1
        result = trial.last_result or {}
        label = self._label(trial)
        epochs = self.search.base.get("epochs", 1)
        epoch = result.get("epoch")
        o0 = self._is_baseline(trial)
        how = (f"stopped at epoch {epoch}/{epochs}" if epoch is not None and epoch < epochs
               and not result.get("final") and not result.get("replayed") else
               f"same recipe as {result['duplicate_of']}" if result.get("duplicate_of") else
               "trained again at the search's end (its speed reference timed after the trials too: the machine's "
               "drift is taken out)" if o0 and (trial.config or {}).get(CLOSING_RUN) else
               "trained again (the search's speed reference: timed in the search, as its trials are)" if o0 else
               "finished")
        if how.startswith("stopped"):
            record = self.search.records.get(trial.trial_id)
            how += f", {TOO_SLOW} (the speed floor)" if record is not None and stopped_for_speed(record.reason) else ""
        objective = self.search.objective
        shown = figures(result, objective)
        speed, delta = result.get("speedup_vs_baseline"), result.get("objective_gain")
        if how == "finished" and speed is not None and delta is not None \
                and delta >= -self.search.max_drop and (self.best is None or speed > self.best[0]):
            self.best = (speed, label)
        best = (f"; fastest within {self.search.max_drop:.3g} {objective.unit} of O0 so far: {self.best[1]} "
                f"{self.best[0]:.2f}x" if self.best else "")
        self.log(f"search [{self.done}/{self.num_trials}] {label}: {how}{', ' + shown if shown else ''}{best}")
        self._say_left_out()

    def _say_left_out(self) -> None:
        if self.storage is None or self.study_name is None or self.search.lossy is None:
            return
        for key, why in study_left_out(self.search, self.storage, self.study_name).items():
            if key not in self.said:
                self.said.add(key)
                self.log(f"search space: {why}")

    def on_trial_error(self, iteration, trials, trial, **info):
        self.done += 1
        record = self.search.records.get(trial.trial_id)
        why = record.reason if record is not None and record.reason else "see the error above"
        self.log(f"search [{self.done}/{self.num_trials}] {self._label(trial)}: failed: {why}")

    def _is_baseline(self, trial) -> bool:
        """Whether the trial's recipe trains like the baseline stage's (O0's start point)."""
        try:
            first = self.search.first_of_key.get(self.search.spec(trial.trial_id, dict(trial.config)).key)
        except Exception:  # a config the space rejects is reported by the trial itself
            return False
        return first is not None and first.role == "baseline"

    def _label(self, trial) -> str:
        try:
            label = self.search.spec(trial.trial_id, dict(trial.config)).label
        except Exception:  # a config the space rejects is reported by the trial itself
            label = None
        return trial.trial_id if not label or label == trial.trial_id else f"{label} ({trial.trial_id})"


def figures(result: dict[str, Any], objective: Objective = ACCURACY) -> str:
    parts = []
    if result.get("throughput_sps"):
        parts.append(f"{result['throughput_sps']:.0f} samples/s")
    if result.get("speedup_vs_baseline") is not None:
        parts.append(f"{result['speedup_vs_baseline']:.2f}x O0")
    if result.get("objective_value") is not None:
        delta = result.get("objective_gain")
        parts.append(f"{objective.label} {objective.format_value(result['objective_value'])}"
                     + (f" ({objective.format_gain(delta)})" if delta is not None else ""))
    return ", ".join(parts)


class CancelEnded(tune.Callback):
    """A trial Tune ended (a scheduler stopped it, the search stopped): its run on a warm worker stops too."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.pool.cancel(trial.trial_id)

    def on_trial_error(self, iteration, trials, trial, **info):
        self.pool.cancel(trial.trial_id)


class FailureBudget(tune.Callback):
    """Counts finished and failed trials; the stopper ends the search past the allowed share."""

    def __init__(self, max_failure_rate: float, min_trials: int = 3) -> None:
        self.max_failure_rate = max_failure_rate
        self.min_trials = min_trials
        self.finished = 0
        self.failed = 0

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.finished += 1

    def on_trial_error(self, iteration, trials, trial, **info):
        self.finished += 1
        self.failed += 1

    def judge(self, finished: int, failed: int) -> bool:
        return finished >= self.min_trials and failed / finished > self.max_failure_rate

    @property
    def exceeded(self) -> bool:
        return self.judge(self.finished, self.failed)


class FailureStopper(tune.stopper.Stopper):
    def __init__(self, budget: FailureBudget) -> None:
        self.budget = budget

    def __call__(self, trial_id, result) -> bool:
        return False

    def stop_all(self) -> bool:
        return self.budget.exceeded


class RecordStopped:
    """Called by the multi-objective scheduler for each trial it stops: keep it as a ``stopped`` record."""

    def __init__(self, setup: SearchSetup) -> None:
        self.setup = setup

    def __call__(self, trial: Any, rung: int, history: list[dict[str, Any]], reason: str | None = None) -> None:
        live = [r for r in history if not r.get("final")]
        last = live[-1] if live else history[-1]
        metrics = {k: v for k, v in last.items() if isinstance(v, (int, float, str, bool)) and k in _KEPT}
        curve = [{k: r.get(k) for k in CURVE_KEYS} for r in live]
        reason = reason or (f"stopped after epoch {rung} by the multi-objective scheduler: slower and worse on "
                            f"{self.setup.objective.label} than the trials ahead of it at that epoch")
        # Tune stamps every result with its wall-clock time and the trial's running time: when it started.
        started = None
        if isinstance(last.get("timestamp"), (int, float)) and isinstance(last.get("time_total_s"), (int, float)):
            started = float(last["timestamp"]) - float(last["time_total_s"])
            metrics["wall_s"] = float(last["time_total_s"])
        self.setup.records.put(RunRecord.stopped_early(self.setup.spec(trial.trial_id, dict(trial.config)),
                                                        rung=rung, reason=reason, metrics=metrics, curve=curve,
                                                        started=started))


_KEPT = ("epoch", "steps", "train_loss", "compile_s", "steady_steps", "throughput_sps", "throughput_mean_sps",
         "train_s", "peak_rss_mb", "objective_value", "val_loss", "world_size", "objective",
         "objective_higher_is_better", "objective_fraction")


class UnlearnedFirst(Searcher):
    """A Tune searcher that trains given configs first (and ``closing`` ones once ``after`` trials were handed out),
    unseen by the wrapped searcher, and defers to it in between.

    For start points the searched space cannot draw (a preset that uses a knob measured slow here): they are trained
    and recorded like any trial, but the sampler does not learn from them, since its space has no parameter for what
    made them slow. For the O0 run that closes the search (the speed reference timed again at its end): the sampler
    already learned O0 from its start point. With ``lead``, the wrapped searcher's first trial (O0's start point, the
    reference the closing run brackets the trials with) comes before the given configs.
    """

    def __init__(self, searcher: Searcher, configs: list[dict[str, Any]],
                 closing: list[dict[str, Any]] | None = None, after: int = 0, lead: bool = False) -> None:
        super().__init__()
        self.searcher = searcher
        self.pending = [dict(c) for c in configs]
        self.closing = [dict(c) for c in closing or ()]
        self.after = after
        self.lead = lead  # the wrapped searcher's first trial (O0's start point) before the given configs
        self.handed = 0  # trials handed out, own and the wrapped searcher's
        self.own: set[str] = set()
        adopt_search_properties(self, searcher)

    def set_search_properties(self, metric, mode, config, **spec) -> bool:
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    def suggest(self, trial_id: str):
        if self.lead and self.handed == 0:
            config = self.searcher.suggest(trial_id)
            if isinstance(config, dict):
                self.handed += 1
            return config
        if self.pending or (self.closing and self.handed >= self.after):
            self.own.add(trial_id)
            self.handed += 1
            return (self.pending or self.closing).pop(0)
        config = self.searcher.suggest(trial_id)
        if isinstance(config, dict):
            self.handed += 1
        return config

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if trial_id not in self.own:
            self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result=None, error: bool = False) -> None:
        if trial_id not in self.own:
            self.searcher.on_trial_complete(trial_id, result=result, error=error)

    # A wrapper (it has .searcher): Tune saves the wrapped searcher itself and this state beside it.
    def get_state(self) -> dict:
        return {"pending": list(self.pending), "own": set(self.own), "closing": list(self.closing),
                "after": self.after, "handed": self.handed, "lead": self.lead}

    def set_state(self, state: dict) -> None:
        self.pending, self.own = list(state["pending"]), set(state["own"])
        self.closing, self.after = list(state.get("closing", [])), int(state.get("after", 0))
        self.handed, self.lead = int(state.get("handed", 0)), bool(state.get("lead", False))
