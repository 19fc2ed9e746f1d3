"""The store's repository for what comparisons of runs and the monitor read: rows matched by id,
the typed score lines of two runs, recent windows.

Every query text lives here (portable SQL with ``?`` placeholders, dialect fragments from
:class:`~touchstone.store.sql.Dialect`); callers outside ``store/`` use the typed methods of
:class:`ComparisonReads` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from touchstone.store.sql import SqlStore


@runtime_checkable
class ComparisonReads(Protocol):
    """What callers outside the store may ask of it when comparing runs or watching windows."""


class SqlComparisonReads:
    """:class:`ComparisonReads` over a SQL store (SQLite or PostgreSQL)."""

    def __init__(self, sql: SqlStore) -> None:
        self._sql = sql
