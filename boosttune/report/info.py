"""Every figure's and table's data, computed from the results tables alone (tested without rendering).

As in Optuna's visualisations, each ``*_info`` function returns a small NamedTuple that
:mod:`boosttune.report.figures` draws and :mod:`boosttune.report.render` lays out. Speed is a ratio
to the O0 baseline (per paired round for confirm and bench runs), the objective a gain over it (points for
accuracy, the metric's own units otherwise, positive is better: :mod:`boosttune.objective`), named as the runs
name it.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from boosttune.errors import BoosttuneError, DataError
from boosttune.objective import ACCURACY, Objective
from boosttune.report.inputs import ReportInputs
from boosttune.evaluation.results import FINISHED, PARAM_PREFIX, baseline_row, finite, fmt
from boosttune.evaluation.select import hypervolume, non_dominated

__all__ = [
    "AblationInfo", "ClaimInfo", "ConfirmedPoint", "CurveInfo", "HeaderInfo", "HypervolumeInfo", "ImportanceInfo",
    "ParallelInfo", "ScatterInfo", "ScatterPoint", "TimelineInfo",
    "ablation_info", "claims_info", "curves_info", "failures_info", "header_info", "hypervolume_info",
    "importance_info", "methods_of", "parallel_info", "scatter_info", "timeline_info",
]

# MindSpore's own claims for its presets (mindspore.boost docs): speed-up and the accuracy loss allowed, points.
CLAIMS = {"O1": (1.20, 0.0, "~20% faster at equal accuracy"), "O2": (1.30, 3.0, "~30% faster at < 3 pt loss")}
HV_SPEED_FLOOR, HV_DROP_CEILING_PT = 0.8, 5.0  # hypervolume reference point, as benchmarks/search_efficiency.py
_VERDICT_WORDS = {
    "faster": "faster, and accuracy within the margin is shown",
    "faster_noninferiority_consistent": "faster; the accuracy is within the margin on average, not yet shown",
    "faster_too_lossy": "faster, but loses more accuracy than the margin allows",
    "slower": "slower than O0",
    "not_faster": "not shown faster than O0",
    "inconclusive": "too few seeds to judge",
    "baseline": "the baseline itself",
    "no_data": "no paired run finished",
}


def verdict_words(code: str, objective: Objective = ACCURACY) -> str:
    words = _VERDICT_WORDS.get(code, code)
    return words if objective == ACCURACY else words.replace("accuracy", objective.noun)



# --- the recipe's methods -------------------------------------------------------------------------------

def methods_of(recipe: dict[str, Any]) -> tuple[str, ...]:
    """The speed-up methods a recipe switches on: boost algorithms MindSpore applies, amp level, loss scale."""
    from boosttune.config.boost import parse_boost_config

    try:
        active = parse_boost_config(recipe.get("boost_config_dict") or {}, recipe.get("boost_level") or "O0").effective()
        methods = list(active.active)
    except BoosttuneError:
        methods = []
    amp = recipe.get("amp_level") or "O0"
    if amp != "O0":
        methods.append(f"amp {amp}")
    kind = (recipe.get("loss_scale") or {}).get("kind") or "none"
    if kind not in ("none", "group"):  # group is loss_scale_group, a boost algorithm
        methods.append(f"loss_scale {kind}")
    return tuple(methods)


def _recipe(row: pd.Series) -> dict[str, Any]:
    try:
        return json.loads(row["recipe_json"]) if isinstance(row.get("recipe_json"), str) else {}
    except ValueError:
        return {}


def describe_recipe(recipe: dict[str, Any]) -> str:
    """What a recipe changes, in a line: its methods with their knobs, then the optimizer."""
    from boosttune.config.boost import parse_boost_config

    parts = []
    try:
        effective = parse_boost_config(recipe.get("boost_config_dict") or {}, recipe.get("boost_level") or "O0")
        settings = effective.effective().settings
    except BoosttuneError:
        settings = {}
    loss_scale = recipe.get("loss_scale") or {}
    for method in methods_of(recipe):
        knobs = {k: v for k, v in (settings.get(method) or {}).items() if k not in ("total_steps",)}
        if method == "loss_scale fixed":
            knobs = {"loss_scale": loss_scale.get("loss_scale")}
        elif method == "loss_scale dynamic":
            knobs = {k: loss_scale.get(k) for k in ("init_loss_scale", "scale_factor", "scale_window")}
        shown = ", ".join(f"{k} {_short(v)}" for k, v in sorted(knobs.items()))
        parts.append(f"{method} ({shown})" if shown else method)
    optimizer = recipe.get("optimizer") or {}
    lr = optimizer.get("learning_rate")
    parts.append(" ".join(str(p) for p in (optimizer.get("name", "momentum"), f"lr {_short(lr)}" if lr else "",
                                             optimizer.get("lr_schedule", "")) if p))
    return f"boost_level {recipe.get('boost_level', 'O0')}: " + " + ".join(parts)


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


# --- header -------------------------------------------------------------------------------------------

class HeaderInfo(NamedTuple):
    answer: str  # the answer in one sentence
    recipe: str  # the recipe it recommends (O0 when none qualifies)
    verdict: str  # a verdict code, "search_only" without a confirm stage, "no_baseline" without figures
    facts: tuple[tuple[str, str], ...]  # (what, value): device, versions, data, seeds, command, ...


def header_info(inputs: ReportInputs) -> HeaderInfo:
    confirmed = inputs.confirmed
    margin = inputs.margin
    obj = inputs.objective
    spec = obj.gain_spec
    if confirmed is not None:
        sel = confirmed.selection
        row = sel.row
        n = int(row["n_seeds"]) if finite(row.get("n_seeds")) else 0
        if sel.fell_back_to_baseline:
            answer = (f"Keep O0: no recipe was shown faster than the O0 baseline within {margin:.3g} {obj.unit} of its "
                      f"{obj.noun} "
                      f"over {len(confirmed.seeds)} paired seeds.")
            verdict = "baseline"
        else:
            answer = (f"Use {sel.recipe}: {fmt(row['speedup'], '.2f')}x the O0 baseline's training throughput "
                      f"(95% CI {fmt(row['speedup_ci_low'], '.2f')}-{fmt(row['speedup_ci_high'], '.2f')}) at "
                      f"{fmt(row['objective_gain'], spec)} {obj.gain_words} (95% CI "
                      f"{fmt(row['objective_gain_ci_low'], spec)} to {fmt(row['objective_gain_ci_high'], spec)}"
                      f") over {n} paired seeds: {verdict_words(str(row['verdict']), obj)}.")
            verdict = str(row["verdict"])
        recipe = sel.recipe
    else:
        from boosttune.evaluation.select import select_best

        try:
            sel_search = select_best(inputs.runs, margin)
        except DataError:
            return HeaderInfo("No answer: the O0 baseline did not finish, so nothing can be compared with it.", "O0",
                              "no_baseline", _facts(inputs))
        row = sel_search.row
        recipe = str(row.get("label") if pd.notna(row.get("label")) else row["trial_id"])
        if sel_search.fell_back_to_baseline:
            answer = f"Keep O0 (search only, one seed per recipe): {sel_search.reason}."
            recipe = "O0"
        else:
            answer = (f"Candidate {recipe}: {fmt(row['speedup_vs_baseline'], '.2f')}x at "
                      f"{fmt(row['objective_gain'], spec)} {obj.gain_words} on one seed; not confirmed (no "
                      "paired seeds ran: one run's throughput moves by about 10%, and one seed's result is noisy).")
        verdict = "search_only"
    facts = _facts(inputs)
    chosen = _chosen_recipe(inputs, recipe)
    if chosen:
        facts = (("recommended recipe", describe_recipe(chosen)),) + facts
    return HeaderInfo(answer, recipe, verdict, facts)


def _chosen_recipe(inputs: ReportInputs, name: str) -> dict[str, Any]:
    """The recipe document of the recommended recipe (by confirmed name, else by search label)."""
    for table, column in ((inputs.confirmed.runs if inputs.confirmed is not None else None, "recipe"),
                          (inputs.search, "label")):
        if table is None or column not in table:
            continue
        rows = table[(table[column] == name).fillna(False).astype(bool)]
        if len(rows):
            return _recipe(rows.iloc[0])
    return {}


def _first(table: pd.DataFrame, column: str) -> str:
    values = table[column].dropna().astype(str).unique() if column in table else []
    return ", ".join(values) if len(values) else "n/a"


def _facts(inputs: ReportInputs) -> tuple[tuple[str, str], ...]:
    runs = inputs.runs
    info = inputs.run_info
    versions = dict(info.get("versions") or {})
    for column, name in (("mindspore_version", "mindspore"), ("ray_version", "ray"),
                         ("boosttune_version", "boosttune")):
        versions.setdefault(name, _first(runs, column))
    device = _first(runs, "device_target")
    if info.get("device"):
        device = f"{device} ({info['device']})"
    isa = _first(runs, "onednn_isa")
    if device.startswith("CPU") and isa != "n/a":
        device += f", ONEDNN_MAX_CPU_ISA={isa}"
    base = _recipe(runs.iloc[0]) if len(runs) else {}
    data = base.get("data") or {}
    shown_data = ", ".join(f"{k}={v}" for k, v in data.items() if v is not None)
    facts = [("device", device), ("model", _first(runs, "model")), ("data set", shown_data or _first(runs, "dataset")),
             ("training", f"{base.get('epochs', 'n/a')} epochs, batch {base.get('batch_size', 'n/a')} per worker, "
                          f"{_first(runs, 'world_size')} worker(s)")]
    if inputs.search is not None:
        seeds = _first(inputs.search, "seed")
        facts.append(("search", f"{len(inputs.search)} trials, one seed each (seed {seeds})"))
    if inputs.confirmed is not None:
        what = "bench" if inputs.kind == "bench" else "confirm stage"
        facts.append((what, f"{inputs.confirmed.summary['recipe'].nunique()} recipes x paired seeds "
                            f"{list(inputs.confirmed.seeds)}"))
    obj = inputs.objective
    facts.append(("objective", obj.describe()))
    facts.append((f"{obj.noun} margin", f"{inputs.margin:.3g} {obj.unit} worse than the O0 baseline"))
    facts.append(("versions", ", ".join(f"{k} {v}" for k, v in versions.items())))
    if info.get("host"):
        facts.append(("machine", f"{info['host']}, {info.get('cpu_count', '?')} CPUs, {info.get('platform', '')}"))
    facts.append(("reproduce", info.get("command") or "n/a (no run_info.json: the run predates it)"))
    return tuple(facts)


# --- speed vs accuracy --------------------------------------------------------------------------------

class ScatterPoint(NamedTuple):
    trial_id: str
    x: float
    y: float
    label: str  # the recipe's name (preset, start point or trial id)
    hover: str
    is_baseline: bool
    is_preset: bool
    is_pareto: bool
    is_selected: bool


class ConfirmedPoint(NamedTuple):
    recipe: str
    speedup: float
    speedup_low: float  # nan when fewer than 2 paired seeds
    speedup_high: float
    delta_pt: float
    delta_low_pt: float
    delta_high_pt: float
    n_seeds: int
    verdict: str
    is_selected: bool


class ScatterInfo(NamedTuple):
    x_label: str
    y_label: str
    points: tuple[ScatterPoint, ...]  # every run with figures (search trials, or bench runs per round)
    pareto: tuple[tuple[float, float], ...]  # the front's (x, y), by increasing x; empty for bench runs
    baseline_y: float | None
    tolerance_y: float | None  # the lowest gain within the margin
    selection_reason: str | None
    confirmed: tuple[ConfirmedPoint, ...]  # paired means with 95% intervals, on the same axes
    not_plotted: tuple[tuple[str, str, str], ...]  # (trial_id, status, reason)


def scatter_info(inputs: ReportInputs) -> ScatterInfo:
    """x: speed-up vs O0 (throughput without a baseline); y: the objective's gain over O0 (its value without)."""
    df, margin = inputs.runs, inputs.margin
    obj = inputs.objective
    base = baseline_row(df)
    relative = base is not None and finite(base["throughput_sps"]) and finite(base["objective_value"])
    x_column, y_column = ("speedup_vs_baseline", "objective_gain") if relative else ("throughput_sps", "objective_value")
    finished = df["status"].isin(FINISHED)
    plottable = (finished & df[x_column].map(finite) & df[y_column].map(finite)).astype(bool)
    plotted = df[plottable]
    searched = inputs.search is not None
    sign = 1.0 if relative else obj.sign  # a gain is better upwards; a raw value in the objective's direction
    on_front = (non_dominated(plotted[x_column].to_numpy(float), sign * plotted[y_column].to_numpy(float)) if searched
                else np.zeros(len(plotted), bool))
    selected = _selected_id(inputs)
    points = tuple(_point(row, x_column, y_column, bool(front), row["trial_id"] == selected, obj)
                   for (_, row), front in zip(plotted.iterrows(), on_front))
    pareto = tuple(sorted(((p.x, p.y) for p in points if p.is_pareto), key=lambda xy: (xy[0], -sign * xy[1])))
    confirmed = confirmed_points(inputs) if relative else ()
    return ScatterInfo(
        x_label="speed-up vs O0 (x, steady-state throughput)" if relative
        else "throughput (samples/s); no finished O0 baseline",
        y_label=(f"{obj.noun} vs O0 ({'points' if obj.fraction else obj.unit}, up is better)" if relative
                 else obj.label),
        points=points, pareto=pareto, baseline_y=0.0 if relative else None,
        tolerance_y=-margin if relative else None,
        selection_reason=_selection_reason(inputs), confirmed=confirmed,
        not_plotted=tuple(failures_info(inputs)),
    )


