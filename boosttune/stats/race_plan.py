"""What a race can show at a noise, and what an undecided race leaves: the power of its group-sequential design,
the seeds and budget a margin needs, the lead with its chance and the command that decides it.

A lossless recipe (true objective change 0) must be shown within the margin: its gain's one-sided test at the first
claim's level over looks at ``min_seeds`` up to a cap, with ``margin / sd`` of drift a paired seed (normal
approximation: the t statistics' small df cost a little more). Said before the race and in its answer when the
budget falls short (issue 76). Why: docs/design/race.md ("What a race can show").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as _st

from boosttune.stats.decisions import Exit
from boosttune.stats.job import TIE
from boosttune.stats.race import Race
from boosttune.stats.sequential import boundaries, crossing_probabilities

__all__ = ["Lead", "Plan", "first_claim_level", "largest_noise", "lead", "own_gain_noise", "plan", "power"]

POWER = 0.8
MOST_SEEDS = 60


def power(seeds: int, sd: float, room: float, alpha: float, min_seeds: int, gamma: float) -> float:
    """The chance a recipe ``room`` above its null (objective units) is shown by a cap of ``seeds`` paired seeds, at a
    noise of ``sd`` per paired seed and one-sided ``alpha`` spent over the looks ``min_seeds .. seeds``."""
    if seeds < min_seeds or not (sd > 0 and math.isfinite(sd)):
        return 0.0
    looks = tuple(range(min_seeds, seeds + 1))
    return min(1.0, float(sum(crossing_probabilities(looks, boundaries(looks, alpha, gamma), room / sd))))


@dataclass(frozen=True)
class Plan:
    """What showing a lossless recipe within ``margin`` takes at ``sd``: ``seeds`` (None: more than MOST_SEEDS) and
    the ``runs`` of a race of ``candidates`` that gives the lead that many (every candidate ``min_seeds`` rounds,
    then the lead and the baseline alone), and the ``power`` the race's own cap and budget give."""

    sd: float
    margin: float
    seeds: int | None
    runs: int | None
    power: float
    cap: int

    @property
    def short(self) -> bool:
        return self.power < POWER

    def text(self, budget: str, unit: str) -> str:
        need = (f"about {self.seeds} paired seeds for the lead (a budget of about {self.runs} runs: "
                f"--set confirm_budget_runs={self.runs})"
                if self.seeds is not None else f"more than {MOST_SEEDS} paired seeds")
        return (f"at {self.sd:.3g} {unit} per paired seed, a lossless recipe is shown within the margin ({self.margin:g} "
                f"{unit}) "
                f"in about {100 * self.power:.0f}% of races by this race's cap of {self.cap} seeds and budget of "
                f"{budget}; {100 * POWER:.0f}% needs {need}")


def plan(sd: float, margin: float, candidates: int, alpha: float, min_seeds: int, cap: int, gamma: float) -> Plan:
    """The plan for ``candidates`` raced against the baseline (``cap``: the most paired seeds the race's cap and
    budget give one candidate; ``alpha``: the first claim's level, over the looks)."""
    seeds = next((n for n in range(min_seeds, MOST_SEEDS + 1)
                  if power(n, sd, margin, alpha, min_seeds, gamma) >= POWER), None)
    runs = None if seeds is None else (candidates + 1) * min_seeds + 2 * (seeds - min_seeds)
    return Plan(sd, margin, seeds, runs, power(cap, sd, margin, alpha, min_seeds, gamma), cap)


def first_claim_level(race: Race) -> tuple[float, int]:
    """The alpha of a race's first claim over its looks (Holm's first step: over every candidate) and the most paired
    seeds its cap and budget give one candidate (its last look)."""
    return race.rules.share(len(race.standings)), race.rules.max_seeds


def race_plan(race: Race, sd: float) -> Plan:
    """:func:`plan` for ``race``'s candidates, cap and budget at a noise of ``sd`` per paired seed."""
    alpha, cap = first_claim_level(race)
    return plan(sd, race.max_drop, len(race.standings), alpha, race.rules.min_seeds, cap, race.rules.spending_gamma)


