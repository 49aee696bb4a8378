"""docs/reference.md, written from the code: every experiment and bench field (the pydantic models), every flag of
``boosttune`` and of the experiment scripts (the argparse parsers), every results and summary column (the schema),
every decision code (the race's exits).

    python -m boosttune.reference > docs/reference.md     # tests/test_docs.py fails when the file is stale

Generated rather than written by hand so that it cannot drift: a field, flag or column added in code appears here
the next time it is generated, and the test says when that was forgotten. No documentation tool reads pydantic
models, argparse parsers and a column schema together into one Markdown page, hence this module.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Iterable

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from boosttune.bench import BenchConfig
from boosttune.cli.main import build_parser
from boosttune.cli.search import script_parser
from boosttune.config.experiment import ExperimentConfig
from boosttune.config.recipe import DataConfig, LossScaleConfig, ModelEntry, OptimizerConfig, TrialRecipe
from boosttune.stats.confirmed import SUMMARY_COLUMNS
from boosttune.tables.results import SCHEMA, SCHEMA_VERSION
from boosttune.stats.decisions import SHORT, Exit, VerdictCode, decision_words

__all__ = ["render_reference"]

_HEADER = """# Reference

Generated from the code by `python -m boosttune.reference > docs/reference.md`; do not edit by hand
(`tests/test_docs.py` fails when this file and the code disagree). The guides explain; this page lists.

"""


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _type(annotation: Any) -> str:
    if "Tag(tag=" in str(annotation):  # base.model: a built-in network's name, or a builder
        names = re.search(r"Literal\[([^\]]*)\]", str(annotation))
        return f"one of {names.group(1)}, or {{entry, kwargs}} (your builder)" if names else "a name or a builder"
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = text or str(annotation).replace("typing.", "")
    text = re.sub(r"Annotated\[([^\[\],]+), [^\]]*?\)\]", r"\1", text)  # a validator's wrapper: its type
    text = re.sub(r"<function (\w+) at 0x[0-9a-f]+>", r"\1", text)  # never an address: the file must not vary
    return text.replace("NoneType", "None")


def _default(field: Any) -> str:
    if field.default_factory is not None:
        try:
            return f"`{field.default_factory()!r}`"
        except TypeError:
            return "(computed)"
    if field.default is PydanticUndefined:
        return "required"
    if isinstance(field.default, BaseModel):  # a section: its fields are listed below
        return "its fields' defaults"
    return "unset" if field.default is None else f"`{field.default!r}`"


def _fields(model: type[BaseModel], prefix: str = "") -> list[str]:
    rows = ["| field | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        rows.append(f"| `{prefix}{name}` | {_cell(_type(field.annotation))} | {_cell(_default(field))} | "
                    f"{_cell(field.description or '')} |")
    return rows


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| flag | default | help |", "|---|---|---|"]
    for action in parser._actions:  # argparse keeps no public list of a parser's actions
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        names = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}` (positional)"
        default = "" if action.default in (None, False, argparse.SUPPRESS) else f"`{action.default}`"
        choices = f" (one of {', '.join(map(str, action.choices))})" if action.choices else ""
        rows.append(f"| {names} | {_cell(default)} | {_cell((action.help or '') % {'default': action.default})}"
                    f"{_cell(choices)} |")
    return rows


def _subcommands(parser: argparse.ArgumentParser) -> Iterable[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def render_reference() -> str:
    out = [_HEADER, "## The experiment file (`boosttune tune`, `boosttune check`)", ""]
    out += _fields(ExperimentConfig) + [""]
    out += ["### `base`: the O0 recipe", ""] + _fields(TrialRecipe, "base.") + [""]
    for title, model, prefix in (("`base.model` as your own builder", ModelEntry, "base.model."),
                                 ("`base.data`", DataConfig, "base.data."),
                                 ("`base.optimizer`", OptimizerConfig, "base.optimizer."),
                                 ("`base.loss_scale`", LossScaleConfig, "base.loss_scale.")):
        out += [f"### {title}", ""] + _fields(model, prefix) + [""]
    out += ["## The bench file (`boosttune bench`)", ""] + _fields(BenchConfig) + [""]
    out += ["## Command line", "", "### `boosttune`", ""] + _flags(build_parser()) + [""]
    for name, sub in _subcommands(build_parser()):
        out += [f"### `boosttune {name}`", "", _cell(sub.description or ""), ""] + _flags(sub) + [""]
    out += ["### The experiment scripts (`python experiments/resnet.py`)", ""]
    out += _flags(script_parser("resnet8", "the main job")) + [""]
    out += [f"## results.csv / results.parquet (schema version {SCHEMA_VERSION})", "",
            "| column | dtype | description |", "|---|---|---|"]
    out += [f"| `{c.name}` | {c.dtype} | {_cell(c.description)} |" for c in SCHEMA]
    out += ["", "Searched knobs follow as `param.<knob>` columns, one per knob a trial drew.", ""]
    out += ["## summary.csv (one row per confirmed recipe)", "", ", ".join(f"`{c}`" for c in SUMMARY_COLUMNS), ""]
    out += ["## Decisions (summary.csv's `verdict`)", "", "| code | in a table | in words |", "|---|---|---|"]
    codes = [Exit.WON, Exit.SLOWER, Exit.TOO_LOSSY, Exit.BEHIND, Exit.UNDECIDED, Exit.BUDGET, Exit.FUTILE, Exit.RACING,
             VerdictCode.BASELINE, VerdictCode.NO_DATA]
    out += [f"| `{code}` | {SHORT[code]} | {_cell(decision_words(code))} |" for code in codes]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_reference())