def _selected_id(inputs: ReportInputs) -> str | None:
    if inputs.search is None:
        return None
    from boosttune.evaluation.select import select_best

    try:
        return str(select_best(inputs.search, inputs.margin).row["trial_id"])
    except DataError:
        return None


def _selection_reason(inputs: ReportInputs) -> str | None:
    if inputs.confirmed is not None:
        return f"confirmed: {inputs.confirmed.selection.reason}"
    from boosttune.evaluation.select import select_best

    try:
        return select_best(inputs.runs, inputs.margin).reason
    except DataError:
        return None


def _point(row: pd.Series, x_column: str, y_column: str, is_pareto: bool, is_selected: bool,
           obj: Objective = ACCURACY) -> ScatterPoint:
    preset = row["preset"] if pd.notna(row["preset"]) else None
    label = str(row["label"]) if "label" in row and pd.notna(row["label"]) else (preset or str(row["trial_id"]))
    lines = [f"<b>{html.escape(label)}</b> ({html.escape(str(row['trial_id']))}, {row['status']})",
             f"boost_level {row['boost_level']}, amp {row['amp_level']}, loss scale {row['loss_scale_kind']}",
             f"throughput {fmt(row['throughput_sps'], '.1f')} samples/s, "
             f"speed-up {fmt(row['speedup_vs_baseline'], '.3f')}x",
             f"{obj.label} {obj.format_value(row['objective_value'])} ({obj.format_gain(row['objective_gain'])})"]
    params = [f"{name.removeprefix(PARAM_PREFIX)}={_param_text(row[name])}" for name in row.index
              if name.startswith(PARAM_PREFIX) and _present(row[name])]
    lines += [html.escape(", ".join(params[i:i + 3])) for i in range(0, len(params), 3)]
    return ScatterPoint(
        trial_id=str(row["trial_id"]), x=float(row[x_column]), y=float(row[y_column]), label=label,
        hover="<br>".join(lines), is_baseline=bool(row["is_baseline"]), is_preset=preset is not None,
        is_pareto=is_pareto, is_selected=is_selected,
    )


