"""The racing confirm stage: candidates leave the race as soon as the paired rounds decide them.

A fixed number of seeds per candidate spends as much on a recipe decided after one round (three times
slower than the baseline) as on one that needs ten. Racing, as SMAC's intensification and irace/F-race
do, spends the seeds where the answer is still open. Every round trains the O0 baseline and every
candidate still racing on the round's seed (paired, interleaved: :func:`~boosttune.stages.rounds.paired_schedule`).

Why, and what was measured: docs/design/race.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping

import numpy as np
from scipy import stats as _st

from boosttune.config.experiment import RACE_MIN_SEEDS
from boosttune.errors import ConfigError
from boosttune.stats.decisions import Exit
from boosttune.stats.job import TIE
from boosttune.stats.sequential import many_to_one, nominal_levels
from boosttune.stats.race_model import (
    Fit,
    RecordCheck,
    check_record,
    claim_sd,
    fit,
    pooled_sd,
    residual_t,
    t_quantile,
)

__all__ = ["Bounds", "Noise", "REFERENCE_NOISE", "RULE_SWITCHES", "Race", "RaceRules", "Standing", "claim_level"]

SPENDING_GAMMA = -2.0  # the alpha spending's shape over a candidate's looks (RaceRules.spending_gamma)
DROP_PRIOR_DF = 4  # the weight of the measured noise in a drop when the race has measured little itself
UNCHECKED_WEIGHT = 0  # a record's most weight in a claim before the race's runs can check it (CHECK_MIN_DF)
FUTILITY_POWER = 0.1  # a candidate less likely than this to be shown by its last look (predictive power) stops
# The seed cap where neither the experiment (confirm_max_seeds) nor a run budget sets one (a budget in minutes only)
FALLBACK_CAP = 10
# The log slow-down one run may show by chance that a drop on speed must survive (Race._spared): a run 30% slow, the
# stress benchmarks/confirm_reliability.py plants ("one 30%-slow run"; issue 45: what this 2-core machine did).
HICCUP = math.log(1 / 0.7)
# How far below the model (its externally studentized residual) a candidate's slowest run must be for the release of
# alpha and futility to read it as a hiccup and set it aside (spare_every_drop); a drop on speed sets it aside always
# (spare_one_run), since only a clearly slower recipe meets a drop at all. Looser than the robust fit's Bonferroni
# bound (race_model.OUTLIER_LEVEL): a run set aside here by mistake costs seeds, never a claim.
SPARE_T = 3.0
# One-sided: how surely a candidate's own paired figures must spread more than the pool's for its claim to read its own
# noise (RaceRules.own_noise); a candidate read so by chance loses some power, never a claim's level
OWN_LEVEL = 0.05
# The rules' on/off switches, each added after races were written without it: a race.json that lacks one replays
# with it off (RaceRules.from_dict), as it was decided; this version's rules have each at its default.
RULE_SWITCHES = ("robust", "check_record", "futility", "release_alpha", "spare_one_run", "spare_every_drop",
                 "own_noise", "many_to_one")


@dataclass(frozen=True)
class Noise:
    """The run-to-run noise of a device, per paired seed: the sd of log(recipe / baseline throughput) and of the
    objective's gain (its gain units: points for accuracy), with the degrees of freedom they were measured on and
    where they come from (said in the output)."""

    speed_sd: float
    gain_sd: float | None
    df: int
    source: str

    def text(self) -> str:
        gain = f", objective gain sd {self.gain_sd:.3g}" if self.gain_sd is not None else ""
        return f"speed log-sd {self.speed_sd:.3f}{gain} per paired seed ({self.source}, {self.df} df)"


# The committed table's pooled noise per paired seed (benchmarks/data/confirm_table: 10 recipes x 10 paired seeds,
# ResNet-8 on the 2-core CPU machine, every run on one warm worker as the main job makes them; rebuilt 2026-11-25,
# benchmarks/confirm_reliability.py prints it): what a device that has measured nothing is assumed to do. It steers
# the drops only (df 0 for claims). The fresh-process table before it measured a speed log-sd of 0.122.
REFERENCE_NOISE = Noise(speed_sd=0.059, gain_sd=0.382, df=0, source="reference table, not measured on this device")


@dataclass(frozen=True)
class RaceRules:
    """How the race decides and what it may spend (see the module's docstring).

    ``speed_noise`` / ``gain_noise``: the device's noise per paired seed (log speed-up; objective gain), None when
    unknown; ``noise_df``: the degrees of freedom it was measured on, its weight in a claim (0: drops only)."""

    alpha: float = 0.05
    min_seeds: int = RACE_MIN_SEEDS
    max_seeds: int | None = None  # None: what the run budget pays one candidate (RaceRules.within_budget)
    max_runs: int | None = None
    max_minutes: float | None = None
    speed_noise: float | None = REFERENCE_NOISE.speed_sd
    gain_noise: float | None = None
    drop_confidence: float = 0.90  # one-sided: a drop's upper bound
    noise_df: int = 0
    noise_source: str = REFERENCE_NOISE.source
    # the Hwang-Shih-DeCani parameter of the alpha spending over a candidate's looks (stats.sequential): 1 spends
    # early, like Pocock's design, -4 late, like O'Brien-Fleming's; chosen by benchmarks/race_design.py
    spending_gamma: float = SPENDING_GAMMA
    robust: bool = True  # set aside a run far off the model (race_model); False: least squares on every run
    check_record: bool = True  # the record weighs in a claim only once the race's own runs agree with it
    futility: bool = True  # a candidate that cannot be decided within the budget and the seed cap stops
    release_alpha: bool = True  # a candidate shown unacceptable at a claim's full level leaves the Holm family
    spare_one_run: bool = True  # a drop on speed survives one slow run (Race._spared); needs ``robust``
    # ... and so do the release of alpha on speed and futility, when the run is far below the model (issue 62: one slow
    # run still stopped a 1.15x recipe there in a quarter of the stressed races); needs ``spare_one_run``
    spare_every_drop: bool = True
    own_noise: bool = True  # a candidate whose paired figures spread more than the pool's claims at its own noise
    many_to_one: bool = True  # alpha shared by Dunnett's many-to-one (the candidates share O0); False: Bonferroni

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ConfigError(f"confirm_alpha: must be strictly between 0 and 1, got {self.alpha!r}")
        if not 2 <= self.min_seeds <= (self.max_seeds or self.min_seeds):
            raise ConfigError(f"confirm_max_seeds: need 2 <= min_seeds <= max_seeds, got min_seeds={self.min_seeds}, "
                              f"max_seeds={self.max_seeds}")
        if self.max_runs is not None and self.max_runs < 2:
            raise ConfigError(f"confirm_budget_runs: must be >= 2 (one round of a candidate and the baseline), "
                              f"got {self.max_runs}")
        if self.max_minutes is not None and not self.max_minutes > 0:
            raise ConfigError(f"confirm_budget_minutes: must be > 0, got {self.max_minutes}")
        for name in ("speed_noise", "gain_noise"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name}: must be a finite number > 0 or unset, got {value!r}")
        if self.noise_df < 0:
            raise ConfigError(f"noise_df: must be >= 0, got {self.noise_df}")
        if not (math.isfinite(self.spending_gamma) and -20 <= self.spending_gamma <= 20):
            raise ConfigError(f"spending_gamma: must be a number in [-20, 20], got {self.spending_gamma!r}")

    @classmethod
    def with_noise(cls, noise: Noise, **kwargs: Any) -> RaceRules:
        return cls(speed_noise=noise.speed_sd, gain_noise=noise.gain_sd, noise_df=noise.df,
                   noise_source=noise.source, **kwargs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RaceRules:
        """Rules as race.json holds them (fields this version does not know are ignored; a file from before the robust
        fit, the record check, futility, the release of alpha or a spared run replays as it was decided; one from
        before the cap followed the budget keeps its cap, and the share of alpha it kept past it is not read)."""
        known = {f for f in cls.__dataclass_fields__}
        older: dict[str, Any] = {k: False for k in RULE_SWITCHES if k not in data}
        return cls(**{**older, **{k: v for k, v in data.items() if k in known}})

    def looks(self) -> tuple[int, ...]:
        """The paired-seed counts at which a candidate is looked at, up to the seed cap (resolved: within_budget)."""
        return tuple(range(self.min_seeds, (self.max_seeds or FALLBACK_CAP) + 1))

    def fits(self, cost: int, runs_spent: int, seconds_spent: float, seconds_per_run: float | None) -> bool:
        """Whether the budget pays for a round of ``cost`` runs."""
        if self.max_runs is not None and runs_spent + cost > self.max_runs:
            return False
        if self.max_minutes is not None and seconds_per_run is not None:
            return seconds_spent + cost * seconds_per_run <= 60 * self.max_minutes
        return True

    def within_budget(self, candidates: int) -> RaceRules:
        """The rules with the seed cap the design's last look is at: what a run budget can ever pay for one candidate
        (all the others leaving after the first round, each round after that one candidate and the baseline), no
        more than ``max_seeds`` where the experiment sets one (FALLBACK_CAP with neither). Looks past it never
        happen, so no alpha is spent on them; a race that ends before its last look has spent less than its alpha
        (Lan-DeMets). Decided before the race, from the budget alone."""
        cap = self.max_seeds if self.max_seeds is not None else FALLBACK_CAP if self.max_runs is None else math.inf
        return replace(self, max_seeds=int(max(self.min_seeds, min(cap, self.reachable(candidates)))))

    def reachable(self, candidates: int) -> int | float:
        """The most paired seeds a run budget pays for one of ``candidates`` (the others leaving after the first
        round); unbounded without a run budget."""
        if self.max_runs is None:
            return math.inf
        return 1 + (self.max_runs - (candidates + 1)) // 2 if self.max_runs >= candidates + 1 else 0

    def share(self, k: int) -> float:
        """Each of ``k`` candidates' share of alpha (Holm's step over those not yet won): Dunnett's many-to-one level,
        the candidates correlated through the baseline they share (``many_to_one``), else Bonferroni's."""
        k = max(1, k)
        return many_to_one(self.alpha, k) if self.many_to_one else self.alpha / k

    def budget_text(self) -> str:
        parts = ([f"{self.max_runs} runs"] if self.max_runs is not None else []) + \
            ([f"{self.max_minutes:g} minutes"] if self.max_minutes is not None else [])
        return " and ".join(parts) or "no limit"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def claim_level(rules: RaceRules, n: int, candidates: int, winners: int) -> float:
    """The nominal one-sided level a candidate with ``n`` paired seeds may claim at: its share of alpha (Holm over the
    candidates not yet won, each winner's share passed on, as in Maurer & Bretz's group-sequential Holm), spent over
    its looks up to the cap by the group-sequential boundary, the correlation between looks used
    (:mod:`boosttune.stats.sequential`)."""
    looks = rules.looks()
    if n < looks[0] or n > looks[-1]:
        return 0.0
    return nominal_levels(looks, rules.share(candidates - winners), rules.spending_gamma)[n - looks[0]]


