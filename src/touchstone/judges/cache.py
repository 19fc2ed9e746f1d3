"""The judge response cache: a SQLite file (WAL) shared by runs and processes.

Keys are SHA-256 hashes of the provider and endpoint, a salted digest of the credential (so a reply
got with one key is not served to another), the model, the messages and every generation parameter,
so a different prompt, model or setting is a different entry; API keys themselves never enter a key
or a value. An entry is written as soon as its reply arrives, before the score that uses it is
stored, so a run that crashes does not pay again for calls that completed.

Default location: ``$TOUCHSTONE_CACHE`` if set, else ``~/.touchstone/cache.db``. When that home
location cannot be used (no writable home directory, ``~/.touchstone`` is a file...), the cache warns
once and lives in memory for the process (calls repeated within it are still answered from it, no
later run finds them); a path given explicitly (``$TOUCHSTONE_CACHE`` or a configured
``cache_path``) that cannot be used raises :class:`~touchstone.errors.ConfigurationError`.
"""

from __future__ import annotations

import array
import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import warnings
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from touchstone.errors import ConfigurationError
from touchstone.errors import describe_os_error as _reason
from touchstone.judges.config import default_cache_path
from touchstone.judges.wire import messages_json

SCHEMA = """
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


def cache_key(payload: Any) -> str:
    """Stable hash of a JSON-able payload (keys sorted, no whitespace)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chat_cache_key(payload: dict[str, Any]) -> str:
    """:func:`cache_key` of a chat call's payload, its ``messages`` hashed as their JSON text from
    :func:`touchstone.judges.wire.messages_json` (a long rubric is encoded once per run, not once per
    call; the key still covers every character of every message)."""
    rest = {k: v for k, v in payload.items() if k != "messages"}
    head = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    digest = hashlib.sha256(head.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(messages_json(payload.get("messages") or []).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


MEMORY = Path(":memory:")
"""The ``path`` of a cache kept in memory only."""

_WARNED: set[str] = set()
"""Default locations already warned about in this process (the warning is given once per place)."""


class CacheLocationWarning(UserWarning):
    """The default cache location cannot be used; replies are cached in memory only."""


class CacheFailureWarning(UserWarning):
    """The cache failed while in use (damaged, full disk): the run goes on without it."""


_BROKEN_WARNED: set[str] = set()


def _is_damaged(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text or "disk is full" in text


def _connect(path: Path) -> sqlite3.Connection:
    if path != MEMORY:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
    try:
        if path != MEMORY:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


def _home_default() -> Path | None:
    """The default location when it comes from the home directory (None when
    ``$TOUCHSTONE_CACHE`` names it: then it is explicit)."""
    if os.environ.get("TOUCHSTONE_CACHE"):
        return None
    return default_cache_path()


class JudgeCache:
    """Get and put judge replies and embedding vectors. Safe to share between threads.

    ``path``: the SQLite file; ``":memory:"`` for a cache of this process only; ``None`` (or the
    value of :func:`~touchstone.judges.config.default_cache_path` when it points into the home
    directory) for the default location, which falls back to memory with one warning when it cannot
    be used. Any other path that cannot be used raises
    :class:`~touchstone.errors.ConfigurationError` naming it."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._lock = threading.Lock()
        self.broken = False
        """The cache failed once and is no longer read or written (see :meth:`_disable`)."""
        home = _home_default()
        if path is None:
            path = default_cache_path()
        self.path = Path(path)
        try:
            self.path = MEMORY if str(path) == ":memory:" else Path(path).expanduser()
            self._conn = _connect(self.path)
        except sqlite3.DatabaseError as exc:
            if not _is_damaged(exc):
                raise ConfigurationError(f"cannot use the judge cache {self.path}: {_reason(exc)}") from None
            self._disable(exc)  # a damaged cache costs judge calls, never rows
            self.path = MEMORY
            self._conn = _connect(MEMORY)
        except (OSError, RuntimeError) as exc:  # RuntimeError: no home directory
            if home is None or Path(path) != home:
                raise ConfigurationError(f"cannot use the judge cache {self.path}: {_reason(exc)}") from exc
            where = str(self.path)
            if where not in _WARNED:
                _WARNED.add(where)
                warnings.warn(
                    f"cannot use the default judge cache {where} ({_reason(exc)}); judge replies are "
                    "cached in memory only for this process (set TOUCHSTONE_CACHE to keep them)",
                    CacheLocationWarning,
                    stacklevel=2,
                )
            self.path = MEMORY
            self._conn = _connect(MEMORY)

    @property
    def persistent(self) -> bool:
        """False when the cache lives in memory only."""
        return self.path != MEMORY

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _disable(self, exc: BaseException) -> None:
        """The cache failed (damaged file, full disk, lost permission): warn once and go on without
        it. It is an optimisation: a row never fails because of it."""
        self.broken = True
        where = str(self.path)
        if where not in _BROKEN_WARNED:
            _BROKEN_WARNED.add(where)
            warnings.warn(
                f"the judge cache {where} cannot be used ({_reason(exc)}); going on without it "
                "(judge calls are made as if nothing were cached)",
                CacheFailureWarning,
                stacklevel=3,
            )

    def get_chat(self, key: str) -> dict[str, Any] | None:
        if self.broken:
            return None
        try:
            with self._lock:
                row = self._conn.execute("SELECT reply FROM chat WHERE key = ?", (key,)).fetchone()
            return json.loads(row[0]) if row else None
        except (sqlite3.Error, ValueError, TypeError) as exc:
            self._disable(exc)
            return None

    def put_chat(self, key: str, model: str, reply: dict[str, Any]) -> None:
        if self.broken:
            return
        text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
        try:
            with self._lock:
                self._conn.execute(
                    "INSERT OR REPLACE INTO chat (key, model, reply, created) VALUES (?, ?, ?, ?)",
                    (key, model, text, _now()),
                )
        except sqlite3.Error as exc:
            self._disable(exc)

    def get_embeddings(self, keys: Sequence[str]) -> dict[str, list[float]]:
        if self.broken:
            return {}
        try:
            return self._get_embeddings(keys)
        except (sqlite3.Error, ValueError) as exc:
            self._disable(exc)
            return {}

    def _get_embeddings(self, keys: Sequence[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for key, blob in self._conn.execute(
                    f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", chunk
                ):
                    vec = array.array("d")
                    vec.frombytes(blob)
                    out[key] = vec.tolist()
        return out

    def put_embeddings(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        if self.broken:
            return
        try:
            self._put_embeddings(model, items)
        except sqlite3.Error as exc:
            self._disable(exc)

    def _put_embeddings(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        stamp = _now()
        rows = [(key, model, array.array("d", vec).tobytes(), stamp) for key, vec in items]
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (key, model, vector, created) VALUES (?, ?, ?, ?)",
                    rows,
                )
                self._conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                raise

    def count(self) -> int:
        """Entries held (chat replies and vectors)."""
        with self._lock:
            a = self._conn.execute("SELECT COUNT(*) FROM chat").fetchone()[0]
            b = self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        return int(a) + int(b)
