"""benchmarks/main_job.py: its targets read from run folders (the folder's own writing is checked by
tests/test_experiment.py, on a real experiment)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.benchmark_scripts import load_benchmark


def _folder(root, name, stages, share, answer, eval_share=0.1, confirm_runs=0):
    folder = root / name
    folder.mkdir()
    (folder / "run_info.json").write_text(json.dumps({"stage_s": {**stages, "export and report": 9.0},
                                                      "confirm_training_share": share,
                                                      "confirm_eval_share": eval_share}))
    (folder / "confirm").mkdir()
    for i in range(confirm_runs):
        (folder / "confirm" / f"run-{i}.json").write_text("{}")
    (folder / "best_recipe.json").write_text(json.dumps({"selection": {"reason": f"{answer}: 1.21x per job ..."}}))
    return folder


def test_each_target_is_met_or_missed_by_its_amount(tmp_path, capsys):
    bench = load_benchmark("main_job")
    fast = {"probe": 5, "baseline": 30, "search": 200, "confirm": 340}  # 575 s
    slow = {"probe": 5, "baseline": 31, "search": 209, "confirm": 687}  # 932 s
    a = _folder(tmp_path, "a", fast, 0.91, "Use grad_freeze p=0.5 on 2 groups")
    b = _folder(tmp_path, "b", fast, 0.92, "Use grad_freeze p=0.5 on 2 groups")
    c = _folder(tmp_path, "c", slow, 0.81, "Use grad_freeze p=0.7 on 2 groups")
    assert bench.main(["--read", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "stages <= 600 s in every run (the longest 575 s): met" in out
    assert "the same answer in 2 runs of 2: met" in out and "share >= 0.90 (the lowest 0.91): met" in out
    bench.main(["--read", str(a), str(b), str(c)])
    out = capsys.readouterr().out
    assert "(the longest 932 s): MISSED by 332 s" in out and "never above 900 s: MISSED by 32 s" in out
    assert "the same answer in 3 runs of 3: MISSED 2 answers" in out and "(the lowest 0.81): MISSED by 0.09" in out
    # each miss with its reason: where the longest run's time went, and what the lowest share lost to
    assert "its confirm stage 687 s; probe, baseline and search 245 s" in out
    assert "evaluation took 0.10 of the stage, and building, waiting and starting workers 0.09" in out


def test_a_share_that_evaluation_alone_keeps_below_the_target_says_so(tmp_path, capsys):
    """Seed 83's main job (session 26): training 0.83 and evaluation 0.11 of a 1033-s confirm stage of 28 runs."""
    bench = load_benchmark("main_job")
    stages = {"probe": 6, "baseline": 45, "search": 258, "confirm": 1033}
    run = _folder(tmp_path, "seed-83", stages, 0.83, "Use grad_freeze p=0.5 on 2 groups", eval_share=0.11,
                  confirm_runs=28)
    bench.main(["--read", str(run)])
    out = capsys.readouterr().out
    assert "(the longest 1342 s): MISSED by 742 s (its confirm stage 1033 s: 28 runs, 37 s a run; probe, " \
           "baseline and search 309 s)" in out
    assert ("(the lowest 0.83): MISSED by 0.07 (its evaluation on every held-out image alone took 0.11 of the stage, "
            "so training could be at most 0.89 with nothing else; the rest, 0.06, built, waited and started workers)"
            in out)


def test_a_folder_that_is_not_a_finished_run_is_refused_in_one_line(tmp_path):
    bench = load_benchmark("main_job")
    with pytest.raises(SystemExit, match="not a finished run"):
        bench.main(["--read", str(tmp_path)])
    with pytest.raises(SystemExit):
        bench.main([])  # running needs --out