@dataclass(frozen=True)
class Bounds:
    """A candidate's effect against the baseline under the pooled model: estimate and one-sided bounds at
    ``level`` on each side (so ``[low, high]`` is a ``1 - 2 level`` interval), with the degrees of freedom."""

    estimate: float
    low: float
    high: float
    level: float
    df: int


@dataclass
class Standing:
    """One candidate in the race: its paired figures so far and, once it left, when and why."""

    name: str
    seeds: list[int] = field(default_factory=list)
    log_speedups: list[float] = field(default_factory=list)
    gains: list[float] = field(default_factory=list)
    runs: int = 0  # runs trained, failed ones included
    exit: str = Exit.RACING
    left_after_round: int | None = None  # 1-based
    why: str = ""
    speed: Bounds | None = None  # the decision's own figures at its last look (log speed-up)
    gain: Bounds | None = None
    # the same look's estimates with 95% intervals (level 0.025 a side): the figures a page shows beside the decision
    speed95: Bounds | None = None
    gain95: Bounds | None = None
    # shown slower, or beyond the margin, at a claim's full level (RaceRules.release_alpha): out of the Holm family
    shown_unacceptable: bool = False

    @property
    def n(self) -> int:
        return len(self.log_speedups)

    @property
    def racing(self) -> bool:
        return self.exit == Exit.RACING

    @property
    def speedup(self) -> float:
        if self.speed is not None:
            return math.exp(self.speed.estimate)
        return math.exp(float(np.mean(self.log_speedups))) if self.log_speedups else math.nan


