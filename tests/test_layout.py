"""The package layout follows the data flow, and imports run one way.

The stages, earliest first (docs/layout.md): a module may import from its own stage and earlier ones,
never from a later one. An import inside a function is kept only for a heavy library (MindSpore, Ray,
Optuna, pandas, ...) or a boosttune module that loads one at import time, so that ``boosttune --help``
and the checks that refuse bad input stay fast; every other import sits at the top of its module.
Read from the source with :mod:`ast`: nothing here imports boosttune.

The tests mirror the package the same way (docs/layout.md, "How the tests are laid out"): tests/<package>/test_<module>.py,
no test module importing another, conftest files that load nothing heavy, and every test that starts Ray marked.
"""

from __future__ import annotations

import ast
import re
import textwrap
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "boosttune"

# (stage, the modules and packages in it); a package covers its submodules.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("boosttune.errors", "boosttune.files", "boosttune.objective", "boosttune.builder", "boosttune.devices",
                    "boosttune.ray_internals",
                    "boosttune.runtime", "boosttune.pareto")),
    ("tables", ("boosttune.tables",)),  # run states, the results and confirm tables: what the statistics read
    ("algorithms", ("boosttune.algorithms",)),
    ("config", ("boosttune.config",)),
    ("builtin", ("boosttune.builtin",)),
    ("space", ("boosttune.space",)),
    ("trial", ("boosttune.trial",)),
    ("probe", ("boosttune.probe",)),
    ("execution", ("boosttune.execution",)),
    ("search", ("boosttune.search",)),
    ("stats", ("boosttune.stats",)),
    ("outputs", ("boosttune.outputs",)),
    ("stages", ("boosttune.stages",)),
    ("report", ("boosttune.report",)),
    ("compose", ("boosttune.check", "boosttune.experiment", "boosttune.bench", "boosttune.verify", "boosttune.finish")),
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


def circle_in(graph: dict[str, list[str]]) -> list[str] | None:
    """One import circle of ``graph`` (module -> the modules it imports), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (circle := walk(nxt)):
                return circle
        stack.pop()
        state[node] = 2
        return None

    for module in graph:
        if module not in state and (circle := walk(module)):
            return circle
    return None


@pytest.mark.parametrize("deferred", [False, True], ids=["module-level", "with-deferred"])
def test_imports_form_no_circle(deferred):
    """Not even through an import deferred into a function: a circle there is one a refactor trips over."""
    graph = {m: sorted({i.target for i in _internal(m) if deferred or not i.in_function}) for m in MODULES}
    circle = circle_in(graph)
    assert circle is None, "import circle: " + " -> ".join(circle)


def test_the_circle_rule_catches_a_deferred_circle():
    assert circle_in({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert circle_in({"a": ["b"], "b": ["c"], "c": []}) is None


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
            "check_capacity", "check_placeable", "code_runtime_env", "check_storage"}
RUN_KINDS = ("boosttune.experiment", "boosttune.bench", "boosttune.verify")


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


def test_the_algorithms_import_nothing_of_a_later_stage_not_even_for_types():
    """They read a device's findings through their own Protocol (algorithms.base.DeviceSupport) and take the
    recipe as the trial hands it, so no type-only import names the probe, the config or any later stage."""
    found = []
    for module, path in MODULES.items():
        if _in_package(module, "boosttune.algorithms"):
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            found += [f"{path.relative_to(ROOT)}:{line} imports {target}"
                      for line, target in later_than_algorithms(path, package).items()]
    assert not found, "the algorithms know a later stage:\n" + "\n".join(found)


def later_than_algorithms(path: Path, package: str) -> dict[int, str]:
    """line -> the boosttune module of a later stage than the algorithms' that an import on it names."""
    lines: dict[int, str] = {}  # one entry an import (``from a import b`` names a and a.b)
    for target, line in named_imports(path, package):
        if target in MODULES and (stage_of(target) or 0) > stage_of("boosttune.algorithms"):
            lines.setdefault(line, target)
    return lines


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
                       "if TYPE_CHECKING:\n    from boosttune.config.recipe import TrialRecipe\n"
                       "from boosttune.errors import ConfigError\n"
                       f"def at_limit():\n{at_limit}\n"
                       f"def over():\n{over}\n")
    names = [target for target, _ in named_imports(planted, "boosttune.algorithms.amp")]
    assert "boosttune.probe.report" in names and "boosttune.probe" in names
    assert later_than_algorithms(planted, "boosttune.algorithms.amp") == {
        3: "boosttune.probe.report", 4: "boosttune.probe", 6: "boosttune.config.recipe"}  # not boosttune.errors
    assert long_functions(planted) == [f"over (line {8 + MAX_FUNCTION_LINES}): {MAX_FUNCTION_LINES + 1} lines"]


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


