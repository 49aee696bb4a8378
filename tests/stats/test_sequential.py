"""Group-sequential boundaries (boosttune.stats.sequential) against what they must be: one look is the fixed test,
the looks spend exactly what the spending function says under the null (checked by simulation, which shares nothing
with the integration), and the shape parameter moves alpha between early and late looks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from boosttune.stats.sequential import boundaries, crossing_probabilities, nominal_levels, spending

LOOKS = tuple(range(3, 11))


def test_one_look_is_the_fixed_one_sided_test():
    assert boundaries((7,), 0.05, -2.0)[0] == pytest.approx(stats.norm.isf(0.05), abs=1e-8)
    assert nominal_levels((7,), 0.025, 1.0)[0] == pytest.approx(0.025, abs=1e-10)


@pytest.mark.parametrize("gamma", [1.0, 0.0, -2.0, -4.0])
def test_the_looks_spend_alpha_as_the_function_says_and_a_simulation_agrees(gamma):
    c = boundaries(LOOKS, 0.05, gamma)
    per_look = crossing_probabilities(LOOKS, c)
    expected = np.diff([0.0] + [spending(n / LOOKS[-1], 0.05, gamma) for n in LOOKS])
    assert np.allclose(per_look, expected, atol=1e-6)
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((200_000, LOOKS[-1])).cumsum(axis=1)[:, LOOKS[0] - 1:]
    z = scores / np.sqrt(np.arange(LOOKS[0], LOOKS[-1] + 1))
    crossed = (z >= np.asarray(c)).any(axis=1).mean()
    assert crossed == pytest.approx(0.05, abs=3 * np.sqrt(0.05 * 0.95 / 200_000))
    # the union bound (alpha / looks a look) spends less than alpha: the correlation between looks is worth this much
    union = (z >= stats.norm.isf(0.05 / len(LOOKS))).any(axis=1).mean()
    assert union < 0.04


def test_late_spending_keeps_alpha_for_the_last_look_and_early_spending_uses_it_first():
    early, late = nominal_levels(LOOKS, 0.05, 1.0), nominal_levels(LOOKS, 0.05, -4.0)
    assert early[0] > late[0] and early[-1] < late[-1]


def test_power_grows_with_the_effect_as_a_simulation_reads_it():
    c = boundaries(LOOKS, 0.05, -2.0)
    powers = [sum(crossing_probabilities(LOOKS, c, drift)) for drift in (0.0, 0.3, 0.6, 1.5)]
    assert powers[0] == pytest.approx(0.05, abs=1e-6) and powers == sorted(powers) and powers[-1] > 0.95
    rng = np.random.default_rng(2)
    scores = (rng.standard_normal((200_000, LOOKS[-1])) + 0.3).cumsum(axis=1)[:, LOOKS[0] - 1:]
    z = scores / np.sqrt(np.arange(LOOKS[0], LOOKS[-1] + 1))
    assert (z >= np.asarray(c)).any(axis=1).mean() == pytest.approx(powers[1], abs=0.005)


@pytest.mark.parametrize("looks, alpha", [((), 0.05), ((3, 3), 0.05), ((0, 2), 0.05), ((3, 4), 1.0)])
def test_bad_designs_are_refused(looks, alpha):
    with pytest.raises(ValueError):
        boundaries(looks, alpha, 0.0)


def test_many_to_one_is_dunnetts_level_and_holds_alpha_over_correlated_comparisons():
    """Dunnett's one-sided critical values for k comparisons with one control, infinite df, equal correlation 0.5
    (Dunnett 1955, table 1a): 1.916 (k=2), 2.062 (k=3), 2.160 (k=4); the race's share with the rule off is
    Bonferroni's. A simulation of k=4 statistics sharing a control holds alpha at that level and exceeds it at
    alpha / k by less: Bonferroni over-covers."""
    from scipy import stats

    from boosttune.stats.race import RaceRules
    from boosttune.stats.sequential import many_to_one

    assert many_to_one(0.05, 1) == 0.05
    for k, z in ((2, 1.916), (3, 2.062), (4, 2.160)):
        assert stats.norm.isf(many_to_one(0.05, k)) == pytest.approx(z, abs=0.002)
    assert RaceRules().share(3) == many_to_one(0.05, 3) > RaceRules(many_to_one=False).share(3) == 0.05 / 3
    rng = np.random.default_rng(0)
    control, arms = rng.normal(size=(200_000, 1)), rng.normal(size=(200_000, 4))
    z = (arms - control) / np.sqrt(2)  # each arm's difference from the shared control: correlation 0.5
    crossed = (z > stats.norm.isf(many_to_one(0.05, 4))).any(axis=1).mean()
    assert crossed == pytest.approx(0.05, abs=0.003)
    assert (z > stats.norm.isf(0.05 / 4)).any(axis=1).mean() < 0.045
