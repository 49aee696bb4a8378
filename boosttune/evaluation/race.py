"""The racing confirm stage: candidates leave the race as soon as their paired seeds decide them.

A fixed number of seeds per candidate spends as much on a recipe decided after one round (three times
slower than the baseline) as on one that needs ten. Racing, as SMAC's intensification and irace/F-race
do, spends the seeds where the answer is still open. Every round trains the O0 baseline and every
candidate still racing on the round's seed (paired, interleaved: :func:`~boosttune.evaluation.confirm.paired_schedule`);
after the round each candidate is judged on its paired rounds so far:

- **won** ("shown faster and non-inferior"): the one-sided lower bound of its mean log speed-up is above 0
  *and* that of its mean objective gain is above ``-max_drop``, both at the level the multiplicity rule
  gives it now (an intersection-union test: the claim needs both, each at that level). Never on fewer
  than ``min_seeds`` paired seeds (3): with 2, the t-interval has one degree of freedom and its spread
  rests on a single difference, so a "win" would be the luck of two seeds agreeing; 3 is the fewest
  with a usable spread, and irace's first block is of that size too.
- **slower**: shown slower than the baseline; **too lossy**: shown worse than ``-max_drop``;
  **behind**: its speed-up is shown below a winner's, so it cannot be the answer (the fastest winner).
  These drops claim nothing, so they spend no error rate; they use the usual two-sided 95% interval,
  with the spread taken as at least the machine's known noise (``speed_noise``: per-round log
  speed-up, ``gain_noise``: per-seed objective gain) so that a recipe twice as slow leaves after one
  round, before a t-interval exists, and a lucky small spread cannot drop a recipe.
- otherwise it races on, until it has ``max_seeds`` paired seeds (**undecided**) or the budget (runs
  or minutes) cannot pay for the next round (**budget**).

**Multiplicity.** Several candidates are tested against one baseline, and each is looked at after
every round. A false claim is a "won" for a recipe that is not faster, or not within ``max_drop``.
Its chance over the whole race is held at ``alpha`` (one-sided) by a Holm step over the candidates
with alpha spent across the looks: a candidate with ``n`` paired seeds may claim at level
``alpha / (K - W) * (s(n) - s(n - 1))``, where ``K`` is the number of candidates, ``W`` the winners
already declared (Holm's step-down: a winner's share passes to the others, by the graphical
approach of Maurer and Bretz, 2013), and ``s`` a linear spending function over the looks at
``min_seeds .. max_seeds`` seeds (``s(max_seeds) = 1``; ``max_seeds`` no more than the run budget can pay
for one candidate, so no alpha goes to looks that cannot happen). The looks are combined by the union bound,
which needs no assumption on how they correlate (exact group-sequential boundaries for a t-test
with unknown variance have no closed form); it is conservative. ``tests/test_race.py`` checks the
rate on simulated races with known truth.

Pure: numpy and scipy, no Ray, no MindSpore; the confirm stage, the summary (which replays the race
from the stored runs, so ``boosttune export --max-drop`` re-judges it) and
``benchmarks/confirm_reliability.py`` share it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any, Mapping

import numpy as np
from scipy import stats as _st

from boosttune.errors import ConfigError

__all__ = ["Exit", "Race", "RaceRules", "Standing", "claim_level"]


class Exit:
    """Why a candidate left the race (``race_exit`` in summary.csv)."""

    RACING = "racing"
    WON = "won"  # shown faster and non-inferior
    SLOWER = "slower"
    TOO_LOSSY = "too_lossy"
    BEHIND = "behind"  # shown slower than a winner: cannot be the answer
    UNDECIDED = "undecided"  # max_seeds reached
    BUDGET = "budget"  # the budget could not pay for another round

    TEXT = {RACING: "still racing", WON: "shown faster and non-inferior", SLOWER: "shown slower than the baseline",
            TOO_LOSSY: "shown worse than the margin", BEHIND: "shown slower than a winner, so it cannot be the answer",
            UNDECIDED: "undecided at the seed cap", BUDGET: "undecided when the budget ran out"}


@dataclass(frozen=True)
class RaceRules:
    """How the race decides and what it may spend (see the module's docstring)."""

    alpha: float = 0.05
    min_seeds: int = 3
    max_seeds: int = 10
    max_runs: int | None = None
    max_minutes: float | None = None
    speed_noise: float = 0.10  # per-round sd of log(recipe/baseline throughput) at least: this machine's +-10%
    gain_noise: float | None = None  # per-seed sd of the objective gain at least (gain units); None: no floor
    drop_confidence: float = 0.95  # two-sided: the interval the drops use

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ConfigError(f"confirm_alpha: must be strictly between 0 and 1, got {self.alpha!r}")
        if not 3 <= self.min_seeds <= self.max_seeds:
            raise ConfigError(f"confirm_max_seeds: need 3 <= min_seeds <= max_seeds, got min_seeds={self.min_seeds}, "
                              f"max_seeds={self.max_seeds} (a claim needs a t-interval with a usable spread: 3 seeds "
                              "or more)")
        if self.max_runs is not None and self.max_runs < 2:
            raise ConfigError(f"confirm_budget_runs: must be >= 2 (one round of a candidate and the baseline), "
                              f"got {self.max_runs}")
        if self.max_minutes is not None and not self.max_minutes > 0:
            raise ConfigError(f"confirm_budget_minutes: must be > 0, got {self.max_minutes}")

    def spent(self, n: int) -> float:
        """The share of a candidate's alpha spent by its look at ``n`` paired seeds (0 before min_seeds)."""
        looks = self.max_seeds - self.min_seeds + 1
        return min(1.0, max(0, n - self.min_seeds + 1) / looks)

    def fits(self, cost: int, runs_spent: int, seconds_spent: float, seconds_per_run: float | None) -> bool:
        """Whether the budget pays for a round of ``cost`` runs."""
        if self.max_runs is not None and runs_spent + cost > self.max_runs:
            return False
        if self.max_minutes is not None and seconds_per_run is not None:
            return seconds_spent + cost * seconds_per_run <= 60 * self.max_minutes
        return True

    def within_budget(self, candidates: int) -> RaceRules:
        """The rules with ``max_seeds`` no more than a run budget can ever pay for one candidate (all the others
        leaving after the first round, each round after that one candidate and the baseline): the looks past
        it never happen, so no alpha is spent on them. Decided before the race, from the budget alone."""
        if self.max_runs is None:
            return self
        reachable = 1 + (self.max_runs - (candidates + 1)) // 2 if self.max_runs >= candidates + 1 else 0
        return replace(self, max_seeds=max(self.min_seeds, min(self.max_seeds, reachable)))

    def budget_text(self) -> str:
        parts = ([f"{self.max_runs} runs"] if self.max_runs is not None else []) + \
            ([f"{self.max_minutes:g} minutes"] if self.max_minutes is not None else [])
        return " and ".join(parts) or "no limit"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def claim_level(rules: RaceRules, n: int, candidates: int, winners: int) -> float:
    """The one-sided level a candidate with ``n`` paired seeds may claim at (Holm over the candidates, the union
    bound over its looks)."""
    if n < rules.min_seeds or n > rules.max_seeds:
        return 0.0
    return rules.alpha / max(1, candidates - winners) * (rules.spent(n) - rules.spent(n - 1))


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

    @property
    def n(self) -> int:
        return len(self.log_speedups)

    @property
    def racing(self) -> bool:
        return self.exit == Exit.RACING

    @property
    def speedup(self) -> float:
        return math.exp(float(np.mean(self.log_speedups))) if self.log_speedups else math.nan


@lru_cache(maxsize=4096)
def _t_quantile(p: float, df: int) -> float:
    return float(_st.t.ppf(p, df))


@lru_cache(maxsize=64)
def _z_quantile(p: float) -> float:
    return float(_st.norm.ppf(p))


def _t_bound(values: list[float], level: float, upper: bool) -> float:
    """One-sided (1 - level) t bound of the mean; -inf/+inf when it does not exist."""
    x = np.asarray(values, float)
    if x.size < 2 or level <= 0:
        return math.inf if upper else -math.inf
    mean, sem = float(x.mean()), float(x.std(ddof=1)) / math.sqrt(x.size)
    q = _t_quantile(1 - level, x.size - 1)
    return mean + q * sem if upper else mean - q * sem


def _drop_bounds(values: list[float], noise: float | None, confidence: float) -> tuple[float, float]:
    """The two-sided interval the drops use: spread at least ``noise``; a t quantile on the sample's own spread,
    a normal one on the floor (the floor is known, not estimated)."""
    x = np.asarray(values, float)
    if x.size == 0:
        return -math.inf, math.inf
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if x.size >= 2 else 0.0
    if noise is not None and noise >= sd:
        q, sd = _z_quantile(0.5 + confidence / 2), noise
    elif x.size >= 3:
        q = _t_quantile(0.5 + confidence / 2, x.size - 1)
    else:
        return -math.inf, math.inf
    half = q * sd / math.sqrt(x.size)
    return mean - half, mean + half


class Race:
    """The race's state: feed it each round's paired figures, ask it who still races.

    ``max_drop`` is in the objective's gain units (points for accuracy)."""

    def __init__(self, names: list[str], rules: RaceRules, max_drop: float):
        if not names:
            raise ConfigError("confirm: no candidate to race against the baseline")
        self.rules, self.max_drop = rules.within_budget(len(names)), float(max_drop)
        self.standings = {name: Standing(name) for name in names}
        self.rounds = 0

    @classmethod
    def at_once(cls, ratios: Mapping[str, Any], gains: Mapping[str, Any], alpha: float, max_drop: float) -> Race:
        """One look at every seed, all of ``alpha`` spent there (the answer all the seeds give): ``ratios[name]``
        and ``gains[name]`` are the per-seed throughput ratios and objective gains."""
        n = len(next(iter(ratios.values())))
        race = cls(list(ratios), RaceRules(alpha=alpha, min_seeds=n, max_seeds=n), max_drop)
        for name, standing in race.standings.items():
            standing.log_speedups = [math.log(float(r)) for r in ratios[name]]
            standing.gains = [float(g) for g in gains[name]]
        race.rounds = n
        race._judge(list(race.standings.values()))
        return race

    @property
    def racing(self) -> list[str]:
        return [s.name for s in self.standings.values() if s.racing]

    @property
    def winners(self) -> list[Standing]:
        return [s for s in self.standings.values() if s.exit == Exit.WON]

    def answer(self) -> str | None:
        """The fastest winner (its mean speed-up), or None."""
        won = self.winners
        return max(won, key=lambda s: s.speedup).name if won else None

    def observe(self, seed: int, figures: Mapping[str, tuple[float, float] | None]) -> list[Standing]:
        """One round: ``figures[name]`` = (throughput ratio to the round's baseline, objective gain), None for a
        failed run. Returns the standings that left the race in this round."""
        self.rounds += 1
        for name, pair in figures.items():
            standing = self.standings[name]
            if not standing.racing:
                raise ConfigError(f"confirm: {name!r} ran in round {self.rounds} after it left the race")
            standing.runs += 1
            if pair is not None and all(math.isfinite(v) for v in pair) and pair[0] > 0:
                standing.seeds.append(int(seed))
                standing.log_speedups.append(math.log(pair[0]))
                standing.gains.append(float(pair[1]))
        return self._judge([self.standings[n] for n in figures])

    def _judge(self, ran: list[Standing]) -> list[Standing]:
        left = []
        # Holm's step-down within the look: the strongest claims first, each winner raising the others' level
        for standing in sorted(ran, key=self._claim_strength, reverse=True):
            if self._claims(standing):
                left.append(self._leave(standing, Exit.WON, self._won_text(standing)))
        for standing in ran:
            if standing.racing:
                exit_ = self._dropped(standing)
                if exit_ is not None:
                    left.append(self._leave(standing, *exit_))
        best = max((w.speedup for w in self.winners), default=None)
        for standing in self.standings.values():  # a new winner can put a racer out of reach
            if standing.racing and best is not None:
                _, high = _drop_bounds(standing.log_speedups, self.rules.speed_noise, self.rules.drop_confidence)
                if high < math.log(best):
                    left.append(self._leave(standing, Exit.BEHIND, f"speed-up at most {math.exp(high):.3f}x "
                                                                   f"(95%), below the winner's {best:.3f}x"))
        return left

    def _claim_strength(self, s: Standing) -> float:
        """How far the weaker of the two claims is from its null, in standard errors (ordering only)."""
        if s.n < 2:
            return -math.inf
        scores = []
        for values, null in ((s.log_speedups, 0.0), (s.gains, -self.max_drop)):
            sd = float(np.std(values, ddof=1))
            scores.append((float(np.mean(values)) - null) / (sd / math.sqrt(s.n)) if sd > 0 else
                          (math.inf if float(np.mean(values)) > null else -math.inf))
        return min(scores)

    def _claims(self, s: Standing) -> bool:
        level = claim_level(self.rules, s.n, len(self.standings), len(self.winners))
        return (level > 0 and _t_bound(s.log_speedups, level, upper=False) > 0
                and _t_bound(s.gains, level, upper=False) > -self.max_drop)

    def _dropped(self, s: Standing) -> tuple[str, str] | None:
        _, speed_high = _drop_bounds(s.log_speedups, self.rules.speed_noise, self.rules.drop_confidence)
        if speed_high < 0:
            return Exit.SLOWER, f"speed-up at most {math.exp(speed_high):.3f}x (95%)"
        _, gain_high = _drop_bounds(s.gains, self.rules.gain_noise, self.rules.drop_confidence)
        if gain_high < -self.max_drop:
            return Exit.TOO_LOSSY, f"objective gain at most {gain_high:+.3g} (95%), below -{self.max_drop:g}"
        if s.n >= self.rules.max_seeds:
            return Exit.UNDECIDED, f"{s.n} paired seeds, the most the rules allow (confirm_max_seeds, or the budget)"
        return None

    def _won_text(self, s: Standing) -> str:
        level = claim_level(self.rules, s.n, len(self.standings), len(self.winners))
        return (f"{s.speedup:.3f}x, objective gain {np.mean(s.gains):+.3g}, both shown at one-sided level "
                f"{level:.2g} after {s.n} seeds")

    def _leave(self, s: Standing, exit_: str, why: str) -> Standing:
        s.exit, s.left_after_round, s.why = exit_, self.rounds, why
        return s

    def out_of_budget(self) -> list[Standing]:
        """The race stops: every candidate still racing leaves, undecided."""
        return [self._leave(s, Exit.BUDGET, f"{s.n} paired seeds when the budget ran out")
                for s in self.standings.values() if s.racing]