# --- the tests mirror the package -------------------------------------------------------------------------------
# tests/<package>/test_<module>.py tests boosttune/<package>/<module>.py (docs/layout.md, "How the tests are laid
# out"). These checks read the tests' source too, and take their folders as arguments so that
# test_the_test_rules_catch_what_they_should can run them on a planted tree.

TESTS = ROOT / "tests"
# tests/ folders that mirror something else than a boosttune package: what a test_<name>.py in them is named after
# (None: named after what the user does).
OTHER_TEST_FOLDERS: dict[str, Path | None] = {"e2e": None, "benchmarks": ROOT / "benchmarks",
                                              "helpers": TESTS / "helpers", "projects": None}
# tests/test_<name>.py that test the repository's other files, not a module.
REPOSITORY_TESTS = ("test_layout.py", "test_docs.py", "test_commands.py", "test_cluster_yaml.py")
# What starts Ray when a test or a fixture calls it (besides ``ray.init``). A test that starts Ray through a
# subprocess (``ray start``, ``boosttune tune``, an experiment script) is not seen here: it is marked by hand.
RAY_STARTS = {"Cluster", "connect_ray", "run_experiment", "run_bench", "run_verify", "run_on_ray", "train_run", "WarmPool",
              "probe_on_worker", "facts_on_worker"}
RAY_MARKS = {"slow", "ray"}


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _test_sources(tests: Path) -> list[Path]:
    return sorted(p for p in tests.rglob("*.py") if "__pycache__" not in p.parts and p.parent != tests / "projects")


def _named_in(folder: Path) -> set[str]:
    """What a test file in the mirror of ``folder`` may be named after: its modules, subpackages and itself."""
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    return names | {p.parent.name for p in folder.glob("*/__init__.py")} | {folder.name}


def misplaced_tests(tests: Path, package: Path, other_folders: dict[str, Path | None],
                    repository_tests: tuple[str, ...]) -> list[str]:
    """Folders of ``tests`` that mirror no package of ``package``, and test files named after nothing there.

    ``test_<name>.py`` is named after a module, a subpackage or the package itself (its ``__init__.py``), or after
    one of those and an aspect (``test_tune_progress.py`` for search/tune.py's progress columns).
    """
    problems = []
    for folder in sorted(p for p in tests.rglob("*") if p.is_dir() and "__pycache__" not in p.parts):
        relative = folder.relative_to(tests)
        if relative.parts[0] not in other_folders and not (package / relative / "__init__.py").is_file():
            problems.append(f"tests/{relative}/ mirrors no package: {package.name}/{relative}/ has no __init__.py")
    for path in sorted(tests.rglob("test_*.py")):
        relative, name = path.parent.relative_to(tests), path.stem.removeprefix("test_")
        if relative.parts and relative.parts[0] in other_folders:
            mirrored = other_folders[relative.parts[0]]
            if mirrored is None:
                continue
            names = _named_in(mirrored)
        elif not relative.parts and path.name in repository_tests:
            continue
        else:
            names = _named_in(package / relative)
        if name not in names and not any(name.startswith(f"{n}_") for n in names):
            problems.append(f"tests/{path.relative_to(tests)} is named after nothing in "
                            f"{(package / relative).relative_to(package.parent)}/ (its modules: {sorted(names)})")
    return problems


