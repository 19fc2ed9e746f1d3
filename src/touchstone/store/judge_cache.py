"""The judge response cache's SQLite file: two tables, replies and embedding vectors, by key.

This module owns the cache's SQL and nothing of its policy: which key a call has, where the file
lives, what happens when it cannot be used (see :mod:`touchstone.judges.cache`). Every SQLite failure
leaves here as a :class:`JudgeCacheError` that says whether the file is damaged.
"""

from __future__ import annotations

import array
import contextlib
import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

MEMORY = Path(":memory:")
"""The path of a cache kept in memory only."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    reply TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS embeddings (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    created TEXT NOT NULL
);
"""
_GET_CHAT = "SELECT reply FROM chat WHERE key = ?"
_PUT_CHAT = "INSERT OR REPLACE INTO chat (key, model, reply, created) VALUES (?, ?, ?, ?)"
_PUT_VECTOR = "INSERT OR REPLACE INTO embeddings (key, model, vector, created) VALUES (?, ?, ?, ?)"
_KEYS_PER_QUERY = 500  # below SQLite's bound on the number of parameters of one statement


class JudgeCacheError(Exception):
    """The cache file failed: ``damaged`` when it is not (or no longer) a usable database (not a
    database, malformed, disk full); ``cause`` is the underlying error."""

    def __init__(self, cause: BaseException, *, damaged: bool) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.damaged = damaged


def _failure(exc: BaseException) -> JudgeCacheError:
    text = str(exc).lower()
    damaged = "not a database" in text or "malformed" in text or "disk is full" in text
    return JudgeCacheError(exc, damaged=damaged)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class JudgeCacheFile:
    """The cache's tables in one SQLite file (WAL) or in memory (:data:`MEMORY`); safe to share
    between threads. Opening raises :class:`OSError` when the folder cannot be made and
    :class:`JudgeCacheError` when SQLite cannot use the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        if path != MEMORY:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
        except sqlite3.Error as exc:
            raise _failure(exc) from exc
        try:
            if path != MEMORY:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            conn.close()
            raise _failure(exc) from exc
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def close(self) -> None:
        """Close the file; every later operation raises :class:`JudgeCacheError`."""
        with self._lock:
            self._conn.close()

    def get_chat(self, key: str) -> str | None:
        """The stored reply (JSON text) under ``key``, or None."""
        try:
            with self._lock:
                row = self._conn.execute(_GET_CHAT, (key,)).fetchone()
        except sqlite3.Error as exc:
            raise _failure(exc) from exc
        return None if row is None else str(row[0])

    def put_chat(self, key: str, model: str, reply: str) -> None:
        """Store ``reply`` (JSON text) under ``key``, replacing what was there."""
        try:
            with self._lock:
                self._conn.execute(_PUT_CHAT, (key, model, reply, _now()))
        except sqlite3.Error as exc:
            raise _failure(exc) from exc

    def get_vectors(self, keys: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of those ``keys`` that have one."""
        out: dict[str, list[float]] = {}
        try:
            with self._lock:
                for start in range(0, len(keys), _KEYS_PER_QUERY):
                    chunk = list(keys[start : start + _KEYS_PER_QUERY])
                    marks = ",".join("?" * len(chunk))
                    query = f"SELECT key, vector FROM embeddings WHERE key IN ({marks})"
                    for key, blob in self._conn.execute(query, chunk):
                        vec = array.array("d")
                        vec.frombytes(blob)
                        out[key] = vec.tolist()
        except (sqlite3.Error, ValueError) as exc:  # ValueError: a blob that is not float64s
            raise _failure(exc) from exc
        return out

    def put_vectors(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        """Store each ``(key, vector)`` in one transaction."""
        stamp = _now()
        rows = [(key, model, array.array("d", vec).tobytes(), stamp) for key, vec in items]
        try:
            with self._lock:
                self._conn.execute("BEGIN")
                try:
                    self._conn.executemany(_PUT_VECTOR, rows)
                    self._conn.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise
        except sqlite3.Error as exc:
            raise _failure(exc) from exc

    def count(self) -> int:
        """Entries held (chat replies and vectors)."""
        with self._lock:
            a = self._conn.execute("SELECT COUNT(*) FROM chat").fetchone()[0]
            b = self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        return int(a) + int(b)
