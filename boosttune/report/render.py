"""Lay the report out: one self-contained HTML file (plotly.js inlined, opens offline) and the same tables as
``report.md`` for terminals and pull requests."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Callable, NamedTuple

import pandas as pd
import plotly.offline

from boosttune.stats.decisions import SHORT, VerdictCode, decision_words
from boosttune.tables.results import finite, fmt
from boosttune.tables.states import FINISHED, RunStatus
from boosttune.files import write_atomically
from boosttune.report import figures, recipes
from boosttune.report.inputs import ReportInputs

__all__ = ["HTML_NAME", "MARKDOWN_NAME", "Section", "Table", "build_sections", "render_html", "render_markdown",
           "write_report"]

HTML_NAME, MARKDOWN_NAME = "report.html", "report.md"


class Table(NamedTuple):
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    title: str = ""
    note: str = ""  # one line below it: what it leaves out, and why


class Section(NamedTuple):
    anchor: str
    title: str
    text: tuple[str, ...] = ()  # paragraphs (plain text)
    tables: tuple[Table, ...] = ()
    figures: tuple[Callable[[], object], ...] = ()  # each draws one plotly figure (HTML only)
    details: tuple[str, ...] = ()  # the long text, folded away in HTML (paragraphs)
    details_title: str = "In full"


def _cell(value, spec: str) -> str:
    return fmt(value, spec, missing="")


def _interval_cell(low, high, spec: str) -> str:
    return f"[{_cell(low, spec)}, {_cell(high, spec)}]" if finite(low) and finite(high) else ""


def build_sections(inputs: ReportInputs) -> list[Section]:
    """Every section of the report, in page order, with its tables and figure drawers."""
    sections = [_speed_vs_accuracy(inputs), _confirmed(inputs), _verified(inputs), _ablation(inputs)]
    if inputs.search is not None:
        sections.append(_search(inputs))
    sections += [_curves(inputs), _timeline(inputs), _failures(inputs)]
    return [s for s in sections if s is not None]


def _speed_vs_accuracy(inputs: ReportInputs) -> Section:
    scatter = figures.scatter_info(inputs)
    obj = inputs.objective
    text = [] if inputs.confirmed is not None else [
        f"Answer at {inputs.max_drop:.3g} {obj.unit}: {scatter.selection_reason or 'none (no finished O0 baseline)'}."]
    if inputs.kind == "bench":
        text.append("Each small point is one run, as a ratio to the O0 run of its own paired round; crosses are the "
                    "paired means with 95% intervals.")
    else:
        text.append("Each small point is one search trial (one seed); crosses are the confirmed recipes' paired means "
                    f"with 95% intervals; the shaded band is the {obj.noun} the margin allows.")
    return Section("speed-vs-accuracy", f"Speed vs {obj.noun}", tuple(text),
                   figures=(lambda: figures.draw_scatter(scatter),))


def _confirmed(inputs: ReportInputs) -> Section:
    claims_table = _claims_table(inputs)
    confirmed = inputs.confirmed
    if confirmed is None:
        return Section("confirmed", "Confirmed over paired seeds", (
            "No confirm stage ran: every figure here rests on one seed of one run (this machine's throughput moves "
            f"by about 10% between runs, one seed's {inputs.objective.noun} is noisy too). Rerun with "
            "--confirm-seeds 5.",),
            tables=(claims_table,))
    obj = inputs.objective
    rounds = (inputs.run_info or {}).get("rounds")
    at_planned = (inputs.run_info or {}).get("confirm_at_planned") is True
    epochs = (inputs.run_info or {}).get("confirm_epochs")
    text = (f"Paired seeds {list(confirmed.seeds)}: every recipe of a round shares its seed, rounds interleaved"
            + (f" ({rounds})" if isinstance(rounds, str) else "") + ". "
            + (f"Every run trained the planned job's {epochs} epochs: the baseline was still improving at the end of "
               "the tuning job, whose accuracy does not predict the planned job's; recipes were handed to the race "
               "by their speed (and the search's lossy bound), and their accuracy judged here. "
               if at_planned and isinstance(epochs, int) else "")
            + "Every figure comes from the model the decision is taken on (recipe + round, noise pooled over the "
            "recipes), with its 95% intervals: the speed-up per job (the decision's speed: training time at the "
            "planned length, compile included), per step (the steady-state throughput ratio of the same runs, "
            f"compile apart) and Δ (better than the baseline by, {obj.describe()}). Per step and per job differ by "
            "the compile a job pays and the steps it pays it over. Time to target (secondary): training "
            f"time to the baseline's {obj.noun} less the margin, compile included. The decision itself is one-sided, "
            "at the level its rules give each look.",)
    details = (*_race_text(confirmed),
               *[f"{r['recipe']}: {r['verdict_text']}" for _, r in confirmed.summary.iterrows() if r["recipe"] != "O0"])
    return Section("confirmed", "Confirmed over paired seeds", text,
                   tables=(_summary_table(inputs), _settings_table(confirmed), claims_table),
                   details=details, details_title="Every recipe's decision in full, and the race's rules")


def _verified(inputs: ReportInputs) -> Section | None:
    """Each `boosttune verify` of the run: the race's prediction beside the planned job's measurement."""
    if not inputs.verified:
        return None
    info = figures.verified_info(inputs.verified, inputs.objective)
    table = Table(("planned job", "recipe vs O0", "fresh seeds", "predicted by the race", "measured at the job",
                   "prediction agrees", "the answer"),
                  tuple((r.job, r.recipe, r.seeds, r.predicted, r.measured, r.agrees, r.outcome) for r in info.rows))
    text = ("The answer and O0 trained again at the job the team plans (its length, and its data where given) on "
            "fresh paired seeds the run never used (boosttune verify). Per job and Δ with their 95% intervals; the "
            "prediction agrees when its per-job speed-up is within 5% of the measured one and its change inside "
            "the measured interval. The race measured accuracy at the run's own length: at a longer job it is a "
            "guess, which this measures.", *(r.line for r in info.rows))
    return Section("verified", "Verified at the planned job", text, tables=(table,),
                   details=tuple(f"{r.job}: {r.folder}" for r in info.rows), details_title="Where each one is")


def _settings_table(confirmed) -> Table:
    """Each raced recipe's settings against O0's: only what differs, so a name never hides a setting."""
    runs = confirmed.runs
    first = {str(name): recipes.recipe_of(group.iloc[0]) for name, group in runs.groupby("recipe", sort=False)}
    baseline = first.get("O0", {})
    rows = tuple((name if i == 0 else "", setting, base, value)
                 for name in confirmed.summary["recipe"] if name != "O0" and str(name) in first
                 for i, (setting, base, value) in enumerate(recipes.settings_diff(first[str(name)], baseline)))
    return Table(("recipe", "setting", "O0", "this recipe"), rows,
                 "What each raced recipe changes from O0 (every setting that differs; the rest is O0's)")


def _race_text(confirmed) -> tuple[str, ...]:
    """How the race ran: its rules, and each candidate's seeds and exit."""
    rules = confirmed.rules
    if rules is None:
        return ()
    lines = [f"A race: after every round a candidate left once its paired seeds decided it; a recipe counts only "
             f"if it won (shown faster and non-inferior, the chance of any false claim held at {rules.alpha:g} over "
             f"every candidate and round; never on fewer than {rules.min_seeds} seeds). Budget: "
             f"{rules.budget_text()}."]
    for _, r in confirmed.summary.iterrows():
        if r["recipe"] != "O0" and isinstance(r.get("race_exit"), str):
            lines.append(f"{r['recipe']}: seeds {r['race_seeds'] or 'none'}; {r['race_why']} (after round "
                         f"{r['left_after_round']})")
    return tuple(lines)