def largest_noise(race: Race) -> float:
    """The largest objective noise per paired seed at which ``race``'s cap and budget show a lossless recipe within
    the margin in POWER of races (bisection on the noise)."""
    alpha, cap = first_claim_level(race)
    low, high = 1e-3 * race.max_drop, 10.0 * race.max_drop
    for _ in range(30):
        middle = math.sqrt(low * high)
        if power(cap, middle, race.max_drop, alpha, race.rules.min_seeds, race.rules.spending_gamma) >= POWER:
            low = middle
        else:
            high = middle
    return low


def own_gain_noise(race: Race) -> tuple[float, int]:
    """The objective noise per paired seed this race measured on its own runs (no record, no prior) and its df."""
    _, (ss, df) = race.measured()
    return (math.sqrt(2.0 * ss / df), df) if df > 0 else (math.nan, 0)


@dataclass(frozen=True)
class Lead:
    """The undecided candidate most likely acceptable: its per-job speed-up and objective change with 95% intervals,
    the chance it is more than a tie faster and within the margin (a rough reading of those intervals, taken as
    independent t distributions: not a guarantee), and the fresh paired seeds likely to decide it (None: its
    estimates cannot be shown, or need too many)."""

    name: str
    n: int
    speedup: tuple[float, float, float]
    gain: tuple[float, float, float]
    chance: float
    seeds: int | None


def _above(estimate: float, low: float, df: int, null: float) -> float:
    """P(true > null) reading a 95% interval's lower side as a t distribution with ``df``."""
    if df <= 0 or not (math.isfinite(low) and estimate > low):
        return math.nan
    se = (estimate - low) / float(_st.t.ppf(0.975, df))
    return float(_st.t.cdf((estimate - null) / se, df))


def lead(race: Race) -> Lead | None:
    """The lead of a race that ended with candidates undecided (at the cap, the budget, or futile); None when none."""
    open_ = [s for s in race.standings.values()
             if s.exit in (Exit.UNDECIDED, Exit.BUDGET, Exit.FUTILE) and s.speed95 is not None and s.gain95 is not None]
    leads = []
    for s in open_:
        speed, gain = s.speed95, s.gain95
        chance = _above(speed.estimate, speed.low, speed.df, math.log(1 + TIE)) * \
            _above(gain.estimate, gain.low, gain.df, -race.max_drop)
        if math.isfinite(chance):
            leads.append(Lead(s.name, s.n, tuple(math.exp(v) for v in (speed.estimate, speed.low, speed.high)),
                              (gain.estimate, gain.low, gain.high), chance, race.seeds_to_decide(s.name, most=60)))
    return max(leads, key=lambda lead_: lead_.chance, default=None)


def before_race(race: Race, gain_sd: float | None, measured_df: int, unit: str) -> str:
    """What the confirm stage says before its first round: with a record of this workload's objective noise, whether
    the budget shows the margin at it (empty when it does); without one, the largest noise the budget can take."""
    budget = race.rules.budget_text()
    if gain_sd is not None and measured_df > 0:
        p = race_plan(race, gain_sd)
        return f"the budget falls short: {p.text(budget, unit)}" if p.short else ""
    return (f"this network's objective noise is not measured yet: the cap of {first_claim_level(race)[1]} seeds and "
            f"the budget of {budget} show a lossless recipe within the margin in {100 * POWER:.0f}% of races up to "
            f"{largest_noise(race):.3g} {unit} per paired seed; the race measures it and says if it is more")


def after_race(race: Race, unit: str) -> str:
    """What the answer says when the race's own runs show the budget could not show the margin (empty otherwise)."""
    sd, df = own_gain_noise(race)
    if df < 2 or not math.isfinite(sd):
        return ""
    p = race_plan(race, sd)
    return f"at this network's objective noise as the race measured it ({df} df): " \
           f"{p.text(race.rules.budget_text(), unit)}" if p.short else ""
