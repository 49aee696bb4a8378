"""The handoff from the search to the confirm race: which searched recipes are worth racing.

The race can decide a recipe well inside the margin in a few seeds, but one near it (-0.8 pt on the search's one
seed) stays undecided and eats the budget; and three freeze_p values of one recipe race each other for one answer.
So a searched trial is a candidate by its chance of being acceptable (truly faster, and truly within ``max_drop``)
given its one seed and the device's noise per paired seed: among those at least MIN_P_ACCEPTABLE likely, the highest
expected gain (that chance times the log speed-up its seed showed) first, one per family (the boost algorithms it
switches on) before any family gets a second place, and none to a near-copy of one chosen (:func:`near_copy`). A
search trial's one seed is read with the search's own noise (:func:`search_noise`), not a confirm round's. Pure: no
Ray, no MindSpore.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Sequence

from scipy.stats import norm

from boosttune.errors import ConfigError

__all__ = ["MIN_P_ACCEPTABLE", "NEAR_COPY_Z", "Choice", "Prospect", "choose", "family_text", "near_copy",
           "observed_spread", "prospect", "search_noise", "slowest_handed_on"]

# A searched trial races only when it is at least this likely acceptable on its one seed, read with the search's
# noise (search_noise). benchmarks/pipeline_replay.py, the whole main job replayed on the committed tables with the
# search's own noise (300 replays, 10-epoch jobs): the bar at 0.5 with a paired round's noise, as it was, answered
# acceptably in 75%; at 0.2 with the search's noise, 95%; at 0.1, 98%, and 94% where the search's runs spread twice
# as much. The race's drops and its futility rule cost a hopeless candidate one to three runs; a recipe left out
# here can never be the answer. benchmarks/confirm_reliability.py ("the handoff") prints the bar at 0.8 and 0.9 too.
MIN_P_ACCEPTABLE = 0.1

# A search trial's figures are noisier than a paired confirm round's, and the device's record measures the latter:
# - its run and the baseline's are spread over the search, not interleaved. O0's throughput has a log-sd of 0.0755
#   over the 12 reference reruns of benchmarks/data/search_table (one seed, spread over a whole search) against 0.057
#   over the confirm table's interleaved rounds: 0.0495 more per run. On 2026-11-27 the same machine moved more: in
#   three main jobs the baseline stage's O0 ran at +30%, -2% and -8% of the same O0 in the confirm stage minutes
#   later. The handoff assumes 0.1 per run: the replay at a spread of 0.05 and of 0.1 answers acceptably in 98% and
#   94% of 10-epoch jobs with it, against 97% and 89% when it assumes 0.0495;
# - its objective is the last epoch's on the val_limit slice, not a final evaluation on every held-out sample: the
#   confirm table's paired accuracy gain has an sd of 0.53 pt per seed on the 2,000-image slice against 0.34 pt on
#   all 10,000 (pooled over its nine recipes), so sqrt(0.53^2 - 0.34^2) = 0.40 pt more.
SEARCH_SPREAD_SD = 0.1
SLICE_GAIN_SD = 0.40

# Two trials of one kin are near-copies when their speed-ups and gains differ by less than this many sd of the
# difference of two one-seed figures (each read with the search's noise). benchmarks/pipeline_replay.py, 2026-11-29:
# at 1.0 sd the race spent 19% fewer runs but answered acceptably 8-11 points less often (two freeze_p values of one
# kin whose truths differ raced one at a time); at 0.5 sd, 5% fewer runs for 0.4-1.7 points; at 0.25, 1% fewer.
NEAR_COPY_Z = 0.5


def observed_spread(o0_speeds: Sequence[float]) -> float:
    """The spread a run's speed showed in this search: the sample sd of the log throughputs of O0's runs (the
    baseline stage's and the search's own), never below SEARCH_SPREAD_SD. benchmarks/data/transfer/team-seq-12ep
    (seed 27): O0's two runs 1.56x apart (a log-sd of 0.31 a run), where the handoff assumed 0.1 and read
    GradientFreeze p=0.7 on 2 groups, 1.27x per job at the planned job, at 0.81x and 9% likely faster."""
    logs = [math.log(v) for v in o0_speeds if v > 0 and math.isfinite(v)]
    if len(logs) < 2:
        return SEARCH_SPREAD_SD
    mean = sum(logs) / len(logs)
    return max(SEARCH_SPREAD_SD, math.sqrt(sum((v - mean) ** 2 for v in logs) / (len(logs) - 1)))


def search_noise(speed_sd: float, gain_sd: float | None, fraction: bool = True,
                 spread: float = SEARCH_SPREAD_SD) -> tuple[float, float | None]:
    """The noise of a search trial's one-seed figures against the baseline's, from the device's noise per paired
    confirm round: each of the two runs spread in time (``spread``, at least SEARCH_SPREAD_SD), and an accuracy read
    on the val_limit slice (SLICE_GAIN_SD; ``fraction`` False: another objective, its gain noise as given)."""
    speed = math.sqrt(speed_sd ** 2 + 2 * max(spread, SEARCH_SPREAD_SD) ** 2)
    gain = gain_sd if gain_sd is None or not fraction else math.sqrt(gain_sd ** 2 + SLICE_GAIN_SD ** 2)
    return speed, gain


def slowest_handed_on(speed_sd: float, o0_speeds: Sequence[float], own_sd: float = 0.0,
                      min_p: float = MIN_P_ACCEPTABLE) -> float:
    """The one-seed speed-up below which the handoff never races a searched trial: under it the trial is less than
    ``min_p`` likely faster (:func:`prospect`'s ``p_faster`` with the search's noise, :func:`search_noise` at the
    spread O0's runs ``o0_speeds`` show), so less than ``min_p`` likely acceptable, whatever its accuracy. The
    search stops such a trial at a rung (issue 62: a trial that cannot be handed on spends no more epochs).
    ``own_sd``: the reading's own log sd (a rung's throughput read on one epoch's steps), added to the search's."""
    if not speed_sd > 0 or not own_sd >= 0:
        raise ConfigError(f"noise: speed_sd must be > 0 and own_sd >= 0, got {speed_sd!r}, {own_sd!r}")
    if not 0 < min_p < 1:
        raise ConfigError(f"min_p: must be in (0, 1), got {min_p!r}")
    sd, _ = search_noise(speed_sd, None, spread=observed_spread(o0_speeds))
    return math.exp(float(norm.ppf(min_p)) * math.hypot(sd, own_sd))


@dataclass(frozen=True)
class Prospect:
    """A searched trial as the handoff sees it: its one seed's speed-up and objective gain against the baseline, and
    the chance that its true figures are faster (``p_faster``) and within the margin (``p_within``)."""

    key: Hashable
    family: tuple[str, ...]
    speedup: float
    gain: float
    p_faster: float
    p_within: float
    kin: Hashable = None  # what it is apart from its continuous knobs (config.recipe.kin_of); None: its key

    @property
    def p_acceptable(self) -> float:
        return self.p_faster * self.p_within

    @property
    def expected_gain(self) -> float:
        """The log speed-up its seed showed, weighted by the chance it is acceptable: what racing it is worth."""
        return self.p_acceptable * math.log(self.speedup)


def prospect(key: Hashable, family: Sequence[str], speedup: float, gain: float, *, max_drop: float,
             speed_sd: float, gain_sd: float | None, screen: float | None = None, kin: Hashable = None) -> Prospect:
    """The chance a trial is acceptable from its one seed: its log speed-up and its gain each read as the truth plus
    one paired seed's noise (normal, sd ``speed_sd`` and ``gain_sd``, a flat prior), the two independent; so the
    truth given the seed is normal around what the seed showed. ``gain_sd`` None (the objective's noise unknown):
    ``p_within`` is 1 inside ``screen`` (the gain units' looser one-seed screen), else 0."""
    if not (speedup > 0 and math.isfinite(speedup) and math.isfinite(gain)):
        raise ConfigError(f"prospect {key!r}: speedup must be finite and > 0 and gain finite, got {speedup!r}, {gain!r}")
    if not speed_sd > 0 or (gain_sd is not None and not gain_sd > 0):
        raise ConfigError(f"noise: speed_sd and gain_sd must be > 0 (gain_sd may be unset), got {speed_sd!r}, "
                          f"{gain_sd!r}")
    p_faster = float(norm.cdf(math.log(speedup) / speed_sd))
    if gain_sd is not None:
        p_within = float(norm.cdf((gain + max_drop) / gain_sd))
    else:
        p_within = 1.0 if gain >= -(max_drop if screen is None else screen) else 0.0
    return Prospect(key, tuple(sorted(family)), speedup, gain, p_faster, p_within, kin)


def near_copy(a: Prospect, b: Prospect, speed_sd: float, gain_sd: float | None, z: float = NEAR_COPY_Z) -> bool:
    """Whether ``a`` and ``b`` are the same recipe as far as the search can tell (issue 62: grad_freeze p=0.512 on 2
    groups + a fixed loss scale raced to round 7 after p=0.5 on 2 groups had won): one kin (the same methods and
    discrete settings, only numbers like freeze_p or the learning rate apart) and one-seed figures within ``z`` sd
    of their difference (``speed_sd``, ``gain_sd``: one trial's noise, as :func:`search_noise` gives it; gain_sd
    None: the gains are not compared)."""
    if a.kin is None or a.kin != b.kin:
        return False
    apart = z * math.sqrt(2)
    if abs(math.log(a.speedup) - math.log(b.speedup)) > apart * speed_sd:
        return False
    return gain_sd is None or abs(a.gain - b.gain) <= apart * gain_sd


@dataclass(frozen=True)
class Choice:
    """A prospect chosen for the race, with how the family rule let it in."""

    prospect: Prospect
    family_rule: str


def family_text(family: Sequence[str]) -> str:
    return " + ".join(family) or "no boost"


def choose(prospects: Sequence[Prospect], max_candidates: int, min_p: float = MIN_P_ACCEPTABLE,
           noise: tuple[float, float | None] | None = None) -> list[Choice]:
    """Up to ``max_candidates`` prospects at least ``min_p`` likely acceptable, by expected gain (the chance times
    the log speed-up on their seed), the best of each family before a second of any family: a family gets a second
    place only when no other family qualifies for it. A near-copy of a recipe chosen before it gets no place
    (:func:`near_copy` at ``noise``, one trial's (speed sd, gain sd); None: no near-copy rule): a fixed loss scale at
    fp32 makes another family by name, not another recipe."""
    if not 0 <= min_p < 1:
        raise ConfigError(f"min_p: must be in [0, 1), got {min_p!r}")
    likely = sorted((p for p in prospects if p.p_acceptable >= min_p), key=lambda p: -p.expected_gain)
    counts = {p.family: sum(q.family == p.family for q in likely) for p in likely}
    firsts: list[Choice] = []
    seconds: list[Choice] = []
    for p in likely:
        if noise is not None and any(near_copy(c.prospect, p, *noise) for c in firsts + seconds):
            continue  # the same recipe as far as the search can tell, whatever its family's name
        taken = [c for c in firsts if c.prospect.family == p.family]
        if not taken:
            others = counts[p.family] - 1
            rule = (f"the best of {counts[p.family]} likely in family {family_text(p.family)}" if others
                    else f"the only likely one in family {family_text(p.family)}")
            firsts.append(Choice(p, rule))
        else:
            seconds.append(Choice(p, f"another of family {family_text(p.family)}: no other family was likely "
                                     "enough for this place"))
    return (firsts + seconds)[:max(0, max_candidates)]