def _compared(table: pd.DataFrame) -> pd.DataFrame:
    """Finished rows with both a speed-up and an objective gain against the baseline."""
    return table[table["status"].isin(FINISHED) & table["speedup_vs_baseline"].map(finite)
                 & table["objective_gain"].map(finite)]


def _present(value: object) -> bool:
    return value is not None and value is not pd.NA and not (isinstance(value, float) and value != value)


def _param_text(value: object) -> str:
    # Integer params read back as floats when some trials lack them (NaN): show 4, not 4.0.
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def confirmed_points(inputs: ReportInputs) -> tuple[ConfirmedPoint, ...]:
    """Every confirmed recipe but the baseline, with its paired 95% intervals."""
    confirmed = inputs.confirmed
    if confirmed is None:
        return ()
    return tuple(
        ConfirmedPoint(recipe=str(row["recipe"]), speedup=float(row["speedup"]),
                       speedup_low=float(row["speedup_ci_low"]), speedup_high=float(row["speedup_ci_high"]),
                       delta_pt=float(row["objective_gain"]), delta_low_pt=float(row["objective_gain_ci_low"]),
                       delta_high_pt=float(row["objective_gain_ci_high"]), n_seeds=int(row["n_seeds"]),
                       verdict=str(row["verdict"]), is_selected=row["recipe"] == confirmed.selection.recipe)
        for _, row in confirmed.summary.iterrows()
        if finite(row["speedup"]) and row["verdict"] != "baseline")


