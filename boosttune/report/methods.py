"""Method cards: one markdown page per boost algorithm (and amp, loss scale, the presets), generated from a bench.

In the spirit of Composer's method cards: what the method does in MindSpore 2.10 (from its source,
:mod:`boosttune.report.method_notes`), its knobs and the ranges boosttune searches, the speed-up and
accuracy delta measured here with paired-seed intervals (from a ``boosttune bench`` folder, with the
command that produced it), what this device does not support, and a verdict, "did not help here"
included. ``boosttune methods BENCH_DIR --output reports/methods`` writes them; nothing is typed by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from boosttune.algorithms.base import CardMatch
from boosttune.errors import DataError
from boosttune.stats.decisions import Exit, VerdictCode, card_words
from boosttune.tables.results import PARAM_PREFIX, finite, fmt
from boosttune.tables.states import FINISHED
from boosttune.execution.provenance import load_run_info
from boosttune.files import claim_output_folder, write_atomically
from boosttune.objective import ACCURACY, Objective
from boosttune.probe import load_cached
from boosttune.report.method_notes import MethodNote, notes
from boosttune.space import SpaceContext, define_by_run

__all__ = ["CardFigures", "card_figures", "searched_ranges", "verdict_line", "worked_ranges", "write_method_cards"]

def _match(key: str) -> CardMatch:
    """How the card finds its figures (in the bench, the probe, the bench's notes and a search's params): its
    note says, in its algorithm's folder."""
    return notes()[key].match


_COLLAPSE_PT = 10.0  # an accuracy loss this large means training broke, not a trade-off


@dataclass(frozen=True)
class CardFigures:
    """The bench rows that measure one card, and what the device left out."""

    rows: pd.DataFrame  # summary rows (speed-up, delta, intervals, verdict) of the recipes that measure it
    unsupported: tuple[tuple[str, str], ...]  # (knob or recipe, why)
    collapsed: tuple[tuple[str, int, int], ...] = ()  # (recipe, runs that lost > 10 pt, runs)


def card_figures(key: str, summary: pd.DataFrame, runs: pd.DataFrame, left_out: dict[str, str],
                 probe=None) -> CardFigures:
    from boosttune.report.recipes import methods_of, recipe_of

    card = _match(key)
    names = []
    for name in summary["recipe"]:
        if name == "O0":
            continue
        if key == "boost_levels":
            if str(name).endswith("-equivalent"):
                names.append(name)
            continue
        recipe_rows = runs[runs["recipe"] == name]
        if len(recipe_rows) and card.measured_by(methods_of(recipe_of(recipe_rows.iloc[0]))):
            names.append(name)
    rows = summary[summary["recipe"].isin(names)]
    unsupported = []
    if probe is not None:
        unsupported += [(k, c.reason) for k, c in probe.capabilities.items()
                        if not c.supported and k.startswith(card.probe_knobs)]
    unsupported += [(name, why) for name, why in left_out.items()
                    if name.startswith(card.left_out) and not any(name == k for k, _ in unsupported)]
    collapsed = []
    for name in names:
        deltas = runs.loc[runs["recipe"] == name, "objective_gain"].dropna()
        collapsed.append((str(name), int((deltas < -_COLLAPSE_PT).sum()), len(deltas)))
    return CardFigures(rows, tuple(unsupported), tuple(collapsed))


# Decisions a card states even without a speed interval; any other code without one is "not judged".
_JUDGED_ON_ONE_SEED = (VerdictCode.FASTER, Exit.WON, VerdictCode.FASTER_CONSISTENT, VerdictCode.FASTER_TOO_LOSSY,
                       Exit.TOO_LOSSY, VerdictCode.SLOWER, Exit.SLOWER)


def verdict_line(figures: CardFigures, max_drop: float, obj: Objective = ACCURACY) -> str:
    """The card's verdict in one line, from the measured rows (best first) or why nothing was measured."""
    rows = figures.rows
    if rows.empty:
        if figures.unsupported:
            return f"not measurable on this device: {figures.unsupported[0][1]}"
        return "not measured in this bench"
    parts = []
    for _, r in rows.sort_values("job_speedup", ascending=False).iterrows():
        speed = f"{fmt(r['job_speedup'], '.2f')}x per job [{fmt(r['job_ci_low'], '.2f')}, {fmt(r['job_ci_high'], '.2f')}]"
        spec = obj.gain_spec
        delta = (f"{fmt(r['objective_gain'], spec)} {obj.unit} [{fmt(r['objective_gain_ci_low'], spec)}, "
                 f"{fmt(r['objective_gain_ci_high'], spec)}]")
        code = str(r["verdict"])
        broke = {name: (k, n) for name, k, n in figures.collapsed}.get(str(r["recipe"]), (0, 0))
        if obj.fraction and (broke[0] or (finite(r["objective_gain"]) and r["objective_gain"] < -_COLLAPSE_PT)):
            judged = (f"broke training here ({broke[0]} of {broke[1]} seeds lost more than {_COLLAPSE_PT:g} pt)"
                      if broke[1] else "broke training here")
        elif finite(r["job_ci_low"]) or code in _JUDGED_ON_ONE_SEED:
            judged = card_words(code, obj, max_drop)
        else:
            judged = card_words(VerdictCode.INCONCLUSIVE, obj, max_drop)
        parts.append(f"{r['recipe']}: {judged}, {speed}, {delta}")
    return "; ".join(parts)