def _read_bounds(data: Mapping[str, Any] | None) -> Bounds | None:
    return None if data is None else Bounds(**data)


def _bounds(fit: Fit, name: str, sd: float, df: int, level: float, fixed_var: float = 0.0,
            own: list[float] | None = None) -> Bounds:
    """``fixed_var``: the variance of an error every seed of ``name`` shares (its compile charge's), which more seeds
    never average out: added to the estimate's. ``own``: a claim's, the candidate's paired figures, read at its own
    noise where they spread more than the pool says (:func:`_own_se`)."""
    estimate = fit.effect[name]
    if df == 0 or level <= 0 or not math.isfinite(sd):
        return Bounds(estimate, -math.inf, math.inf, level, df)
    se = math.sqrt((sd * fit.unit_se[name]) ** 2 + fixed_var)
    if own is not None:
        se, df = _own_se(se, df, own)
    half = t_quantile(1 - level, df) * se
    return Bounds(estimate, estimate - half, estimate + half, level, df)


def _own_se(se: float, df: int, values: list[float]) -> tuple[float, int]:
    """(standard error, df) of a claim: the pool's, or the candidate's own where a one-sided F-test of its own paired
    variance against the pool's at OWN_LEVEL says it is noisier: its own sd and df, as its own paired t-test reads it
    (issue 76: a candidate twice as noisy as the pool was judged by the pool's sd)."""
    n = len(values)
    own_sd, pool_sd = (float(np.std(values, ddof=1)) if n > 1 else math.nan), se * math.sqrt(n)
    if n < 3 or not (pool_sd > 0) or _st.f.sf((own_sd / pool_sd) ** 2, n - 1, df) > OWN_LEVEL:
        return se, df
    return own_sd / math.sqrt(n), n - 1