def _claims_table(inputs: ReportInputs) -> Table:
    return Table(("MindSpore preset", "claim", "measured here", "verdict"),
                 tuple((c.preset, c.claim, c.measured, c.verdict) for c in figures.claims_info(inputs)),
                 "MindSpore's claims for its presets, as this device runs them")


def _summary_table(inputs: ReportInputs) -> Table:
    """The confirm stage's (or bench's) summary: one row per recipe, paired figures with their intervals."""
    obj = inputs.objective
    spec = obj.gain_spec
    rows = []
    for _, r in inputs.confirmed.summary.iterrows():
        rows.append((str(r["recipe"]), str(int(r["n_seeds"])), _cell(r["job_speedup"], ".3f"),
                     _interval_cell(r["job_ci_low"], r["job_ci_high"], ".3f"), _cell(r["step_speedup"], ".3f"),
                     _interval_cell(r["step_ci_low"], r["step_ci_high"], ".3f"), _cell(r["e2e_speedup"], ".2f"),
                     obj.format_value(r["objective_value"]) if finite(r["objective_value"]) else "n/a",
                     _cell(r["objective_gain"], spec),
                     _interval_cell(r["objective_gain_ci_low"], r["objective_gain_ci_high"], spec),
                     decision_words(str(r["verdict"]), obj, inputs.max_drop)))
    return Table(("recipe", "seeds", "speed-up per job", "95% CI", "per step", "95% CI", "e2e", obj.label,
                  f"Δ {obj.unit}", "95% CI", "decision"), tuple(rows))


