"""benchmarks/pipeline_replay.py: the whole main job replayed on committed measurements, and its truths."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("pipeline_replay")


@pytest.fixture(scope="module")
def measured(bench):
    return bench.load_measured()


def test_the_truth_charges_each_recipe_its_fresh_compile(bench, measured):
    """O0's graph came from the warm worker's cache in 9 of 10 rounds: its job is charged its one fresh compile, so
    GradientFreeze's 5-6 s compile weighs per job at 10 epochs and much less at 100."""
    assert measured.charge_s["O0"] > 1.0 and all(measured.charge_s[n] > 4.0 for n in ("grad_freeze p=0.7", "O1"))
    short, long = bench.truth(measured, 10), bench.truth(measured, 100)
    step = float(np.exp(np.log(measured.throughput["grad_freeze p=0.7"] / measured.throughput["O0"]).mean()))
    assert short.speed["grad_freeze p=0.7"] < long.speed["grad_freeze p=0.7"] < step * 1.02
    assert short.gain == long.gain  # accuracy does not depend on the planned length


def test_acceptable_answers_by_the_truth(bench):
    truth = bench.Truth(10, {"fast": 1.20, "tie": 1.03, "lossy": 1.5}, {"fast": -0.5, "tie": 0.0, "lossy": -2.0})
    assert truth.acceptable("fast") and truth.acceptable("tie") and not truth.acceptable("lossy")
    assert not truth.acceptable("O0") and truth.best == pytest.approx(1.20)  # a recipe 5% faster within the margin
    keep = bench.Truth(10, {"tie": 1.03, "lossy": 1.5}, {"tie": 0.0, "lossy": -2.0})
    assert keep.acceptable("O0") and keep.same("O0", "tie") and not keep.same("O0", "lossy")


def test_a_replayed_main_job_answers_from_the_table(bench, measured):
    rng = np.random.default_rng(0)
    pipeline = bench.Pipeline("now", True, bench.TIE, bench.search_table_stopper())
    jobs = [bench.main_job(measured, pipeline, 10, rng) for _ in range(6)]
    assert all(job.answer in ["O0", *measured.names] for job in jobs)
    assert all(set(job.raced) <= set(measured.names) - job.stopped for job in jobs)  # a stopped recipe is not raced
    assert all(0 <= job.runs <= 10 * (len(job.raced) + 1) for job in jobs)
    assert any(job.raced for job in jobs)


def test_the_search_view_is_one_seed_read_as_the_search_reads_it(bench, measured):
    """Every trial and the baseline on one round (the experiment's seed), the accuracy of the last epoch's slice, the
    throughput spread in time; the handoff sees each recipe's real family."""
    view = bench.search_view(measured, np.random.default_rng(3)).set_index("label")
    acc = measured.epoch_accuracy
    rounds = [r for r in acc.index if np.isclose(acc.at[r, "O0"], view.at["O0", "objective_value"])]
    assert rounds and any(all(np.isclose(acc.at[r, n], view.at[n, "objective_value"]) for n in measured.names)
                          for r in rounds)
    spread = np.log(view["speedup_vs_baseline"].drop("O0") /
                    (measured.throughput.loc[rounds[0], measured.names] / measured.throughput.at[rounds[0], "O0"]))
    assert 0 < spread.abs().max() < 6 * bench.SEARCH_TIME_SD * np.sqrt(2)
    moved = bench.search_view(measured, np.random.default_rng(3), reference_sd=0.5).set_index("label")
    shared = np.log(moved["speedup_vs_baseline"].drop("O0") / view["speedup_vs_baseline"].drop("O0"))
    assert np.allclose(shared, shared.iloc[0]) and abs(shared.iloc[0]) > 0  # one factor for every recipe
    # The pipeline of 2026-12-06 (O0 trained again in the search, the reference pooled with the baseline stage's run):
    # the shifted run pooled with an unshifted one, so over many searches the shared factor's spread is about half
    def shared_sd(runs):
        rng = np.random.default_rng(5)
        factors = []
        for _ in range(300):
            table = bench.search_view(measured, rng, reference_sd=0.5, reference_runs=runs).set_index("label")
            factors.append(float(np.log(table["speedup_vs_baseline"].drop("O0")).mean()))
        return float(np.std(factors))

    one, two = shared_sd(1), shared_sd(2)
    assert 0.4 * one < two < 0.65 * one
    from boosttune.config.recipe import methods_of

    assert methods_of(bench._recipe("grad_freeze p=0.5")) == ("grad_freeze",)
    assert methods_of(bench._recipe("search pruned-39")) == ("less_bn",)


