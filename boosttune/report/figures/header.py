"""The page's header: the answer in one sentence, the recipe it recommends, and the facts of the run.

Not a figure: :mod:`boosttune.report.render` lays it out at the top of report.html and report.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pandas as pd

from boosttune.stats.decisions import decision_words
from boosttune.stats.job import TIE
from boosttune.stats.race_plan import after_race, lead
from boosttune.tables.results import baseline_row, finite, fmt
from boosttune.stats.decide import job_words
from boosttune.report.inputs import ReportInputs
from boosttune.report.recipes import describe_recipe, recipe_of
from boosttune.tables.states import RunStatus

__all__ = ["HeaderInfo", "header_info"]

def search_count(search: pd.DataFrame) -> str:
    """The search's trials as its log counts them (the baseline stage's O0 apart, duplicates named)."""
    base = baseline_row(search)
    trials = search if base is None else search[search["trial_id"] != base["trial_id"]]
    duplicates = int((trials["status"] == RunStatus.DUPLICATE).sum())
    words = f"{len(trials)} trials" + (f" ({duplicates} a duplicate, not trained again)" if duplicates else "")
    return words + (" after the O0 baseline" if base is not None else "")


def confirmed_count(summary: pd.DataFrame, seeds: tuple[int, ...]) -> str:
    """How many recipes ran on which paired seeds: each its own number in a race, all of them in fixed rounds."""
    counts = pd.to_numeric(summary["n_seeds"], errors="coerce").dropna().astype(int)
    recipes = summary["recipe"].nunique()
    if counts.empty or counts.min() == counts.max():
        return f"{recipes} recipes x {len(seeds)} paired seeds {list(seeds)}"
    return (f"{recipes} recipes on paired seeds {list(seeds)}, from {counts.min()} to {counts.max()} seeds each "
            "(a race: each recipe's number is in the table)")


class HeaderInfo(NamedTuple):
    answer: str  # the answer in one sentence
    recipe: str  # the recipe it recommends (O0 when none qualifies)
    verdict: str  # a verdict code, "search_only" without a confirm stage, "no_baseline" without figures
    run_details: tuple[tuple[str, str], ...]  # (what, value): device, versions, data, seeds, command, ...


def header_info(inputs: ReportInputs) -> HeaderInfo:
    """The answer from the confirm stage's selection when there is one, else from the search's (one seed)."""
    selection = inputs.selection
    if selection.verdict == "no_baseline":
        return HeaderInfo("No answer: the O0 baseline did not finish, so nothing can be compared with it.", "O0",
                          "no_baseline", _facts(inputs))
    answer = _confirmed_answer(inputs) if inputs.confirmed is not None else _search_answer(inputs)
    facts = _facts(inputs)
    chosen = _chosen_recipe(inputs, selection.recipe)
    if chosen:
        facts = (("recommended recipe", describe_recipe(chosen)),) + facts
    return HeaderInfo(answer, selection.recipe, selection.verdict, facts)


def _confirmed_answer(inputs: ReportInputs) -> str:
    """The answer from the paired seeds."""
    confirmed, max_drop, obj = inputs.confirmed, inputs.max_drop, inputs.objective
    spec = obj.gain_spec
    sel = confirmed.selection
    row = sel.row
    n = int(row["n_seeds"]) if finite(row.get("n_seeds")) else 0
    if sel.tie is not None:
        tied = confirmed.summary.set_index("recipe").loc[sel.tie[0]]
        return (f"Keep O0: {sel.tie[0]} won the race but is within {100 * TIE:.0f}% of the O0 baseline per job "
                f"({job_words(tied)}); a gain under {100 * TIE:.0f}% per job is a tie.")
    if sel.fell_back_to_baseline:
        candidates = confirmed.summary[confirmed.summary["recipe"] != sel.recipe]
        if candidates.empty:
            return (f"Keep O0: the search found no recipe likely enough to be faster with its {obj.noun} within "
                    f"{max_drop:.3g} {obj.unit} to confirm; the O0 baseline ran alone.")
        seeds = sorted(int(n) for n in candidates["n_seeds"])
        each = f"{seeds[0]}" if seeds[0] == seeds[-1] else f"{seeds[0]} to {seeds[-1]}"
        return (f"Keep O0: none of the {len(candidates)} candidate(s) was shown faster than the O0 baseline with "
                f"its {obj.noun} within {max_drop:.3g} {obj.unit} ({each} paired seeds each)."
                + _undecided_words(inputs))
    return (f"Use {sel.recipe}: {job_words(row)}; {fmt(row['step_speedup'], '.2f')}x per step, at "
            f"{fmt(row['objective_gain'], spec)} {obj.gain_words} (95% CI "
            f"{fmt(row['objective_gain_ci_low'], spec)} to {fmt(row['objective_gain_ci_high'], spec)}"
            f") over {n} paired seeds: {decision_words(str(row['verdict']), obj, max_drop)}."
            + (f" {sel.why_chosen}" if sel.why_chosen else ""))


def _undecided_words(inputs: ReportInputs) -> str:
    """The lead an undecided race leaves, its chance, the command that decides it, and whether the budget could have
    (empty when every candidate was decided)."""
    race, obj = inputs.confirmed.race, inputs.objective
    if race is None:
        return ""
    words, best = "", lead(race)
    if best is not None:
        (s, s_low, s_high), (g, g_low, g_high) = best.speedup, best.gain
        spec = obj.gain_spec
        run = str(inputs.folder) if inputs.folder is not None else "RUN"
        words += (f" The lead, {best.name}: {s:.2f}x per job [{s_low:.2f}, {s_high:.2f}], {g:{spec}} {obj.unit} "
                  f"[{g_low:{spec}}, {g_high:{spec}}] over {best.n} paired seeds; the chance it is more than a tie "
                  f"faster and within the margin is about {100 * best.chance:.0f}% (a rough reading of those "
                  "intervals, not a guarantee).")
        if best.seeds is not None:
            words += (f" To decide it: boosttune verify {run} --recipe '{best.name}' --seeds {best.seeds} "
                      f"({best.seeds} fresh paired seeds, {2 * best.seeds} runs of the job).")
    short = after_race(race, obj.unit)
    return words + (f" The budget was short: {short}." if short else "")


def _search_answer(inputs: ReportInputs) -> str:
    """The answer from the search alone (one seed per recipe)."""
    obj = inputs.objective
    selection = inputs.selection
    picked = selection.search
    if picked.fell_back_to_baseline:
        return f"Keep O0 (search only, one seed per recipe): {picked.reason}."
    row = picked.row
    return (f"Candidate {selection.recipe}: {fmt(row['speedup_vs_baseline'], '.2f')}x at "
            f"{fmt(row['objective_gain'], obj.gain_spec)} {obj.gain_words} on one seed; not confirmed (no "
            "paired seeds ran: one run's throughput moves by about 10%, and one seed's result is noisy).")


def _chosen_recipe(inputs: ReportInputs, name: str) -> dict[str, Any]:
    """The recipe document of the recommended recipe (by confirmed name, else by search label)."""
    for table, column in ((inputs.confirmed.runs if inputs.confirmed is not None else None, "recipe"),
                          (inputs.search, "label")):
        if table is None or column not in table:
            continue
        rows = table[(table[column] == name).fillna(False).astype(bool)]
        if len(rows):
            return recipe_of(rows.iloc[0])
    return {}


def _first(table: pd.DataFrame, column: str) -> str:
    values = table[column].dropna().astype(str).unique() if column in table else []
    return ", ".join(values) if len(values) else "n/a"


def _facts(inputs: ReportInputs) -> tuple[tuple[str, str], ...]:
    runs = inputs.runs
    info = inputs.run_info
    base = recipe_of(runs.iloc[0]) if len(runs) else {}
    data = base.get("data") or {}
    shown_data = ", ".join(f"{k}={v}" for k, v in data.items() if v is not None)
    facts = [("device", _device(inputs)), ("model", _first(runs, "model")),
             ("data set", shown_data or _first(runs, "dataset")),
             ("training", f"{base.get('epochs', 'n/a')} epochs, batch {base.get('batch_size', 'n/a')} per worker, "
                          f"{_first(runs, 'world_size')} worker(s)")]
    if inputs.search is not None:
        seeds = _first(inputs.search, "seed")
        facts.append(("search", search_count(inputs.search) + f", one seed each (seed {seeds})"))
    if inputs.confirmed is not None:
        what = "bench" if inputs.kind == "bench" else "confirm stage"
        facts.append((what, confirmed_count(inputs.confirmed.summary, inputs.confirmed.seeds)))
    obj = inputs.objective
    facts.append(("objective", obj.describe()))
    facts.append((f"{obj.noun} margin", f"{inputs.max_drop:.3g} {obj.unit} worse than the O0 baseline"))
    facts.append(("versions", ", ".join(f"{k} {v}" for k, v in _versions(inputs).items())))
    if info.get("host"):
        facts.append(("machine", f"{info['host']}, {info.get('cpu_count', '?')} CPUs, {info.get('platform', '')}"))
    facts.append(("reproduce", info.get("command") or "n/a (no run_info.json: the run predates it)"))
    return tuple(facts)


def _device(inputs: ReportInputs) -> str:
    device = _first(inputs.runs, "device_target")
    if inputs.run_info.get("device"):
        device = f"{device} ({inputs.run_info['device']})"
    isa = _first(inputs.runs, "onednn_isa")
    if device.startswith("CPU") and isa != "n/a":
        device += f", ONEDNN_MAX_CPU_ISA={isa}"
    return device


def _versions(inputs: ReportInputs) -> dict[str, str]:
    """The run info's versions, completed from the table's columns."""
    versions = dict(inputs.run_info.get("versions") or {})
    for column, name in (("mindspore_version", "mindspore"), ("ray_version", "ray"),
                         ("boosttune_version", "boosttune")):
        versions.setdefault(name, _first(inputs.runs, column))
    return versions
