"""The main job's time per stage, its confirm stage's training share and its answer, over several runs (issue 62).

README command 1 (``python experiments/resnet.py``) runs once per seed given, one after another, each into its own
folder; or ``--read`` takes run folders made already (README command 1 in fresh clones, say). Each run's figures come
from its own folder (run_info.json: the stage times, the confirm stage's training and evaluation shares; best_recipe.json:
the answer). Printed: one line a run, then each target of issue 62 met or missed, by how much and why (where
the longest run's stage time went; what the lowest training share lost to evaluation and to the rest):

- the stages (probe, baseline, search, confirm) <= 600 s, and never above 900 s;
- the same answer in every run;
- the confirm stage's training share >= 0.90.

And for each run, its own confirm runs replayed with this version's race rules (``RULE_SWITCHES`` at their defaults,
the rest as the run decided): the answer and the round it was decided, beside the run's own, so that runs made at an
older commit can be read under today's race. A candidate the rules would have trained longer ends at the runs it
had. And for each run, what the search's speed floor saved (boosttune/search/speed.py): the trials it stopped, the epochs
they did not train and what those would have taken at each trial's own time per epoch so far (an estimate; the
search's time itself is the measured figure).

    python benchmarks/main_job.py --seeds 11,12,13 --out /tmp/main-jobs     # three main jobs: about 45 minutes
    python benchmarks/main_job.py --read /tmp/a/runs/resnet8-1 /tmp/b/runs/resnet8-2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from boosttune.search.speed import stopped_for_speed

HERE = Path(__file__).resolve().parent
STAGES = ("probe", "baseline", "search", "confirm")
TARGET_S, CEILING_S, TARGET_SHARE = 600.0, 900.0, 0.90


def read_run(folder: Path) -> dict:
    """One run's figures from its folder; a folder that is not a finished main job is refused in one line."""
    info_path, best_path = folder / "run_info.json", folder / "best_recipe.json"
    if not info_path.is_file() or not best_path.is_file():
        raise SystemExit(f"main_job.py: error: {folder}: not a finished run (no run_info.json or best_recipe.json)")
    info, best = json.loads(info_path.read_text()), json.loads(best_path.read_text())
    stages = info.get("stage_s")
    if not isinstance(stages, dict):
        raise SystemExit(f"main_job.py: error: {folder}: run_info.json has no stage times (a run before issue 62)")
    reason = str((best.get("selection") or {}).get("reason") or "")
    return {"folder": str(folder), "stages": {k: float(stages.get(k, 0.0)) for k in STAGES},
            "share": info.get("confirm_training_share"), "eval_share": info.get("confirm_eval_share"),
            "answer": "Keep O0" if (best.get("selection") or {}).get("fell_back_to_baseline")
            else reason.split(":")[0] or "?", "reason": reason, "floor": floor_stops(folder / "trials"),
            "confirm_runs": len(list((folder / "confirm").glob("*.json")))}


def floor_stops(trials: Path) -> list[dict]:
    """The search's trials the speed floor stopped: name, the rung, the epochs left, the seconds an epoch took (its
    steps so far, the compile left out: a later epoch pays none)."""
    stops = []
    for path in sorted(trials.glob("*.json")) if trials.is_dir() else ():
        record = json.loads(path.read_text())
        if record.get("status") != "stopped" or not stopped_for_speed(record.get("reason")):
            continue
        rung, epochs = int(record.get("rung") or 0), int((record.get("recipe") or {}).get("epochs") or 0)
        metrics = record.get("metrics") or {}
        steady_s = float(metrics.get("train_s") or 0.0) - float(metrics.get("compile_s") or 0.0)  # compile paid once
        stops.append({"name": record.get("label") or record["trial_id"], "rung": rung, "left": max(0, epochs - rung),
                      "epochs": epochs, "epoch_s": steady_s / rung if rung else 0.0})
    return stops


def floor_line(run: dict) -> str:
    stops = run["floor"]
    if not stops:
        return f"  {Path(run['folder']).name}: the speed floor stopped no trial"
    which = ", ".join(f"{s['name']} at epoch {s['rung']}/{s['epochs']}" for s in stops)
    left = sum(s["left"] for s in stops)
    saved = sum(s["left"] * s["epoch_s"] for s in stops)
    return (f"  {Path(run['folder']).name}: the speed floor stopped {len(stops)} trial(s) ({which}): {left} epochs not "
            f"trained, about {saved:.0f} s at their own epoch times")


def rejudged(folder: Path) -> str:
    """One line: the run's race as decided and replayed from its stored runs with this version's rule switches."""
    from dataclasses import replace

    import pandas as pd

    from boosttune.stats.confirmed import replay_race
    from boosttune.stats.race import RULE_SWITCHES, RaceRules

    table_path, race_path = folder / "confirm.parquet", folder / "race.json"
    if not table_path.is_file() or not race_path.is_file():
        return f"  {folder.name}: no confirm race to replay (no confirm.parquet or race.json)"
    decision = json.loads(race_path.read_text())["decision"]
    if decision.get("single_look"):
        return f"  {folder.name}: fixed rounds, not a race: nothing to replay"
    decided = RaceRules.from_dict(decision["rules"])
    today = replace(decided, **{k: getattr(RaceRules(), k) for k in RULE_SWITCHES})
    table, margin = pd.read_parquet(table_path), float(decision["max_drop"])
    texts = []
    for label, rules in (("as decided", decided), ("this version's rules", today)):
        race = replay_race(table, rules, margin)
        answer = race.answer()
        won = next((s.left_after_round for s in race.standings.values() if s.name == answer), None)
        texts.append(f"{label}: {answer or 'no winner'}" + (f" (won at round {won})" if won else "")
                     + f", {len(race.winners)} won of {len(race.standings)}")
    return f"  {folder.name}: " + "; ".join(texts)


