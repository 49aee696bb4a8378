"""How well each search strategy spends a small budget: replayed on a table of real trainings.

The table (benchmarks/data/search_table, built by build_search_table.py: real ResNet-8 trainings on
Fashion-MNIST at the main job's budget) is looked up instead of training, as tabular HPO benchmarks do
(NAS-Bench, HPOBench). A strategy's sampler runs on the real search space (boosttune.space, the same
define-by-run code the search uses); each point it proposes is snapped to the nearest recipe of the
table it has not used yet (pool-based replay), and the sampler is told that recipe's parameters and
measured objectives. The multi-fidelity scheduler is the same rung rule the search uses
(boosttune.search.scheduler.RungLadder), fed the table's per-epoch speed-up and accuracy; a stopped trial
costs only the epochs it trained and counts for nothing on the front.

Printed per strategy, over --reps repetitions (sampler seeds) with 95% t-intervals: the hypervolume of
the (speed-up, validation accuracy) front of finished trials after N trials and after 2N, the
training compute spent (CPU-seconds of training, compile included), and the fewest trials at which
its mean hypervolume reaches random search's at 2N. Each scheduler setting is replayed with the old rule
(trials compared with each other, a fixed accuracy margin) and with the rule against O0's curve (``+curve``:
boosttune.search.scheduler.BaselineCurve, O0's mean curve from the table's reference runs).

The scheduler's own error is printed too: of the table's recipes acceptable at the last epoch (final val_acc
at most MAX_DROP, boosttune.config.experiment's 1 point, below O0's mean final), the share the scheduler stops
early, in the replays above (pooled over strategies and seeds) and directly (each acceptable recipe against
every other recipe of the table and O0 at each rung, the most crowded rungs it can meet). Target: under 5%.

    python benchmarks/search_efficiency.py                 # N = 8 (the main job's), 20 repetitions
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from boosttune.config.experiment import MAX_DROP  # noqa: E402  (the main job's margin, in points)
from boosttune.stats.select import hypervolume  # noqa: E402  (the report draws the same measure)
from boosttune.search.scheduler import NOISE_FLOOR_PT, BaselineCurve, RungLadder  # noqa: E402
from boosttune.stats.handoff import slowest_handed_on  # noqa: E402  (the search's speed floor's bar)
from boosttune.stats.race import REFERENCE_NOISE  # noqa: E402

TABLE = HERE / "data" / "search_table"
SPEED_FLOOR, DROP_CEILING_PT = 0.8, 5.0
STOP_ERROR_TARGET = 0.05  # issue 45: acceptable recipes stopped early, below 5%
DEFAULT_MF = "2:1:5"  # reduction factor : grace period (epochs) : accuracy margin (points), as the search uses  # hypervolume reference point: 0.8x O0, O0's accuracy minus 5 points


# --- the table ---------------------------------------------------------------------------------------

@dataclass
class Row:
    row: int
    source: str
    label: str
    params: dict[str, Any]
    speedup: list[float]  # per epoch: throughput so far / the nearby O0 runs' at that epoch
    val_acc: list[float]
    train_s: list[float]  # cumulative training seconds at each epoch, compile included

    @property
    def final(self) -> tuple[float, float]:
        return self.speedup[-1], self.val_acc[-1]


@dataclass
class Table:
    rows: list[Row]
    refs: list[Row]
    meta: dict[str, Any]
    baseline_acc: float
    skipped: list[str] = field(default_factory=list)

    @property
    def epochs(self) -> int:
        return int(self.meta["base"]["epochs"])

    def baseline_curve(self) -> list[float]:
        """O0's mean val_acc at each epoch (index 0: epoch 1) over the reference runs."""
        return [statistics.fmean(r.val_acc[e] for r in self.refs) for e in range(self.epochs)]

    def ref_spread(self) -> list[float]:
        """The reference runs' standard deviation of val_acc at each epoch (0 when they are one seed's reruns)."""
        return [statistics.stdev(r.val_acc[e] for r in self.refs) if len(self.refs) > 1 else 0.0
                for e in range(self.epochs)]

    def acceptable(self, max_drop_pt: float = MAX_DROP) -> set[int]:
        """The rows whose final val_acc is at most ``max_drop_pt`` points below O0's mean final."""
        return {r.row for r in self.rows if r.val_acc[-1] >= self.baseline_acc - max_drop_pt / 100 - 1e-12}