def imports_between_tests(tests: Path) -> list[str]:
    """Imports of a test module (``test_*``) or a conftest from any file of ``tests``."""
    found = []
    for path in _test_sources(tests):
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module or ''}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                last = name.rsplit(".", 1)[-1]
                if last.startswith("test_") or last == "conftest":
                    found.append(f"{path.relative_to(tests.parent)}:{node.lineno} imports {name.lstrip('.')}")
    return found


def _module_level_imports(path: Path) -> list[tuple[str, int]]:
    """(module, line) of every import ``path`` runs when it is imported (not those inside functions)."""
    found = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, child.lineno) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and not child.level:
                found.extend((f"{child.module}.{alias.name}", child.lineno) for alias in child.names)
            visit(child)

    visit(_parse(path))
    return found


def _helper_file(name: str, tests: Path) -> Path | None:
    """The file of ``tests`` that ``name`` (a module, or a name in one) is imported from, if it is one of its own."""
    if not name.startswith(f"{tests.name}."):
        return None
    for module in (name, name.rpartition(".")[0]):
        base = tests.parent.joinpath(*module.split("."))
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path
    return None


def heavy_imports(path: Path, tests: Path) -> list[str]:
    """What importing ``path`` loads of Ray, MindSpore, the probe or another heavy library: directly, or through a
    boosttune module or a helper module of ``tests``."""
    heavy = []
    for name, line in _module_level_imports(path):
        module = name if name in MODULES else name.rpartition(".")[0]
        helper = _helper_file(name, tests)
        if name.split(".")[0] in HEAVY or module.startswith("boosttune.probe") or (
                module in MODULES and is_heavy(module)):
            heavy.append(f"{path.relative_to(tests.parent)}:{line} imports {name}")
        elif helper is not None and helper != path and (inner := heavy_imports(helper, tests)):
            heavy.append(f"{path.relative_to(tests.parent)}:{line} imports {name}, which loads: {inner[0]}")
    return heavy


def _decorator_marks(node: ast.FunctionDef | ast.ClassDef) -> set[str]:
    return {mark for decorator in node.decorator_list for mark in _marks_in(decorator)}


def _marks_in(node: ast.AST) -> set[str]:
    """The names of ``pytest.mark.NAME`` in an expression (a decorator, a pytestmark list)."""
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)
            and n.value.attr == "mark"}


def _pytestmark(body: list[ast.stmt]) -> set[str]:
    return {mark for statement in body if isinstance(statement, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in statement.targets)
            for mark in _marks_in(statement.value)}


def _starts_ray(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RAY_STARTS:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            called = node.func
            if called.attr in RAY_STARTS or (called.attr == "init" and isinstance(called.value, ast.Name)
                                             and called.value.id == "ray"):
                return True
    return False


def _is_fixture(function: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "fixture"
               for decorator in function.decorator_list for n in ast.walk(decorator))


def _arguments(function: ast.FunctionDef) -> set[str]:
    return {a.arg for a in function.args.args + function.args.kwonlyargs}


def unmarked_ray_tests(tests: Path) -> list[str]:
    """Tests that start Ray (through a fixture, however deep, or a call of their own) without both marks."""
    trees = {path: _parse(path) for path in _test_sources(tests)}
    fixtures = [node for tree in trees.values() for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef) and _is_fixture(node)]
    ray_fixtures: set[str] = set()
    while True:
        more = {f.name for f in fixtures
                if f.name not in ray_fixtures and (_starts_ray(f) or _arguments(f) & ray_fixtures)}
        if not more:
            break
        ray_fixtures |= more
    unmarked = []
    for path, tree in trees.items():
        if not path.name.startswith("test_"):
            continue
        module_marks = _pytestmark(tree.body)
        scopes = [(module_marks, tree.body)] + [(module_marks | _decorator_marks(c) | _pytestmark(c.body), c.body)
                                                 for c in tree.body if isinstance(c, ast.ClassDef)]
        for marks, body in scopes:
            for test in body:
                if not (isinstance(test, ast.FunctionDef) and test.name.startswith("test_")):
                    continue
                starts = sorted(_arguments(test) & ray_fixtures) or (["a call of its own"] if _starts_ray(test) else [])
                if starts and not RAY_MARKS <= marks | _decorator_marks(test):
                    unmarked.append(f"{path.relative_to(tests.parent)}:{test.lineno} {test.name} starts Ray "
                                    f"({', '.join(starts)}) without the marks {sorted(RAY_MARKS)}")
    return unmarked


