"""The team store: the run store on a PostgreSQL server, for runs, monitors and the dashboard shared
by several people and processes.

Given a URL (``postgresql://user:password@host:port/database``, as libpq reads it: parameters such
as ``?sslmode=require`` and the ``PG*`` environment variables work), it keeps the same tables as the
SQLite store, brought forward by the same migration steps (:mod:`touchstone.store.migrations`),
and answers the same :class:`~touchstone.store.base.Store` protocol through the shared SQL of
:class:`~touchstone.store.sql.SqlStore`. Many results at once are written with ``COPY`` (the
results being replaced deleted first; merged through a temporary table when another process wrote
one of them meanwhile), so a run's 100,000 score lines are a few statements, not 100,000 round
trips.

The URL's password is kept only to connect: ``path`` and every message show the URL without it.
psycopg 3 is imported when a PostgreSQL store is opened (``pip install 'touchstone-genai[postgres]'``).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from touchstone.errors import ConfigurationError, StoreError
from touchstone.store.base import StoreConnectionError
from touchstone.store.migrations import pg_migrate, pg_schema_version
from touchstone.store.sql import POSTGRESQL, SCORE_COLUMNS, VALUE_COLUMNS, Dialect, SqlStore, consecutive
from touchstone.store.urls import normalise_url, redact_url, scrub

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStore"]

INSTALL_HINT = "pip install 'touchstone-genai[postgres]'"

COPY_FROM = 64
"""Writes of at least this many lines (results and typed lines together) go through ``COPY``;
fewer are upserted by one pipelined ``executemany``."""

_SCORE_KEY = ("run_id", "idx", "evaluator")
_VALUE_KEY = ("run_id", "evaluator", "idx", "metric")


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ConfigurationError(
            f"a PostgreSQL run store needs the psycopg package, which is not installed: {INSTALL_HINT}"
        ) from exc
    return psycopg


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class PostgresStore(SqlStore):
    """A run store on a PostgreSQL server (implements :class:`~touchstone.store.base.Store`).

    ``url``: ``postgresql://[user[:password]@]host[:port]/database[?parameters]``. Opening connects,
    creates or brings forward the schema, and raises :class:`~touchstone.store.base.StoreConnectionError`
    (the URL shown without its password) when the server cannot be reached or refuses the login.
    Safe to share between the threads of one process; several processes may write one store."""

    dialect: ClassVar[Dialect] = POSTGRESQL
    path: str

    def __init__(self, url: str, *, connect_timeout: int = 10) -> None:
        self._lock = threading.RLock()
        self._url = normalise_url(url)
        self.path = redact_url(self._url)
        self._psycopg = _import_psycopg()
        self._staging: set[str] = set()
        try:
            self._conn: psycopg.Connection[Any] = self._psycopg.connect(
                self._url, autocommit=True, connect_timeout=connect_timeout, application_name="touchstone"
            )
        except self._psycopg.Error as exc:
            raise self._connection_error("cannot connect to", exc) from None
        except Exception as exc:  # a URL libpq cannot read (bad port, unknown parameter...)
            raise ConfigurationError(
                f"invalid PostgreSQL store URL {self.path}: {scrub(_one_line(str(exc)), self._url)}"
            ) from None
        try:
            with self._lock:
                pg_migrate(self._conn, self.path)
        except self._psycopg.Error as exc:  # e.g. no right to create the tables: one typed error
            error = self._store_error(exc)
            self._conn.close()
            raise error from None
        except BaseException:
            self._conn.close()
            raise

    def __repr__(self) -> str:
        return f"PostgresStore({self.path!r})"

    def __reduce__(self) -> Any:
        # a store does not travel to other processes: its password would travel with it
        raise TypeError("a PostgresStore cannot be pickled; open the store by its URL in each process")

    def _connection_error(self, what: str, exc: BaseException) -> StoreConnectionError:
        reason = scrub(_one_line(str(exc)), self._url) or type(exc).__name__
        return StoreConnectionError(f"{what} the run store {self.path}: {reason}")

    @property
    def schema_version(self) -> int:
        """The store's schema version (always the newest once opened)."""
        with self._lock:
            return pg_schema_version(self._conn)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def _store_error(self, exc: BaseException) -> StoreError:
        """A driver's error as the store's typed error: the connection's own, or a statement the
        server refused (the same class SQLite's failures get)."""
        if isinstance(exc, self._psycopg.OperationalError) or self._conn.closed:
            return self._connection_error("lost the connection to", exc)
        reason = scrub(_one_line(str(exc)), self._url) or type(exc).__name__
        return StoreError(f"cannot use the run store {self.path}: {reason}")

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        with self._lock:
            try:
                with self._conn.transaction(), self._conn.cursor() as cur:
                    yield cur
            except self._psycopg.Error as exc:
                raise self._store_error(exc) from None

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                with self._conn.cursor() as cur:
                    cur.execute(POSTGRESQL.sql(sql), tuple(params))
                    return list(cur.fetchall()) if cur.description is not None else []
            except self._psycopg.Error as exc:
                raise self._store_error(exc) from None

    # ------------------------------------------------------------------ bulk writes
    def _write_scores(
        self, c: Any, run_id: str, evaluator: str, json_rows: list[tuple[Any, ...]],
        typed_rows: list[tuple[Any, ...]],
    ) -> None:
        if not json_rows:
            return
        indices = [row[1] for row in json_rows]
        span = consecutive(indices)
        where, args = (
            ("idx BETWEEN %s AND %s", [span[0], span[1]]) if span is not None
            else ("idx = ANY(%s)", [sorted(set(indices))])
        )
        c.execute(f"DELETE FROM score_values WHERE run_id = %s AND evaluator = %s AND {where}",
                  [run_id, evaluator, *args])
        # one statement may not write a line twice: the last write of a row wins, as with SQLite
        json_rows = _last_per_key(json_rows, (1,))
        typed_rows = _last_per_key([_no_nan(r) for r in typed_rows], (2, 3))
        if len(json_rows) + len(typed_rows) < COPY_FROM:
            self._upsert(c, "scores", SCORE_COLUMNS, _SCORE_KEY, json_rows)
            self._upsert(c, "score_values", VALUE_COLUMNS, _VALUE_KEY, typed_rows)
            return
        try:
            # Many lines: delete the results being replaced and COPY straight into the tables (about
            # twice as fast as merging through a temporary table). Under a savepoint, because another
            # process may have written one of these rows since the delete: then merge instead.
            with self._conn.transaction():
                c.execute(f"DELETE FROM scores WHERE run_id = %s AND evaluator = %s AND {where}",
                          [run_id, evaluator, *args])
                self._copy(c, "scores", SCORE_COLUMNS, json_rows)
                self._copy(c, "score_values", VALUE_COLUMNS, typed_rows)
        except self._psycopg.errors.UniqueViolation:
            self._merge(c, "scores", SCORE_COLUMNS, _SCORE_KEY, json_rows)
            self._merge(c, "score_values", VALUE_COLUMNS, _VALUE_KEY, typed_rows)

    @staticmethod
    def _copy(c: Any, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        if rows:
            with c.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)

    @staticmethod
    def _upsert(
        c: Any, table: str, columns: Sequence[str], key: Sequence[str], rows: list[tuple[Any, ...]]
    ) -> None:
        if rows:
            c.executemany(POSTGRESQL.sql(POSTGRESQL.upsert(table, columns, key)), rows)

    def _merge(
        self, c: Any, table: str, columns: Sequence[str], key: Sequence[str], rows: list[tuple[Any, ...]]
    ) -> None:
        """Insert many ``rows``, replacing lines with the same key: ``COPY`` into a temporary table
        (emptied at commit), then one merge."""
        staging = f"touchstone_in_{table}"
        if staging not in self._staging:
            c.execute(
                f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} "
                f"(LIKE {table} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
            )
            self._staging.add(staging)
        self._copy(c, staging, columns, rows)
        cols = ", ".join(columns)
        updates = ", ".join(f"{col} = EXCLUDED.{col}" for col in columns if col not in key)
        c.execute(
            f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {staging} "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
        )


def _no_nan(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A typed line with a NaN value stored as NULL, as SQLite stores it."""
    value = row[4]
    if isinstance(value, float) and math.isnan(value):
        return (*row[:4], None, *row[5:])
    return row


def _last_per_key(rows: list[tuple[Any, ...]], key: tuple[int, ...]) -> list[tuple[Any, ...]]:
    """``rows`` with only the last line per key (one merge statement may not touch a line twice;
    the last write wins, as with SQLite's ``INSERT OR REPLACE``)."""
    seen: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in rows:
        seen[tuple(row[i] for i in key)] = row
    if len(seen) == len(rows):
        return rows
    return list(seen.values())