def failures_info(inputs: ReportInputs) -> list[tuple[str, str, str]]:
    """(run id, status, reason) of every run without comparable figures: failed, stopped early, incomplete."""
    tables = [t for t in (inputs.search, inputs.confirmed.runs if inputs.confirmed is not None else None)
              if t is not None]
    out = []
    for table in tables:
        comparable = table["status"].isin(FINISHED) & table["throughput_sps"].map(finite) & table["objective_value"].map(finite)
        for _, row in table[~comparable.astype(bool)].iterrows():
            if row["status"] == "duplicate":
                continue  # answered by an equivalent run's figures: not a failure
            reason = str(row["reason"]) if pd.notna(row["reason"]) else "no throughput or objective recorded"
            out.append((str(row["trial_id"]), str(row["status"]), reason))
    return out


# --- MindSpore's claims -----------------------------------------------------------------------------

class ClaimInfo(NamedTuple):
    preset: str  # O1 / O2
    claim: str
    measured: str  # what this run measured, with intervals
    verdict: str  # holds / does not hold / not separable / not measured


def claims_info(inputs: ReportInputs) -> tuple[ClaimInfo, ...]:
    """MindSpore's O1 (~+20% at equal accuracy) and O2 (~+30% at < 3 pt) claims against this run's figures (for an
    objective other than a fraction, the loss allowed is the run's margin: the claims' points are accuracy's)."""
    out = []
    obj = inputs.objective
    spec = obj.gain_spec
    for level, (speed, loss_pt, claim) in CLAIMS.items():
        name = f"{level}-equivalent"
        row = _summary_row(inputs, name)
        if row is None:
            single = _search_row(inputs, name)
            note = _left_out_note(inputs, level)
            if single is not None:
                out.append(ClaimInfo(level, claim, f"{fmt(single['speedup_vs_baseline'], '.2f')}x, "
                                                   f"{fmt(single['objective_gain'], spec)} {obj.unit} on one seed",
                                     "not judged: one seed (run the confirm stage)"))
            else:
                out.append(ClaimInfo(level, claim, "not run", f"not measured{': ' + note if note else ''}"))
            continue
        measured = (f"{fmt(row['speedup'], '.2f')}x (95% CI {fmt(row['speedup_ci_low'], '.2f')}-"
                    f"{fmt(row['speedup_ci_high'], '.2f')}), {fmt(row['objective_gain'], spec)} {obj.unit} (95% CI "
                    f"{fmt(row['objective_gain_ci_low'], spec)} to {fmt(row['objective_gain_ci_high'], spec)}"
                    f"), {int(row['n_seeds'])} paired seeds")
        allowed = (max(loss_pt, inputs.margin) if loss_pt == 0 else loss_pt) if obj.fraction else inputs.margin
        out.append(ClaimInfo(level, claim, measured, _judge_claim(row, speed, allowed, obj.unit)))
    return tuple(out)


