"""The judge response cache: a SQLite file (WAL) shared by runs and processes.

Keys are SHA-256 hashes of the provider and endpoint, the model, the messages and every generation
parameter, so a different prompt, model or setting is a different entry; API keys never enter a key
or a value. An entry is written as soon as its reply arrives, before the score that uses it is
stored, so a run that crashes does not pay again for calls that completed.

Default location: ``$TOUCHSTONE_CACHE`` if set, else ``~/.touchstone/cache.db``.
"""

from __future__ import annotations

import array
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class JudgeCache:
    """Get and put judge replies and embedding vectors. Safe to share between threads."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def get_chat(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute("SELECT reply FROM chat WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put_chat(self, key: str, model: str, reply: dict[str, Any]) -> None:
        text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO chat (key, model, reply, created) VALUES (?, ?, ?, ?)",
                (key, model, text, _now()),
            )

    def get_embeddings(self, keys: Sequence[str]) -> dict[str, list[float]]:
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
        stamp = _now()
        rows = [(key, model, array.array("d", vec).tobytes(), stamp) for key, vec in items]
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO embeddings (key, model, vector, created) VALUES (?, ?, ?, ?)", rows
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def count(self) -> int:
        """Entries held (chat replies and vectors)."""
        with self._lock:
            a = self._conn.execute("SELECT COUNT(*) FROM chat").fetchone()[0]
            b = self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        return int(a) + int(b)
