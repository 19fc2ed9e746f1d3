"""The store's repository for what comparisons of runs and the monitor read: rows matched by id,
the typed score lines of two runs, recent windows.

Every query text lives here (portable SQL with ``?`` placeholders, dialect fragments from
:class:`~touchstone.store.sql.Dialect`); callers outside ``store/`` use the typed methods of
:class:`ComparisonReads` only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from touchstone.scores import Status
from touchstone.store.base import StoredRow

if TYPE_CHECKING:
    from touchstone.store.sql import SqlStore


class Cell(NamedTuple):
    """One metric of one row: its value when it was obtained, whether it failed, its pass flag."""

    value: float | None
    failed: bool
    passed: bool | None


class NamedRun(NamedTuple):
    """A run found by its name: id, name, status, decoded summary (None when not finished), start."""

    id: str
    name: str | None
    status: str
    summary: dict[str, Any] | None
    started: str


@runtime_checkable
class ComparisonReads(Protocol):
    """What callers outside the store may ask of it when comparing runs or watching windows."""

    def row_ids(self, run_id: str, field: str) -> dict[int, Any]:
        """The ``field`` input of each stored row of a run (None where a row has none), by row index.
        Rows whose JSON text does not hold ``"field"`` are not decoded (a 100,000-row run reads
        in a fraction of a second)."""
        ...

    def cells(self, run_id: str) -> dict[tuple[str, str], dict[int, Cell]]:
        """The typed score lines of a run as ``{(evaluator, metric): {row index: Cell}}``, each
        column's rows in index order; a failed line's value is None."""
        ...

    def row(self, run_id: str, idx: int) -> StoredRow | None:
        """One stored input row, or None."""
        ...

    def outputs(self, run_id: str, idx: int, evaluator: str) -> dict[str, Any] | None:
        """The compatible SDK's flat outputs of one evaluator on one row (None when not stored or not
        a JSON object)."""
        ...

    def runs_named(self, prefix: str) -> list[NamedRun]:
        """The runs whose name starts with ``prefix``, oldest first. As SQL's ``LIKE`` sees it:
        SQLite ignores the case of ASCII letters, so a caller that cares checks the name again."""
        ...


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def _field_of(data: Any, field: str, needle: str) -> Any:
    """``field`` of a row's stored JSON; a text without ``needle`` (``"field"``) is not decoded."""
    if isinstance(data, (str, bytes)):
        if needle not in (data if isinstance(data, str) else data.decode("utf-8", "replace")):
            return None
        data = json.loads(data)
    return data.get(field) if isinstance(data, dict) else None


class SqlComparisonReads:
    """:class:`ComparisonReads` over a SQL store (SQLite or PostgreSQL)."""

    def __init__(self, sql: SqlStore) -> None:
        self._sql = sql

    def row_ids(self, run_id: str, field: str) -> dict[int, Any]:
        """The ``field`` input of each stored row (None where a row has none), by row index."""
        needle = f'"{field}"'
        return {int(idx): _field_of(data, field, needle) for idx, data in
                self._sql._query("SELECT idx, data FROM rows WHERE run_id = ?", (run_id,))}

    def cells(self, run_id: str) -> dict[tuple[str, str], dict[int, Cell]]:
        """``{(evaluator, metric): {row index: Cell}}`` of a run's typed score lines."""
        lines = self._sql._query(
            "SELECT evaluator, metric, idx, value, status, passed FROM score_values WHERE run_id = ? "
            "ORDER BY evaluator, metric, idx",
            (run_id,),
        )
        cells: dict[tuple[str, str], dict[int, Cell]] = {}
        ok = Status.OK.value
        column: dict[int, Cell] = {}
        current: tuple[str, str] | None = None
        for evaluator, metric, idx, value, status, passed in lines:
            if (evaluator, metric) != current:
                current = (evaluator, metric)
                column = cells.setdefault(current, {})
            failed = status != ok
            column[idx] = Cell(None if failed or value is None else float(value), failed,
                               None if passed is None else bool(passed))
        return cells

    def row(self, run_id: str, idx: int) -> StoredRow | None:
        """One stored input row, or None."""
        found = self._sql._query(
            "SELECT source, line, data, target, target_error FROM rows WHERE run_id = ? AND idx = ?",
            (run_id, idx),
        )
        if not found:
            return None
        source, line, data, target, error = found[0]
        return StoredRow(idx, source, line, _json(data), _json(target) if target else None, error)

    def outputs(self, run_id: str, idx: int, evaluator: str) -> dict[str, Any] | None:
        """One evaluator's flat outputs on one row, or None."""
        found = self._sql._query(
            "SELECT outputs FROM scores WHERE run_id = ? AND idx = ? AND evaluator = ?",
            (run_id, idx, evaluator),
        )
        value = _json(found[0][0]) if found else None
        return value if isinstance(value, dict) else None

    def runs_named(self, prefix: str) -> list[NamedRun]:
        """The runs whose name starts with ``prefix`` (as ``LIKE`` sees it), oldest first."""
        like = prefix.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%"
        rows = self._sql._query(
            "SELECT id, name, status, summary, started FROM runs WHERE name LIKE ? ESCAPE '!' "
            "ORDER BY started",
            (like,),
        )
        return [NamedRun(str(run_id), name, str(status), _json(summary) if summary else None, started)
                for run_id, name, status, summary, started in rows]