def load_table(folder: Path = TABLE) -> Table:
    meta = json.loads((folder / "meta.json").read_text())
    with (folder / "recipes.csv").open() as f:
        recipes = {int(r["row"]): r for r in csv.DictReader(f)}
    epochs: dict[int, list[dict[str, str]]] = {}
    with (folder / "epochs.csv").open() as f:
        for r in csv.DictReader(f):
            epochs.setdefault(int(r["row"]), []).append(r)
    n_epochs = int(meta["base"]["epochs"])

    def curve(row: int, name: str) -> list[float]:
        values = sorted(epochs.get(row, []), key=lambda e: int(e["epoch"]))
        return [float(e[name]) if e[name] not in ("", "None") else math.nan for e in values]

    complete = {i: r for i, r in recipes.items() if r["status"] == "completed" and len(epochs.get(i, [])) == n_epochs}
    skipped = [f"row {i} ({r['label']}): {r['status']} {r['reason']}".strip()
               for i, r in sorted(recipes.items()) if i not in complete]
    refs = sorted((i for i, r in complete.items() if r["source"] == "ref"), key=lambda i: float(complete[i]["started_unix"]))
    if not refs:
        raise SystemExit(f"{folder}: no finished O0 reference run yet")

    def local_ref(i: int) -> list[float]:
        """Per epoch, the mean throughput of the O0 runs just before and just after row i in time."""
        t = float(complete[i]["started_unix"])
        before = [j for j in refs if float(complete[j]["started_unix"]) <= t]
        after = [j for j in refs if float(complete[j]["started_unix"]) > t]
        near = ([before[-1]] if before else []) + ([after[0]] if after else [])
        curves = [curve(j, "throughput_sps") for j in near]
        return [statistics.fmean(c[e] for c in curves) for e in range(n_epochs)]

    rows, ref_rows = [], []
    for i, r in sorted(complete.items()):
        base = local_ref(i)
        item = Row(row=i, source=r["source"], label=r["label"], params=json.loads(r["params"]),
                   speedup=[s / b for s, b in zip(curve(i, "throughput_sps"), base)],
                   val_acc=curve(i, "val_acc"), train_s=curve(i, "train_s"))
        (ref_rows if r["source"] == "ref" else rows).append(item)
    baseline_acc = statistics.fmean(r.val_acc[-1] for r in ref_rows)
    return Table(rows=rows, refs=ref_rows, meta=meta, baseline_acc=baseline_acc, skipped=skipped)


# --- the front and its hypervolume ---------------------------------------------------------------------

# --- snapping a proposal to the table --------------------------------------------------------------------

_SWITCHES = ("boost.dim_reduce", "boost.less_bn", "boost.grad_freeze", "boost.grad_accumulation")


def distance(p: dict[str, Any], q: dict[str, Any]) -> float:
    """How different two recipes' params are: switches and categorical choices weigh most."""
    d = 0.0
    for name in _SWITCHES:
        d += 2.0 * (bool(p.get(name)) != bool(q.get(name)))
    d += 2.0 * (p.get("amp_level", "O0") != q.get("amp_level", "O0"))
    d += 1.0 * (p.get("loss_scale.kind", "none") != q.get("loss_scale.kind", "none"))
    d += 1.0 * (p.get("optimizer.lr_schedule") != q.get("optimizer.lr_schedule"))
    lr_p, lr_q = p.get("optimizer.learning_rate"), q.get("optimizer.learning_rate")
    if lr_p and lr_q:
        d += abs(math.log(lr_p / lr_q)) / math.log(16.0)
    if p.get("boost.grad_freeze") and q.get("boost.grad_freeze"):
        d += abs(p["grad_freeze.freeze_p"] - q["grad_freeze.freeze_p"]) / 0.8
        d += 0.5 * abs(p["grad_freeze.param_groups"] - q["grad_freeze.param_groups"]) / 8
        d += 0.5 * (p["grad_freeze.freeze_type"] != q["grad_freeze.freeze_type"])
    if p.get("boost.less_bn") and q.get("boost.less_bn"):
        d += 0.5 * (p.get("less_bn.fn_flag") != q.get("less_bn.fn_flag"))
        d += 0.5 * abs(p.get("less_bn.split_at_pct", 0) - q.get("less_bn.split_at_pct", 0)) / 90
    if p.get("boost.grad_accumulation") and q.get("boost.grad_accumulation"):
        d += abs(p["grad_accumulation.grad_accumulation_step"] - q["grad_accumulation.grad_accumulation_step"]) / 6
    return d