class _Recorder:
    """Stands in for an Optuna trial to read the ranges a fragment suggests (switches on, lowest values)."""

    def __init__(self) -> None:
        self.fixed_params: dict[str, Any] = {}
        self.ranges: dict[str, str] = {}

    def suggest_categorical(self, name, choices):
        self.ranges[name] = "{" + ", ".join(str(c) for c in choices) + "}"
        return choices[-1]

    def suggest_int(self, name, low, high, step=1, log=False):
        self.ranges[name] = f"{low}..{high}" + (" (log)" if log else "")
        return low

    def suggest_float(self, name, low, high, step=None, log=False):
        self.ranges[name] = f"{low:g}..{high:g}" + (" (log)" if log else "")
        return low


def searched_ranges() -> dict[str, str]:
    """Every parameter the search space can suggest and its range, read from the fragments themselves."""
    ctx = SpaceContext(unsupported=frozenset(), total_steps=1000, param_count=20, world_size=16,
                       base_learning_rate=0.05)
    recorder = _Recorder()
    try:
        define_by_run(ctx, {"model": "resnet8", "epochs": 2, "optimizer": {"learning_rate": 0.05}})(recorder)
    except Exception:  # a fragment that needs a real trial: the ranges read so far still stand
        pass
    return recorder.ranges


def worked_ranges(key: str, search: pd.DataFrame, max_drop: float) -> list[tuple[str, str, str]]:
    """(param, values in trials faster than O0 within the margin, values in every finished trial using it)."""
    finished = search[search["status"].isin(FINISHED) & search["speedup_vs_baseline"].map(finite)]
    card = _match(key)
    switch = PARAM_PREFIX + card.switch if card.switch else None
    if switch is not None:
        if switch not in finished:
            return []
        finished = finished[finished[switch].map(lambda v: v is True or v == "true" or v == "True")]
    good = finished[(finished["speedup_vs_baseline"] > 1.0) & (finished["objective_gain"] >= -max_drop)]
    out = []
    for column in sorted(c for c in finished.columns if c.startswith(PARAM_PREFIX)):
        name = column.removeprefix(PARAM_PREFIX)
        if not name.startswith(card.params) or not finished[column].notna().any():
            continue
        out.append((name, _values(good[column]), _values(finished[column])))
    return out


def _values(column: pd.Series) -> str:
    values = column.dropna()
    if values.empty:
        return "none"
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().all() and not values.map(lambda v: isinstance(v, bool)).any():
        low, high = numeric.min(), numeric.max()
        return f"{low:g}" if low == high else f"{low:g}..{high:g} ({len(values)} trials)"
    counts = values.astype(str).value_counts()
    return ", ".join(f"{k} ({n})" for k, n in counts.items())


def made_by(folder: str) -> str:
    command = load_run_info(folder).get("command")
    return f"; made by `{command}`" if command else ""



def _card(note: MethodNote, figures: CardFigures, ranges: dict[str, str], context: dict[str, str],
          max_drop: float, obj: Objective = ACCURACY) -> str:
    lines = [f"# {note.title} (`{note.key}`)", "",
             f"> Generated by `{context['generator']}` from the bench run `{context['bench_command']}` "
             f"({context['measured']}). Do not edit by hand: run the two commands again.", "",
             f"**Verdict on {context['setting']}:** {verdict_line(figures, max_drop, obj)}.", "",
             "## What it does in MindSpore 2.10", "", note.what, "",
             f"Devices, as MindSpore's own docstrings put it: {note.devices}", "",
             "Source read: " + "; ".join(f"`{s}`" for s in note.source) + ".", "", "## Knobs", "",
             "| knob | what it controls (MindSpore's default) | searched by boosttune |", "|---|---|---|"]
    for knob, meaning in note.knobs:
        lines.append(f"| `{knob}` | {meaning.replace('|', '/')} | {ranges.get(knob, 'fixed or not searched')} |")
    lines += ["", "## Measured here", "",
              f"{context['setting']}; paired, interleaved seeds {context['seeds']} (every recipe of a round shares "
              f"its seed); speed-up is per job: O0's training time over the recipe's at the planned length, compile "
              f"included, as the decision's model estimates it; e2e the training time to O0's {obj.noun} minus "
              f"{max_drop:.3g} {obj.unit} (compile included).",
              ""]
    if figures.rows.empty:
        lines += ["Nothing measured: " + (figures.unsupported[0][1] if figures.unsupported else
                                          "this bench has no recipe for it") + ".", ""]
    else:
        lines += [f"| recipe | seeds | speed-up [95% CI] | e2e | Δ {obj.label} {obj.unit} [95% CI] | verdict |",
                  "|---|---|---|---|---|---|"]
        for _, r in figures.rows.iterrows():
            lines.append(
                f"| {r['recipe']} | {int(r['n_seeds'])} | {fmt(r['job_speedup'], '.3f')} [{fmt(r['job_ci_low'], '.3f')}"
                f", {fmt(r['job_ci_high'], '.3f')}] | {fmt(r['e2e_speedup'], '.2f')} | "
                f"{fmt(r['objective_gain'], obj.gain_spec)} [{fmt(r['objective_gain_ci_low'], obj.gain_spec)}, "
                f"{fmt(r['objective_gain_ci_high'], obj.gain_spec)}] | {r['verdict']} |")
        lines.append("")
    lines += ["## Ranges that worked in searches", ""]
    searches = context.get("searches") or []
    if not searches:
        lines += ["No search folder given (`boosttune methods BENCH --search EXPERIMENT_DIR`).", ""]
    for where, search in searches:
        rows = worked_ranges(note.key, search, max_drop)
        if not rows:
            lines += [f"`{where}`: no finished trial used it.", ""]
            continue
        lines += [f"`{where}` (one seed per trial{made_by(where)}): values in trials faster than O0 within "
                  f"{max_drop:.3g} {obj.unit}, and in "
                  "every finished trial that used it.", "", "| knob | faster within the margin | all finished |",
                  "|---|---|---|", *[f"| `{k}` | {good} | {every} |" for k, good, every in rows], ""]
    lines += ["## Not supported on this device", ""]
    lines += [f"- `{name}`: {why}" for name, why in figures.unsupported] or ["- nothing: every knob of it ran here."]
    return "\n".join(lines).rstrip() + "\n"