def _judge_claim(row: pd.Series, speed: float, allowed_pt: float, unit: str = "pt") -> str:
    low, high, delta = row["speedup_ci_low"], row["speedup_ci_high"], row["objective_gain"]
    if not (finite(low) and finite(high)):
        return "not judged: fewer than 2 paired seeds"
    accurate = finite(delta) and delta >= -allowed_pt
    if high < speed:
        return f"does not hold here: the whole interval is below {speed:.2f}x"
    if not accurate:
        return f"does not hold here: loses more than {allowed_pt:.3g} {unit}"
    if low >= speed:
        return f"holds here: the whole interval is at or above {speed:.2f}x"
    return f"not separable: the interval includes {speed:.2f}x"


def _summary_row(inputs: ReportInputs, name: str) -> pd.Series | None:
    if inputs.confirmed is None:
        return None
    rows = inputs.confirmed.summary[inputs.confirmed.summary["recipe"] == name]
    return None if rows.empty else rows.iloc[0]


def _search_row(inputs: ReportInputs, preset: str) -> pd.Series | None:
    if inputs.search is None:
        return None
    rows = inputs.search[(inputs.search["preset"] == preset).fillna(False) & inputs.search["status"].isin(FINISHED)]
    return None if rows.empty else rows.iloc[0]


def _left_out_note(inputs: ReportInputs, level: str) -> str | None:
    for name, why in inputs.left_out.items():
        if name.startswith(f"{level}-equivalent") or name == f"boost.{level}":
            return why
    return None


# --- ablation ---------------------------------------------------------------------------------------

class AblationRow(NamedTuple):
    name: str  # a method, or the best recipe's name
    speedup: float
    speedup_low: float
    speedup_high: float
    delta_pt: float
    delta_low_pt: float
    delta_high_pt: float
    runs: int
    source: str  # "paired seeds" or "search, one seed each"
    in_best: bool
    method: str = ""  # the one method a row changes ("" for the recommended recipe)


class AblationInfo(NamedTuple):
    alone: tuple[AblationRow, ...]  # each method as the only change from O0
    best: AblationRow | None  # the recommended recipe as a whole
    best_methods: tuple[str, ...]