# --- one search, replayed --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Strategy:
    sampler: str  # random, tpe, gp
    informed: bool  # start from the presets and informed variations (else the presets only)
    pruned: bool  # leave out the knobs calibrated slow on this device
    multi_fidelity: bool  # the multi-objective successive-halving scheduler
    reduction_factor: float = 3.0
    keep_front: bool = True
    grace_period: int = 1
    margin_pt: float = 0.0
    curve: bool = False  # judge accuracy against O0's curve (BaselineCurve), else the old fixed margin

    @property
    def name(self) -> str:
        parts = [self.sampler, "informed" if self.informed else "presets", "pruned" if self.pruned else "full"]
        if self.multi_fidelity:
            parts.append(f"MF(eta={self.reduction_factor:g},grace={self.grace_period},margin={self.margin_pt:g}pt"
                         f"{'' if self.keep_front else ',strict'})" + ("+curve" if self.curve else ""))
        return "+".join(parts)

    def ladder(self, table: Table) -> RungLadder:
        """The rung ladder this strategy's scheduler keeps (accuracy as a fraction, as the table holds it)."""
        baseline = curve_of(table) if self.curve else None
        return RungLadder(self.grace_period, self.reduction_factor, table.epochs, self.keep_front,
                          (0.0, self.margin_pt / 100), baseline)


def curve_of(table: Table, noise_by_epoch: dict[int, float] | None = None) -> BaselineCurve:
    """The scheduler's view of O0 on this table: its mean curve, the main job's margin, the default noise model
    (or ``noise_by_epoch``, a measured spread per epoch, in val_acc's units)."""
    by_epoch = {e + 1: v for e, v in enumerate(table.baseline_curve())}
    return BaselineCurve(by_epoch, table.baseline_acc, MAX_DROP / 100, NOISE_FLOOR_PT / 100,
                         noise_by_epoch=dict(noise_by_epoch or {}))


class _Recording:
    """Replays params through the space and keeps the distributions asked, for Optuna's add_trial."""

    def __init__(self, params: dict[str, Any], as_search: bool) -> None:
        from boosttune.space import ReplayTrial

        self.inner = ReplayTrial(params, as_search=as_search)
        self.fixed_params = self.inner.fixed_params
        self.distributions: dict[str, Any] = {}
        self.values: dict[str, Any] = {}

    def suggest_categorical(self, name, choices):
        from optuna.distributions import CategoricalDistribution

        self.distributions[name] = CategoricalDistribution(list(choices))
        self.values[name] = self.inner.suggest_categorical(name, choices)
        return self.values[name]

    def suggest_int(self, name, low, high, *, step=1, log=False):
        from optuna.distributions import IntDistribution

        self.distributions[name] = IntDistribution(low, high, step=step, log=log)
        self.values[name] = self.inner.suggest_int(name, low, high, step=step, log=log)
        return self.values[name]

    def suggest_float(self, name, low, high, *, step=None, log=False):
        from optuna.distributions import FloatDistribution

        self.distributions[name] = FloatDistribution(low, high, step=step, log=log)
        self.values[name] = min(max(self.inner.suggest_float(name, low, high, step=step, log=log), low), high)
        return self.values[name]


@dataclass
class Replay:
    hv: list[float]  # after each trial
    compute_s: list[float]  # cumulative, after each trial
    stopped: list[int]  # cumulative, after each trial
    drawn_rows: list[int] = field(default_factory=list)  # the table rows trained, in order
    stopped_rows: set[int] = field(default_factory=set)  # those the scheduler stopped


