"""The package's shape: every module imports, no import cycles, and the layers of ARCHITECTURE.md.

The import graph is read from the sources with :mod:`ast`, so the test sees the imports a module
makes when it is loaded, not only the ones a particular import order happens to exercise.

- **Cycles** are looked for twice. Among the imports made while a module loads (module-level
  statements, including those under ``if``/``try``/``with``): a cycle there breaks an import order.
  And among every import made at run time, imports inside functions and
  ``importlib.import_module("touchstone...")`` calls with a literal name included: a lazy import
  that closes a loop still ties the modules into one knot, which only the order of calls keeps
  working. Imports under ``if TYPE_CHECKING:`` never run and count for neither. Importing ``a.b.c``
  also loads the packages ``a.b`` and ``a``, so those are edges too, except the importing module's
  own packages (they are already loading when it runs, and a package that re-exports its modules
  would otherwise form a cycle with each of them).
- **Layers** count every import anywhere in a module, inside functions and ``TYPE_CHECKING`` blocks
  too, and ``importlib.import_module("touchstone...")`` calls with a literal name: a lazy import
  is still a dependency.
"""

from __future__ import annotations

import ast
import itertools
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import touchstone

PACKAGE_DIR = Path(touchstone.__file__).resolve().parent
ROOT = "touchstone"


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