def write_method_cards(bench: str | Path, output: str | Path, *, searches: tuple[str | Path, ...] = (),
                       log: Callable[[str], None] = print) -> list[Path]:
    """Write ``<output>/<key>.md`` for every method and ``<output>/README.md`` (the index) from a bench folder.

    Raises:
        DataError: ``bench`` is not a finished bench folder (no summary of paired runs).
    """
    from boosttune.report.inputs import load_report_inputs

    inputs = load_report_inputs(bench)
    if inputs.kind != "bench" or inputs.confirmed is None:
        raise DataError(f"{bench}: not a bench folder (no bench.json and confirm.parquet); run "
                        "boosttune bench benchmarks/methods.yaml --output runs/bench-methods first")
    confirmed, info = inputs.confirmed, inputs.run_info
    runs = confirmed.runs
    base = runs[runs["recipe"] == "O0"].iloc[0]
    config = inputs.config.get("base") or {}
    data = config.get("data") or {}
    limits = (f" ({data['train_limit']} training images at {data['image_size']}px)"
              if data.get("train_limit") and data.get("image_size") else "")
    setting = (f"{base['model']} on {data.get('name', base['dataset'])}{limits}, "
               f"{config.get('epochs', base['epochs'])} epochs, batch {config.get('batch_size', base['batch_size'])}, "
               f"{base['device_target']} ({info.get('device', 'device n/a')}, {info.get('cpu_count', '?')} cores)")
    versions = info.get("versions") or {}
    context = {
        "generator": f"boosttune methods {bench} --output {output}",
        "bench_command": info.get("command") or f"boosttune bench ... --output {bench}",
        "measured": f"{info.get('created', 'date n/a')[:10]}, mindspore {versions.get('mindspore', base['mindspore_version'])}"
                    f", boosttune {versions.get('boosttune', base['boosttune_version'])}",
        "setting": setting, "seeds": list(confirmed.seeds),
    }
    from boosttune.tables.results import load_results

    context["searches"] = [(str(folder), load_results(folder)) for folder in searches]
    if searches:
        context["generator"] += "".join(f" --search {folder}" for folder in searches)
    probe = load_cached(str(base["device_target"]))
    ranges = searched_ranges()
    claim_output_folder(output, "--output", "boosttune methods")  # new, empty or boosttune's: nothing else written over
    output = Path(output)
    obj = inputs.objective
    written, index = [], []
    for key, note in notes().items():
        figures = card_figures(key, confirmed.summary, runs, inputs.left_out, probe)
        text = _card(note, figures, ranges, context, inputs.max_drop, obj)
        written.append(write_atomically(output / f"{key}.md", lambda temp, t=text: temp.write_text(t, encoding="utf-8")))
        index.append(f"| [{note.title}]({key}.md) | {verdict_line(figures, inputs.max_drop, obj)} |")
        log(f"methods: {output / f'{key}.md'}: {verdict_line(figures, inputs.max_drop, obj)}")
    readme = "\n".join([
        "# Method cards", "",
        f"> Generated by `{context['generator']}` from `{context['bench_command']}` ({context['measured']}).", "",
        f"Measured on {setting}, over paired seeds {context['seeds']}, {obj.noun} margin {inputs.max_drop:.3g} "
        f"{obj.unit}. One reference setting: a verdict here is about this model on this device, not a law; run the "
        f"bench on yours.", "", f"| method | verdict here (speed-up and {obj.noun} delta vs O0, 95% CI) |", "|---|---|",
        *index, ""])
    written.append(write_atomically(output / "README.md", lambda temp: temp.write_text(readme, encoding="utf-8")))
    return written
