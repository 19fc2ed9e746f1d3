"""The SQL both store backends share: :class:`SqlStore` holds every query of the
:class:`~touchstone.store.base.Store` protocol, written once in portable SQL with ``?`` placeholders;
a backend (:class:`~touchstone.store.sqlite.RunStore`, :class:`~touchstone.store.postgres.PostgresStore`)
supplies the connection, its transactions, and the few statements that differ (:class:`Dialect`:
upserts, placeholders; the bulk write of :meth:`SqlStore._write_scores`).
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from touchstone.scores import Score, ScoreLine, Status
from touchstone.store.base import RunInfo, ScoreRecord, ScoreValue, StoredRow, score_lines

if TYPE_CHECKING:
    from touchstone.store.comparisons import SqlComparisonReads
    from touchstone.store.dashboard import SqlDashboardReads
    from touchstone.store.people import SqlPeopleRepository
    from touchstone.store.results import SqlResultsRepository

_ENCODE = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=True).encode


def dumps(value: Any) -> str:
    """A value as the store's JSON text columns keep it."""
    return _ENCODE(value)


def encode_outputs(outputs: dict[str, Any]) -> str:
    """Outputs as the store writes them (so a worker process can encode them ahead)."""
    return _ENCODE(outputs)


def now() -> str:
    """The current UTC time as the store writes it (ISO 8601, seconds)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Cursor(Protocol):
    """What :class:`SqlStore` needs of a DB-API cursor (or a SQLite connection)."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Any: ...


@lru_cache(maxsize=512)
def format_placeholders(sql: str) -> str:
    """``sql`` with its ``?`` placeholders as ``%s`` (psycopg's), outside quoted literals and names;
    every ``%`` doubled, since psycopg reads ``%`` as the start of a placeholder anywhere."""
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if ch == "%":
            out.append("%%")
        elif quote is not None:
            out.append(ch)
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        else:
            out.append(ch)
    return "".join(out)


@dataclass(frozen=True)
class Dialect:
    """What differs between the backends' SQL text: the name (``sqlite`` or ``postgresql``, as
    :mod:`touchstone.store.migrations` knows them) and the form of an upsert."""

    name: str
    pyformat: bool
    """Placeholders are ``%s`` (psycopg) rather than ``?``."""

    def sql(self, text: str) -> str:
        """Portable SQL (``?`` placeholders) as this backend's driver takes it."""
        return format_placeholders(text) if self.pyformat else text

    def upsert(self, table: str, columns: Sequence[str], key: Sequence[str]) -> str:
        """An insert of ``columns`` that replaces the line with the same ``key``."""
        marks = ", ".join("?" for _ in columns)
        cols = ", ".join(columns)
        if self.name == "sqlite":
            return f"INSERT OR REPLACE INTO {table} ({cols}) VALUES ({marks})"
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in key)
        return (f"INSERT INTO {table} ({cols}) VALUES ({marks}) "
                f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}")


SQLITE = Dialect("sqlite", pyformat=False)
POSTGRESQL = Dialect("postgresql", pyformat=True)

ROW_COLUMNS = ("run_id", "idx", "source", "line", "data", "target", "target_error")
SCORE_COLUMNS = ("run_id", "idx", "evaluator", "outputs", "failed", "usage", "created")
VALUE_COLUMNS = ("run_id", "evaluator", "idx", "metric", "value", "label", "status", "error_kind", "passed")
_RUN_SELECT = "SELECT id, name, started, finished, status, config, metrics, summary, version FROM runs"


