"""boosttune.stats.handoff: which searched recipes the confirm race gets."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from boosttune.errors import ConfigError
from boosttune.objective import ACCURACY
from boosttune.tables.results import build_results_table
from boosttune.stages.rounds import pick_candidates
from boosttune.stats.handoff import choose, near_copy, prospect
from boosttune.stats.margin import Margin
from boosttune.stats.race import Noise

NOISE = dict(max_drop=1.0, speed_sd=0.059, gain_sd=0.382)
GF = ("grad_freeze",)


def test_the_chances_are_the_normal_tails_of_the_planted_figures():
    p = prospect("a", GF, 1.10, -0.5, **NOISE)
    assert p.p_faster == pytest.approx(norm.cdf(math.log(1.10) / 0.059))  # 0.947
    assert p.p_within == pytest.approx(norm.cdf(0.5 / 0.382))  # 0.905
    assert p.p_acceptable == pytest.approx(p.p_faster * p.p_within) and 0.85 < p.p_acceptable < 0.86
    at_margin = prospect("b", GF, 2.0, -1.0, **NOISE)
    assert at_margin.p_within == pytest.approx(0.5) and at_margin.p_faster > 0.999
    assert prospect("c", GF, 1.0, 0.0, **NOISE).p_faster == pytest.approx(0.5)
    # twice the noise: the same seed is less telling
    assert prospect("a", GF, 1.10, -0.5, max_drop=1.0, speed_sd=0.118, gain_sd=0.764).p_acceptable < 0.7


def test_without_the_objectives_noise_the_screen_decides_the_gain():
    inside = prospect("a", (), 1.2, -0.04, max_drop=0.01, speed_sd=0.059, gain_sd=None, screen=0.05)
    outside = prospect("b", (), 1.2, -0.06, max_drop=0.01, speed_sd=0.059, gain_sd=None, screen=0.05)
    assert inside.p_within == 1.0 and outside.p_within == 0.0
    with pytest.raises(ConfigError, match="speed_sd and gain_sd must be > 0"):
        prospect("a", (), 1.2, 0.0, max_drop=1.0, speed_sd=0.0, gain_sd=0.4)
    with pytest.raises(ConfigError, match="min_p: must be in"):
        choose([inside], 3, min_p=1.0)


def test_a_near_margin_fast_recipe_loses_to_a_slightly_slower_clearly_acceptable_one():
    near = prospect("near", GF, 1.31, -0.8, **NOISE)  # the grad_freeze p=0.195: 70% within the margin
    clear = prospect("clear", ("less_bn",), 1.25, +0.1, **NOISE)
    assert near.p_within == pytest.approx(norm.cdf(0.2 / 0.382)) and 0.69 < near.p_acceptable < 0.71
    assert near.expected_gain == pytest.approx(near.p_acceptable * math.log(1.31))
    assert [c.prospect.key for c in choose([near, clear], 1)] == ["clear"]  # 0.70 x log 1.31 < 1.00 x log 1.25
    assert [c.prospect.key for c in choose([near, clear], 2)] == ["clear", "near"]  # other families: both race
    assert [c.prospect.key for c in choose([near, clear], 2, min_p=0.8)] == ["clear"]  # a higher bar: near stays out


def test_three_members_of_one_family_give_one_candidate_when_another_family_qualifies():
    members = [prospect(f"p={p}", GF, s, 0.0, **NOISE) for p, s in ((0.3, 1.30), (0.5, 1.25), (0.7, 1.20))]
    other = prospect("less_bn", ("less_bn",), 1.15, 0.0, **NOISE)
    chosen = choose(members + [other], 2)
    assert [c.prospect.key for c in chosen] == ["p=0.3", "less_bn"]
    assert "the best of 3 likely in family grad_freeze" in chosen[0].family_rule
    assert "the only likely one in family less_bn" in chosen[1].family_rule
    # a third place goes to a second member only because no other family is left for it
    third = choose(members + [other], 3)
    assert [c.prospect.key for c in third] == ["p=0.3", "less_bn", "p=0.5"]
    assert "no other family was likely enough" in third[2].family_rule
    # one family alone: its members fill the places, fastest first
    assert [c.prospect.key for c in choose(members, 3)] == ["p=0.3", "p=0.5", "p=0.7"]


def _record(trial_id, preset, sps, acc, boost):
    recipe = {"model": "lenet5", "epochs": 3, "seed": 0, "data": {"name": "digits"}, **boost}
    return {"trial_id": trial_id, "status": "completed", "preset": preset, "recipe": recipe,
            "metrics": {"throughput_sps": sps, "objective_value": acc}}


ONE_POINT = Margin(ACCURACY, 1.0)  # the old default: max_drop None, 1 point on accuracy


def test_pick_candidates_takes_max_drop_and_the_noise_and_says_why():
    freeze = {"boost_level": "O1", "boost_config_dict": {"boost": {"mode": "manual", "grad_freeze": True}}}
    table = build_results_table([
        _record("baseline", "O0", 100, 0.900, {}),
        _record("t1", None, 130, 0.888, {**freeze, "optimizer": {"learning_rate": 0.1}}),  # 1.3x, -1.2 pt
        _record("t2", None, 120, 0.902, {"amp_level": "O2"}),  # 1.2x, +0.2 pt
    ], ray_version="x")
    # read with the search's noise (search_noise): t1 is 36% likely within 1 pt, t2 97% likely acceptable
    # both at least MIN_P_ACCEPTABLE (20%) likely
    assert len(pick_candidates(table, margin=ONE_POINT, max_candidates=2)) == 3
    names = [c.name for c in pick_candidates(table, margin=ONE_POINT, max_candidates=2, min_p=0.5)]
    assert names[0] == "O0" and len(names) == 2 and "(t2)" in names[1]
    # within 2 pt, t1 is 98% likely: faster first
    loose = pick_candidates(table, margin=Margin(ACCURACY, 2.0), max_candidates=2)
    assert ["(t1)" in c.name for c in loose[1:]] == [True, False]
    assert "likely acceptable" in loose[1].why and "family" in loose[1].why
    noisy = Noise(speed_sd=0.5, gain_sd=3.0, df=10, source="measured")  # t2: 64% faster x 65% within = 42%
    assert [c.name for c in pick_candidates(table, margin=ONE_POINT, max_candidates=2, noise=noisy,
                                            min_p=0.5)] == ["O0"]


def test_a_near_copy_of_a_chosen_recipe_gets_no_second_place():
    # issue 62: p=0.512 on 2 groups + a fixed loss scale raced to round 7 beside p=0.5 on 2 groups, which had won
    kin = (("grad_freeze",), (("grad_freeze.param_groups", 2),), "momentum", "cosine")
    other_kin = (("grad_freeze",), (("grad_freeze.param_groups", 4),), "momentum", "cosine")
    noise = (0.157, 0.67)  # one trial's figures as the search reads them (search_noise of the device's record)
    winner = prospect("p=0.5", GF, 1.30, -0.3, **NOISE, kin=kin)
    copy = prospect("p=0.512 + fixed", GF + ("loss_scale fixed",), 1.27, -0.4, **NOISE, kin=kin)
    groups = prospect("p=0.39 on 4 groups", GF, 1.28, -0.3, **NOISE, kin=other_kin)
    clearly_slower = prospect("p=0.9", GF, 1.15, -0.3, **NOISE, kin=kin)  # log 1.30/1.15 = 0.12 > 0.5 x 1.41 x 0.157
    clearly_worse = prospect("p=0.2", GF, 1.31, -0.9, **NOISE, kin=kin)  # 0.6 pt apart > 0.5 x 1.41 x 0.67
    picked = [c.prospect.key for c in choose([winner, copy, groups, clearly_slower, clearly_worse], 5, noise=noise)]
    assert "p=0.512 + fixed" not in picked  # one kin, figures the search cannot tell apart
    assert picked[:2] == ["p=0.5", "p=0.39 on 4 groups"] or picked[:2] == ["p=0.39 on 4 groups", "p=0.5"]
    assert "p=0.39 on 4 groups" in picked  # another kin (4 groups): the search's figures alike, still raced
    assert "p=0.9" in picked and "p=0.2" in picked  # one kin, but figures the search does tell apart
    # without the noise the rule is off, as before
    assert "p=0.512 + fixed" in [c.prospect.key for c in choose([winner, copy, groups], 5)]


def test_near_copy_needs_one_kin_and_both_figures_within_the_noise():
    kin = ("a",)
    a = prospect("a", GF, 1.20, -0.2, **NOISE, kin=kin)
    # NEAR_COPY_Z = 0.5 sd of a difference: 0.111 in log speed at 0.157 a trial, 0.47 pt at 0.67
    assert near_copy(a, prospect("b", GF, 1.20 * math.exp(0.10), -0.2, **NOISE, kin=kin), 0.157, 0.67)
    assert not near_copy(a, prospect("b", GF, 1.20 * math.exp(0.12), -0.2, **NOISE, kin=kin), 0.157, 0.67)
    assert not near_copy(a, prospect("b", GF, 1.20, -0.2 - 0.5, **NOISE, kin=kin), 0.157, 0.67)
    assert near_copy(a, prospect("b", GF, 1.20, -0.2 - 0.5, **NOISE, kin=kin), 0.157, None)  # gains not read
    assert not near_copy(a, prospect("b", GF, 1.20, -0.2, **NOISE, kin=("other",)), 0.157, 0.67)
    assert not near_copy(prospect("a", GF, 1.2, 0, **NOISE), prospect("b", GF, 1.2, 0, **NOISE), 0.157, 0.67)


def test_the_slowest_speed_up_handed_on_is_where_a_prospect_is_min_p_likely_faster():
    """The search's speed floor and the handoff read a trial with one noise: at the bar, exactly min_p likely faster;
    a wider spread of O0's runs or a noisier reading lowers it (the handoff is more lenient there, so is the floor)."""
    from boosttune.stats.handoff import MIN_P_ACCEPTABLE, observed_spread, search_noise, slowest_handed_on

    for speeds in ([1965.0], [1965.0, 1651.0], [1000.0, 1000.0]):
        bar = slowest_handed_on(0.067, speeds)
        sd, _ = search_noise(0.067, None, spread=observed_spread(speeds))
        chance = prospect("k", (), bar, 0.0, max_drop=1.0, speed_sd=sd, gain_sd=0.5)
        assert chance.p_faster == pytest.approx(MIN_P_ACCEPTABLE)
        assert prospect("k", (), bar * 0.99, 0.0, max_drop=1.0, speed_sd=sd, gain_sd=0.5).p_acceptable < MIN_P_ACCEPTABLE
    assert slowest_handed_on(0.067, [1000.0]) == pytest.approx(0.818, abs=0.001)  # the 0.82x of the main job's logs
    assert slowest_handed_on(0.067, [1965.0, 1651.0]) < slowest_handed_on(0.067, [1000.0])
    assert slowest_handed_on(0.067, [1000.0], own_sd=0.05) < slowest_handed_on(0.067, [1000.0])
    assert slowest_handed_on(0.067, [1000.0], min_p=0.5) == pytest.approx(1.0)
    for bad in ({"speed_sd": 0.0}, {"own_sd": -0.1}, {"min_p": 1.0}):
        with pytest.raises(ConfigError, match=next(iter(bad)).split("_")[0]):
            slowest_handed_on(**{"speed_sd": 0.067, "o0_speeds": [1000.0], **bad})