class Race:
    """The race's state: feed it each round's paired figures, ask it who still races.

    ``max_drop`` is in the objective's gain units (points for accuracy)."""

    def __init__(self, names: list[str], rules: RaceRules, max_drop: float):
        if not names:
            raise ConfigError("confirm: no candidate to race against the baseline")
        self.rules, self.max_drop = rules.within_budget(len(names)), float(max_drop)
        self.standings = {name: Standing(name) for name in names}
        self.rounds = 0
        self._speed_rounds: list[dict[str, float]] = []
        self._gain_rounds: list[dict[str, float]] = []
        self.round_seeds: list[int] = []  # each round's seed, in the order the rounds ran
        self.single_look = False  # one_look: one look at every seed, all of a candidate's alpha there
        # name -> the variance its per-job log speed-up gets from the compile charged to it and to the baseline, one
        # figure for every seed (stats.job.charge_variances): in every claim's and drop's interval
        self.charge_var: dict[str, float] = {}
        self.notes: list[str] = []  # what the race did that no standing's exit says (alpha passed on)

    @classmethod
    def one_look(cls, ratios: Mapping[str, Any], gains: Mapping[str, Any], alpha: float, max_drop: float,
                noise: Noise | None = None) -> Race:
        """One look at every seed, all of ``alpha`` spent there (the answer all the seeds give; fixed rounds):
        ``ratios[name]`` and ``gains[name]`` are the per-seed throughput ratios and objective gains, aligned by
        round (nan where a candidate has no figure in that round)."""
        n = len(next(iter(ratios.values())))
        rules = (RaceRules.with_noise(noise, alpha=alpha, min_seeds=2, max_seeds=max(2, n))
                 if noise is not None else RaceRules(alpha=alpha, min_seeds=2, max_seeds=max(2, n)))
        race = cls(list(ratios), rules, max_drop)
        race.single_look = True
        for r in range(n):
            figures = {name: (float(ratios[name][r]), float(gains[name][r])) for name in ratios}
            race._record(r + 1, {k: v for k, v in figures.items() if all(math.isfinite(x) for x in v) and v[0] > 0})
        race.rounds = n
        for standing in race.standings.values():
            standing.runs = n
        race._judge(list(race.standings.values()))
        return race

    def to_dict(self) -> dict[str, Any]:
        """The decision as it was made (race.json's ``decision``): the rules it ran under, the margin, every round's
        figures and every candidate's standing. :meth:`from_dict` gives it back without deciding anything again."""
        return {"rules": self.rules.to_dict(), "max_drop": self.max_drop, "rounds": self.rounds,
                "single_look": self.single_look, "speed_rounds": self._speed_rounds, "gain_rounds": self._gain_rounds,
                "round_seeds": self.round_seeds, "charge_var": self.charge_var,
                "standings": [asdict(s) for s in self.standings.values()]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Race:
        """The race :meth:`to_dict` wrote, as it stood when it was written (nothing is judged again)."""
        known = Standing.__dataclass_fields__  # a race.json from before the cap followed the budget has past_cap
        standings = [Standing(**{**{k: v for k, v in s.items() if k in known},
                                 **{k: _read_bounds(s.get(k)) for k in ("speed", "gain", "speed95", "gain95")}})
                     for s in data["standings"]]
        rules = RaceRules.from_dict(data["rules"])
        race = cls([s.name for s in standings], rules, float(data["max_drop"]))
        race.rules = rules  # as decided (already within the budget)
        race.standings = {s.name: s for s in standings}
        race.rounds, race.single_look = int(data["rounds"]), bool(data["single_look"])
        race._speed_rounds = [dict(r) for r in data["speed_rounds"]]
        race._gain_rounds = [dict(r) for r in data["gain_rounds"]]
        # a race written before its rounds' seeds were kept: each seed once, in the order they were drawn
        race.round_seeds = [int(x) for x in data.get("round_seeds") or
                            sorted({seed for st in standings for seed in st.seeds})]
        race.charge_var = {str(k): float(v) for k, v in (data.get("charge_var") or {}).items()}  # none before 62
        return race

    @property
    def racing(self) -> list[str]:
        return [s.name for s in self.standings.values() if s.racing]

    @property
    def winners(self) -> list[Standing]:
        return [s for s in self.standings.values() if s.exit == Exit.WON]

    def answer(self) -> str | None:
        """The fastest winner (its estimated speed-up), or None."""
        won = self.winners
        return max(won, key=lambda s: s.speedup).name if won else None

    def observe(self, seed: int, figures: Mapping[str, tuple[float, float] | None]) -> list[Standing]:
        """One round: ``figures[name]`` = (throughput ratio to the round's baseline, objective gain), None for a
        failed run. Returns the standings that left the race in this round."""
        self.rounds += 1
        kept = {}
        for name, pair in figures.items():
            standing = self.standings[name]
            if not standing.racing:
                raise ConfigError(f"confirm: {name!r} ran in round {self.rounds} after it left the race")
            standing.runs += 1
            if pair is not None and all(math.isfinite(v) for v in pair) and pair[0] > 0:
                kept[name] = (float(pair[0]), float(pair[1]))
        self._record(seed, kept)
        return self._judge([self.standings[n] for n in figures])

    def _record(self, seed: int, figures: Mapping[str, tuple[float, float]]) -> None:
        self._speed_rounds.append({name: math.log(ratio) for name, (ratio, _) in figures.items()})
        self._gain_rounds.append({name: gain for name, (_, gain) in figures.items()})
        self.round_seeds.append(int(seed))
        for name, (ratio, gain) in figures.items():
            standing = self.standings[name]
            standing.seeds.append(int(seed))
            standing.log_speedups.append(math.log(ratio))
            standing.gains.append(gain)

    def _fits(self, look: int | None = None) -> tuple[Fit, Fit]:
        """The model of each measure over the rounds run so far (``look``: the first that many). The robust fit reads
        a run as far off against this workload's record; with none, against the device's reference speed noise only:
        another network's objective noise never sets a run of this one aside."""
        names, weight = list(self.standings), max(self.rules.noise_df, DROP_PRIOR_DF)
        gain_prior = self.rules.gain_noise if self.rules.noise_df else None
        return tuple(fit(rounds[:look], names, self.rules.robust, None if noise is None else noise ** 2 / 2, weight)
                     for rounds, noise in ((self._speed_rounds, self.rules.speed_noise),
                                           (self._gain_rounds, gain_prior)))  # type: ignore[return-value]

    def checks(self) -> tuple[RecordCheck, RecordCheck]:
        """The record check of the log speed-up and of the objective gain (``race_model.check_record``)."""
        return self._checks(*self._fits())

    def _checks(self, speed_fit: Fit, gain_fit: Fit) -> tuple[RecordCheck, RecordCheck]:
        if not self.rules.check_record:
            return (RecordCheck("agrees" if self.rules.noise_df else "none"),) * 2  # type: ignore[return-value]
        return (check_record(speed_fit, self.rules.speed_noise, self.rules.noise_df),
                check_record(gain_fit, self.rules.gain_noise, self.rules.noise_df))

    def _noise(self, speed_fit: Fit, gain_fit: Fit) -> tuple[tuple, tuple]:
        """((claim speed, claim gain), (drop speed, drop gain)), each (sd per run, df): the record weighs in a claim
        when the race's runs agree with it (while unchecked, as much as UNCHECKED_WEIGHT); a record set aside steers
        the drops as when nothing was measured. With no record of this workload (``noise_df`` 0: the prior is another
        network's), the drops read this race's own noise: the device's reference speed noise weighs in only while the
        race has no degree of freedom of its own (a first round can still drop a clearly slow recipe), and the
        reference objective noise never does (issue 76: ResNet-8's 0.38 pt dropped a network's recipes whose runs
        move by 1.2 pt)."""
        checks = self._checks(speed_fit, gain_fit)
        claim, drop = [], []
        for measured, noise, check, reference in ((speed_fit, self.rules.speed_noise, checks[0], REFERENCE_NOISE.speed_sd),
                                                  (gain_fit, self.rules.gain_noise, checks[1], None)):
            weight = {"disagrees": 0, "unchecked": min(self.rules.noise_df, UNCHECKED_WEIGHT)}.get(
                check.state, self.rules.noise_df)
            claim.append(claim_sd(measured, noise, weight))
            if check.state == "disagrees" or self.rules.noise_df == 0:  # (a record disagrees only past 4 own df)
                own_only = reference is None or measured.df > 0
                drop.append(pooled_sd(measured, None if own_only else reference, DROP_PRIOR_DF))
            else:
                drop.append(pooled_sd(measured, noise, max(self.rules.noise_df, DROP_PRIOR_DF)))
        return tuple(claim), tuple(drop)

    def figures(self, name: str, level: float, prior_df: int | None = None) -> tuple[Bounds, Bounds] | None:
        """(log speed-up, objective gain) of ``name`` under the pooled model with one-sided bounds at ``level``;
        None when it has no paired figure. ``prior_df``: the noise prior's weight (default: the claims' weight, the
        record set aside where the race's runs disagree with it)."""
        speed_fit, gain_fit = self._fits()
        if name not in speed_fit.effect:
            return None
        if prior_df is None:
            (speed, gain), _ = self._noise(speed_fit, gain_fit)
        else:
            speed, gain = pooled_sd(speed_fit, self.rules.speed_noise, prior_df), \
                pooled_sd(gain_fit, self.rules.gain_noise, prior_df)
        return (_bounds(speed_fit, name, *speed, level, self.charge_var.get(name, 0.0)),
                _bounds(gain_fit, name, *gain, level))

    def speed_figures(self, rounds: list[dict[str, float]], level: float) -> dict[str, Bounds]:
        """Another measure of speed (log ratios to each round's baseline, by round, as the race's own) under the race's
        model and its claims' noise rule: the per-step speed-up beside the per-job one the race decides on, so that
        both intervals come from one model."""
        names, weight, noise = list(self.standings), max(self.rules.noise_df, DROP_PRIOR_DF), self.rules.speed_noise
        measured = fit(rounds, names, self.rules.robust, None if noise is None else noise ** 2 / 2, weight)
        (speed, _), _ = self._noise(measured, self._fits()[1])
        return {name: _bounds(measured, name, *speed, level) for name in measured.effect}

    def p_values(self, name: str, look: int | None = None) -> tuple[float, float]:
        """The deciding tests' one-sided p-values at the look after round ``look`` (None: the last), under the
        claims' noise: that ``name`` is not faster (log speed-up <= 0) and that it loses more than the margin (gain
        <= -max_drop). Nominal: the race compares each with the level its multiplicity rule gives the look (NaN: no
        paired figure, or no df)."""
        speed_fit, gain_fit = self._fits(look)
        if name not in speed_fit.effect:
            return math.nan, math.nan
        (speed, gain), _ = self._noise(speed_fit, gain_fit)

        standing = self.standings[name]
        seen = standing.n if look is None else sum(name in r for r in self._speed_rounds[:look])

        def one_sided(fitted: Fit, noise: tuple[float, int], null: float, values: list[float],
                      fixed_var: float = 0.0) -> float:
            sd, df = noise
            se = math.sqrt((sd * fitted.unit_se[name]) ** 2 + fixed_var)
            if df == 0 or not math.isfinite(se) or se <= 0:
                return math.nan
            if self.rules.own_noise:
                se, df = _own_se(se, df, values[:seen])
            return float(_st.t.sf((fitted.effect[name] - null) / se, df))

        return (one_sided(speed_fit, speed, 0.0, standing.log_speedups, self.charge_var.get(name, 0.0)),
                one_sided(gain_fit, gain, -self.max_drop, standing.gains))

    def _judge(self, ran: list[Standing]) -> list[Standing]:
        speed_fit, gain_fit = self._fits()
        claim, drop = self._noise(speed_fit, gain_fit)
        drop_level = 1 - self.rules.drop_confidence

        def bounds(standing: Standing, level: float, noise) -> tuple[Bounds, Bounds]:
            (s_sd, s_df), (g_sd, g_df) = noise
            own = noise is claim and self.rules.own_noise
            return (_bounds(speed_fit, standing.name, s_sd, s_df, level, self.charge_var.get(standing.name, 0.0),
                            standing.log_speedups if own else None),
                    _bounds(gain_fit, standing.name, g_sd, g_df, level, own=standing.gains if own else None))

        measured = [s for s in ran if s.name in speed_fit.effect]
        left = []
        shown_out = self._release(lambda s, level: bounds(s, level, claim),
                                  lambda s, speed, level: self._spared(s, speed, level, claim[0], every=True))
        # Holm's step-down within the look: the strongest claims first, each winner raising the others' level
        for standing in sorted(measured, key=lambda s: self._strength(*bounds(s, 0.05, claim)), reverse=True):
            level = self.level(standing)
            standing.speed, standing.gain = bounds(standing, level, claim)  # this look's figures, whatever it decides
            if standing.shown_unacceptable:
                continue
            if level > 0 and standing.speed.low > 0 and standing.gain.low > -self.max_drop:
                left.append(self._leave(standing, Exit.WON, self._won_text(standing)))
        for standing in measured:
            if standing.racing:
                speed, gain = bounds(standing, drop_level, drop)
                left += self._drop(standing, *self._spared(standing, speed, drop_level, drop[0]), gain)
            if standing.racing and standing.name in shown_out:  # shown at a claim's level, under the claims' noise
                left += self._drop(standing, *shown_out[standing.name])
        for standing in measured:
            if standing.racing and self.rules.futility:
                left += self._futile(standing, *bounds(standing, drop_level, drop), drop[0])
        best = max((w.speedup for w in self.winners), default=None)
        for standing in self.standings.values():  # a new winner can put a racer out of reach
            if standing.racing and best is not None and standing.name in speed_fit.effect:
                speed, read = self._spared(standing, bounds(standing, drop_level, drop)[0], drop_level, drop[0])
                # it could become the answer only by beating the winner per job by more than a tie: the seeds it
                # would spend go to those that still can
                if speed.high < math.log(best * (1 + TIE)):
                    left.append(self._leave(standing, Exit.BEHIND, f"speed-up at most {math.exp(speed.high):.3f}x "
                                                                   f"({self._drop_text(speed)}{read}), "
                                                                   f"not more than a tie "
                                                                   f"({100 * TIE:.0f}%) above the winner's "
                                                                   f"{best:.3f}x"))
        return left

    def _spared(self, standing: Standing, speed: Bounds, level: float, noise: tuple[float, int],
                every: bool = False) -> tuple[Bounds, str]:
        """The speed bounds a drop reads: under ``robust``, once they would drop ``standing``, its figures with its
        slowest run set aside (issue 62: one 30%-slow run of a recipe 1.15x faster, in its first round, made it look
        0.8x and dropped it at once; one run cannot be told from the machine's hiccup until there are more). With one
        paired seed that leaves nothing: its one run is read as if a hiccup of HICCUP had slowed it, so only a recipe
        slower even then leaves after one round. The noise is the whole fit's. ``every``: a drop that is not the
        drops' own (the release of alpha, futility), read so only under ``spare_every_drop``, whatever the bounds
        say (futility reads their room, not their sign), and only when the slowest run is more than ``SPARE_T`` below
        the model. Returns the bounds and how they were read (words for the drop's reason; empty when read as they
        are)."""
        rules = self.rules
        if not (rules.robust and rules.spare_one_run) or self.single_look or (every and not rules.spare_every_drop):
            return speed, ""
        if not (every or speed.high < 0):
            return speed, ""
        rounds = [dict(r) for r in self._speed_rounds]
        mine = [i for i, r in enumerate(rounds) if standing.name in r]
        if len(mine) < 2:  # its one run as if it had been slowed by a hiccup as large as HICCUP
            return (replace(speed, estimate=speed.estimate + HICCUP, low=speed.low + HICCUP, high=speed.high + HICCUP),
                    f", its one run read as {100 * (1 - math.exp(-HICCUP)):.0f}% slow by chance")
        slowest = min(mine, key=lambda i: rounds[i][standing.name])
        prior = None if rules.speed_noise is None else rules.speed_noise ** 2 / 2
        prior_df = max(rules.noise_df, DROP_PRIOR_DF)
        if every and not residual_t(rounds, list(self.standings), (slowest, standing.name), prior, prior_df) < -SPARE_T:
            return speed, ""  # its slowest run is not far enough below the model to be a hiccup
        del rounds[slowest][standing.name]
        refit = fit(rounds, list(self.standings), True, prior, prior_df)
        return (_bounds(refit, standing.name, *noise, level, self.charge_var.get(standing.name, 0.0)),
                ", its slowest run set aside")

    def family(self) -> int:
        """How many candidates share alpha now (Holm's K - W): every candidate but the winners and, under
        ``release_alpha``, those shown unacceptable (at least 1)."""
        out = sum(s.exit == Exit.WON or s.shown_unacceptable for s in self.standings.values())
        return max(1, len(self.standings) - out)

    def _release(self, bounds, spare) -> dict[str, tuple[Bounds, str, Bounds]]:
        """Under ``release_alpha``: the candidates newly shown slower than the baseline, or beyond the margin, at the
        level of one look with all of a candidate's alpha (``alpha / K``) under the claims' noise leave the Holm
        family, as a winner does, so their share goes to the others (sticky: the race's earlier levels rest on it).
        Slower means slower with its slowest run set aside too (``spare``: :meth:`_spared` at that level, under
        ``spare_every_drop``). Returns name -> the speed bounds that showed it, how they were read, and the gain's.
        Why this holds the false-answer rate (and the benchmark that checks it under the stresses):
        docs/design/race.md, multiplicity."""
        if not self.rules.release_alpha or self.single_look:
            return {}
        level, shown = self.rules.share(len(self.standings)), {}
        for standing in self.standings.values():
            if standing.exit == Exit.WON or standing.shown_unacceptable or not standing.log_speedups:
                continue
            speed, gain = bounds(standing, level)
            speed, read = spare(standing, speed, level) if speed.high < 0 else (speed, "")
            if speed.high < 0 or gain.high < -self.max_drop:
                standing.shown_unacceptable, shown[standing.name] = True, (speed, read, gain)
                self.notes.append(f"{standing.name} is shown {'slower' if speed.high < 0 else 'beyond the margin'} "
                                  f"at a claim's full level ({level:.2g} one-sided{read}): its share of alpha passes "
                                  f"to the others (alpha now over {self.family()} candidate(s))")
        return shown

    def _drop(self, standing: Standing, speed: Bounds, read: str, gain: Bounds) -> list[Standing]:
        """``read``: how the speed bounds were read (``_spared``), said in the reason."""
        if speed.high < 0:
            return [self._leave(standing, Exit.SLOWER, f"speed-up at most {math.exp(speed.high):.3f}x "
                                                       f"({self._drop_text(speed)}{read})")]
        if gain.high < -self.max_drop:
            return [self._leave(standing, Exit.TOO_LOSSY, f"objective gain at most {gain.high:+.3g} "
                                                          f"({self._drop_text(gain)}), below -{self.max_drop:g}")]
        if standing.n >= self.rules.max_seeds:
            return [self._leave(standing, Exit.UNDECIDED, f"{standing.n} paired seeds, the design's last look (what "
                                                          "the run budget pays one candidate, or confirm_max_seeds)")]
        return []

    def runs_spent(self) -> int:
        """Runs so far, the baseline's and failed ones included (one baseline run a round)."""
        return self.rounds + sum(s.runs for s in self.standings.values())

    def reachable(self, standing: Standing) -> int:
        """The most paired seeds ``standing`` can still get: the seed cap, or what the run budget pays for were it
        the only candidate left (a round: it and the baseline)."""
        most = self.rules.max_seeds
        if self.rules.max_runs is not None:
            most = min(most, standing.n + max(0, self.rules.max_runs - self.runs_spent()) // 2)
        return most

    def _futile(self, standing: Standing, speed: Bounds, gain: Bounds, noise: tuple[float, int]) -> list[Standing]:
        """Stochastic curtailment by predictive power (Spiegelhalter, Freedman & Blackburn 1986; Jennison & Turnbull
        2000, ch. 10): stop a candidate less than ``FUTILITY_POWER`` likely to be shown at the design's last look it
        can reach (``reachable``: the seed cap and the run budget), at that look's nominal level, averaged over what
        its figures so far say its truth may be (a flat prior); the two claims' chances multiplied (both must be
        shown). The drops' noise reads the figures (``noise``: their speed sd and df). Under ``spare_every_drop`` it
        must be so with its slowest run set aside too (:meth:`_spared`). Chosen over conditional power at the current
        trend, which stopped a recipe 0.3 pt inside the margin and the main job's p=0.5 more often (docs/benchmarks.md,
        futility)."""
        reach = self.reachable(standing)
        if standing.n < self.rules.min_seeds or self.single_look or reach <= standing.n:
            return []
        level = claim_level(self.rules, reach, self.family(), 0) or self.rules.share(self.family())
        spared = self._spared(standing, speed, speed.level, noise, every=True)
        for speed_read, read in [(speed, ""), *([spared] if spared[1] else [])]:  # futile however its speed is read
            power = self._predictive_power(standing.n / reach, speed_read, gain, level)
            if power is None or power >= FUTILITY_POWER:
                return []
        return [self._leave(standing, Exit.FUTILE, f"at its figures so far ({math.exp(speed_read.estimate):.3f}x"
                                                   f"{read}, {gain.estimate:+.3g}) it is {100 * power:.1f}% likely to "
                                                   f"be shown by its last look ({reach} paired seeds, what the budget "
                                                   f"and the seed cap leave it), below {100 * FUTILITY_POWER:.0f}% "
                                                   "(predictive power)")]

    def _predictive_power(self, t: float, speed: Bounds, gain: Bounds, level: float) -> float | None:
        """P(both claims shown at the last look | the figures so far), the truth averaged over a flat prior's
        posterior, at information fraction ``t`` (paired seeds now over the last look's): for each claim
        Phi((z - c sqrt(t)) / sqrt(1 - t)), z its statistic now and c the last look's critical value (None: no
        figures to tell)."""
        power = 1.0
        for b, null in ((speed, 0.0), (gain, -self.max_drop)):
            if not (math.isfinite(b.low) and math.isfinite(b.high)) or b.df == 0 or b.estimate == b.low:
                return None
            z = (b.estimate - null) / ((b.estimate - b.low) / t_quantile(1 - b.level, b.df))
            c = t_quantile(1 - level, max(b.df, 30))  # near the df the claim would have by then
            power *= float(_st.norm.cdf((z - c * math.sqrt(t)) / math.sqrt(1 - t)))
        return power

    def level(self, standing: Standing) -> float:
        """The one-sided level ``standing`` may claim at now (0: it may not)."""
        if self.single_look:
            return self.rules.share(self.family()) if standing.n >= 2 else 0.0
        return claim_level(self.rules, standing.n, self.family(), 0)

    def _strength(self, speed: Bounds, gain: Bounds) -> float:
        """How far the weaker of the two claims is from its null, in its own interval widths (ordering only)."""
        scores = []
        for b, null in ((speed, 0.0), (gain, -self.max_drop)):
            width = b.estimate - b.low
            scores.append((b.estimate - null) / width if math.isfinite(width) and width > 0 else
                          (math.inf if b.estimate > null and width == 0 else -math.inf))
        return min(scores)

    def _drop_text(self, b: Bounds) -> str:
        return f"one-sided {100 * (1 - b.level):g}%, {b.df} df"

    def _won_text(self, s: Standing) -> str:
        assert s.speed is not None and s.gain is not None
        # the figures as they stood at this look; the table's are the model's at the race's end (its later rounds
        # move the pooled estimates a little), so these are named as of their round
        return (f"at round {self.rounds}: {s.speedup:.3f}x (at least {math.exp(s.speed.low):.3f}x), objective gain "
                f"{s.gain.estimate:+.3g} (at least {s.gain.low:+.3g}), both shown at one-sided level "
                f"{s.speed.level:.2g} after {s.n} seeds ({s.speed.df} df)")

    def _leave(self, s: Standing, exit_: str, why: str) -> Standing:
        s.exit, s.left_after_round, s.why = exit_, self.rounds, why
        figures = self.figures(s.name, 0.025)
        if figures is not None:
            s.speed95, s.gain95 = figures
        return s

    def out_of_budget(self) -> list[Standing]:
        """The race stops: every candidate still racing leaves, undecided."""
        return [self._leave(s, Exit.BUDGET, f"{s.n} paired seeds when the budget ran out")
                for s in self.standings.values() if s.racing]

    def seeds_to_decide(self, name: str, power: float = 0.8, most: int = 100) -> int | None:
        """About how many paired seeds would likely show ``name`` faster and non-inferior at the level of one
        look with all of its alpha (its current estimates and the pooled noise taken as the truth); None when
        its estimates cannot be shown (not faster, or beyond the margin) or need more than ``most``."""
        level = self.rules.share(self.family())
        figures = self.figures(name, level)
        if figures is None:
            return None
        standing, need = self.standings[name], 0
        for b, null in zip(figures, (0.0, -self.max_drop)):
            room = b.estimate - null
            if room <= 0:
                return None
            if not math.isfinite(b.low):
                return None
            # the bound's half-width shrinks as 1/sqrt(n); with 80% power the estimate must clear it by z_power more
            se_now = (b.estimate - b.low) / t_quantile(1 - level, b.df)
            z = t_quantile(1 - level, max(b.df, 30)) + float(_st.norm.ppf(power))
            need = max(need, math.ceil(standing.n * (z * se_now / room) ** 2))
        return max(need, self.rules.min_seeds) if need <= most else None

    def record_note(self) -> str:
        """One line when the race set the device's record aside, or a run (empty otherwise)."""
        speed_fit, gain_fit = self._fits()
        notes = []
        for what, check in zip(("speed log-sd", "objective gain sd"), self._checks(speed_fit, gain_fit)):
            if check.state == "disagrees":
                notes.append(f"{what} {check.own_paired:.3g} per paired seed against the record's "
                             f"(F-test p = {check.p:.2g})")
        text = (f"the device's noise record ({self.rules.noise_source}) disagrees with this race's own runs ("
                + "; ".join(notes) + "): set aside for this race's claims") if notes else ""
        aside = [f"round {r + 1} {name or 'baseline'}" for r, name in (*speed_fit.set_aside, *gain_fit.set_aside)]
        if aside:
            text += ("; " if text else "") + "runs set aside as far off the model: " + ", ".join(aside)
        return text

    def measured(self) -> tuple[tuple[float, int], tuple[float, int]]:
        """What this race measured of the noise, for the device's record: the residual sum of squares per run and
        its degrees of freedom, of the log speed-up and of the objective gain (the prior not included)."""
        speed_fit, gain_fit = self._fits()
        return (speed_fit.ss, speed_fit.df), (gain_fit.ss, gain_fit.df)