def test_the_tests_mirror_the_package():
    problems = misplaced_tests(TESTS, PACKAGE, OTHER_TEST_FOLDERS, REPOSITORY_TESTS)
    assert not problems, "move or rename these (or add the exception to tests/test_layout.py and docs/layout.md):\n" \
        + "\n".join(problems)


def test_no_test_module_imports_another():
    found = imports_between_tests(TESTS)
    assert not found, "share these through a conftest.py fixture or a module of tests/helpers/:\n" + "\n".join(found)


def test_the_conftest_files_import_nothing_heavy():
    """``pytest tests/stats/test_paired.py`` runs no probe and loads neither Ray nor MindSpore."""
    heavy = [line for path in sorted(TESTS.rglob("conftest.py")) for line in heavy_imports(path, TESTS)]
    assert not heavy, "import these inside the fixture or hook that needs them:\n" + "\n".join(heavy)


def test_every_test_that_starts_ray_is_marked():
    unmarked = unmarked_ray_tests(TESTS)
    assert not unmarked, "\n".join(unmarked)


def test_the_layout_guide_names_every_exception():
    guide = (ROOT / "docs" / "layout.md").read_text()
    missing = [f"tests/{name}/" for name in OTHER_TEST_FOLDERS if f"tests/{name}/" not in guide]
    missing += [f"tests/{name}" for name in REPOSITORY_TESTS if f"tests/{name}" not in guide]
    assert not missing, f"docs/layout.md's tests section does not name: {missing}"