def _ablation(inputs: ReportInputs) -> Section | None:
    ablation = figures.ablation_info(inputs)
    if not ablation.alone and ablation.best is None:
        return Section("ablation", "Ablation", ("No run changed a single method from the baseline recipe, so no "
                                                "method can be judged alone.",))
    obj = inputs.objective
    spec = obj.gain_spec
    rows = [(r.name, _cell(r.speedup, ".3f"), _interval_cell(r.speedup_low, r.speedup_high, ".3f"), _cell(r.delta_pt, spec),
             _interval_cell(r.delta_low_pt, r.delta_high_pt, spec), str(r.runs), r.source, "yes" if r.in_best else "")
            for r in ablation.alone]
    if ablation.best is not None:
        b = ablation.best
        rows.append((f"recommended: {b.name} ({' + '.join(ablation.best_methods) or 'no method'})",
                     _cell(b.speedup, ".3f"), _interval_cell(b.speedup_low, b.speedup_high, ".3f"), _cell(b.delta_pt, spec),
                     _interval_cell(b.delta_low_pt, b.delta_high_pt, spec), str(b.runs), b.source, ""))
    table = Table(("method", "speed-up per job", "95% CI", f"Δ {obj.unit}", "95% CI", "runs", "from",
                   "in the recommended recipe"), tuple(rows))
    return Section("ablation", "Ablation: each method alone, and in the recommended recipe",
                   ("A method counts as alone when it is the only change from the baseline recipe (same optimizer "
                    "and learning rate).",), tables=(table,),
                   figures=(lambda: figures.draw_ablation(ablation),))


