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

import contextlib
import json
import os
import sqlite3
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from touchstone.errors import ConfigurationError, StoreError
from touchstone.errors import describe_os_error as _reason
from touchstone.store.base import (
    RunInfo,
    ScoreRecord,
    ScoreValue,
    StoredRow,
    StoreLocationWarning,
    StoreVersionError,
)
from touchstone.store.migrations import migrate
from touchstone.store.sql import SCORE_COLUMNS, SQLITE, VALUE_COLUMNS, Dialect, SqlStore, consecutive
from touchstone.store.sql import encode_outputs as encode_outputs
from touchstone.store.sql import now as now
from touchstone.store.urls import is_postgres_url, normalise_url, redact_url

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


def _connect(path: Path) -> sqlite3.Connection:
    """Open (creating the folder and the file when missing) and bring the schema forward."""
    if path != MEMORY:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False, timeout=BUSY_TIMEOUT)
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


class RunStore(SqlStore):
    """A SQLite run store (implements :class:`touchstone.store.base.Store`). Safe to share between
    threads of one process.

    ``path``: the database file; ``":memory:"`` keeps everything in memory; ``None`` uses
    :func:`default_store_path`, falling back to memory (with one warning) when the home location
    cannot be used."""

    dialect: ClassVar[Dialect] = SQLITE
    path: Path

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._lock = threading.RLock()
        given = os.environ.get("TOUCHSTONE_STORE", "") if path is None else path
        if is_postgres_url(given):  # not a file name: a file named "postgresql:" would be made
            raise ConfigurationError(
                f"{redact_url(normalise_url(given))} is a PostgreSQL store, not a SQLite file; open it "
                "with touchstone.store.open_store"
            )
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
        if path != MEMORY and path.is_dir():
            raise ConfigurationError(
                f"the run store {path} is a folder; expected a SQLite file (e.g. {path / 'runs.db'})"
            )
        try:
            return _connect(path)
        except StoreVersionError:
            raise
        except sqlite3.Error as exc:
            if _is_busy(exc) or _is_full(exc):  # the store is fine, the moment or the disk is not
                raise store_error(path, exc) from None
            raise ConfigurationError(f"cannot use the run store {path}: {_sqlite_reason(exc)}") from None
        except OSError as exc:
            raise ConfigurationError(f"cannot use the run store {path}: {_reason(exc)}") from None

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
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):  # a failed rollback must not hide the cause
                    self._conn.rollback()
                if isinstance(exc, sqlite3.Error):
                    raise store_error(self.path, exc) from None
                raise

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return [tuple(r) for r in self._conn.execute(sql, tuple(params)).fetchall()]
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from None

    def _write_scores(
        self, c: Any, run_id: str, evaluator: str, json_rows: list[tuple[Any, ...]],
        typed_rows: list[tuple[Any, ...]],
    ) -> None:
        _delete_typed(c, run_id, evaluator, [row[1] for row in json_rows])
        c.executemany(SQLITE.upsert("scores", SCORE_COLUMNS, ()), json_rows)
        if typed_rows:
            c.executemany(SQLITE.upsert("score_values", VALUE_COLUMNS, ()), typed_rows)


BUSY_TIMEOUT = 30
"""Seconds a write waits for another process's lock on the store before it fails."""


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_full(exc: sqlite3.Error) -> bool:
    return "disk is full" in str(exc).lower() or getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL"


def _sqlite_reason(exc: sqlite3.Error) -> str:
    text = str(exc).lower()
    if "not a database" in text or "malformed" in text:
        return f"the file is damaged or not a touchstone store ({exc})"
    if "readonly" in text or "read-only" in text:
        return "it is read-only (check the permissions of the file and of its folder)"
    if "unable to open" in text:
        return "the file cannot be opened or created (check that its folder exists and is writable)"
    return str(exc)


def store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """One clear :class:`~touchstone.errors.StoreError` for an SQLite failure on the store ``path``."""
    if _is_busy(exc):
        return StoreError(
            f"the run store {path} is locked by another process (waited {BUSY_TIMEOUT} s); try again "
            "when it is done, or pass another --store"
        )
    if _is_full(exc):
        return StoreError(f"cannot write to the run store {path}: the disk is full")
    return StoreError(f"cannot use the run store {path}: {_sqlite_reason(exc)}")


def _delete_typed(c: sqlite3.Connection, run_id: str, evaluator: str, indices: list[int]) -> None:
    """Remove the typed lines of the (row, evaluator) results about to be written, so that a result
    written again keeps no metric of the earlier one."""
    if not indices:
        return
    span = consecutive(indices)
    if span is not None:  # consecutive rows: one range
        lo, hi = span
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

