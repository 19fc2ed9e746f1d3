"""The package's shape beyond its imports (ARCHITECTURE.md, issue #26): SQL text lives in ``store/``
only, modules and classes stay small enough to read in one sitting, and the library never imports
the command line.

Read from the sources with :mod:`ast`, as ``test_layering.py`` reads the import graph: SQL is looked
for in string literals only (an f-string's literal parts included), so prose in comments does not
count, and docstrings are left out (they may quote a statement to explain it).
"""

from __future__ import annotations

import ast
import itertools
import re
import textwrap
from collections.abc import Iterator

from tests.test_layering import MODULES, PACKAGE_DIR, Module, _all_imports, _inside, _parse

MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 300
STORE = "touchstone.store"
CLI = "touchstone.cli"

SQL = re.compile(
    r"""
      \bSELECT\b [\s\S]*? \bFROM\b
    | \bINSERT \s+ (?:OR \s+ \w+ \s+)? INTO\b
    | \bUPDATE \s+ \w+ \s+ SET\b
    | \bDELETE \s+ FROM\b
    | \b(?:CREATE|DROP) \s+ (?:UNIQUE \s+)? (?:TABLE|INDEX|VIEW|TRIGGER)\b
    | \bALTER \s+ TABLE\b
    | \bPRAGMA \s+ \w+
    | \bWHERE \s+ [\w.]+ \s* (?:=|<|>|\bIN\b|\bIS\b|\bLIKE\b)
    | \b(?:ORDER|GROUP) \s+ BY \s+ [\w.]+
    """,
    re.VERBOSE,
)
"""Statements and clauses of SQL as our store writes them (keywords in capitals, as every query of
the project is written); a lower-case "select ... from" in a message is English."""


def _docstrings(tree: ast.Module) -> set[int]:
    """``id`` of the docstring nodes of the module, its classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
        # an attribute's docstring: a bare string right after an assignment
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if not isinstance(statements, list):
                continue
            for before, after in itertools.pairwise(statements):
                if (
                    isinstance(before, (ast.Assign, ast.AnnAssign))
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                ):
                    found.add(id(after.value))
    return found


def sql_literals(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, text) of the string literals of ``tree`` that hold SQL (docstrings left out)."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            match = SQL.search(node.value)
            if match:
                yield node.lineno, " ".join(match.group(0).split())[:60]


def _where(module: Module) -> str:
    return str(module.path.relative_to(PACKAGE_DIR.parent))


def sql_outside_the_store() -> list[str]:
    return [
        f"{_where(module)}:{line}: {text!r}"
        for name, module in MODULES.items()
        if not _inside(name, STORE)
        for line, text in sql_literals(_parse(module))
    ]


def long_modules() -> list[str]:
    found = []
    for module in MODULES.values():
        lines = len(module.path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{_where(module)}: {lines} lines")
    return found


def long_classes() -> list[str]:
    found = []
    for module in MODULES.values():
        for node in ast.walk(_parse(module)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    found.append(f"{_where(module)}:{node.lineno}: class {node.name}, {lines} lines")
    return found


def cli_imports() -> list[str]:
    """Imports of ``touchstone.cli`` from outside it, lazy and type-only ones included."""
    return sorted({
        f"{_where(module)}:{line}: {name} imports {target}"
        for name, module in MODULES.items()
        if not _inside(name, CLI)
        for target, line in _all_imports(module, _parse(module))
        if _inside(target, CLI)
    })


# --------------------------------------------------------------------------------------- the rules
def test_no_sql_text_outside_the_store() -> None:
    found = sql_outside_the_store()
    assert found == [], "SQL outside store/:\n  " + "\n  ".join(found)


def test_no_module_over_the_line_limit() -> None:
    found = long_modules()
    assert found == [], f"modules over {MAX_MODULE_LINES} lines:\n  " + "\n  ".join(found)


def test_no_class_over_the_line_limit() -> None:
    found = long_classes()
    assert found == [], f"classes over {MAX_CLASS_LINES} lines:\n  " + "\n  ".join(found)


def test_the_library_never_imports_the_command_line() -> None:
    found = cli_imports()
    assert found == [], "imports of touchstone.cli:\n  " + "\n  ".join(found)


def test_the_store_and_the_command_line_are_packages() -> None:
    # guards the rules above: a renamed package would make them pass vacuously
    assert MODULES[STORE].is_package and MODULES[CLI].is_package


# --------------------------------------------------------------------------------------- the finders
def test_sql_is_found_in_literals_and_f_strings_not_in_docstrings_or_comments() -> None:
    source = textwrap.dedent(
        '''
        """A module that explains: SELECT name FROM runs is how the store reads them."""
        # SELECT id FROM runs (a comment)
        ROWS = "SELECT id, name FROM runs WHERE id = ?"
        """What ROWS is: SELECT id FROM runs (an attribute's docstring)."""
        def make(table):
            """DELETE FROM runs, said in prose."""
            query = f"INSERT INTO {table} (a) VALUES (?)"
            note = "select the rows from the file"  # English, in lower case
            return query + "; PRAGMA foreign_keys = ON" + " ORDER BY created"
        class Reads:
            CLAUSE = " WHERE run_id = ?"
            DDL = """
                CREATE UNIQUE INDEX IF NOT EXISTS ix ON t (a)
            """
            SET = "UPDATE runs SET name = ?"
        '''
    )
    found = sorted(line for line, _ in sql_literals(ast.parse(source)))
    assert found == [4, 8, 10, 10, 12, 13, 16]


def test_the_finders_see_what_they_look_for() -> None:
    long_class = "class Big:\n" + "    x = 1\n" * MAX_CLASS_LINES
    tree = ast.parse(long_class)
    cls = next(node for node in ast.walk(tree) if isinstance(node, ast.ClassDef))
    assert cls.end_lineno is not None and cls.end_lineno - cls.lineno + 1 > MAX_CLASS_LINES
    module = Module("touchstone.engine.probe", PACKAGE_DIR / "engine" / "probe.py", is_package=False)
    lazy = ast.parse("def run():\n    from touchstone.cli.app import main\n")
    assert [t for t, _ in _all_imports(module, lazy)] == ["touchstone.cli.app"]
