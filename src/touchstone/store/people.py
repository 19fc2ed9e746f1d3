"""The store's repository for annotations, feedback and the active-learning
queue (the people-in-the-loop tables).

Every query text lives here (portable SQL with ``?`` placeholders, dialect fragments from
:class:`~touchstone.store.sql.Dialect`); callers outside ``store/`` use the typed methods of
:class:`PeopleRepository` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from touchstone.store.sql import SqlStore


@runtime_checkable
class PeopleRepository(Protocol):
    """What callers outside the store may ask of it: annotations, feedback and the queue."""


class SqlPeopleRepository:
    """:class:`PeopleRepository` over a SQL store (SQLite or PostgreSQL)."""

    def __init__(self, sql: SqlStore) -> None:
        self._sql = sql