def test_the_test_rules_catch_what_they_should(tmp_path):
    package, tests = tmp_path / "pkg", tmp_path / "tests"
    for name in ("pkg", "pkg/evaluation", "tests", "tests/evaluation", "tests/stray", "tests/e2e", "tests/helpers"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    (package / "evaluation" / "race.py").write_text("")
    (tests / "helpers" / "fakes.py").write_text("import ray\n")
    (tests / "conftest.py").write_text("import os\nfrom tests.helpers import fakes\n\ndef f():\n    import mindspore\n")
    (tests / "evaluation" / "test_race.py").write_text("from .test_confirm import X\n")
    (tests / "evaluation" / "test_race_replay.py").write_text("")
    (tests / "evaluation" / "test_races.py").write_text("")
    (tests / "e2e" / "test_anything.py").write_text(textwrap.dedent("""\
        import pytest
        from tests.helpers.fakes import Cluster

        @pytest.fixture
        def cluster():
            yield Cluster()

        @pytest.fixture
        def job(cluster):
            return 1

        def test_job(job):
            pass

        @pytest.mark.slow
        @pytest.mark.ray
        def test_marked(job):
            pass

        class TestCalls:
            pytestmark = pytest.mark.slow

            def test_init(self):
                import ray
                ray.init()
        """))
    others = {"e2e": None, "helpers": tests / "helpers"}
    assert misplaced_tests(tests, package, others, ()) == [
        "tests/stray/ mirrors no package: pkg/stray/ has no __init__.py",
        "tests/evaluation/test_races.py is named after nothing in pkg/evaluation/ (its modules: "
        "['evaluation', 'race'])"]
    assert imports_between_tests(tests) == ["tests/evaluation/test_race.py:1 imports test_confirm"]
    assert heavy_imports(tests / "conftest.py", tests) == [
        "tests/conftest.py:2 imports tests.helpers.fakes, which loads: tests/helpers/fakes.py:1 imports ray"]
    assert [line.split(" without")[0] for line in unmarked_ray_tests(tests)] == [
        "tests/e2e/test_anything.py:12 test_job starts Ray (job)",
        "tests/e2e/test_anything.py:23 test_init starts Ray (a call of its own)"]


# The one module that words a decision (issue 41: the words for one decision once lived in five places).
DECISIONS = "boosttune.stats.decisions"
_DECISION_CODES = {"Exit", "VerdictCode"}


def word_tables(path: Path) -> list[int]:
    """Lines of dict displays keyed by decision codes (``{Exit.WON: "...", ...}``) and if-chains that word one."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        keys = node.keys if isinstance(node, ast.Dict) else []
        if sum(isinstance(k, ast.Attribute) and isinstance(k.value, ast.Name) and k.value.id in _DECISION_CODES
               for k in keys) >= 2 and any(isinstance(v, ast.JoinedStr) or (isinstance(v, ast.Constant)
                                               and isinstance(v.value, str)) for v in node.values):
            found.append(node.lineno)
    return found


def test_a_decision_is_worded_in_one_module():
    elsewhere = [f"{MODULES[m].relative_to(ROOT)}:{line}" for m in MODULES if m != DECISIONS
                 for line in word_tables(MODULES[m])]
    assert not elsewhere, f"word decisions in {DECISIONS} (SHORT, decision_words, card_words, ...): {elsewhere}"
    assert word_tables(MODULES[DECISIONS])


def test_the_decision_rule_catches_a_second_table(tmp_path):
    module = tmp_path / "words.py"
    module.write_text('WORDS = {Exit.WON: "won", Exit.SLOWER: "slower"}\nCOUNTS = {Exit.WON: 1, Exit.SLOWER: 2}\n')
    assert word_tables(module) == [1]


# Where a run's max_drop is resolved: once, where the run starts (issue 41: it was resolved again at about eleven
# places, and a non-fraction metric's search and confirm stage used different numbers).
TOLERANCE_OWNERS = {"boosttune.experiment", "boosttune.bench"}  # read config.max_drop and resolve it, once
TOLERANCE_MATH = {"boosttune.objective", "boosttune.stats.margin"}  # Objective.tolerance, Tolerance, Margin


def tolerance_reads(path: Path) -> list[str]:
    """``config.max_drop`` read, or ``.tolerance(...)`` called on a max_drop: where a module resolves it itself."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if (isinstance(node, ast.Attribute) and node.attr == "max_drop" and isinstance(node.value, ast.Name)
                and node.value.id == "config"):
            found.append(f"{node.lineno}: reads config.max_drop")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "tolerance"
                and node.args and "max_drop" in ast.unparse(node.args[0])):
            found.append(f"{node.lineno}: resolves a max_drop with .tolerance()")
    return found


def test_the_max_drop_is_resolved_where_the_run_starts_and_nowhere_else():
    elsewhere = [f"{MODULES[m].relative_to(ROOT)}:{hit}" for m in MODULES if m not in TOLERANCE_OWNERS | TOLERANCE_MATH
                 for hit in tolerance_reads(MODULES[m])]
    assert not elsewhere, ("take the run's resolved tolerance (a Tolerance, or its number) from the stage that "
                           "started the run:\n" + "\n".join(elsewhere))
    assert any(tolerance_reads(MODULES[m]) for m in TOLERANCE_OWNERS)


def test_the_tolerance_rule_catches_a_stage_that_resolves_its_own(tmp_path):
    module = tmp_path / "stage.py"
    module.write_text("def f(config, objective, base):\n    return objective.tolerance(config.max_drop, 1.0, base)\n")
    assert sorted(tolerance_reads(module)) == ["2: reads config.max_drop", "2: resolves a max_drop with .tolerance()"]


