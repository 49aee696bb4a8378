"""boosttune.stages.confirm: the handoff as the experiment calls it (its max_drop, the device's noise)."""

from __future__ import annotations

import numpy as np

from boosttune.config.experiment import ExperimentConfig
from boosttune.stages.confirm import handoff
from boosttune.stats.handoff import MIN_P_ACCEPTABLE, prospect, search_noise
from boosttune.stats.race import REFERENCE_NOISE, Race
from boosttune.tables.results import build_results_table
from boosttune.stats.margin import Margin
from boosttune.objective import ACCURACY

BASE = {"model": "lenet5", "epochs": 3, "seed": 0, "data": {"name": "digits"}}


def _record(trial_id, preset, sps, acc, extra):
    return {"trial_id": trial_id, "status": "completed", "preset": preset, "recipe": {**BASE, **extra},
            "metrics": {"throughput_sps": sps, "objective_value": acc}}


def test_the_stage_hands_over_by_its_own_margin_and_the_devices_noise(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOSTTUNE_CACHE_DIR", str(tmp_path))
    table = build_results_table([
        _record("baseline", "O0", 100, 0.900, {}),
        _record("t1", None, 130, 0.8925, {"amp_level": "O2"}),  # 1.3x, -0.75 pt on its seed
        _record("t2", None, 112, 0.901, {"optimizer": {"learning_rate": 0.1}}),  # 1.12x, +0.1 pt
    ], ray_version="x")
    config = ExperimentConfig()

    def names(margin: float) -> list[str]:
        candidates, _, noise = handoff(config, table, Margin(ACCURACY, margin))
        assert noise is REFERENCE_NOISE and candidates[0].recipe["data"]["final_val_limit"] == "all"
        assert all(c.recipe["eval_every_epoch"] is False for c in candidates)  # one evaluation, after the last epoch
        return [c.name for c in candidates]

    # read with the search's noise (search_noise: 0.153 log-sd, 0.55 pt): 65% x log 1.3 > 75% x log 1.12
    assert names(1.0) == ["O0", "amp O2 (t1)", "no boost (t2)"]
    assert names(0.0) == ["O0", "no boost (t2)"]  # t1 is 9% likely within 0 pt, below MIN_P_ACCEPTABLE
    curves, _, _ = handoff(config.model_copy(update={"confirm_curves": True}), table, Margin(ACCURACY, 1.0))
    assert all("eval_every_epoch" not in c.recipe for c in curves)
    # a device whose record measured a wide noise: the chances are read at it
    _, record, _ = handoff(config, table, Margin(ACCURACY, 1.0))
    rng = np.random.default_rng(5)
    record.add(Race.one_look({n: np.exp(rng.normal(0, 0.25, 8)) for n in "abcd"},
                            {n: rng.normal(0, 1.5, 8) for n in "abcd"}, 0.05, 1.0), race_id="/runs/a")
    candidates, _, noise = handoff(config, table, Margin(ACCURACY, 1.0))
    assert noise is not REFERENCE_NOISE and noise.speed_sd > 2 * REFERENCE_NOISE.speed_sd
    seen = {"amp O2 (t1)": (1.3, -0.75), "no boost (t2)": (1.12, 0.1)}
    speed_sd, gain_sd = search_noise(noise.speed_sd, noise.gain_sd)
    chances = {n: prospect(n, (), s, g, max_drop=1.0, speed_sd=speed_sd, gain_sd=gain_sd).p_acceptable
               for n, (s, g) in seen.items()}
    assert [c.name for c in candidates[1:]] == [n for n in seen if chances[n] >= MIN_P_ACCEPTABLE]
    narrow = search_noise(REFERENCE_NOISE.speed_sd, REFERENCE_NOISE.gain_sd)
    assert all(chances[n] < prospect(n, (), s, g, max_drop=1.0, speed_sd=narrow[0], gain_sd=narrow[1]).p_acceptable
               for n, (s, g) in seen.items())  # less sure of each, read at the wider noise
    for c in candidates[1:]:
        assert f"{100 * chances[c.name]:.0f}% likely acceptable" in c.why


def test_the_default_budget_pays_for_every_place_however_few_were_handed_on():
    from boosttune.stages.confirm import default_budget_runs, race_rules

    config = ExperimentConfig()  # 5 seeds, 5 searched places
    full = race_rules(config, recipes=7, noise=REFERENCE_NOISE, presets=1)
    few = race_rules(config, recipes=3, noise=REFERENCE_NOISE, presets=1)  # O0, O1 and one searched recipe
    assert full.max_runs == few.max_runs == 5 * (1 + 1 + 5) == default_budget_runs(5, 3, 1, 5)
    assert default_budget_runs(5, 9, 1, 5) == 45  # more raced than the places (a named list): each gets its seeds
    assert race_rules(config.model_copy(update={"confirm_budget_runs": 12}), 3, REFERENCE_NOISE, 1).max_runs == 12
    assert race_rules(config.model_copy(update={"confirm_budget_minutes": 5.0}), 3, REFERENCE_NOISE, 1).max_runs is None


def _curve(*values):
    return [{"epoch": i + 1, "objective_value": v} for i, v in enumerate(values)]


def test_the_race_trains_the_planned_job_when_the_tuning_jobs_baseline_was_still_improving():
    from boosttune.stages.confirm import confirm_length

    short = ExperimentConfig(base={**BASE, "planned_epochs": 12})
    still = confirm_length(short, _curve(0.50, 0.60, 0.66), ACCURACY)  # +6 pt in its last epoch
    assert (still.epochs, still.planned) == (12, True)
    assert "still improving" in still.reason and "+6.00 pt" in still.reason and "12 epochs" in still.reason
    settled = confirm_length(short, _curve(0.80, 0.85, 0.852), ACCURACY)  # +0.2 pt: converged
    assert (settled.epochs, settled.planned, settled.reason) == (3, False, None)
    planned_is_tuned = ExperimentConfig(base=BASE)  # planned = tuned: nothing longer to train
    assert confirm_length(planned_is_tuned, _curve(0.50, 0.60, 0.66), ACCURACY).epochs == 3
    chosen = ExperimentConfig(base={**BASE, "planned_epochs": 12}, confirm_epochs=5)
    assert confirm_length(chosen, _curve(0.50, 0.60, 0.66), ACCURACY) == \
        type(still)(5, "confirm_epochs 5", planned=False)
    assert confirm_length(short, _curve(0.5, 0.6), ACCURACY).epochs == 3  # too few epochs to tell


def test_at_the_planned_job_the_handoff_screens_by_speed_and_the_lossy_bound_only(tmp_path, monkeypatch):
    """The team's LSTM at 3 epochs (benchmarks/data/transfer/team-seq-12ep): GradientFreeze p=0.7 on 2 groups read
    -9.7 pt on its search seed, stopped by the scheduler, and is +0.16 pt at the 12-epoch job."""
    from boosttune.stages.confirm import ConfirmLength

    monkeypatch.setenv("BOOSTTUNE_CACHE_DIR", str(tmp_path))
    records = [
        _record("baseline", "O0", 100, 0.700, {"planned_epochs": 12}),
        _record("t1", None, 120, 0.603, {"planned_epochs": 12, "amp_level": "O2"}),  # 1.2x, -9.7 pt
        _record("t2", None, 125, 0.450, {"planned_epochs": 12, "optimizer": {"learning_rate": 0.2}}),  # -25 pt
    ]
    records[1]["status"] = "stopped"
    table = build_results_table(records, ray_version="x")
    config = ExperimentConfig(base={**BASE, "planned_epochs": 12})
    margin = Margin(ACCURACY, 1.0)
    tuned, _, _ = handoff(config, table, margin)
    assert [c.name for c in tuned] == ["O0"]  # read at the tuning job: neither is near the margin
    planned, _, _ = handoff(config, table, margin, length=ConfirmLength(12, "why", planned=True))
    assert [c.name for c in planned] == ["O0", "amp O2 (t1)"]  # t2 is beyond the search's lossy bound (20 pt)
    assert all(c.recipe["epochs"] == 12 for c in planned)
    assert "judged by the race, at the planned job" in planned[1].why
    longer, _, _ = handoff(config, table, margin, length=ConfirmLength(5, "confirm_epochs 5"))
    assert [c.recipe["epochs"] for c in longer] == [5]  # longer but not the planned job: accuracy still read


def test_a_search_whose_o0_runs_disagree_reads_its_speed_ups_with_their_spread():
    from boosttune.stats.handoff import SEARCH_SPREAD_SD, observed_spread

    assert observed_spread([100.0]) == SEARCH_SPREAD_SD  # one run shows no spread
    assert observed_spread([100.0, 103.0]) == SEARCH_SPREAD_SD  # closer than assumed: the assumption stands
    wide = observed_spread([1.245, 0.80])  # the team's seed-27 search
    assert abs(wide - abs(np.log(1.245 / 0.80)) / np.sqrt(2)) < 1e-12
    assert search_noise(0.07, None, spread=wide)[0] > search_noise(0.07, None)[0]


def test_check_says_what_noise_the_confirm_budget_can_take_and_a_bigger_budget_takes_more():
    """Issue 76: before anything trains, the budget's reach in this network's noise; a fixed stage says nothing."""
    from boosttune.experiment import confirm_capacity
    from boosttune.objective import Objective

    small = confirm_capacity(ExperimentConfig(base=BASE, confirm_seeds=3), ACCURACY)
    big = confirm_capacity(ExperimentConfig(base=BASE, confirm_seeds=3, confirm_budget_runs=60, confirm_max_seeds=20),
                           ACCURACY)
    assert small.startswith("confirm: with up to 6 candidates") and "a budget of 21 runs" in small  # the team CNN's
    reach = [float(text.split("at most ")[1].split(" pt")[0]) for text in (small, big)]
    assert 0.3 < reach[0] < reach[1]
    assert confirm_capacity(ExperimentConfig(base=BASE, confirm_mode="fixed"), ACCURACY) is None
    assert confirm_capacity(ExperimentConfig(base=BASE, confirm_seeds=0), ACCURACY) is None
    # another metric's default margin waits for the baseline's value: nothing to say before it
    loss = Objective(name="loss", higher_is_better=False, fraction=False)
    assert confirm_capacity(ExperimentConfig(base=BASE), loss) is None