def _search(inputs: ReportInputs) -> Section:
    text, tables, drawn = [], [], []
    hv = figures.hypervolume_info(inputs)
    if hv is not None:
        obj = inputs.objective
        drawn.append(lambda: figures.draw_hypervolume(hv))
        text.append(f"Hypervolume after {len(hv.hypervolume)} trials: {hv.hypervolume[-1]:.3f} "
                    f"(area of speed-up x {obj.noun} gain ({obj.unit}) the front dominates above "
                    f"{hv.reference[0]:g}x and {hv.reference[1]:+.3g} {obj.unit}).")
    importance = _importance(inputs)
    if isinstance(importance, str):
        text.append(importance)
    else:
        drawn.append(lambda: figures.draw_importance(importance))
        if importance.left_out:
            text.append("No importance for " + "; ".join(f"{k} ({why})" for k, why in importance.left_out)
                        + ": it cannot act on this device.")
        for objective, scores in importance.objectives:
            tables.append(Table((f"importance for {objective}", "share"),
                                tuple((k, f"{v:.2f}") for k, v in scores)))
    parallel = figures.parallel_info(inputs)
    if parallel is not None:
        drawn.append(lambda: figures.draw_parallel(parallel))
        if any(axis.names is not None and "(unset)" in axis.names for axis in parallel.dimensions):
            text.append("Parallel coordinates: one line per trial trained to the end; \"(unset)\" on an axis marks a "
                        "trial that did not draw that knob (its method was off).")
    left_out = _left_out_rows(inputs)
    tables.append(Table(("left out of the search", "why"),
                        left_out or (("nothing", "every knob the device supports was searched"),)))
    if inputs.unsupported:
        device = str(inputs.run_info.get("device", "this device")).split(":")[0]
        tables.append(Table((f"not supported on {device} (the probe, on a trial node)", "MindSpore's reason"),
                            tuple(inputs.unsupported.items())))
    tables.append(_top_trials(inputs))
    return Section("search", "The search", tuple(text), tuple(tables), tuple(drawn))


def _importance(inputs: ReportInputs):
    try:
        result = figures.importance_info(inputs)
    except Exception as e:  # Optuna's evaluators reject degenerate studies in many ways; the report goes on
        return f"Parameter importance: not computed ({type(e).__name__}: {str(e).splitlines()[0][:200]})."
    return result or "Parameter importance: no search ran."


_TOP = ("trial_id", "label", "status", "boost_level", "amp_level", "loss_scale_kind", "optimizer_name",
        "learning_rate", "throughput_sps", "job_speedup_vs_baseline", "speedup_vs_baseline", "objective_value",
        "objective_gain", "compile_s")
_FORMATS = {"throughput_sps": ".1f", "job_speedup_vs_baseline": ".3f", "speedup_vs_baseline": ".3f",
            "objective_value": ".4f", "objective_gain": "+.2f", "compile_s": ".2f", "learning_rate": ".4g"}
_TOP_NAMES = {"job_speedup_vs_baseline": "speed-up per job", "speedup_vs_baseline": "per step"}


def _left_out_rows(inputs: ReportInputs) -> tuple[tuple[str, str], ...]:
    """The knobs the search left out, each with why; one a trial ran all the same (a preset, a forced start point)
    says so, so the table never contradicts the trials table."""
    ran: dict[str, list[str]] = {}
    for _, row in inputs.runs.iterrows():
        settings = recipes.recipe_settings(recipes.recipe_of(row))
        knobs = {f"amp.{settings['amp_level']}"} | {f"boost.{k.split('.')[0]}" for k in settings if "." in k
                                                    and not k.startswith(("loss_scale.", "optimizer."))}
        for knob in knobs:
            ran.setdefault(knob, []).append(recipes.run_name(row))
    return tuple((knob, why + (f"; run all the same by {', '.join(sorted(set(ran[knob])))}" if knob in ran else ""))
                 for knob, why in inputs.left_out.items())


def _top_trials(inputs: ReportInputs, top: int = 15) -> Table:
    table = inputs.search
    finished = table[table["status"].isin(FINISHED)]
    obj = inputs.objective
    order = "job_speedup_vs_baseline" if "job_speedup_vs_baseline" in finished else "speedup_vs_baseline"
    rows = finished.sort_values([order, "objective_gain"], ascending=False, na_position="last").head(top)
    formats = {**_FORMATS, "objective_value": ".4f" if obj.fraction else ".4g", "objective_gain": obj.gain_spec}
    cells = []
    for _, row in rows.iterrows():
        delta = row["objective_gain"]
        within = "" if not finite(delta) else "yes" if delta >= -inputs.max_drop - 1e-9 else "no"
        cells.append(tuple(_cell(row.get(c), formats[c]) if c in formats else recipes.run_name(row) if c == "label"
                           else ("" if pd.isna(row[c]) else str(row[c])) for c in _TOP) + (within,))
    header = tuple({"objective_value": obj.label, "objective_gain": f"Δ {obj.unit}", **_TOP_NAMES}.get(c, c) for c in _TOP)
    return Table(header + (f"within {inputs.max_drop:.3g} {obj.unit}",), tuple(cells))