def _modules() -> dict[str, Module]:
    found: dict[str, Module] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = [ROOT, *path.relative_to(PACKAGE_DIR).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    """The absolute module name a ``from ... import`` statement reads from."""
    if node.level == 0:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _known(name: str) -> str | None:
    """``name`` if it is one of our modules, else the closest enclosing one of our packages."""
    candidate = name
    while candidate:
        if candidate in MODULES:
            return candidate
        candidate = candidate.rpartition(".")[0]
    return None


def _targets(module: Module, node: ast.stmt) -> Iterator[str]:
    """Our modules named by one import statement (``from pkg import name`` names the submodule
    ``pkg.name`` when there is one, else ``pkg``)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            target = _known(alias.name)
            if target:
                yield target
    elif isinstance(node, ast.ImportFrom):
        base = _absolute(module, node)
        for alias in node.names:
            target = _known(f"{base}.{alias.name}") if alias.name != "*" else None
            target = target or _known(base)
            if target:
                yield target


def _load_time_imports(module: Module, body: list[ast.stmt]) -> Iterator[tuple[str, int]]:
    """(target, line) of the imports executed while ``body`` runs at module level."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _targets(module, node):
                yield target, node.lineno
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _load_time_imports(module, node.body)
            yield from _load_time_imports(module, node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _load_time_imports(module, block)
        elif isinstance(node, (ast.With, ast.For, ast.While)):
            yield from _load_time_imports(module, node.body)
            if isinstance(node, (ast.For, ast.While)):
                yield from _load_time_imports(module, node.orelse)


def _import_module_call(node: ast.Call) -> str | None:
    """The literal name of an ``importlib.import_module("touchstone...")`` call, if ``node`` is one."""
    if (
        isinstance(node.func, ast.Attribute)
        and node.func.attr == "import_module"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value
    return None


def _all_imports(module: Module, tree: ast.Module) -> Iterator[tuple[str, int]]:
    """(target, line) of every import anywhere in the module, lazy and type-only ones included."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _targets(module, node):
                yield target, node.lineno
        elif isinstance(node, ast.Call):
            literal = _import_module_call(node)
            named = _known(literal) if literal else None
            if named:
                yield named, node.lineno


def _run_time_imports(module: Module, tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(target, line) of every import that can run: anywhere in the module, inside functions too,
    and ``importlib.import_module`` calls with a literal name, but not under ``if TYPE_CHECKING:``."""
    return _run_time_nodes(module, ast.iter_child_nodes(tree))


def _run_time_nodes(module: Module, nodes: Iterable[ast.AST]) -> Iterator[tuple[str, int]]:
    for node in nodes:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _run_time_nodes(module, node.orelse)  # the body never runs
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _targets(module, node):
                yield target, node.lineno
        elif isinstance(node, ast.Call):
            literal = _import_module_call(node)
            named = _known(literal) if literal else None
            if named:
                yield named, node.lineno
        yield from _run_time_nodes(module, ast.iter_child_nodes(node))


def _parse(module: Module) -> ast.Module:
    return ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _graph(imports: Callable[[Module, ast.Module], Iterable[tuple[str, int]]]) -> dict[str, dict[str, int]]:
    """``{module: {imported module: line}}`` for the imports ``imports`` finds in each module (with
    the packages each import loads, less the importing module's own)."""
    graph: dict[str, dict[str, int]] = {}
    for name, module in MODULES.items():
        own = set(_ancestors(name))
        edges: dict[str, int] = {}
        for target, line in imports(module, _parse(module)):
            for dep in (*_ancestors(target), target):
                if dep != name and dep not in own and dep in MODULES:
                    edges.setdefault(dep, line)
        graph[name] = edges
    return graph


def load_time_graph() -> dict[str, dict[str, int]]:
    """``{module: {imported module: line}}`` for the imports made while each module loads."""
    return _graph(lambda module, tree: _load_time_imports(module, tree.body))


def run_time_graph() -> dict[str, dict[str, int]]:
    """``{module: {imported module: line}}`` for every import that can run, lazy ones included."""
    return _graph(_run_time_imports)


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One cycle of ``graph`` as a path (first node repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def describe_cycle(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    steps = [f"{a} (line {graph[a][b]}) -> {b}" for a, b in itertools.pairwise(cycle)]
    return "import cycle:\n  " + "\n  ".join(steps)


def knots(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module (each sorted): every
    set of modules tied together by a cycle, so a report lists all of them at once (Tarjan's
    algorithm, with an explicit stack rather than recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph.get(root, {}))))]
        while work:
            node, successors = work[-1]
            nxt = next(successors, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, {})))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe_knots(graph: dict[str, dict[str, int]]) -> str:
    """Every knot of ``graph``, each with one of its cycles step by step."""
    parts = []
    for knot in knots(graph):
        members = set(knot)
        cycle = find_cycle({a: {b: line for b, line in graph[a].items() if b in members} for a in knot})
        assert cycle is not None
        parts.append(f"{len(knot)} modules: {', '.join(knot)}\n" + describe_cycle(cycle, graph))
    return "\n".join(parts)


# --------------------------------------------------------------------------------------- the tests
def test_the_source_tree_has_the_modules_we_expect() -> None:
    # guards the walker itself: a wrong root would make every other test here pass vacuously
    assert {"touchstone", "touchstone.engine.runner", "touchstone.judges.session"} <= set(MODULES)
    assert len(MODULES) > 40


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    """Each module imported first (the others purged from ``sys.modules``), so an import that only
    works in one order -- the symptom of a cycle -- fails here."""
    script = textwrap.dedent(
        """
        import importlib, json, sys, traceback
        failures = {}
        for name in json.loads(sys.argv[1]):
            for loaded in [m for m in sys.modules if m == "touchstone" or m.startswith("touchstone.")]:
                del sys.modules[loaded]
            try:
                importlib.import_module(name)
            except Exception:
                failures[name] = traceback.format_exc(limit=3)
        print(json.dumps(failures))
        """
    )
    names = sorted(n for n in MODULES if not n.endswith("__main__"))
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(names)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert failures == {}, "\n\n".join(f"{name}:\n{tb}" for name, tb in failures.items())


def test_no_import_cycle_between_modules() -> None:
    graph = load_time_graph()
    cycle = find_cycle(graph)
    assert cycle is None, describe_cycle(cycle, graph)


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    graph = run_time_graph()
    assert knots(graph) == [], describe_knots(graph)


def test_knots_are_every_cycle_of_the_graph() -> None:
    graph = {"a": {"b": 1}, "b": {"a": 2}, "c": {"d": 3}, "d": {"e": 4}, "e": {"c": 5}, "f": {"a": 6}}
    assert knots(graph) == [["a", "b"], ["c", "d", "e"]]
    assert knots({"a": {"b": 1}, "b": {}}) == []
    assert "a (line 1) -> b" in describe_knots(graph)


def test_cycle_finder_reports_the_path() -> None:
    graph = {"a": {"b": 3}, "b": {"c": 5}, "c": {"a": 7}, "d": {"a": 1}}
    cycle = find_cycle(graph)
    assert cycle == ["a", "b", "c", "a"]
    assert describe_cycle(cycle, graph).splitlines()[1:] == [
        "  a (line 3) -> b",
        "  b (line 5) -> c",
        "  c (line 7) -> a",
    ]
    assert find_cycle({"a": {"b": 1}, "b": {}}) is None


def test_load_time_graph_skips_lazy_and_type_only_imports(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        from touchstone.scores import Score
        if TYPE_CHECKING:
            from touchstone.engine.runner import evaluate
        else:
            import touchstone.errors
        try:
            from . import kinds
        except ImportError:
            pass
        def later():
            from touchstone.store import open_store
            importlib.import_module("touchstone.judges.client")
        """
    )
    path = tmp_path / "probe.py"
    path.write_text(source)
    module = Module("touchstone.data.probe", path, is_package=False)
    tree = ast.parse(source)
    at_load = {t for t, _ in _load_time_imports(module, tree.body)}
    assert at_load == {"touchstone.scores", "touchstone.errors", "touchstone.data.kinds"}
    everywhere = {t for t, _ in _all_imports(module, tree)}
    lazy = {"touchstone.engine.runner", "touchstone.store", "touchstone.judges.client"}
    assert everywhere == at_load | lazy
    at_run_time = {t for t, _ in _run_time_imports(module, tree)}
    assert at_run_time == everywhere - {"touchstone.engine.runner"}  # the TYPE_CHECKING import never runs


# The layers (ARCHITECTURE.md): (importing package, forbidden package, allowed exceptions).
LAYER_RULES: list[tuple[str, str, frozenset[str]]] = [
    # an evaluator works standalone, as in the compatible SDK: no run machinery, no store
    ("touchstone.evaluators", "touchstone.engine", frozenset()),
    ("touchstone.evaluators", "touchstone.store", frozenset()),
    # judges serve evaluators and know nothing of them or of runs (the engine opens the judge session
    # and reads the per-score accounting from judges.accounting) ...
    ("touchstone.judges", "touchstone.evaluators", frozenset()),
    ("touchstone.judges", "touchstone.engine", frozenset()),
    # ... and of the store only the judge cache's file
    ("touchstone.judges", "touchstone.store", frozenset({"touchstone.store.judge_cache"})),
    # aggregation reads Scores and metric metadata only
    ("touchstone.stats", "touchstone.engine", frozenset()),
    ("touchstone.stats", "touchstone.store", frozenset()),
    ("touchstone.stats", "touchstone.judges", frozenset()),
]


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def layer_violations() -> list[str]:
    found: list[str] = []
    for name, module in MODULES.items():
        imports = list(_all_imports(module, _parse(module)))
        for source, forbidden, allowed in LAYER_RULES:
            if not _inside(name, source):
                continue
            for target, line in imports:
                if _inside(target, forbidden) and target not in allowed:
                    where = module.path.relative_to(PACKAGE_DIR.parent)
                    found.append(f"{where}:{line}: {name} imports {target}")
    return sorted(set(found))


# The floors of DESIGN.md, lowest first: no module imports one on a floor above its own (imports
# anywhere in the module count, lazy and type-only ones too).
FLOORS: list[tuple[str, ...]] = [
    ("touchstone.data",),
    ("touchstone.evaluators",),
    ("touchstone.engine",),
    ("touchstone.compare", "touchstone.people", "touchstone.monitor"),
    ("touchstone.ui",),
    ("touchstone.cli",),
]


def floor_violations() -> list[str]:
    found: list[str] = []
    for name, module in MODULES.items():
        level = next((k for k, floor in enumerate(FLOORS) if any(_inside(name, p) for p in floor)), None)
        if level is None:
            continue
        above = [package for floor in FLOORS[level + 1 :] for package in floor]
        for target, line in _all_imports(module, _parse(module)):
            if any(_inside(target, package) for package in above):
                where = module.path.relative_to(PACKAGE_DIR.parent)
                found.append(f"{where}:{line}: {name} imports {target}")
    return sorted(set(found))


def test_lower_floors_never_import_higher_ones() -> None:
    assert all(package in MODULES for floor in FLOORS for package in floor)
    violations = floor_violations()
    assert violations == [], "imports of a higher floor:\n  " + "\n  ".join(violations)


def test_layers_are_respected() -> None:
    violations = layer_violations()
    assert violations == [], "layering violations:\n  " + "\n  ".join(violations)


@pytest.mark.parametrize("name", ["touchstone.scores", "touchstone._exceptions"])
def test_the_foundation_modules_import_nothing_of_ours(name: str) -> None:
    """Scores and the exception base are read by every layer, so they depend on none."""
    module = MODULES[name]
    assert [t for t, _ in _all_imports(module, _parse(module))] == []


def test_errors_import_only_the_exception_base() -> None:
    """``errors`` is read by every layer too; it builds on the SDK-compatible base alone."""
    module = MODULES["touchstone.errors"]
    assert {t for t, _ in _all_imports(module, _parse(module))} <= {"touchstone._exceptions"}


@pytest.mark.parametrize("source, forbidden, allowed", LAYER_RULES)
def test_every_layer_rule_names_real_packages(source: str, forbidden: str, allowed: frozenset[str]) -> None:
    assert source in MODULES and MODULES[source].is_package
    assert forbidden in MODULES and MODULES[forbidden].is_package
    assert allowed <= set(MODULES)