def replay(strategy: Strategy, table: Table, ctx, base: dict[str, Any], budget: int, n_trials: int, seed: int,
           slow: frozenset[str]) -> Replay:
    """One search of ``budget`` trials (its start points and sampler set up for that), continued to ``n_trials``."""
    import optuna

    from boosttune.search.start_points import StartPoints, start_points
    from boosttune.search.tune import make_sampler, startup_trials
    from boosttune.space import searchable, suggest_recipe

    space = replace(ctx, slow=slow if strategy.pruned else frozenset())
    pool = [r for r in table.rows if not strategy.pruned or searchable(r.params, space, base)]
    config = _Config(num_trials=budget, informed_start=strategy.informed)
    start: StartPoints = start_points(None, space, base, config)
    n_start = len(start.points) + len(start.outside)
    sampler = make_sampler(strategy.sampler, seed, startup_trials(budget, n_start))
    study = optuna.create_study(directions=["maximize", "maximize"], sampler=sampler)
    ladder = strategy.ladder(table)
    ref = (SPEED_FLOOR, table.baseline_acc - DROP_CEILING_PT / 100)
    front = [(1.0, table.baseline_acc)]  # the O0 baseline: measured by every experiment, free to the search
    used: set[int] = set()
    hv, compute, stopped, spent, n_stopped = [], [], [], 0.0, 0
    result = Replay(hv=hv, compute_s=compute, stopped=stopped)
    queue = [(p, True) for p in start.points] + [(p, False) for p in start.outside]
    o0, _ = queue.pop(0)  # the O0 preset comes first: a duplicate of the baseline, answered without training
    recording = _Recording(o0, as_search=True)
    suggest_recipe(recording, space, base)
    study.add_trial(optuna.trial.create_trial(params=recording.values, distributions=recording.distributions,
                                              values=[1.0, table.baseline_acc]))
    for t in range(n_trials):
        if t == 0:
            hv.append(hypervolume(front, ref))
            compute.append(spent)
            stopped.append(n_stopped)
            continue
        if queue:
            wanted, told = queue.pop(0)
        else:
            trial = study.ask()
            suggest_recipe(trial, space, base)
            wanted, told = dict(trial.params), True
            study.tell(trial, state=optuna.trial.TrialState.FAIL)  # replaced by the snapped recipe below
        unused = [r for r in pool if r.row not in used]
        if not unused:
            raise SystemExit(f"the table has only {len(pool)} recipes this strategy can draw; {n_trials} trials need more")
        row = min(unused, key=lambda r: (distance(wanted, r.params), r.row))
        used.add(row.row)
        result.drawn_rows.append(row.row)
        last = _trained_epochs(ladder, row, table.epochs) if strategy.multi_fidelity else table.epochs
        if last < table.epochs:
            n_stopped += 1
            result.stopped_rows.add(row.row)
        spent += row.train_s[last - 1]
        values = (row.speedup[last - 1], row.val_acc[last - 1])
        if last == table.epochs:
            front.append(values)
        if told:
            recording = _Recording(row.params, as_search=True)
            suggest_recipe(recording, space, base)
            study.add_trial(optuna.trial.create_trial(params=recording.values, distributions=recording.distributions,
                                                      values=list(values)))
        hv.append(hypervolume(front, ref))
        compute.append(spent)
        stopped.append(n_stopped)
    return result


def _trained_epochs(ladder: RungLadder, row: Row, epochs: int) -> int:
    """The epochs ``row`` trains under ``ladder``: the epoch it was stopped at, or all of them."""
    for epoch in range(1, epochs + 1):
        if not ladder.report(row.row, epoch, (row.speedup[epoch - 1], row.val_acc[epoch - 1])):
            return epoch
    return epochs


# --- the scheduler's own error: acceptable recipes it stops ------------------------------------------------

@dataclass(frozen=True)
class StopError:
    stopped: int
    of: int

    @property
    def share(self) -> float:
        return self.stopped / self.of if self.of else math.nan

    def __str__(self) -> str:
        return f"{self.share:.1%} ({self.stopped}/{self.of})"


def replayed_stop_error(replays: list[Replay], acceptable: set[int]) -> StopError:
    """Of the acceptable recipes the replays trained (each time counted), how many the scheduler stopped."""
    drawn = [row for r in replays for row in r.drawn_rows if row in acceptable]
    stopped = [row for r in replays for row in r.drawn_rows if row in acceptable and row in r.stopped_rows]
    return StopError(len(stopped), len(drawn))