def test_what_the_speed_floor_saved_is_read_from_the_trials_records(tmp_path, capsys):
    """The stopped trials' records as the search writes them: a stop for speed counts, the rung scheduler's does
    not; the epochs left at the trial's own time per epoch so far."""
    from boosttune.search.speed import TOO_SLOW

    bench = load_benchmark("main_job")
    stages = {"probe": 5, "baseline": 30, "search": 200, "confirm": 340}
    a = _folder(tmp_path, "a", stages, 0.85, "Keep O0")
    b = _folder(tmp_path, "b", stages, 0.85, "Keep O0")
    (a / "trials").mkdir()
    for trial_id, label, rung, reason in (("t1", "O1-equivalent", 1, f"{TOO_SLOW}: 0.70x O0 at epoch 1, below"),
                                          ("t2", None, 2, f"{TOO_SLOW}: 0.75x O0 at epoch 2, below"),
                                          ("t3", None, 1, "stopped after epoch 1 by the multi-objective scheduler")):
        (a / "trials" / f"{trial_id}.json").write_text(json.dumps({
            "trial_id": trial_id, "label": label, "status": "stopped", "rung": rung, "reason": reason,
            "recipe": {"epochs": 10}, "metrics": {"train_s": 3.0 * rung + 1.5, "compile_s": 1.5}}))
    (a / "trials" / "t4.json").write_text(json.dumps({"trial_id": "t4", "status": "completed", "recipe": {"epochs": 10},
                                                      "metrics": {"train_s": 30.0}}))
    bench.main(["--read", str(a), str(b)])
    out = capsys.readouterr().out
    assert ("a: the speed floor stopped 2 trial(s) (O1-equivalent at epoch 1/10, t2 at epoch 2/10): 17 epochs not "
            "trained, about 51 s at their own epoch times") in out
    assert "b: the speed floor stopped no trial" in out


def test_each_runs_race_is_replayed_with_this_versions_rules(tmp_path, capsys):
    """A race decided under older rules (no release of alpha, no spared run), saved as the confirm stage saves it:
    the line gives its answer as decided and from its stored runs under this version's rules, which may only decide
    it as soon or sooner here (the two bad recipes release their shares)."""
    import re

    from boosttune.outputs.summary import save_confirmed
    from boosttune.stages.rounds import Candidate, run_race
    from boosttune.execution.runs import RecordStore
    from boosttune.stats.race import RaceRules
    from boosttune.tables.confirm_runs import BASELINE_NAME
    from boosttune.objective import ACCURACY
    from boosttune.stats.margin import Margin
    from tests.helpers.race_runs import fake_race_train

    bench = load_benchmark("main_job")
    truth = {"fast": (1.3, 0.3), "slow": (0.5, 0.0), "lossy": (1.2, -6.0)}
    rules = RaceRules(max_runs=20, gain_noise=1.0, speed_noise=0.03, noise_df=20, release_alpha=False,
                      spare_one_run=False)
    candidates = [Candidate(BASELINE_NAME, {"seed": 0}, "baseline", BASELINE_NAME)] + \
        [Candidate(name, {"seed": 0, "label": name}, "test") for name in truth]
    folder = _folder(tmp_path, "raced", {"probe": 5, "baseline": 30, "search": 200, "confirm": 340}, 0.85, "Use fast")
    records, race = run_race(candidates, list(range(1000, 1010)), store=RecordStore(folder / "confirm"),
                             role="confirm", train=fake_race_train(truth, []), rules=rules, log=lambda _: None,
                             margin=Margin(ACCURACY, 1.0))
    save_confirmed(records, folder, margin=Margin(ACCURACY, 1.0), rules=rules, race=race)
    plain = _folder(tmp_path, "plain", {"probe": 5, "baseline": 30, "search": 200, "confirm": 340}, 0.85, "Use fast")
    assert bench.main(["--read", str(folder), str(plain)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("raced: as decided"))
    rounds = [int(r) for r in re.findall(r"fast \(won at round (\d+)\)", line)]
    assert "as decided: fast" in line and "this version's rules: fast" in line and len(rounds) == 2, line
    assert rounds[1] <= rounds[0] == race.standings["fast"].left_after_round
    assert "plain: no confirm race to replay" in out