def run_main_job(seed: int, out: Path) -> Path:
    folder = out / f"seed-{seed}"
    command = [sys.executable, "experiments/resnet.py", "--seed", str(seed), "--output", str(folder)]
    print(f"running: {' '.join(command)}", flush=True)
    started = time.monotonic()
    with open(out / f"seed-{seed}.log", "w") as log:
        code = subprocess.call(command, cwd=HERE.parent, stdout=log, stderr=subprocess.STDOUT)
    print(f"  exit {code} after {time.monotonic() - started:.0f} s (log: {out / f'seed-{seed}.log'})", flush=True)
    return folder


def report(runs: list[dict]) -> list[str]:
    lines = [f"{'run':<46}{'probe':>7}{'base':>7}{'search':>8}{'confirm':>9}{'stages':>8}{'train':>7}{'eval':>6}  answer"]
    for run in runs:
        s = run["stages"]
        share = "n/a" if run["share"] is None else f"{run['share']:.2f}"
        evals = "n/a" if run["eval_share"] is None else f"{run['eval_share']:.2f}"
        lines.append(f"{Path(run['folder']).name[:45]:<46}{s['probe']:>7.0f}{s['baseline']:>7.0f}{s['search']:>8.0f}"
                     f"{s['confirm']:>9.0f}{sum(s.values()):>8.0f}{share:>7}{evals:>6}  {run['answer']}")
    lines += ["search's speed floor:", *(floor_line(run) for run in runs)]
    lines += ["each run's confirm runs, replayed with this version's race rules:",
              *(rejudged(Path(run["folder"])) for run in runs)]
    totals = [sum(run["stages"].values()) for run in runs]
    worst, answers = max(totals), {run["answer"] for run in runs}
    shared = [run for run in runs if run["share"] is not None]
    longest = runs[totals.index(worst)]
    lines.append(_target(f"stages <= {TARGET_S:.0f} s in every run (the longest {worst:.0f} s)", worst <= TARGET_S,
                         f"by {worst - TARGET_S:.0f} s ({stage_reason(longest)})"))
    lines.append(_target(f"stages never above {CEILING_S:.0f} s", worst <= CEILING_S, f"by {worst - CEILING_S:.0f} s"))
    same = len(answers) == 1
    lines.append(_target(f"the same answer in {len(runs)} runs of {len(runs)}", same,
                         f"{len(answers)} answers: {'; '.join(sorted(answers))}"))
    if shared:
        lowest = min(shared, key=lambda run: run["share"])
        low = lowest["share"]
        lines.append(_target(f"confirm training share >= {TARGET_SHARE:.2f} (the lowest {low:.2f})",
                             low >= TARGET_SHARE, f"by {TARGET_SHARE - low:.2f} ({share_reason(lowest)})"))
    return lines


def stage_reason(run: dict) -> str:
    """Where the longest run's stage time went: the confirm stage and what it trained, beside the rest."""
    s = run["stages"]
    rest = sum(v for k, v in s.items() if k != "confirm")
    runs = run.get("confirm_runs") or 0
    each = f": {runs} runs, {s['confirm'] / runs:.0f} s a run" if runs else ""
    return f"its confirm stage {s['confirm']:.0f} s{each}; probe, baseline and search {rest:.0f} s"


def share_reason(run: dict) -> str:
    """Why the lowest training share fell short: evaluation's part, and what builds, waits and starts took."""
    share, evals = run["share"], run["eval_share"]
    if evals is None:
        return "no evaluation share recorded"
    rest = max(0.0, 1.0 - share - evals)
    if 1.0 - evals < TARGET_SHARE:
        return (f"its evaluation on every held-out image alone took {evals:.2f} of the stage, so training could be at "
                f"most {1.0 - evals:.2f} with nothing else; the rest, {rest:.2f}, built, waited and started workers")
    return f"evaluation took {evals:.2f} of the stage, and building, waiting and starting workers {rest:.2f}"


def _target(text: str, met: bool, miss: str) -> str:
    return f"target: {text}: {'met' if met else 'MISSED ' + miss}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="11,12,13", help="the main jobs' --seed values, comma-separated (one run each)")
    p.add_argument("--out", type=Path, default=None, help="folder for the runs (new or empty; required to run)")
    p.add_argument("--read", type=Path, nargs="+", default=None, help="run folders made already: read, not run")
    args = p.parse_args(argv)
    if args.read:
        folders = list(args.read)
    else:
        if args.out is None:
            p.error("--out is required to run the main jobs (or --read run folders)")
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
        args.out.mkdir(parents=True, exist_ok=True)
        if any(args.out.iterdir()):
            p.error(f"--out {args.out}: not empty; choose a new folder")
        folders = [run_main_job(seed, args.out) for seed in seeds]
    print("\n".join(report([read_run(folder) for folder in folders])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