def ablation_info(inputs: ReportInputs) -> AblationInfo:
    """Each method alone (the only change from the baseline recipe) and the recommended recipe as a whole."""
    header = header_info(inputs)
    best_methods: tuple[str, ...] = ()
    best = None
    rows: dict[str, AblationRow] = {}
    if inputs.confirmed is not None:
        runs = inputs.confirmed.runs
        base = _base_recipe(runs)
        for _, row in inputs.confirmed.summary.iterrows():
            if row["recipe"] == "O0" or not finite(row["speedup"]):
                continue
            recipe_rows = runs[runs["recipe"] == row["recipe"]]
            methods = methods_of(_recipe(recipe_rows.iloc[0])) if len(recipe_rows) else ()
            ablation = AblationRow(str(row["recipe"]), float(row["speedup"]), float(row["speedup_ci_low"]),
                                   float(row["speedup_ci_high"]), float(row["objective_gain"]),
                                   float(row["objective_gain_ci_low"]), float(row["objective_gain_ci_high"]),
                                   int(row["n_seeds"]), "paired seeds", False)
            if row["recipe"] == header.recipe:
                best, best_methods = ablation, methods
            if len(methods) == 1 and _same_training(recipe_rows.iloc[0], base):
                name = str(row["recipe"])
                rows[name] = ablation._replace(name=name if name.startswith(methods[0]) else f"{methods[0]}: {name}",
                                               method=methods[0])
    if inputs.search is not None:
        table = inputs.search
        base = _base_recipe(table)
        finished = _compared(table)
        by_method: dict[str, list[pd.Series]] = {}
        for _, row in finished.iterrows():
            methods = methods_of(_recipe(row))
            if best is None and header.verdict == "search_only" and str(row.get("label")) == header.recipe:
                best = _single(str(header.recipe), [row])
                best_methods = methods
            if len(methods) == 1 and _same_training(row, base):
                by_method.setdefault(methods[0], []).append(row)
        for method, method_rows in by_method.items():
            if not any(r.method == method for r in rows.values()):  # paired figures, when there are some, win
                rows[method] = _single(method, method_rows)
    alone = tuple(row._replace(in_best=row.method in best_methods) for row in rows.values())
    return AblationInfo(tuple(sorted(alone, key=lambda r: -r.speedup)), best, best_methods)


def _single(name: str, rows: list[pd.Series]) -> AblationRow:
    """Search trials with one seed each: the median over them, no interval."""
    speed = float(np.median([r["speedup_vs_baseline"] for r in rows]))
    delta = float(np.median([r["objective_gain"] for r in rows]))
    return AblationRow(name, speed, math.nan, math.nan, delta, math.nan, math.nan, len(rows),
                       "search, one seed each" + (" (median)" if len(rows) > 1 else ""), False, name)


def _base_recipe(table: pd.DataFrame) -> dict[str, Any]:
    base = table[table["is_baseline"].astype(bool)]
    return _recipe(base.iloc[0]) if len(base) else {}


def _same_training(row: pd.Series, base: dict[str, Any]) -> bool:
    """Same optimizer (and learning rate) as the baseline: the method is the only change."""
    return not base or _recipe(row).get("optimizer") == base.get("optimizer")


# --- the search -------------------------------------------------------------------------------------

class HypervolumeInfo(NamedTuple):
    trial_ids: tuple[str, ...]  # in the order the trials started
    labels: tuple[str, ...]
    hypervolume: tuple[float, ...]  # of the front found so far, after each trial
    reference: tuple[float, float]  # (speed-up, objective gain) the area is measured from


def _search_order(search: pd.DataFrame) -> pd.DataFrame:
    if "started_at" in search and search["started_at"].notna().any():
        return search.sort_values("started_at", kind="stable", na_position="last")
    return search


def hypervolume_info(inputs: ReportInputs) -> HypervolumeInfo | None:
    """Hypervolume of (speed-up, objective gain) after each search trial, from 0.8x O0 and O0 - 5 pt (5% of the
    baseline's value for an objective that is not a fraction)."""
    base = None if inputs.search is None else baseline_row(inputs.search)
    if base is None:
        return None
    ordered = _search_order(inputs.search)
    ref = (HV_SPEED_FLOOR, -inputs.objective.tolerance(None, HV_DROP_CEILING_PT, base["objective_value"]))
    points: list[tuple[float, float]] = []
    values = []
    for _, row in ordered.iterrows():
        if row["status"] in FINISHED and finite(row["speedup_vs_baseline"]) and finite(row["objective_gain"]):
            points.append((float(row["speedup_vs_baseline"]), float(row["objective_gain"])))
        values.append(hypervolume(points, ref))
    labels = tuple(str(v) for v in ordered["label"].fillna(ordered["trial_id"]))
    return HypervolumeInfo(tuple(ordered["trial_id"].astype(str)), labels, tuple(values), ref)