# One owner for the decision (issue 59). Below the entry points the margin travels as one resolved Margin: no
# parameter takes a Tolerance in a union, none takes a given max_drop (a number or None, with a ``default`` beside
# it) except the readers of a finished folder, where a folder's margin is resolved as the experiment resolves its own.
# (A ``Margin | None`` says "no margin to read": summarize's secondary target, not read without one.)
MARGIN_READERS = {"boosttune.outputs.summary.load_confirmed", "boosttune.outputs.judged.read_judged",
                  "boosttune.report.inputs.load_report_inputs", "boosttune.report.report_folder",
                  # words: None says "the margin" with no number; it resolves nothing
                  "boosttune.stats.decisions.decision_words"}
MARGIN_NAMES = {"max_drop", "margin", "tolerance"}


def margin_parameters(path: Path, module: str) -> list[str]:
    """Parameters that take a margin in more than one form: a Tolerance in a union, or a given max_drop (``float |
    None``, or one with a ``default`` parameter beside it) outside the folder readers."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        names = {a.arg for a in args}
        for arg in args:
            hint = ast.unparse(arg.annotation) if arg.annotation is not None else ""
            if "Tolerance" in hint and ("|" in hint or "Optional" in hint or "Union" in hint):
                found.append(f"{node.lineno}: {node.name}({arg.arg}: {hint})")
            elif arg.arg in MARGIN_NAMES and "None" in hint and "float" in hint and "Sequence" not in hint \
                    and f"{module}.{node.name}" not in MARGIN_READERS:  # a Pareto margin is a Sequence[float]
                found.append(f"{node.lineno}: {node.name}({arg.arg}: {hint})")
        if "default" in names and names & MARGIN_NAMES:
            found.append(f"{node.lineno}: {node.name}(default=...) beside a margin")
    return found


def test_below_the_entry_points_the_margin_is_one_resolved_type():
    found = [f"{MODULES[m].relative_to(ROOT)}:{hit}" for m in MODULES for hit in margin_parameters(MODULES[m], m)]
    assert not found, ("take a resolved Margin (boosttune.stats.margin) from the entry point that started or read the "
                       "run:\n" + "\n".join(found))


def test_the_margin_rule_catches_each_second_form(tmp_path):
    module = tmp_path / "stage.py"
    module.write_text("def a(t, max_drop: Tolerance | float | None = None, default: float = 1.0):\n    pass\n"
                      "def b(t, margin: float | None):\n    pass\n"
                      "def c(t, margin: Margin):\n    pass\n")
    assert margin_parameters(module, "boosttune.stage") == [
        "1: a(max_drop: Tolerance | float | None)", "1: a(default=...) beside a margin", "3: b(margin: float | None)"]


VERDICT_OWNER = "boosttune.stats.decide"  # decide(): the one place a verdict is set
DECISION_COLUMNS = ("verdict", "qualifies")


def verdict_writes(path: Path) -> list[str]:
    """Where a module sets a recipe's ``verdict`` or ``qualifies`` (a table cell or column, ``row.update(verdict=)``,
    ``frame.assign(...)``, a row's dict literal)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for sub in ast.walk(target):
                keys = (sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]) \
                    if isinstance(sub, ast.Subscript) else []
                found += [f"{node.lineno}: sets {k.value}" for k in keys
                          if isinstance(k, ast.Constant) and k.value in DECISION_COLUMNS]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("update", "assign", "setdefault"):
            found += [f"{node.lineno}: sets {kw.arg}" for kw in node.keywords if kw.arg in DECISION_COLUMNS]
        if isinstance(node, ast.Dict):
            found += [f"{node.lineno}: sets {k.value}" for k in node.keys
                      if isinstance(k, ast.Constant) and k.value in DECISION_COLUMNS]
    return found


