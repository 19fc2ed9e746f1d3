"""The run store: a SQLite database (WAL mode) holding every run, its rows and every score.

A run's configuration is written when it starts, each score as it is produced (small transactions),
the status and summary when it ends; a crash loses at most the scores in flight, and a run can be
resumed from what is stored.

Default location: ``$TOUCHSTONE_STORE`` if set, else ``~/.touchstone/runs.db``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    name TEXT,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    metrics TEXT,
    summary TEXT,
    version TEXT
);
CREATE TABLE IF NOT EXISTS rows (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    source TEXT,
    line INTEGER,
    data TEXT NOT NULL,
    target TEXT,
    target_error TEXT,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS scores (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    evaluator TEXT NOT NULL,
    outputs TEXT NOT NULL,
    failed INTEGER NOT NULL,
    usage TEXT,
    created TEXT NOT NULL,
    PRIMARY KEY (run_id, idx, evaluator)
);
"""


def default_store_path() -> Path:
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


@dataclass
class RunInfo:
    id: str
    name: str | None
    started: str
    finished: str | None
    status: str
    config: dict[str, Any]
    metrics: dict[str, Any] | None
    summary: dict[str, Any] | None
    version: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "started": self.started,
            "finished": self.finished,
            "status": self.status,
            "config": self.config,
            "package_version": self.version,
        }


@dataclass
class StoredRow:
    idx: int
    source: str | None
    line: int | None
    data: dict[str, Any]
    target: dict[str, Any] | None
    target_error: str | None


class RunStore:
    """A SQLite run store. Safe to share between threads of one process."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.executescript(SCHEMA)
        self._conn.commit()

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
                "SELECT id, name, started, finished, status, config, metrics, summary, version FROM runs WHERE id = ?",
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
                "SELECT idx, source, line, data, target, target_error FROM rows WHERE run_id = ? ORDER BY idx",
                (run_id,),
            )
            rows = cur.fetchall()
        return [
            StoredRow(r[0], r[1], r[2], json.loads(r[3]), json.loads(r[4]) if r[4] else None, r[5]) for r in rows
        ]

    def put_scores(
        self,
        run_id: str,
        evaluator: str,
        scores: Iterable[tuple[int, dict[str, Any] | str, bool, dict[str, Any] | None]],
    ) -> None:
        """Write ``(row index, outputs, failed, usage)`` tuples of one evaluator in one transaction.
        ``outputs`` may be given already JSON-encoded (a ``str``, as :func:`encode_outputs` makes it)."""
        stamp = now()
        with self._tx() as c:
            c.executemany(
                "INSERT OR REPLACE INTO scores (run_id, idx, evaluator, outputs, failed, usage, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        idx,
                        evaluator,
                        out if isinstance(out, str) else _dumps(out),
                        int(failed),
                        None if usage is None else _dumps(usage),
                        stamp,
                    )
                    for idx, out, failed, usage in scores
                ],
            )

    def get_scores(self, run_id: str) -> dict[tuple[int, str], tuple[dict[str, Any], dict[str, Any] | None]]:
        """``{(row index, evaluator): (outputs, usage)}`` for every stored score of the run."""
        with self._lock:
            cur = self._conn.execute("SELECT idx, evaluator, outputs, usage FROM scores WHERE run_id = ?", (run_id,))
            rows = cur.fetchall()
        return {(r[0], r[1]): (json.loads(r[2]), json.loads(r[3]) if r[3] else None) for r in rows}

    def score_keys(self, run_id: str) -> set[tuple[int, str]]:
        """``{(row index, evaluator)}`` of every stored score of the run (nothing decoded)."""
        with self._lock:
            cur = self._conn.execute("SELECT idx, evaluator FROM scores WHERE run_id = ?", (run_id,))
            return {(int(r[0]), str(r[1])) for r in cur.fetchall()}

    def count_scores(self, run_id: str) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM scores WHERE run_id = ?", (run_id,)).fetchone()[0])