def test_every_committed_table_is_replayed_and_each_days_truth_is_its_own(bench):
    """The 2026-11-27 table measures the same recipes on a faster, noisier machine: another truth, replayed too."""
    tables = bench.default_tables()
    assert [t.name for t in tables][:2] == ["confirm_table", "confirm_table_2026-11-27"]
    later = bench.load_measured(tables[1])
    assert later.throughput.shape == (10, 10) and later.throughput["O0"].median() > 1.3 * \
        bench.load_measured(tables[0]).throughput["O0"].median()
    truth = bench.truth(later, 10)
    assert not truth.acceptable("O0") and truth.acceptable("search pruned-39") and not truth.acceptable("O1")


def test_a_replay_is_judged_by_seeds_it_never_drew(bench, measured):
    """The halves share no paired seed, and a replay's search and race read only its own half."""
    first, second = bench.folds(measured)
    assert set(first.seeds) & set(second.seeds) == set() and len(first.seeds) + len(second.seeds) == len(measured.seeds)
    rng = np.random.default_rng(1)
    view = bench.search_view(first, rng).set_index("label")
    o0 = view.at["O0", "objective_value"]
    assert np.isclose(first.epoch_accuracy["O0"], o0).any() and not np.isclose(second.epoch_accuracy["O0"], o0).any()


def test_the_fixed_answer_rule_is_judged_on_every_truth(bench):
    """A constant answer acceptable on every truth meets the target (and the printout says the truths cannot tell it
    from a pipeline); a truth where keeping O0 is right makes every recipe's constant miss it."""
    win = bench.Truth(10, {"fast": 1.2, "slow": 0.9}, {"fast": -0.2, "slow": 0.0})
    keep = bench.Truth(10, {"fast": 0.98, "slow": 0.9}, {"fast": -0.2, "slow": 0.0})
    assert bench.fixed_answers([win, win]) == {"O0": 0.0, "fast": 1.0, "slow": 0.0}
    assert bench.fixed_answers([win, keep]) == {"O0": 0.5, "fast": 0.5, "slow": 0.0}
    assert bench.print_fixed({"a": [win, keep], "b": [keep, win]}) is True
    assert bench.print_fixed({"a": [win, keep], "b": [win, win]}) is False  # b's truths cannot tell


def _bench_runs(folder, epochs, seeds, recipes):
    """A bench's runs (confirm.csv's columns the replay reads) and meta.json: ``recipes`` maps a name to (per-step
    speed over O0, accuracy points over O0, fresh compile seconds); O0 trains 1,000 samples/s for 4,000 samples an
    epoch, its accuracy 80%."""
    import json

    import pandas as pd

    rows = []
    rng = np.random.default_rng(epochs)
    for r, seed in enumerate(seeds):
        for name, (speed, gain, compile_s) in {"O0": (1.0, 0.0, 1.0), **recipes}.items():
            sps = 1000 * speed * float(np.exp(rng.normal(0, 0.01)))
            fresh = compile_s if r == 0 or name != "O0" else 0.1  # O0's graph cached after its first run
            boost = {} if name == "O0" else {"boost": {"mode": "manual", "grad_freeze": True}}
            charge = compile_s  # the bench charges each recipe its first fresh compile
            rows.append({"round": r, "seed": seed, "recipe": name, "status": "completed", "throughput_sps": sps,
                         "objective_value": 0.80 + (gain + float(rng.normal(0, 0.05))) / 100, "compile_s": fresh,
                         "job_s": charge + epochs * 4000 / sps, "graph_cached": fresh < 1,
                         "recipe_json": json.dumps({"boost_level": "O1" if boost else "O0",
                                                    "boost_config_dict": boost})})
    folder.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(folder / "runs.csv", index=False)
    (folder / "meta.json").write_text(json.dumps({"workload": "constructed", "base": {"epochs": epochs}}))
    return folder