class ImportanceInfo(NamedTuple):
    objectives: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]  # (objective, ((param, importance), ...))
    evaluator: str
    trials: int
    note: str


def importance_info(inputs: ReportInputs, evaluator: str = "fanova") -> ImportanceInfo | None:
    """Optuna's parameter importance for speed-up and for the objective, over the finished search trials.

    Only parameters every finished trial has (Optuna's rule) and that vary count; None with fewer than
    3 such trials or no varying parameter.
    """
    if inputs.search is None:
        return None
    import optuna

    table = inputs.search
    finished = _compared(table)
    param_columns = [c for c in finished.columns if c.startswith(PARAM_PREFIX)]
    finished = finished[finished[param_columns].notna().any(axis=1)] if param_columns else finished.iloc[:0]
    finished = finished.copy()
    for column in param_columns:  # a switch or choice a trial did not draw is a category of its own
        if finished[column].notna().any() and not _numeric(finished[column].dropna()):
            finished[column] = finished[column].map(lambda v: "(unset)" if not _present(v) else str(v))
    params = [c for c in param_columns if finished[c].notna().all() and finished[c].astype(str).nunique() > 1]
    if len(finished) < 3 or not params:
        return None
    distributions = {c.removeprefix(PARAM_PREFIX): _distribution(finished[c]) for c in params}
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["maximize", "maximize"])
    for _, row in finished.iterrows():
        values = {name: _param_value(row[PARAM_PREFIX + name], dist) for name, dist in distributions.items()}
        study.add_trial(optuna.trial.create_trial(params=values, distributions=distributions,
                                                  values=[float(row["speedup_vs_baseline"]),
                                                          float(row["objective_gain"])]))
    chosen = (optuna.importance.PedAnovaImportanceEvaluator() if evaluator == "ped_anova"
              else optuna.importance.FanovaImportanceEvaluator(seed=0))
    objectives = []
    for index, name in enumerate(("speed-up", inputs.objective.noun)):
        scores = optuna.importance.get_param_importances(study, evaluator=chosen,
                                                         target=lambda t, i=index: t.values[i])
        objectives.append((name, tuple((k, float(v)) for k, v in scores.items())))
    note = (f"from {len(finished)} finished trials: indicative only" if len(finished) < 20
            else f"from {len(finished)} finished trials")
    return ImportanceInfo(tuple(objectives), type(chosen).__name__, len(finished), note)


def _numeric(values: pd.Series) -> bool:
    return all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
               for v in values)


def _distribution(column: pd.Series):
    import optuna

    values = column.tolist()
    if _numeric(column):
        low, high = float(min(values)), float(max(values))
        if all(float(v).is_integer() for v in values):
            return optuna.distributions.IntDistribution(int(low), int(high))
        return optuna.distributions.FloatDistribution(low, high)
    return optuna.distributions.CategoricalDistribution(sorted({str(v) for v in values}))


def _param_value(value: Any, distribution) -> Any:
    import optuna

    if isinstance(distribution, optuna.distributions.IntDistribution):
        return int(value)
    if isinstance(distribution, optuna.distributions.FloatDistribution):
        return float(value)
    return str(value)


class ParallelInfo(NamedTuple):
    dimensions: tuple[tuple[str, tuple[float, ...], tuple[str, ...] | None], ...]  # (label, values, tick names)
    color: tuple[float, ...]  # speed-up of each trial
    trial_ids: tuple[str, ...]


def parallel_info(inputs: ReportInputs) -> ParallelInfo | None:
    """The searched knobs of every finished trial, then its speed-up and objective gain (categories as codes)."""
    if inputs.search is None:
        return None
    table = inputs.search
    finished = _compared(table)
    params = [c for c in finished.columns if c.startswith(PARAM_PREFIX) and finished[c].notna().any()
              and finished[c].astype(str).nunique() > 1]
    if len(finished) < 2:
        return None
    dimensions = []
    for column in params:
        values = finished[column]
        numeric = pd.to_numeric(values, errors="coerce")
        name = column.removeprefix(PARAM_PREFIX)
        if numeric.notna().sum() == values.notna().sum() and values.map(lambda v: not isinstance(v, bool)).all():
            dimensions.append((name, tuple(float(v) if finite(v) else math.nan for v in numeric), None))
        else:
            names = sorted({str(v) for v in values if _present(v)} | ({"(unset)"} if values.isna().any() else set()))
            codes = tuple(float(names.index(str(v) if _present(v) else "(unset)")) for v in values)
            dimensions.append((name, codes, tuple(names)))
    speed = tuple(float(v) for v in finished["speedup_vs_baseline"])
    dimensions.append(("speed-up (x)", speed, None))
    obj = inputs.objective
    dimensions.append((f"{obj.noun} ({obj.unit})", tuple(float(v) for v in finished["objective_gain"]), None))
    return ParallelInfo(tuple(dimensions), speed, tuple(finished["trial_id"].astype(str)))