class SqlStore(ABC):
    """A run store over a SQL database (implements :class:`~touchstone.store.base.Store`): every
    query of the protocol, with the connection, transactions and bulk score writes left to the
    backend. Safe to share between the threads of one process (one lock around the connection)."""

    dialect: ClassVar[Dialect]
    path: Path | str
    _lock: threading.RLock

    # ------------------------------------------------------------------ repositories
    @cached_property
    def dashboard(self) -> SqlDashboardReads:
        """The dashboard's read models."""
        from touchstone.store.dashboard import SqlDashboardReads

        return SqlDashboardReads(self)

    @cached_property
    def comparisons(self) -> SqlComparisonReads:
        """What comparisons of runs and the monitor read."""
        from touchstone.store.comparisons import SqlComparisonReads

        return SqlComparisonReads(self)

    @cached_property
    def people(self) -> SqlPeopleRepository:
        """Annotations, feedback and the queue."""
        from touchstone.store.people import SqlPeopleRepository

        return SqlPeopleRepository(self)

    @cached_property
    def results(self) -> SqlResultsRepository:
        """A run's rows and results as the engine, compare and monitor read them back."""
        from touchstone.store.results import SqlResultsRepository

        return SqlResultsRepository(self)

    # ------------------------------------------------------------------ backend
    @property
    def persistent(self) -> bool:
        """False when the results are kept in memory only."""
        return True

    @abstractmethod
    def close(self) -> None:
        """Release the connection; the store is not used afterwards."""

    @abstractmethod
    def _tx(self) -> AbstractContextManager[Cursor]:
        """One write transaction (under the lock): committed on exit, rolled back on an error."""

    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read (portable SQL, under the lock)."""

    @abstractmethod
    def _write_scores(
        self, c: Cursor, run_id: str, evaluator: str, json_rows: list[tuple[Any, ...]],
        typed_rows: list[tuple[Any, ...]],
    ) -> None:
        """Inside a transaction: replace the (row, evaluator) results ``json_rows`` (``scores``
        lines) and their typed lines by ``typed_rows`` (``score_values`` lines)."""

    def _execute(self, c: Cursor, sql: str, params: Sequence[Any] = ()) -> None:
        c.execute(self.dialect.sql(sql), params)

    def _query_in(self, c: Cursor, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read inside a write transaction."""
        return [tuple(row) for row in c.execute(self.dialect.sql(sql), params).fetchall()]

    # ------------------------------------------------------------------ runs
    def create_run(self, config: dict[str, Any], name: str | None, version: str) -> str:
        """Record a new run with status ``running``; returns its id."""
        import uuid

        # the time to the second and 24 random bits: ids a person can read and sort; a draw that
        # another run of the same second already holds is drawn again (hundreds of runs a second
        # made a collision likely enough to be seen)
        while True:
            run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
            with self._tx() as c:
                if self._query_in(c, "SELECT 1 FROM runs WHERE id = ?", (run_id,)):
                    continue
                self._execute(
                    c,
                    "INSERT INTO runs (id, name, started, status, config, version) VALUES (?, ?, ?, ?, ?, ?)",
                    (run_id, name, now(), "running", dumps(config), version),
                )
            return run_id

    def set_status(self, run_id: str, status: str) -> None:
        """Change a run's status."""
        with self._tx() as c:
            self._execute(c, "UPDATE runs SET status = ? WHERE id = ?", (status, run_id))

    def finish_run(self, run_id: str, status: str, metrics: dict[str, Any], summary: dict[str, Any]) -> None:
        """Record the end of a run: its final status, metrics and summary."""
        with self._tx() as c:
            self._execute(
                c,
                "UPDATE runs SET finished = ?, status = ?, metrics = ?, summary = ? WHERE id = ?",
                (now(), status, dumps(metrics), dumps(summary), run_id),
            )

    def get_run(self, run_id: str) -> RunInfo | None:
        """One run, or None."""
        rows = self._query(_RUN_SELECT + " WHERE id = ?", (run_id,))
        return _run_info(rows[0]) if rows else None

    def list_runs(self, limit: int = 50) -> list[RunInfo]:
        """The most recent runs, newest first."""
        rows = self._query(_RUN_SELECT + " ORDER BY started DESC, id DESC LIMIT ?", (limit,))
        return [_run_info(r) for r in rows]

    # ------------------------------------------------------------------ rows and scores
    def put_rows(self, run_id: str, rows: Iterable[StoredRow]) -> None:
        """Write (or replace) input rows of a run."""
        lines = [
            (run_id, r.idx, r.source, r.line, dumps(r.data) if r.data_json is None else r.data_json,
             None if r.target is None else dumps(r.target), r.target_error)
            for r in rows
        ]
        upsert = self.dialect.sql(self.dialect.upsert("rows", ROW_COLUMNS, ("run_id", "idx")))
        with self._tx() as c:
            c.executemany(upsert, lines)

    def get_rows(self, run_id: str) -> list[StoredRow]:
        """Every stored input row of a run, by index."""
        rows = self._query(
            "SELECT idx, source, line, data, target, target_error FROM rows WHERE run_id = ? ORDER BY idx",
            (run_id,),
        )
        return [
            StoredRow(r[0], r[1], r[2], json.loads(r[3]), json.loads(r[4]) if r[4] else None, r[5])
            for r in rows
        ]

    def put_scores(self, run_id: str, evaluator: str, scores: Iterable[ScoreRecord]) -> None:
        """Write the results of one evaluator on some rows, in one transaction.

        Of each :class:`~touchstone.store.base.ScoreRecord`, ``outputs`` is the flat dict, or already
        JSON-encoded (a ``str``, as :func:`encode_outputs` makes it); ``scores`` the row's typed
        :class:`~touchstone.scores.Score` objects (or their lines), written one line per metric to
        ``score_values``. A result written again for the same (row, evaluator) replaces the earlier
        one, typed lines included."""
        stamp = now()
        json_rows: list[tuple[Any, ...]] = []
        typed_rows: list[tuple[Any, ...]] = []
        add_json = json_rows.append
        for record in scores:
            out, usage = record.outputs, record.usage
            add_json((run_id, record.idx, evaluator, out if isinstance(out, str) else _ENCODE(out),
                      int(record.failed), None if usage is None else _ENCODE(usage), stamp))
            if record.scores:
                typed_rows.extend(typed_lines(run_id, record.idx, evaluator, record.scores))
        with self._tx() as c:
            self._write_scores(c, run_id, evaluator, json_rows, typed_rows)

    def score_values(
        self, run_id: str, evaluator: str | None = None, metric: str | None = None
    ) -> list[ScoreValue]:
        """The typed score lines of a run (optionally of one evaluator and/or one metric), ordered
        by evaluator, row and metric (the key's order). Runs stored before schema version 2 have
        none (their JSON outputs are not back-filled)."""
        sql = (
            "SELECT idx, evaluator, metric, value, label, status, error_kind, passed "
            "FROM score_values WHERE run_id = ?"
        )
        args: list[Any] = [run_id]
        if evaluator is not None:
            sql += " AND evaluator = ?"
            args.append(evaluator)
        if metric is not None:
            sql += " AND metric = ?"
            args.append(metric)
        rows = self._query(sql + " ORDER BY evaluator, idx, metric", args)
        return [
            ScoreValue(
                run_id, r[0], r[1], r[2], r[3], r[4], Status(r[5]), r[6], None if r[7] is None else bool(r[7])
            )
            for r in rows
        ]

    def get_scores(self, run_id: str) -> dict[tuple[int, str], tuple[dict[str, Any], dict[str, Any] | None]]:
        """``{(row index, evaluator): (outputs, usage)}`` for every stored score of the run."""
        rows = self._query("SELECT idx, evaluator, outputs, usage FROM scores WHERE run_id = ?", (run_id,))
        return {(r[0], r[1]): (json.loads(r[2]), json.loads(r[3]) if r[3] else None) for r in rows}

    def score_keys(self, run_id: str) -> set[tuple[int, str]]:
        """``{(row index, evaluator)}`` of every stored score of the run (nothing decoded)."""
        rows = self._query("SELECT idx, evaluator FROM scores WHERE run_id = ?", (run_id,))
        return {(int(r[0]), str(r[1])) for r in rows}

    def count_scores(self, run_id: str) -> int:
        """How many (row, evaluator) results the run has stored."""
        return int(self._query("SELECT COUNT(*) FROM scores WHERE run_id = ?", (run_id,))[0][0])

    def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read-only query (portable SQL, ``?`` placeholders), as tuples."""
        return self._query(sql, tuple(params))

    def execute_many(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        """One write statement (portable SQL, ``?`` placeholders) run once per item of ``rows``, all
        in one transaction: the people-in-the-loop tables' writes (annotations, feedback)."""
        lines = [tuple(r) for r in rows]
        if not lines:
            return
        with self._tx() as c:
            c.executemany(self.dialect.sql(sql), lines)