def test_one_place_sets_a_verdict():
    elsewhere = [f"{MODULES[m].relative_to(ROOT)}:{hit}" for m in MODULES if m != VERDICT_OWNER
                 for hit in verdict_writes(MODULES[m])]
    assert not elsewhere, "a verdict is set by boosttune.stats.decide.decide only:\n" + "\n".join(elsewhere)
    assert verdict_writes(MODULES[VERDICT_OWNER])


def test_the_verdict_rule_catches_a_second_judge(tmp_path):
    module = tmp_path / "judge.py"
    module.write_text("summary.at[i, 'verdict'] = 'won'\nrow.update(qualifies=True)\nrow = {'verdict': 'x'}\n"
                      "summary['qualifies'] = False\nprint(row['verdict'])\n")
    assert sorted(verdict_writes(module)) == ["1: sets verdict", "2: sets qualifies", "3: sets verdict",
                                              "4: sets qualifies"]


# The statistics read the tables and nothing above them, and write no file: tables -> stats -> outputs.
STATS_MAY_IMPORT = ("foundation", "tables", "config", "stats")


def test_the_statistics_read_only_the_tables_below_them_and_write_nothing():
    allowed = {index for index, (name, _) in enumerate(STAGES) if name in STATS_MAY_IMPORT}
    problems = []
    for module, path in MODULES.items():
        if not module.startswith("boosttune.stats"):
            continue
        for item in imports_of(module):
            if item.target.startswith("boosttune") and stage_of(item.target) not in allowed:
                problems.append(f"{path.relative_to(ROOT)}:{item.line} imports {item.target}")
        source = path.read_text()
        problems += [f"{path.relative_to(ROOT)} writes files ({word})" for word in
                     ("write_atomically", "write_json", "write_text(", "open(", "to_csv(", "to_parquet(")
                     if word in source]
    assert not problems, "\n".join(problems)


# One name, one meaning (issue 41: start.py, summary.py and apply.py each meant two things). The algorithm folders'
# contract files share their names on purpose (each folder has the same parts); config/experiment.py is the
# experiment's configuration, boosttune/experiment.py its run.
SHARED_MODULE_NAMES = {"fragment", "notes", "section", "optimizer_rebuild", "experiment"}


def shared_module_names(modules: dict[str, Path]) -> dict[str, list[str]]:
    by_name: dict[str, list[str]] = {}
    for module, path in modules.items():
        if path.name != "__init__.py":
            by_name.setdefault(path.stem, []).append(module)
    return {name: found for name, found in by_name.items() if len(found) > 1 and name not in SHARED_MODULE_NAMES}


def test_no_two_modules_share_a_name():
    shared = shared_module_names(MODULES)
    assert not shared, f"name each module by what it holds: {shared}"


def test_the_module_name_rule_catches_a_shared_name(tmp_path):
    assert shared_module_names({"a.start": tmp_path / "a" / "start.py", "b.start": tmp_path / "b" / "start.py",
                                "c.fragment": tmp_path / "c" / "fragment.py",
                                "d.fragment": tmp_path / "d" / "fragment.py"}) == {"start": ["a.start", "b.start"]}


# A module's docstring says what it holds and why in a few lines; the reasoning and the measurements go to a design
# note under docs/design/ that it links (issue 43: race.py opened with 48 lines). Each is 10 lines or fewer.
DOCSTRING_MAX_LINES = 10


def docstring_lines(path: Path) -> int:
    doc = ast.get_docstring(ast.parse(path.read_text(), filename=str(path)), clean=False)
    return len(doc.strip().splitlines()) if doc else 0


def test_a_module_docstring_is_short_and_links_its_design_note():
    long = {str(p.relative_to(ROOT)): n for p in MODULES.values() if (n := docstring_lines(p)) > DOCSTRING_MAX_LINES}
    assert not long, f"move the reasoning to a design note under docs/design/ and link it: {long}"
    for path in MODULES.values():
        for note in re.findall(r"docs/design/[\w-]+\.md", path.read_text()):
            assert (ROOT / note).is_file(), f"{path.relative_to(ROOT)} links {note}, which does not exist"