def _curves(inputs: ReportInputs) -> Section | None:
    curves = figures.curves_info(inputs)
    if not curves.series:
        return None
    return Section("curves", "Learning curves", (f"From {curves.source}.",),
                   figures=(lambda: figures.draw_curves(curves),))


def _timeline(inputs: ReportInputs) -> Section | None:
    timeline = figures.timeline_info(inputs)
    if timeline is None:
        return None
    stopped = sum(b.status == RunStatus.STOPPED for b in timeline.bars)
    return Section("timeline", "Timeline", (f"{len(timeline.bars)} runs over {timeline.total_s:.0f} s; {stopped} "
                                            "stopped early by the scheduler.",),
                   figures=(lambda: figures.draw_timeline(timeline),))


def _failures(inputs: ReportInputs) -> Section:
    failed = figures.failures_info(inputs)
    if not failed:
        return Section("failures", "Failed, stopped or incomplete runs", ("None: every run finished with figures.",))
    return Section("failures", "Failed, stopped or incomplete runs", (),
                   tables=(Table(("run", "id", "status", "reason"),
                                 tuple((f.name or f.run_id, f.run_id, f.status, f.reason) for f in failed)),))


# --- HTML and markdown ------------------------------------------------------------------------------------

_STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em 2em;max-width:1400px;color:#222}
.answer{font-size:1.1em;background:#f3f7fb;border-left:5px solid #4c78a8;padding:.7em 1em;margin:.5em 0 1em}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:.15em 1em;font-size:13px}
dl.facts dt{font-weight:600}dl.facts dd{margin:0;font-family:ui-monospace,monospace;word-break:break-all}
nav a{margin-right:1em}table.t{border-collapse:collapse;font-size:13px;margin:.6em 0}
table.t td,table.t th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left}table.t th{background:#f4f4f4}
#apply{display:flex;flex-wrap:wrap;gap:0 2em;margin:0 0 1em}#apply h2{flex-basis:100%;margin:.2em 0}
#apply>div{flex:1 1 36em;min-width:0}#apply pre{background:#f6f8fa;padding:.6em;overflow-x:auto;font-size:13px}
#apply p,#apply li{font-size:13px}#apply code,#apply td:first-child{font-family:ui-monospace,monospace}
div.scroll{overflow-x:auto;max-width:100%}#answer p,#race p{font-size:14px;margin:.3em 0}#answer table.t{font-size:14px}
#answer td:not(:first-child){white-space:nowrap}p.note{color:#555}
details{margin:.5em 0}details>summary{cursor:pointer;font-weight:600}"""


def _html_table(table: Table) -> str:
    """A table in a box that scrolls sideways when the page is narrower than it."""
    title = f"<h3>{html.escape(table.title)}</h3>" if table.title else ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    return f'{title}<div class="scroll"><table class="t"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _html_apply(info: figures.ApplyInfo | None) -> str:
    """How to apply the answer: files and snippet on the left, the recipe's knobs and the notes on the right."""
    if info is None:
        return ""
    files = "".join(f"<li><code>{html.escape(path)}</code>: {html.escape(what)}</li>" for path, what in info.files)
    written = "" if info.exported else (f"<p>Not written yet: <code>{html.escape(info.export_command)}</code> "
                                        "writes them.</p>")
    knobs = _html_table(Table(("MindSpore", "this recipe"), info.knobs))
    notes = "".join(f"<p>{html.escape(note)}</p>" for note in info.notes)
    return (f'<section id="apply"><h2>How to apply it</h2><div><pre><code>{html.escape(info.snippet)}</code></pre>'
            f"<ul>{files}</ul>{written}</div><div>{knobs}{notes}</div></section>\n")


def _triple(values: tuple[float, float, float], spec: str, suffix: str = "") -> str:
    """An estimate with its interval: "1.16x [1.12, 1.20]"; "n/a" when not measured."""
    estimate, low, high = values
    if not finite(estimate):
        return "n/a"
    interval = f" [{_cell(low, spec)}, {_cell(high, spec)}]" if finite(low) and finite(high) else ""
    return f"{_cell(estimate, spec)}{suffix}{interval}"


def answer_table(inputs: ReportInputs, info: figures.AnswerInfo) -> Table:
    """The first screen's table: every confirmed recipe, its figures with 95% intervals, and the decision."""
    obj = inputs.objective
    rows = []
    for r in info.rows:
        base = r.code == "baseline"
        job = "1" if base else _triple(r.job, ".2f", "x")  # the decision column says it is the baseline
        speed = "1" if base else _triple(r.speedup, ".2f", "x")
        pays = "" if base else _break_even(r.break_even_steps, info.job_steps)
        e2e = "" if base else _triple(r.e2e, ".2f", "x")
        gain = "" if base else _triple(r.gain, obj.gain_spec)
        rows.append((f"{r.recipe} (the answer)" if r.is_answer and not base else r.recipe, str(r.seeds),
                     job, speed, pays, gain, e2e, SHORT.get(r.code, r.decision)))  # in full: the confirmed section
    length = f"{info.planned_epochs} epochs" if info.planned_epochs else "the job"
    return _without_empty(Table(("recipe", "paired seeds", f"speed-up per job, {length} [95% CI]",
                                 "per step [95% CI]", "pays off after", f"Δ {obj.noun} ({obj.unit}) [95% CI]",
                                 "time to target (secondary)", "decision"), tuple(rows)))


def _without_empty(table: Table) -> Table:
    """``table`` less the figure columns that no recipe measured (every cell empty or n/a but the baseline's), the
    note naming them."""
    rows = [row for row in table.rows if row[-1] != SHORT[VerdictCode.BASELINE]]
    empty = [i for i in range(2, len(table.headers) - 1) if rows and all(row[i] in ("", "n/a") for row in rows)]
    if not empty:
        return table
    keep = [i for i in range(len(table.headers)) if i not in empty]
    names = ", ".join(table.headers[i] for i in empty)
    return Table(tuple(table.headers[i] for i in keep), tuple(tuple(row[i] for i in keep) for row in table.rows),
                 note=f"Not shown: {names}, measured for no recipe in this run.")


def _break_even(steps: float, total: float = math.nan) -> str:
    """When a recipe's job becomes the shorter: "never" (slower per step), "step 1", or "N of the job's M steps"."""
    if not finite(steps):
        return "never" if steps == math.inf else "n/a"
    of = f" of {round(total)}" if finite(total) else ""
    if finite(total) and steps > total:  # its compile is not paid back within the job
        return f"beyond the job ({math.ceil(steps)} steps; it has {round(total)})"
    return "step 1" if steps <= 0 else f"{math.ceil(steps)}{of} steps"


def render_html(inputs: ReportInputs, sections: list[Section]) -> str:
    header = figures.header_info(inputs)
    facts = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in header.run_details)
    nav = "".join(f'<a href="#{s.anchor}">{html.escape(s.title.split(":")[0])}</a>' for s in sections)
    first = after = ""
    answer = figures.answer_info(inputs)
    if answer is not None:
        lines = "".join(f"<p>{html.escape(t)}</p>" for t in (answer.stopped, answer.noise) if t)
        table = answer_table(inputs, answer)
        note = f'<p class="note">{html.escape(table.note)}</p>' if table.note else ""
        first = f'<section id="answer">{_html_table(table)}{note}</section>\n'
        after = f'<section id="race">{lines}</section>\n' if lines else ""
    parts = []
    for s in sections:
        parts.append(f'<section id="{s.anchor}"><h2>{html.escape(s.title)}</h2>')
        parts += [f"<p>{html.escape(t)}</p>" for t in s.text]
        for n, draw in enumerate(s.figures):
            figure = draw()
            parts.append(figure.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{s.anchor}-{n}",
                                        config={"displaylogo": False, "responsive": True}))
        parts += [_html_table(t) for t in s.tables]
        if s.details:
            parts.append(f"<details><summary>{html.escape(s.details_title)}</summary>"
                         + "".join(f"<p>{html.escape(t)}</p>" for t in s.details) + "</details>")
        parts.append("</section>")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(inputs.title)}</title>'
            f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{_STYLE}</style>'
            f'<script type="text/javascript">{plotly.offline.get_plotlyjs()}</script></head><body>\n'
            f"<h1>{html.escape(inputs.title)}</h1>\n<p class=\"answer\">{html.escape(header.answer)}</p>\n"
            + first + _html_apply(figures.apply_info(inputs)) + after +
            f'<details class="run"><summary>The run: device, model, data, versions, the command that reproduces it'
            f'</summary><dl class="facts">{facts}</dl></details>\n<nav>{nav}</nav>\n' + "\n".join(parts)
            + "\n</body></html>\n")


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(table: Table) -> str:
    lines = [f"**{table.title}**", ""] if table.title else []
    lines += ["| " + " | ".join(_md_cell(h) for h in table.headers) + " |",
             "|" + "|".join("---" for _ in table.headers) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def _md_apply(info: figures.ApplyInfo | None) -> list[str]:
    if info is None:
        return []
    lines = ["## How to apply it", ""]
    lines += [f"- `{path}` (beside this file): {what}" for path, what in info.files]
    if not info.exported:
        lines.append(f"- not written yet: `{info.export_command}` writes them")
    knobs = Table(("MindSpore", "this recipe"), tuple((f"`{name}`", value) for name, value in info.knobs))
    lines += ["", "```python", info.snippet, "```", "", _md_table(knobs), ""]
    lines += [f"- {note}" for note in info.notes]
    return lines + [""]


def render_markdown(inputs: ReportInputs, sections: list[Section]) -> str:
    header = figures.header_info(inputs)
    lines = [f"# {inputs.title}", "", f"**{header.answer}**", ""]
    answer = figures.answer_info(inputs)
    if answer is not None:
        table = answer_table(inputs, answer)
        lines += [_md_table(table), ""] + ([table.note, ""] if table.note else [])
    lines += _md_apply(figures.apply_info(inputs))
    if answer is not None:
        lines += [f"{t}\n" for t in (answer.stopped, answer.noise) if t]
    lines += ["## The run", ""]
    lines += [f"- {k}: `{v}`" if k == "reproduce" else f"- {k}: {v}" for k, v in header.run_details]
    for s in sections:
        lines += ["", f"## {s.title}", ""]
        for t in s.text:
            lines += [t, ""]
        if s.figures:
            lines += [f"({len(s.figures)} figure(s) in {HTML_NAME})", ""]
        for t in s.tables:
            lines += [_md_table(t), ""]
        if s.details:
            lines += [f"<details><summary>{s.details_title}</summary>", ""]
            for t in s.details:
                lines += [t, ""]
            lines += ["</details>", ""]
    return "\n".join(lines).rstrip() + "\n"


def write_report(inputs: ReportInputs, folder: str | Path | None = None) -> tuple[Path, Path]:
    """Write ``report.html`` and ``report.md`` into ``folder`` (default: the results folder); return both paths."""
    target = Path(folder) if folder is not None else inputs.folder
    if target is None:
        raise ValueError("write_report: no folder given and the inputs were not loaded from one")
    sections = build_sections(inputs)
    page, text = render_html(inputs, sections), render_markdown(inputs, sections)
    html_path = write_atomically(Path(target) / HTML_NAME, lambda temp: temp.write_text(page, encoding="utf-8"))
    md_path = write_atomically(Path(target) / MARKDOWN_NAME, lambda temp: temp.write_text(text, encoding="utf-8"))
    return html_path, md_path
