"""The run store: a SQLite database (WAL mode) holding every run, its rows and every score.

A run's configuration is written when it starts, each score as it is produced (small transactions),
the status and summary when it ends; a crash loses at most the scores in flight, and a run can be
resumed from what is stored. The schema is versioned (:mod:`touchstone.store.migrations`): opening
an older store brings it forward in place.

Default location: ``$TOUCHSTONE_STORE`` if set, else ``~/.touchstone/runs.db``. When the home
location cannot be used (no writable home directory, ``~/.touchstone`` is a file...), the store
warns once and keeps the run in memory; a path given explicitly (argument or ``$TOUCHSTONE_STORE``)
that cannot be used raises :class:`~touchstone.errors.ConfigurationError` instead.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from touchstone.errors import ConfigurationError
from touchstone.errors import describe_os_error as _reason
from touchstone.scores import Score, ScoreLine, Status
from touchstone.store.base import (
    PutScoresItem,
    RunInfo,
    ScoreRecord,
    ScoreValue,
    StoredRow,
    StoreLocationWarning,
    StoreVersionError,
    score_lines,
)
from touchstone.store.migrations import migrate

__all__ = [
    "MEMORY",
    "RunInfo",
    "RunStore",
    "ScoreRecord",
    "ScoreValue",
    "StoredRow",
    "default_store_path",
    "encode_outputs",
]

MEMORY = Path(":memory:")
"""The ``path`` of a store kept in memory only."""

_WARNED: set[str] = set()
"""Default locations already warned about in this process (the warning is given once per place)."""


def default_store_path() -> Path:
    """``$TOUCHSTONE_STORE`` if set, else ``~/.touchstone/runs.db``."""
    env = os.environ.get("TOUCHSTONE_STORE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".touchstone" / "runs.db"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


_ENCODE = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=True).encode


def _dumps(value: Any) -> str:
    return _ENCODE(value)


def encode_outputs(outputs: dict[str, Any]) -> str:
    """Outputs as the store writes them (so a worker process can encode them ahead)."""
    return _ENCODE(outputs)


def _connect(path: Path) -> sqlite3.Connection:
    """Open (creating the folder and the file when missing) and bring the schema forward."""
    if path != MEMORY:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
    try:
        if path != MEMORY:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        migrate(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


class RunStore:
    """A SQLite run store (implements :class:`touchstone.store.base.Store`). Safe to share between
    threads of one process.

    ``path``: the database file; ``":memory:"`` keeps everything in memory; ``None`` uses
    :func:`default_store_path`, falling back to memory (with one warning) when the home location
    cannot be used."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._lock = threading.RLock()
        self.path: Path
        if path is not None:
            self.path = MEMORY if str(path) == ":memory:" else Path(path).expanduser()
            self._conn = self._open_explicit(self.path)
        elif os.environ.get("TOUCHSTONE_STORE"):
            self.path = default_store_path()
            self._conn = self._open_explicit(self.path)
        else:
            self.path, self._conn = self._open_default()

    @property
    def persistent(self) -> bool:
        """False when the results are kept in memory only."""
        return self.path != MEMORY

    @property
    def schema_version(self) -> int:
        """The database's schema version (always the newest once opened)."""
        with self._lock:
            return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _open_explicit(self, path: Path) -> sqlite3.Connection:
        try:
            return _connect(path)
        except StoreVersionError:
            raise
        except (OSError, sqlite3.Error) as exc:
            raise ConfigurationError(f"cannot use the run store {path}: {_reason(exc)}") from exc

    def _open_default(self) -> tuple[Path, sqlite3.Connection]:
        where = "~/.touchstone/runs.db"
        try:
            path = default_store_path()
            where = str(path)
            return path, _connect(path)
        except StoreVersionError:
            raise  # a newer store is there: using memory instead would hide it
        except (OSError, RuntimeError, sqlite3.Error) as exc:  # RuntimeError: no home directory
            if where not in _WARNED:
                _WARNED.add(where)
                warnings.warn(
                    f"cannot use the default run store {where} ({_reason(exc)}); results are kept in "
                    "memory only (set TOUCHSTONE_STORE or pass a store path to keep them)",
                    StoreLocationWarning,
                    stacklevel=4,
                )
            return MEMORY, _connect(MEMORY)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
                self._conn.commit()
            except BaseException:
                self._conn.rollback()
                raise

    # ------------------------------------------------------------------ runs
    def create_run(self, config: dict[str, Any], name: str | None, version: str) -> str:
        run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self._tx() as c:
            c.execute(
                "INSERT INTO runs (id, name, started, status, config, version) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, name, now(), "running", _dumps(config), version),
            )
        return run_id

    def set_status(self, run_id: str, status: str) -> None:
        with self._tx() as c:
            c.execute("UPDATE runs SET status = ? WHERE id = ?", (status, run_id))

    def finish_run(self, run_id: str, status: str, metrics: dict[str, Any], summary: dict[str, Any]) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE runs SET finished = ?, status = ?, metrics = ?, summary = ? WHERE id = ?",
                (now(), status, _dumps(metrics), _dumps(summary), run_id),
            )

    def get_run(self, run_id: str) -> RunInfo | None:
        with self._lock:
            cur = self._conn.execute(
                "SELECT id, name, started, finished, status, config, metrics, summary, version "
                "FROM runs WHERE id = ?",
                (run_id,),
            )
            row = cur.fetchone()
        return self._run_info(row) if row else None

    def list_runs(self, limit: int = 50) -> list[RunInfo]:
        with self._lock:
            cur = self._conn.execute(
                "SELECT id, name, started, finished, status, config, metrics, summary, version FROM runs "
                "ORDER BY started DESC, id DESC LIMIT ?",
                (limit,),
            )
            rows = cur.fetchall()
        return [self._run_info(r) for r in rows]

    @staticmethod
    def _run_info(row: tuple[Any, ...]) -> RunInfo:
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

    # ------------------------------------------------------------------ rows and scores
    def put_rows(self, run_id: str, rows: Iterable[StoredRow]) -> None:
        with self._tx() as c:
            c.executemany(
                "INSERT OR REPLACE INTO rows (run_id, idx, source, line, data, target, target_error) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        r.idx,
                        r.source,
                        r.line,
                        _dumps(r.data),
                        None if r.target is None else _dumps(r.target),
                        r.target_error,
                    )
                    for r in rows
                ],
            )

    def get_rows(self, run_id: str) -> list[StoredRow]:
        with self._lock:
            cur = self._conn.execute(
                "SELECT idx, source, line, data, target, target_error FROM rows "
                "WHERE run_id = ? ORDER BY idx",
                (run_id,),
            )
            rows = cur.fetchall()
        return [
            StoredRow(r[0], r[1], r[2], json.loads(r[3]), json.loads(r[4]) if r[4] else None, r[5])
            for r in rows
        ]

    def put_scores(self, run_id: str, evaluator: str, scores: Iterable[PutScoresItem]) -> None:
        """Write the results of one evaluator on some rows, in one transaction.

        Each item is a :class:`~touchstone.store.base.ScoreRecord` or a plain tuple
        ``(idx, outputs, failed, usage)`` / ``(idx, outputs, failed, usage, scores)``: ``outputs``
        the flat dict, or already JSON-encoded (a ``str``, as :func:`encode_outputs` makes it);
        ``scores`` the row's typed :class:`~touchstone.scores.Score` objects, written one line per
        metric to ``score_values``. A result written again for the same (row, evaluator) replaces
        the earlier one, typed lines included."""
        stamp = now()
        json_rows: list[tuple[Any, ...]] = []
        typed_rows: list[tuple[Any, ...]] = []
        add_json = json_rows.append
        for item in scores:
            idx, out, failed, usage = item[0], item[1], item[2], item[3]
            add_json(
                (
                    run_id,
                    idx,
                    evaluator,
                    out if isinstance(out, str) else _ENCODE(out),
                    int(failed),
                    None if usage is None else _ENCODE(usage),
                    stamp,
                )
            )
            if len(item) > 4 and item[4]:
                typed_rows.extend(_typed_lines(run_id, idx, evaluator, item[4]))
        with self._tx() as c:
            _delete_typed(c, run_id, evaluator, [row[1] for row in json_rows])
            c.executemany(
                "INSERT OR REPLACE INTO scores (run_id, idx, evaluator, outputs, failed, usage, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                json_rows,
            )
            if typed_rows:
                c.executemany(
                    "INSERT OR REPLACE INTO score_values "
                    "(run_id, evaluator, idx, metric, value, label, status, error_kind, passed) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    typed_rows,
                )

    def score_values(
        self, run_id: str, evaluator: str | None = None, metric: str | None = None
    ) -> list[ScoreValue]:
        """The typed score lines of a run (optionally of one evaluator and/or one metric), ordered
        by evaluator, row and metric (the store's key order: no sort). Runs stored before schema
        version 2 have none (their JSON outputs
        are not back-filled)."""
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
        sql += " ORDER BY evaluator, idx, metric"
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [
            ScoreValue(
                run_id, r[0], r[1], r[2], r[3], r[4], Status(r[5]), r[6], None if r[7] is None else bool(r[7])
            )
            for r in rows
        ]

    def get_scores(self, run_id: str) -> dict[tuple[int, str], tuple[dict[str, Any], dict[str, Any] | None]]:
        """``{(row index, evaluator): (outputs, usage)}`` for every stored score of the run."""
        with self._lock:
            cur = self._conn.execute(
                "SELECT idx, evaluator, outputs, usage FROM scores WHERE run_id = ?", (run_id,)
            )
            rows = cur.fetchall()
        return {(r[0], r[1]): (json.loads(r[2]), json.loads(r[3]) if r[3] else None) for r in rows}

    def score_keys(self, run_id: str) -> set[tuple[int, str]]:
        """``{(row index, evaluator)}`` of every stored score of the run (nothing decoded)."""
        with self._lock:
            cur = self._conn.execute("SELECT idx, evaluator FROM scores WHERE run_id = ?", (run_id,))
            return {(int(r[0]), str(r[1])) for r in cur.fetchall()}

    def count_scores(self, run_id: str) -> int:
        with self._lock:
            return int(
                self._conn.execute("SELECT COUNT(*) FROM scores WHERE run_id = ?", (run_id,)).fetchone()[0]
            )

    def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read-only query (portable SQL, ``?`` placeholders), as tuples."""
        with self._lock:
            return [tuple(r) for r in self._conn.execute(sql, tuple(params)).fetchall()]


def _delete_typed(c: sqlite3.Connection, run_id: str, evaluator: str, indices: list[int]) -> None:
    """Remove the typed lines of the (row, evaluator) results about to be written, so that a result
    written again keeps no metric of the earlier one."""
    if not indices:
        return
    lo, hi = min(indices), max(indices)
    if hi - lo + 1 == len(indices) == len(set(indices)):  # consecutive rows: one range
        c.execute(
            "DELETE FROM score_values WHERE run_id = ? AND evaluator = ? AND idx BETWEEN ? AND ?",
            (run_id, evaluator, lo, hi),
        )
    else:
        c.execute(
            "DELETE FROM score_values WHERE run_id = ? AND evaluator = ? "
            "AND idx IN (SELECT value FROM json_each(?))",
            (run_id, evaluator, json.dumps(indices)),
        )


def _typed_lines(
    run_id: str, idx: int, evaluator: str, scores: Sequence[Score] | Sequence[ScoreLine]
) -> list[tuple[Any, ...]]:
    """The ``score_values`` lines of one row's Scores (or of their :data:`ScoreLine` tuples)."""
    first = scores[0]
    lines = cast("Sequence[ScoreLine]", scores) if isinstance(first, tuple) else score_lines(
        cast("Sequence[Score]", scores))
    return [(run_id, evaluator, idx, *line) for line in lines]