def test_the_docstring_rule_catches_a_long_one(tmp_path):
    module = tmp_path / "long.py"
    module.write_text('"""' + "\n".join(["line"] * (DOCSTRING_MAX_LINES + 1)) + '"""\n')
    assert docstring_lines(module) == DOCSTRING_MAX_LINES + 1


# ---- an algorithm is its folder ----------------------------------------------------------------------------------

# What still names an algorithm outside boosttune/algorithms/, and why it has not moved. The rule below fails on a
# name found anywhere else, and on an entry here that no longer names one (so the list only shrinks).
NAMES_LEFT = {
    "boosttune/config/recipe.py": "dim_reduce_stage1_steps, a recipe field users set by that name",
}


def algorithm_names_in(path: Path, names: tuple[str, ...]) -> list[tuple[int, str]]:
    """Where a module names an algorithm in code: a string that is its key (``"grad_freeze"``, ``"boost.less_bn"``,
    ``"grad_freeze.freeze_p"``) or an identifier that holds its name. Docstrings, comments and prose are free."""
    def keyish(text: str) -> bool:
        return any(text == n or text.startswith((f"{n}.", f"boost.{n}")) for n in names)

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and keyish(node.value):
            text = node.value
        elif isinstance(node, (ast.Name, ast.Attribute, ast.FunctionDef, ast.ClassDef, ast.arg)):
            ident = getattr(node, "id", None) or getattr(node, "attr", None) or getattr(node, "name", None) \
                or getattr(node, "arg", None)
            text = ident if any(n in ident.lower() for n in names) else None
        if text:
            found.append((node.lineno, text))
    return found


def _boost_names() -> tuple[str, ...]:
    from boosttune import algorithms

    return tuple(a.name for a in algorithms.boost_algorithms())


def test_no_module_outside_the_algorithm_folders_names_an_algorithm():
    names = _boost_names()
    found = {rel: hits for path in MODULES.values()
             if "algorithms" not in (rel := str(path.relative_to(ROOT))).split("/")
             and (hits := algorithm_names_in(path, names))}
    unexpected = {rel: hits[:3] for rel, hits in found.items() if rel not in NAMES_LEFT}
    assert not unexpected, f"declare it in the algorithm's folder (boosttune/algorithms/<name>/): {unexpected}"
    moved = sorted(set(NAMES_LEFT) - set(found))
    assert not moved, f"these no longer name an algorithm: take them out of NAMES_LEFT: {moved}"


def test_the_algorithm_name_rule_catches_a_key_and_an_identifier_not_prose(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""grad_freeze in a docstring is prose."""\n'
                      'help_text = "GradientFreeze and grad_freeze in a sentence"\n'
                      'KEY = "boost.less_bn"\n'
                      'def grad_freeze_total(d):\n'
                      '    return d["grad_freeze"]\n')
    found = algorithm_names_in(module, ("grad_freeze", "less_bn"))
    assert sorted(found) == [(3, "boost.less_bn"), (4, "grad_freeze_total"), (5, "grad_freeze")]


def test_the_tests_collected_first_exist_and_come_first(request):
    """``FIRST`` (tests/helpers/probe.py, ordered by tests/conftest.py) names tests by id: a rename would leave the
    suite slower without a word."""
    from tests.helpers import REPO
    from tests.helpers.probe import FIRST

    for nodeid in FIRST:
        path, _, name = nodeid.partition("::")
        tree = ast.parse((REPO / path).read_text())
        assert name in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}, nodeid
    collected = [item.nodeid for item in request.session.items]
    if set(FIRST) <= set(collected):  # the whole suite, or a run that collected them
        assert collected[:len(FIRST)] == list(FIRST)