def test_a_workload_is_raced_on_its_tuning_table_and_judged_by_its_measured_full_job(bench, tmp_path, capsys):
    """At the 3-epoch tuning job the freeze is 1.3x per step and loses 3 pt; trained to 12 epochs it loses 0.3 pt: the
    full job's truth names it, and a replay that raced the tuning table (its accuracy loss there) keeps O0, which that
    truth does not accept; one that races the full job, as the pipeline does when the tuning job's baseline was still
    improving, names it. The truth is the full table's, measured on its own seeds, not the tuning runs moved."""
    tuning = _bench_runs(tmp_path / "w" / "tuning", 3, range(800, 808), {"freeze": (1.3, -3.0, 2.0)})
    full = _bench_runs(tmp_path / "w" / "full", 12, range(700, 708), {"freeze": (1.3, -0.3, 2.0)})
    short = bench.load_measured(tuning)
    assert short.epochs == 3 and short.names == ["freeze"] and short.recipes["freeze"]["boost_level"] == "O1"
    assert short.charge_s["O0"] == pytest.approx(1.0) and short.accuracy.shape == (8, 2)
    args = type("Args", (), {"replays": 20, "seed": 0})()
    whole, *others = bench.replay_workload(tuning, full, args)
    assert len(others) == 4 and all(t.acceptable("O0") for t in others[2:])  # the workload without its answers
    assert whole.planned == 12 and whole.acceptable("freeze") and not whole.acceptable("O0")
    assert whole.gain["freeze"] == pytest.approx(-0.3, abs=0.1) and whole.speed["freeze"] > 1.2
    out = capsys.readouterr().out
    assert "full job (the truth): 8 other paired seeds at 12 epochs, measured" in out
    tuned, at_planned, without = out.split("now, its tuning job still improving: the race trains the full job")
    assert "acceptable answers   0.0%" in tuned and "answers: O0 100%" in tuned
    # the pipeline that races the full job itself (on half its seeds, judged by the other half) names the freeze
    assert "acceptable answers   100.0%" in at_planned and "answers: freeze 100%" in at_planned
    assert bench.default_workloads() == [(w / "tuning", w / "full") for w in sorted(bench.REPLAY.glob("*"))
                                         if (w / "full" / "runs.csv").is_file()]


def test_a_workload_is_collected_from_two_bench_folders_and_replays(bench, tmp_path, monkeypatch, capsys):
    import json

    import pandas as pd

    folders = {}
    for part, epochs, seeds in (("tuning", 3, range(800, 806)), ("full", 12, range(700, 706))):
        made = _bench_runs(tmp_path / "made" / part, epochs, seeds, {"freeze": (1.3, -0.3, 2.0)})
        runs = pd.read_csv(made / "runs.csv").assign(extra="a column the replay does not keep")
        runs.to_csv(made / "confirm.csv", index=False)
        charged = runs.drop_duplicates("recipe").assign(compile_charged_s=lambda d: d["job_s"] * 0 + d["compile_s"])
        charged[["recipe", "compile_charged_s"]].to_csv(made / "summary.csv", index=False)
        (made / "bench.json").write_text(json.dumps({"seeds": list(seeds), "base": {"epochs": epochs},
                                                     "recipes": {"O0": {}, "freeze": {}}}))
        folders[part] = made
    monkeypatch.setattr(bench, "REPLAY", tmp_path / "replay")
    assert bench.main(["collect", "seq", "--tuning", str(folders["tuning"]), "--full", str(folders["full"]),
                       "--describe", "a constructed workload", "--command", "made here"]) == 0
    written = tmp_path / "replay" / "seq"
    assert list(pd.read_csv(written / "full" / "runs.csv").columns) == bench.RUN_COLUMNS
    assert json.loads((written / "tuning" / "meta.json").read_text())["base"]["epochs"] == 3
    assert bench.default_workloads() == [(written / "tuning", written / "full")]
    truth = bench.replay_workload(written / "tuning", written / "full", type("Args", (), {"replays": 10, "seed": 1})())[0]
    assert truth.acceptable("freeze") and "workload seq: a constructed workload" in capsys.readouterr().out