def direct_stop_error(strategy: Strategy, table: Table, acceptable: set[int]) -> StopError:
    """Each acceptable recipe fed to a ladder whose rungs already hold every other recipe of the table and O0."""
    o0 = table.baseline_curve()
    stopped = 0
    for row in (r for r in table.rows if r.row in acceptable):
        ladder = strategy.ladder(table)
        for m in ladder.milestones:
            ladder.recorded[m] = {o.row: (o.speedup[m - 1], o.val_acc[m - 1]) for o in table.rows if o is not row}
            ladder.recorded[m]["O0"] = (1.0, o0[m - 1])
        stopped += _trained_epochs(ladder, row, table.epochs) < table.epochs
    return StopError(stopped, len(acceptable))


# --- the speed floor (issue 62): trials too slow for the confirm stage to race ------------------------------

@dataclass(frozen=True)
class FloorReplay:
    bar: float  # the slowest speed-up the handoff races, one O0 run at the reference noise
    rows: int  # the recipes replayed
    stopped: dict[int, int]  # row -> the rung the floor stopped it at
    clear: set[int]  # rows whose final speed-up clears the bar: the handoff may race them
    saved_s: float  # training seconds the stopped rows did not spend
    total_s: float  # every row's training seconds, trained to the end

    @property
    def false_stops(self) -> StopError:
        """Of the rows whose final figure clears the bar, those the floor stopped: the floor's own error."""
        return StopError(len(self.clear & set(self.stopped)), len(self.clear))


def speed_floor_replay(rows: list[Row], epochs: int, at: tuple[int, ...] | None = None,
                       speed_sd: float = REFERENCE_NOISE.speed_sd) -> FloorReplay:
    """The search's speed floor (boosttune.search.speed) on searched recipes: a recipe's speed-up at a rung in ``at``
    (the table's, against the nearby O0 runs at that epoch; None: the last rung only, as the search judges a searched
    trial) below the bar stops it there."""
    bar = slowest_handed_on(speed_sd, [1.0])
    milestones = RungLadder(1, 2, epochs).milestones
    at = at or (milestones[-1],)
    stopped = {row.row: rung for row in rows if (rung := next((m for m in at if row.speedup[m - 1] < bar), None))}
    by_row = {row.row: row for row in rows}
    saved = sum(by_row[r].train_s[-1] - by_row[r].train_s[rung - 1] for r, rung in stopped.items())
    return FloorReplay(bar=bar, rows=len(rows), stopped=stopped,
                       clear={row.row for row in rows if row.speedup[-1] >= bar},
                       saved_s=saved, total_s=sum(row.train_s[-1] for row in rows))


def print_speed_floor(table: Table) -> None:
    """The floor as the search applies it to searched trials (the last rung) and at every rung, on all the table's
    recipes and on those the main job searches on this CPU (no amp, no DimReduce: the calibration leaves them out)."""
    milestones = RungLadder(1, 2, table.epochs).milestones
    main = [r for r in table.rows if not r.params.get("boost.dim_reduce") and r.params.get("amp_level", "O0") == "O0"]
    bar = speed_floor_replay(table.rows, table.epochs).bar
    print(f"\nspeed floor (issue 62, boosttune/search/speed.py): a searched trial below {bar:.3f}x O0 (one O0 run, "
          f"the reference noise) stops at the last rung; target: recipes whose final speed-up clears the bar, stopped, "
          f"< {STOP_ERROR_TARGET:.0%}")
    header = f"{'  rule':<44}{'recipes':<28}{'stopped':>9}{'training saved':>16}{'cleared, stopped':>20}{'target':>10}"
    print(header)
    print("-" * len(header))
    for rule, at in ((f"the last rung (epoch {milestones[-1]}), as shipped", None),
                     (f"every rung (epoch {', '.join(map(str, milestones))})", tuple(milestones))):
        for name, rows in (("all", table.rows), ("the main job's kinds", main)):
            floor = speed_floor_replay(rows, table.epochs, at)
            error = floor.false_stops
            print(f"  {rule:<42}{name + f' ({floor.rows})':<28}{len(floor.stopped):>9}"
                  f"{floor.saved_s / floor.total_s:>16.1%}{str(error):>20}"
                  f"{'met' if error.share < STOP_ERROR_TARGET else 'MISSED':>10}")
    print("  (a preset stops at its first rung: the confirm stage races it all the same, so no stop of one is an error)")