def _run_info(row: Sequence[Any]) -> RunInfo:
    return RunInfo(
        id=row[0],
        name=row[1],
        started=row[2],
        finished=row[3],
        status=row[4],
        config=json.loads(row[5]),
        metrics=json.loads(row[6]) if row[6] else None,
        summary=json.loads(row[7]) if row[7] else None,
        version=row[8],
    )


def typed_lines(
    run_id: str, idx: int, evaluator: str, scores: Sequence[Score] | Sequence[ScoreLine]
) -> list[tuple[Any, ...]]:
    """The ``score_values`` lines of one row's Scores (or of their :data:`ScoreLine` tuples), in
    the table's column order (run, evaluator, row, then the line's fields in their order)."""
    first = scores[0]
    lines = score_lines(cast("Sequence[Score]", scores)) if isinstance(first, Score) else cast(
        "Sequence[ScoreLine]", scores)
    return [(run_id, evaluator, idx, *line) for line in lines]


def consecutive(indices: Sequence[int]) -> tuple[int, int] | None:
    """``(lowest, highest)`` when ``indices`` are distinct consecutive numbers (as the engine writes
    an evaluator's rows: one range to delete), else None."""
    if not indices:
        return None
    lo, hi = min(indices), max(indices)
    if hi - lo + 1 == len(indices) == len(set(indices)):
        return lo, hi
    return None