def test_a_bench_where_every_run_compiled_charges_each_recipe_its_typical_compile(bench, tmp_path):
    """O0 opened the bench with a 6 s compile and compiled in 2 s after: its jobs are charged 2 s, not 6."""
    import pandas as pd

    folder = _bench_runs(tmp_path / "fresh", 12, range(700, 705), {"same": (1.0, 0.0, 2.0)})
    runs = pd.read_csv(folder / "runs.csv")
    o0 = runs["recipe"] == "O0"
    runs.loc[o0, "compile_s"] = [6.0, 2.0, 2.0, 2.0, 2.0]
    runs["graph_cached"] = False
    runs.loc[o0, "job_s"] = runs.loc[o0, "job_s"] - 1.0 + 6.0  # the bench charged every O0 job its first compile
    runs.to_csv(folder / "runs.csv", index=False)
    measured = bench.load_measured(folder)
    assert measured.charge_s == {"O0": 2.0, "same": 2.0}
    assert bench.truth(measured, 12).speed["same"] == pytest.approx(1.0, abs=0.03)


def test_the_committed_team_workload_holds_a_truth_where_keeping_o0_is_right_and_one_where_it_is_not(bench):
    """The team's LSTM: its boost recipes at its own 3-epoch job are ties or far outside the margin (keep O0 right, on
    both halves); at the measured 12-epoch job GradientFreeze p=0.7 on 2 groups wins (keep O0 wrong)."""
    folder = bench.REPLAY / "team_seq"
    short = bench.only(bench.load_measured(folder / "tuning"), bench.BOOST_ONLY)
    assert short.names == sorted(bench.BOOST_ONLY) and short.epochs == 3
    assert all(bench.truth(half, 3).acceptable("O0") for half in bench.folds(short))
    full = bench.truth(bench.load_measured(folder / "full"), 12)
    assert not full.acceptable("O0") and full.acceptable("grad_freeze p=0.7 on 2 groups")
    assert not full.acceptable("grad_freeze p=0.5 on 2 groups")  # 2.3 pt lost


def test_a_missed_target_is_printed_with_its_amount(bench):
    assert bench._met(0.488, 0.9) == "MISSED by 41.2 pt" and bench._met(0.95, 0.9) == "met"


def test_why_is_counted_from_the_replays_never_stored(bench):
    truth = bench.Truth(10, {"a": 1.2, "b": 0.9}, {"a": 0.0, "b": 0.0})
    jobs = [bench.Job("O0", 10, frozenset(), ("a",)), bench.Job("O0", 10, frozenset({"a"}), ()),
            bench.Job("b", 10, frozenset(), ("b",)), bench.Job("a", 10, frozenset(), ("a",))]
    text = bench.why(jobs, [truth] * 4)
    assert text.startswith("of 3 unacceptable answers (75%)")
    assert "33% no acceptable recipe reached the race, 33% one raced and the race kept O0, 33% the race named" in text
    assert "the scheduler had stopped one in 33%" in text
    assert bench.why(jobs[3:], [truth]) == "every answer acceptable"
    import json

    for folder in [*bench.default_tables(), *(f for pair in bench.default_workloads() for f in pair)]:
        assert "why" not in json.loads((folder / "meta.json").read_text()), folder  # a stored reason goes stale


def _quoted() -> list[str]:
    from tests.helpers import REPO

    page = (REPO / "docs" / "benchmarks.md").read_text()
    block = page[page.index("### Now: each workload scored on its own"):]
    block = block[block.index("```") + 3:]
    return block[:block.index("```")].strip("\n").splitlines()


def test_the_page_quotes_the_first_tables_lines_as_the_script_prints_them(bench):
    """docs/benchmarks.md's block is the script's output at its defaults (400 replays, seed 0): the first table re-run
    here must print every line the page quotes for it, and its fixed-answer line."""
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        bench.main(["--table", str(bench.CONFIRM_TABLE)])
    lines = printed.getvalue().splitlines()
    quoted = _quoted()
    first = quoted[:quoted.index(next(q for q in quoted[1:] if q.startswith("== table")))]
    assert len(first) > 10 and all(line in lines for line in first), [q for q in first if q not in lines]
    fixed = next(q for q in quoted if q.startswith("== the fixed-answer rule on table confirm_table "))
    assert fixed in lines and "misses" in fixed
    # every workload's truths include the same workload without its acceptable recipes: no constant meets the target
    assert [q.split(" (")[0] for q in quoted if q.startswith("== the fixed-answer rule on")] == [
        "== the fixed-answer rule on table confirm_table", "== the fixed-answer rule on table confirm_table_2026-11-27",
        "== the fixed-answer rule on table confirm_table_2026-11-27_turns", "== the fixed-answer rule on workload team_seq"]
    assert all("misses the 90% target" in q for q in quoted if q.startswith("== the fixed-answer rule on"))