@dataclass(frozen=True)
class _Config:
    """The fields of ExperimentConfig that start_points reads. The table holds one O0 run, every trial's reference:
    a replay does not train O0 again (``remeasure_baseline``)."""

    num_trials: int
    informed_start: bool
    workers_per_trial: int = 1
    remeasure_baseline: bool = False


def _calibrated_slow(folder: Path) -> dict[str, str]:
    """The knobs the device calibration that goes with the table left out (``boosttune probe --speed --json``)."""
    from boosttune.probe.calibrate import SpeedReport

    path = folder / "calibration.json"
    if not path.is_file():
        raise SystemExit(f"{path}: missing; write it with: boosttune probe --speed --json > {path}")
    return SpeedReport(**json.loads(path.read_text())["speed"]).slow()


# --- the report ------------------------------------------------------------------------------------------

def _mf_setting(text: str) -> dict[str, Any]:
    parts = text.split(":")
    try:
        setting = {"reduction_factor": float(parts[0]), "grace_period": int(parts[1]), "margin_pt": float(parts[2]),
                   "keep_front": not (len(parts) > 3 and parts[3] == "strict")}
    except (IndexError, ValueError):
        raise SystemExit(f"--mf: {text!r} is invalid; expected ETA:GRACE:MARGIN_PT[:strict], e.g. 3:1:0") from None
    return setting


