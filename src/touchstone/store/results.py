"""The store's repository for what the engine reads back of a run's rows and
results (resume, stored rows and targets, the rows file).

Every query text lives here (portable SQL with ``?`` placeholders, dialect fragments from
:class:`~touchstone.store.sql.Dialect`); callers outside ``store/`` use the typed methods of
:class:`ResultsRepository` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from touchstone.store.sql import SqlStore


@runtime_checkable
class ResultsRepository(Protocol):
    """What callers outside the store may ask of it: what the engine reads back of a run."""


class SqlResultsRepository:
    """:class:`ResultsRepository` over a SQL store (SQLite or PostgreSQL)."""

    def __init__(self, sql: SqlStore) -> None:
        self._sql = sql
