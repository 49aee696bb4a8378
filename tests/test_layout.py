"""The package layout follows the data flow, and imports run one way.

The stages, earliest first (docs/layout.md): a module may import from its own stage and earlier ones,
never from a later one. An import inside a function is kept only for a heavy library (MindSpore, Ray,
Optuna, pandas, ...) or a boosttune module that loads one at import time, so that ``boosttune --help``
and the checks that refuse bad input stay fast; every other import sits at the top of its module.
Read from the source with :mod:`ast`: nothing here imports boosttune.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "boosttune"

# (stage, the modules and packages in it); a package covers its submodules.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("boosttune.errors", "boosttune.files", "boosttune.objective", "boosttune.builder",
                    "boosttune.runtime", "boosttune.pareto")),
    ("algorithms", ("boosttune.algorithms",)),
    ("config", ("boosttune.config",)),
    ("builtin", ("boosttune.builtin",)),
    ("space", ("boosttune.space",)),
    ("trial", ("boosttune.trial",)),
    ("probe", ("boosttune.probe",)),
    ("execution", ("boosttune.execution",)),
    ("search", ("boosttune.search",)),
    ("evaluation", ("boosttune.evaluation",)),
    ("report", ("boosttune.report",)),
    ("compose", ("boosttune.check", "boosttune.experiment", "boosttune.bench")),
    ("cli", ("boosttune.cli", "boosttune.reference")),
)
# The public surface (``boosttune/__init__.py``) re-exports from several stages, ``run_trial`` lazily (every
# submodule import runs this file first: an eager import of the trial runner would load it for ``boosttune.errors``);
# ``from boosttune import __version__`` reads only its version.
FACADE = "boosttune"
HEAVY = {"mindspore", "ray", "optuna", "optuna_dashboard", "pandas", "pyarrow", "scipy", "sklearn", "mlxtend",
         "plotly", "torch"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def stage_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (length of the matching prefix, stage)
    for index, (_, prefixes) in enumerate(STAGES):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), index)
    return None if best is None else best[1]


class _Import:
    def __init__(self, target: str, line: int, in_function: bool) -> None:
        self.target, self.line, self.in_function = target, line, in_function


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@cache
def imports_of(module: str) -> tuple[_Import, ...]:
    """Every import the module runs (type-only imports under ``if TYPE_CHECKING:`` left out)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[_Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other, in_function)
                continue
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend(_Import(alias.name, child.lineno, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - child.level + 1] + ([base] if base else []))
                for alias in child.names:
                    submodule = f"{base}.{alias.name}"
                    found.append(_Import(submodule if submodule in MODULES else base, child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return tuple(found)


@cache
def is_heavy(module: str) -> bool:
    """Whether importing the boosttune module loads a heavy library (directly or through another module)."""
    for item in imports_of(module):
        if not item.in_function:
            top = item.target.split(".")[0]
            if top in HEAVY or (item.target in MODULES and item.target != module and is_heavy(item.target)):
                return True
    return False


def _internal(module: str) -> list[_Import]:
    return [item for item in imports_of(module) if item.target in MODULES and item.target != FACADE]


def test_every_module_belongs_to_a_stage():
    orphans = [m for m in MODULES if m != FACADE and stage_of(m) is None]
    assert not orphans, f"add these modules to a stage in tests/test_layout.py and docs/layout.md: {orphans}"


def test_no_module_imports_a_later_stage():
    later = []
    for module in MODULES:
        if module == FACADE:
            continue
        for item in _internal(module):
            if stage_of(item.target) > stage_of(module):
                later.append(f"{MODULES[module].relative_to(ROOT)}:{item.line} ({STAGES[stage_of(module)][0]}) "
                             f"imports {item.target} ({STAGES[stage_of(item.target)][0]})")
    assert not later, "imports against the data flow:\n" + "\n".join(later)


def test_an_import_inside_a_function_is_a_deferred_heavy_one():
    light = []
    for module in MODULES:
        if module == FACADE:
            continue
        for item in _internal(module):
            if item.in_function and not is_heavy(item.target):
                light.append(f"{MODULES[module].relative_to(ROOT)}:{item.line} imports {item.target} inside a function")
    assert not light, "move these to the top of the module (nothing heavy to defer):\n" + "\n".join(light)


def test_module_level_imports_form_no_circle():
    graph = {m: sorted({i.target for i in _internal(m) if not i.in_function}) for m in MODULES}
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (circle := walk(nxt)):
                return circle
        stack.pop()
        state[node] = 2
        return None

    for module in graph:
        if module not in state:
            circle = walk(module)
            assert circle is None, "import circle: " + " -> ".join(circle)


def test_the_stage_rules_catch_what_they_should(tmp_path):
    assert stage_of("boosttune.search.tune") > stage_of("boosttune.execution.ray_train")
    assert stage_of("boosttune.experiment") == stage_of("boosttune.bench") > stage_of("boosttune.report.render")
    assert stage_of("boosttune.elsewhere") is None
    assert is_heavy("boosttune.search.tune") and not is_heavy("boosttune.errors")


def test_the_layout_guide_names_every_package():
    layout = (ROOT / "docs" / "layout.md").read_text().split("\n## ", 1)[0]
    packages = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
    missing = [name for name in packages if not re.search(rf"\b{name}/", layout)]
    assert not missing, f"docs/layout.md's package tree does not name: {missing}"


@pytest.mark.parametrize("stage", [name for name, _ in STAGES])
def test_each_stage_has_modules(stage):
    index = [name for name, _ in STAGES].index(stage)
    assert any(stage_of(m) == index for m in MODULES), f"stage {stage} has no module: remove it or fill it"


# A run's start-up has one owner (boosttune/execution/start.py): a kind of run that did any of these itself would
# start differently from the others (the bench once claimed its folder after the probe, its pool had no storage).
START_UP = {"check_folder", "claim_folder", "connect_ray", "probe_on_worker", "WarmPool", "check_local_capacity",
            "check_placeable", "code_runtime_env", "check_storage"}
RUN_KINDS = ("boosttune.experiment", "boosttune.bench")


def start_up_calls(module: str) -> list[str]:
    """The start-up steps ``module`` imports by name (at its top or inside a function)."""
    tree = ast.parse(MODULES[module].read_text())
    return sorted({f"{MODULES[module].name}:{node.lineno} {alias.name}" for node in ast.walk(tree)
                   if isinstance(node, ast.ImportFrom) for alias in node.names if alias.name in START_UP})


@pytest.mark.parametrize("module", RUN_KINDS)
def test_a_kind_of_run_starts_through_the_one_owner(module):
    assert not start_up_calls(module), f"{module} does its own start-up; use boosttune.execution.start.start_run"


def test_the_start_up_rule_catches_a_kind_that_starts_itself(tmp_path, monkeypatch):
    planted = tmp_path / "kind.py"
    planted.write_text("def run():\n    from boosttune.files import claim_folder\n    return claim_folder\n")
    monkeypatch.setitem(MODULES, "boosttune.planted_kind", planted)
    assert start_up_calls("boosttune.planted_kind") == ["kind.py:2 claim_folder"]

# ---- the algorithms know no later stage, and functions fit a screen ----------------------------------------------

MAX_FUNCTION_LINES = 60
# Held to MAX_FUNCTION_LINES: every module of boosttune (one parameter per top-level package, for readable failures).
SHORT_FUNCTIONS = tuple(sorted({".".join(module.split(".")[:2]) for module in MODULES}))


def _in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def named_imports(path: Path, package: str) -> list[tuple[str, int]]:
    """(module, line) for every module the file's imports name, type-only ones (``if TYPE_CHECKING:``) included.

    ``package`` resolves relative imports; ``from a import b`` names both ``a`` and ``a.b``.
    """
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found += [(base, node.lineno)] + [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return found


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """'name (line): N lines' for every function or method in the file longer than ``limit`` lines."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [f"{node.name} (line {node.lineno}): {node.end_lineno - node.lineno + 1} lines"
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > limit]


def test_the_algorithms_import_nothing_of_the_probe_not_even_for_types():
    """They read a device's findings through their own Protocol (algorithms.base.DeviceSupport)."""
    found = []
    for module, path in MODULES.items():
        if not _in_package(module, "boosttune.algorithms"):
            continue
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        lines: dict[int, str] = {}  # one entry an import (``from a import b`` names a and a.b)
        for target, line in named_imports(path, package):
            if _in_package(target, "boosttune.probe"):
                lines.setdefault(line, target)
        found += [f"{path.relative_to(ROOT)}:{line} imports {target}" for line, target in lines.items()]
    assert not found, "the algorithms know the probe (a later stage):\n" + "\n".join(found)


@pytest.mark.parametrize("package", SHORT_FUNCTIONS)
def test_no_function_is_longer_than_a_screen(package):
    found = [f"{path.relative_to(ROOT)}: {entry}" for module, path in MODULES.items() if _in_package(module, package)
             for entry in long_functions(path)]
    assert not found, f"split these into functions of at most {MAX_FUNCTION_LINES} lines:\n" + "\n".join(found)


def test_the_import_and_length_rules_catch_what_they_should(tmp_path):
    planted = tmp_path / "planted.py"  # as if in boosttune/algorithms/amp/
    at_limit = "\n".join(f"    x = {n}" for n in range(MAX_FUNCTION_LINES - 1))  # with its def line: the limit
    over = "\n".join(f"    x = {n}" for n in range(MAX_FUNCTION_LINES))
    planted.write_text("from typing import TYPE_CHECKING\n"
                       "if TYPE_CHECKING:\n    from boosttune.probe.report import ProbeReport\n"
                       "from ... import probe\n"
                       f"def at_limit():\n{at_limit}\n"
                       f"def over():\n{over}\n")
    names = [target for target, _ in named_imports(planted, "boosttune.algorithms.amp")]
    assert "boosttune.probe.report" in names and "boosttune.probe" in names
    assert long_functions(planted) == [f"over (line {5 + MAX_FUNCTION_LINES}): {MAX_FUNCTION_LINES + 1} lines"]


# ---- one name, one meaning -------------------------------------------------------------------------------------

# The contract every algorithm folder fills in (boosttune/algorithms/<name>/: docs/layout.md) repeats these names by
# design; ``main`` is a module's command-line entry.
CONTRACT_NAMES = {"ALGORITHM", "FRAGMENT", "NOTE", "bench", "observe", "rule", "main"}


def public_names(path: Path) -> list[str]:
    """The public functions, classes and UPPER_CASE constants a module defines at its top level."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = [node.name for node in tree.body
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_")]
    names += [target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
              for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
              if isinstance(target, ast.Name) and target.id.isupper()]
    return names


def colliding_names(modules: dict[str, Path]) -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for module, path in modules.items():
        for name in public_names(path):
            if name not in CONTRACT_NAMES:
                where.setdefault(name, []).append(module)
    return {name: found for name, found in where.items() if len(found) > 1}


def test_a_public_name_means_one_thing_across_the_package():
    """Three functions named objective_of once returned three different things; LEVELS meant O0-O2 and O1-O3."""
    collisions = colliding_names(MODULES)
    assert not collisions, "one name, several definitions (name what each returns):\n" + "\n".join(
        f"{name}: {', '.join(found)}" for name, found in sorted(collisions.items()))


def test_the_name_rule_catches_a_collision(tmp_path):
    (tmp_path / "a.py").write_text("LEVELS = ('O0', 'O1')\ndef objective_of(t):\n    return t\n")
    (tmp_path / "b.py").write_text("LEVELS = ('O1', 'O3')\ndef _objective_of(t):\n    return t\nbench = 1\n")
    (tmp_path / "c.py").write_text("bench = 2\n")
    found = colliding_names({name: tmp_path / f"{name}.py" for name in "abc"})
    assert found == {"LEVELS": ["a", "b"]}