def t_interval(values: list[float]) -> tuple[float, float, float]:
    from scipy import stats

    mean = statistics.fmean(values)
    if len(values) < 2 or statistics.pstdev(values) == 0:
        return mean, mean, mean
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def space_of(table: Table, folder: Path = TABLE):
    """The search space the table was built on: (SpaceContext, base recipe, the knobs calibrated slow)."""
    from boosttune.space import SpaceContext

    meta, base = table.meta, table.meta["base"]
    ctx = SpaceContext(total_steps=meta["space_context"]["total_steps"],
                       param_count=meta["space_context"]["param_count"],
                       unsupported=frozenset(meta["space_context"]["unsupported"]),
                       base_learning_rate=base["optimizer"]["learning_rate"])
    return ctx, base, frozenset(_calibrated_slow(folder))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--trials", type=int, default=8, help="N, the search budget in trials (default 8, the main job's)")
    p.add_argument("--reps", type=int, default=20, help="repetitions (sampler seeds) per strategy (default 20)")
    p.add_argument("--table", type=Path, default=TABLE, help=f"the table folder (default {TABLE})")
    p.add_argument("--samplers", default="random,tpe,gp", help="comma-separated samplers (default random,tpe,gp)")
    p.add_argument("--mf", default=DEFAULT_MF,
                   help="comma-separated scheduler settings to try, each ETA:GRACE:MARGIN_PT[:strict] "
                        f"(default {DEFAULT_MF}: the search's own); each replayed with the old rule and against "
                        "O0's curve (+curve, the search's rule)")
    p.add_argument("--only", default="", help="comma-separated name parts: replay only the strategies that contain one")
    p.add_argument("--floor", action="store_true", help="print only the speed floor's replay (a second)")
    args = p.parse_args(argv)
    if args.floor:
        print_speed_floor(load_table(args.table))
        return 0

    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    table = load_table(args.table)
    meta = table.meta
    ctx, base, slow = space_of(table, args.table)
    print(f"table: {len(table.rows)} recipes + {len(table.refs)} O0 reference runs ({args.table}); "
          f"O0 val_acc {table.baseline_acc:.4f}; built by: {meta['command']}")
    for line in table.skipped:
        print(f"  left out: {line}")
    print(f"device-aware pruning leaves out: {', '.join(sorted(slow)) or 'nothing'} "
          f"({args.table / 'calibration.json'})")
    print(f"hypervolume reference point: speed-up {SPEED_FLOOR}, val_acc {table.baseline_acc - DROP_CEILING_PT / 100:.4f}"
          f" (O0 - {DROP_CEILING_PT:g} pt); the O0 baseline is on every front")
    n, two_n = args.trials, 2 * args.trials
    mf_settings = [_mf_setting(text) for text in args.mf.split(",")]
    strategies = [Strategy("random", False, False, False)]
    for sampler in args.samplers.split(","):
        for informed in (False, True):
            for pruned in (False, True):
                variants = [Strategy(sampler, informed, pruned, False)]
                variants += [Strategy(sampler, informed, pruned, True, curve=curve, **mf)
                             for mf in mf_settings for curve in (False, True)]
                strategies += [v for v in variants if v not in strategies]
    if args.only:
        strategies = [s for s in strategies if s == strategies[0] or any(part in s.name for part in args.only.split(","))]
    results: dict[str, list[Replay]] = {}
    start = time.perf_counter()
    for i, strategy in enumerate(strategies):
        results[strategy.name] = [replay(strategy, table, ctx, base, n, two_n, seed, slow) for seed in range(args.reps)]
        print(f"  [{i + 1}/{len(strategies)} {time.perf_counter() - start:.0f} s] {strategy.name}", file=sys.stderr)
    random_2n = statistics.fmean(r.hv[two_n - 1] for r in results[strategies[0].name])
    print(f"\nrandom search's mean hypervolume at 2N = {two_n} trials: {random_2n:.5f}\n")
    acceptable = table.acceptable()
    header = (f"{'strategy':<42}{'HV@N [95% CI]':>30}{'HV@2N':>10}{'compute@N s [95% CI]':>28}"
              f"{'stopped@N':>10}{'trials to random@2N':>21}{'acceptable stopped':>20}")
    print(header)
    print("-" * len(header))
    for name, reps in results.items():
        hv_n = t_interval([r.hv[n - 1] for r in reps])
        hv_2n = statistics.fmean(r.hv[two_n - 1] for r in reps)
        cost = t_interval([r.compute_s[n - 1] for r in reps])
        mean_curve = [statistics.fmean(r.hv[k] for r in reps) for k in range(two_n)]
        reach = next((k + 1 for k, v in enumerate(mean_curve) if v >= random_2n - 1e-12), None)
        stopped = statistics.fmean(r.stopped[n - 1] for r in reps)
        print(f"{name:<42}{hv_n[0]:>10.5f} [{hv_n[1]:.5f}, {hv_n[2]:.5f}]{hv_2n:>10.5f}"
              f"{cost[0]:>12.0f} [{cost[1]:>5.0f}, {cost[2]:>5.0f}]{stopped:>10.1f}"
              f"{(str(reach) if reach else f'>{two_n}'):>21}"
              f"{str(replayed_stop_error(reps, acceptable)) if '+MF' in name else '-':>20}")
    print_stop_errors(table, strategies, results)
    print_speed_floor(table)
    return 0


def print_stop_errors(table: Table, strategies: list[Strategy], results: dict[str, list[Replay]]) -> None:
    """The scheduler's error per rule: acceptable recipes stopped early, replayed and directly, beside the target."""
    acceptable = table.acceptable()
    spread_pt = max(table.ref_spread()) * 100
    print(f"\nscheduler: {len(acceptable)} of {len(table.rows)} recipes acceptable at the last epoch (final val_acc "
          f">= O0's mean {table.baseline_acc:.4f} - {MAX_DROP:g} pt, MAX_DROP of boosttune/config/experiment.py); "
          f"O0's {len(table.refs)} reference runs spread by at most {spread_pt:.2f} pt at an epoch"
          + (" (one seed's reruns: the noise is the model's)" if spread_pt == 0 else ""))
    header = f"{'  acceptable recipes stopped early':<52}{'replayed (pooled)':>22}{'directly':>18}{'target':>9}"
    print(header)
    print("-" * len(header))
    rules = {s.name.split("+", 3)[3]: s for s in strategies if s.multi_fidelity}
    for rule, strategy in rules.items():
        pooled = [r for s in strategies if s.multi_fidelity and s.name.endswith(rule) for r in results[s.name]]
        replayed, direct = replayed_stop_error(pooled, acceptable), direct_stop_error(strategy, table, acceptable)
        print(f"  {rule:<50}{str(replayed):>22}{str(direct):>18}{'< ' + f'{STOP_ERROR_TARGET:.0%}':>9}")


if __name__ == "__main__":
    sys.exit(main())