# --- learning curves and the timeline -------------------------------------------------------------------

class CurveSeries(NamedTuple):
    name: str  # the recipe
    run_id: str
    role: str  # baseline / preset / candidate
    train_s: tuple[float, ...]
    objective_value: tuple[float, ...]


class CurveInfo(NamedTuple):
    series: tuple[CurveSeries, ...]
    source: str  # which runs the curves come from
    y_label: str = "val_acc"  # the objective's name


def curves_info(inputs: ReportInputs) -> CurveInfo:
    """The objective's held-out value against training time (compile included, evaluation excluded) for the baseline, the
    presets and the confirmed candidates: every paired seed when there are some, else the search's own runs."""
    series = []
    if inputs.confirmed is not None:
        runs = inputs.confirmed.runs
        for _, row in runs[runs["status"].isin(FINISHED)].iterrows():
            series.append(_curve(row, str(row["recipe"]), _role(row)))
        source = "the paired seeds of the " + ("bench" if inputs.kind == "bench" else "confirm stage")
    else:
        table = inputs.search
        selected = _selected_id(inputs)
        keep = table["preset"].notna() | (table["trial_id"] == selected)
        for _, row in table[keep & table["status"].isin(FINISHED)].iterrows():
            name = str(row["label"]) if pd.notna(row["label"]) else str(row["trial_id"])
            series.append(_curve(row, name, _role(row)))
        source = "the search (one seed each): baseline, presets and the selected trial"
    return CurveInfo(tuple(s for s in series if s.train_s), source, inputs.objective.label)


def _role(row: pd.Series) -> str:
    if bool(row["is_baseline"]) or any(isinstance(v, str) and v == "O0" for v in (row.get("recipe"), row.get("preset"))):
        return "baseline"
    return "preset" if pd.notna(row["preset"]) else "candidate"


def _curve(row: pd.Series, name: str, role: str) -> CurveSeries:
    try:
        curve = json.loads(row["curve_json"]) if isinstance(row.get("curve_json"), str) else []
    except ValueError:
        curve = []
    points = [(float(e["train_s"]), float(e["objective_value"])) for e in curve
              if finite(e.get("train_s")) and finite(e.get("objective_value"))]
    return CurveSeries(name, str(row["trial_id"]), role, tuple(p[0] for p in points), tuple(p[1] for p in points))


class TimelineBar(NamedTuple):
    run_id: str
    label: str
    stage: str  # baseline / search / confirm / bench
    start_s: float  # from the first run's start
    duration_s: float
    status: str
    reason: str


class TimelineInfo(NamedTuple):
    bars: tuple[TimelineBar, ...]
    total_s: float


def timeline_info(inputs: ReportInputs) -> TimelineInfo | None:
    """Which run trained when (wall clock, set-up included), by stage; None for tables without start times."""
    rows = []
    for stage_table, stage in ((inputs.search, "search"),
                               (inputs.confirmed.runs if inputs.confirmed is not None else None,
                                "bench" if inputs.kind == "bench" else "confirm")):
        if stage_table is None or "started_at" not in stage_table:
            continue
        for _, row in stage_table.iterrows():
            if not finite(row["started_at"]) or row["status"] == "duplicate":
                continue
            label = str(row["label"]) if pd.notna(row.get("label")) else str(row["trial_id"])
            rows.append((float(row["started_at"]), float(row["wall_s"]) if finite(row["wall_s"]) else 0.0,
                         str(row["trial_id"]), label,
                         "baseline" if row["trial_id"] == "baseline" else stage, str(row["status"]),
                         str(row["reason"]) if pd.notna(row["reason"]) else ""))
    if not rows:
        return None
    rows.sort()
    origin = rows[0][0]
    bars = tuple(TimelineBar(run_id, label, stage, start - origin, duration, status, reason)
                 for start, duration, run_id, label, stage, status, reason in rows)
    return TimelineInfo(bars, max(b.start_s + b.duration_s for b in bars))
