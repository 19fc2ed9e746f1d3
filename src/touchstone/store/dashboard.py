"""The store's repository for the dashboard's read models: the runs list,
run page rows, histograms, trends.

Every query text lives here (portable SQL with ``?`` placeholders, dialect fragments from
:class:`~touchstone.store.sql.Dialect`); callers outside ``store/`` use the typed methods of
:class:`DashboardReads` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from touchstone.store.sql import SqlStore


@runtime_checkable
class DashboardReads(Protocol):
    """What callers outside the store may ask of it: the dashboard's read models."""


class SqlDashboardReads:
    """:class:`DashboardReads` over a SQL store (SQLite or PostgreSQL)."""

    def __init__(self, sql: SqlStore) -> None:
        self._sql = sql
