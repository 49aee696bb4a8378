"""The README and docs/ cannot drift from the code: the generated reference is current, every YAML block parses as
what it is, and measured figures live in docs/benchmarks.md with a date, not in the README (pure: nothing is run).
Every command they show is run as printed by tests/test_commands.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "experiments" / "custom" / "README.md"]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _blocks(language: str | None = None) -> list[tuple[Path, str, str]]:
    """(page, language, text) of every fenced block (of one language)."""
    out = []
    for page in PAGES:
        for lang, text in FENCE.findall(page.read_text(encoding="utf-8")):
            if language is None or lang == language:
                out.append((page, lang, text))
    return out


def test_the_reference_is_generated_from_the_code_as_it_is():
    from boosttune.reference import render_reference

    assert (ROOT / "docs" / "reference.md").read_text(encoding="utf-8") == render_reference(), (
        "docs/reference.md is stale: run python -m boosttune.reference > docs/reference.md")


def _kind(document: dict, text: str) -> str:
    """What a YAML block is, by its keys (a bench says so in its first comment)."""
    from boosttune.config.experiment import ExperimentConfig
    from boosttune.config.recipe import TrialRecipe

    keys = set(document)
    if keys & {"cluster_name", "provider", "head_node_type", "available_node_types"}:
        return "ray cluster"
    if "bench" in (text.splitlines() or [""])[0] or "recipes" in keys:
        return "bench"
    experiment, recipe = set(ExperimentConfig.model_fields), set(TrialRecipe.model_fields)
    if "base" in keys or (keys <= experiment and not keys <= recipe):
        return "experiment"
    if keys <= recipe and keys - {"boost_level", "boost_config_dict"}:
        return "recipe"
    return "boost config"


def test_every_yaml_block_parses_as_what_it_is():
    from boosttune.bench import parse_bench
    from boosttune.config import parse_boost_config, split_boost_document
    from boosttune.config.experiment import parse_experiment
    from boosttune.config.recipe import parse_recipe

    blocks = _blocks("yaml")
    assert blocks, "the pages show YAML blocks: the reader finds them"
    for page, _, text in blocks:
        document = yaml.safe_load(text)
        assert isinstance(document, dict), f"{page.name}: a YAML block that is not a mapping:\n{text}"
        kind = _kind(document, text)
        if kind == "ray cluster":
            continue
        if kind == "bench":
            parse_bench(document)
        elif kind == "recipe":
            parse_recipe(document)
        elif kind == "boost config":
            config, level = split_boost_document(document, "O1")
            parse_boost_config(config, level)
        else:
            parse_experiment(document)


FIGURE = re.compile(r"\b\d+(\.\d+)?x\b|\b\d+(\.\d+)?\s?%|[-+]\d+\.\d+ ?pt\b")


def test_measured_figures_live_in_the_benchmarks_page_with_a_date():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    prose = re.sub(r"\b95% (interval|CI)", "", FENCE.sub("", readme))  # a confidence level is not a measurement
    assert not FIGURE.search(prose), f"a measured figure in the README: {FIGURE.search(prose).group(0)!r}; " \
                                     "quote it in docs/benchmarks.md with its date and command, and link there"
    assert not re.search(r"\b[0-9a-f]{7,40}\b", prose), "a commit hash in the README"
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    sections = benchmarks.split("\n## ")[1:]
    assert sections
    undated = [s.splitlines()[0] for s in sections if FIGURE.search(s)
               and not re.search(r"20\d\d-\d\d-\d\d|date (was )?not recorded", s)]
    assert not undated, f"docs/benchmarks.md sections with figures but no date: {undated}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    text = page.read_text(encoding="utf-8")
    missing = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        if not (page.parent / target).exists():
            missing.append(target)
    assert not missing, f"{page.name} links to files that do not exist: {missing}"


def test_the_script_flag_table_names_every_flag_of_the_scripts():
    """docs/cli.md's table of the experiment scripts' flags lists each flag the scripts take, and no other."""
    from boosttune.cli.search import script_parser

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    table = text[text.index("| script flag | experiment-file field |"):]
    table = table[:table.index("\n\n")]
    shown = set(re.findall(r"`(--[a-z-]+)`", "\n".join(row.split("|")[1] for row in table.splitlines()[2:])))
    flags = {o for a in script_parser("resnet8", "")._actions for o in a.option_strings} - {"-h", "--help"}
    assert shown == flags, (sorted(flags - shown), sorted(shown - flags))
