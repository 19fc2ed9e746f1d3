"""The store's schema, as one ordered list of migration steps for both backends (SQLite and
PostgreSQL).

RULE FOR NEW STEPS: append a step to :data:`MIGRATIONS` (never edit a released one) and write each
statement so that it runs on both backends. A plain string is SQLite's SQL, and
:func:`statements_for` carries it to PostgreSQL by these rules only: ``REAL`` becomes ``DOUBLE
PRECISION``, ``BLOB`` ``BYTEA``, ``INTEGER PRIMARY KEY [AUTOINCREMENT]`` an identity column, ``)
WITHOUT ROWID`` is dropped, and triggers (``CREATE``/``DROP TRIGGER``) are SQLite's only (PostgreSQL
needs none of ours). Keep to types and clauses both know (``TEXT``, ``INTEGER``, ``REAL``, ``PRIMARY
KEY``, ``REFERENCES``, ``CREATE TABLE/INDEX IF NOT EXISTS``, ``ALTER TABLE ... ADD COLUMN``). Where a
statement cannot be written once, give a :class:`PerDialect` with each backend's text (``None``: that
backend has nothing to do). ``tests/store/`` opens every step on both backends.

Schema version: SQLite's ``PRAGMA user_version``; on PostgreSQL one line in the table
``touchstone_schema``. Step ``k`` (counting from 1) takes a database from version ``k - 1`` to
``k``. A store written before versions existed has version 0 and the version-1 tables; since step
1 only creates what is missing, it is a no-op there, and such a database is brought forward like a
new one.

Opening a store applies the missing steps, all in one transaction, taken so that two processes
opening the same store at once do not both migrate it (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a
session advisory lock, then the version read again in a new transaction); a store whose version is
above the newest step raises :class:`~touchstone.store.base.StoreVersionError` and is left as it is.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from touchstone.store.base import StoreVersionError

V1 = (
    """CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    name TEXT,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    metrics TEXT,
    summary TEXT,
    version TEXT
)""",
    """CREATE TABLE IF NOT EXISTS rows (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    source TEXT,
    line INTEGER,
    data TEXT NOT NULL,
    target TEXT,
    target_error TEXT,
    PRIMARY KEY (run_id, idx)
)""",
    """CREATE TABLE IF NOT EXISTS scores (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    evaluator TEXT NOT NULL,
    outputs TEXT NOT NULL,
    failed INTEGER NOT NULL,
    usage TEXT,
    created TEXT NOT NULL,
    PRIMARY KEY (run_id, idx, evaluator)
)""",
)
"""Version 1: the layout of the first releases (runs, input rows, JSON outputs per row and evaluator)."""

V2 = (
    # One line per (row, evaluator, metric). WITHOUT ROWID: the primary key is the table's only
    # b-tree, so each insert is one b-tree write. The key's order (run, evaluator, row, metric)
    # serves, by its prefixes, the questions asked of it: one run; one evaluator of a run (a
    # metric of it reads the evaluator's lines, a few per row, and keeps the matching ones); one
    # (row, evaluator), which replacing a result deletes. The engine writes an evaluator's rows in
    # order, so inserts append. A second index on (run, evaluator, metric) was measured: it made
    # every write dearer and SQLite's planner still chose this key (without ANALYZE), so there is
    # none. No foreign key to ``runs``: it would cost a lookup per line, and the ``scores`` line
    # written in the same transaction already checked it.
    """CREATE TABLE score_values (
    run_id TEXT NOT NULL,
    evaluator TEXT NOT NULL,
    idx INTEGER NOT NULL,
    metric TEXT NOT NULL,
    value REAL,
    label TEXT,
    status TEXT NOT NULL,
    error_kind TEXT,
    passed INTEGER,
    PRIMARY KEY (run_id, evaluator, idx, metric)
) WITHOUT ROWID""",
    # A result written again for the same (row, evaluator) replaces its typed lines as a whole, so no
    # metric of the earlier write lingers; deleting a run deletes its typed lines.
    """CREATE TRIGGER scores_replace_values BEFORE INSERT ON scores BEGIN
    DELETE FROM score_values WHERE run_id = NEW.run_id AND evaluator = NEW.evaluator AND idx = NEW.idx;
END""",
    """CREATE TRIGGER runs_delete_values AFTER DELETE ON runs BEGIN
    DELETE FROM score_values WHERE run_id = OLD.id;
END""",
)
"""Version 2: the queryable score columns (``score_values``). Runs stored at version 1 keep their
JSON outputs and get no typed lines (they are not back-filled from the JSON)."""

V3 = (
    # put_scores now deletes a result's earlier typed lines itself, once per write (one range of
    # rows when the rows are consecutive, as the engine writes them), where the trigger ran a
    # delete for every row written: about an eighth of the cost of writing 500,000 typed lines.
    "DROP TRIGGER IF EXISTS scores_replace_values",
)
"""Version 3: replacing a result's typed lines is done by the writer, not by a trigger."""

V4 = (
    # Annotation tasks (people/annotations.py): a task, its items (what the annotator sees, with the
    # system names kept server-side), and the answers, one per (item, annotator, dimension).
    """CREATE TABLE IF NOT EXISTS annotation_tasks (
    id TEXT PRIMARY KEY,
    name TEXT,
    kind TEXT NOT NULL,
    dimensions TEXT NOT NULL,
    source TEXT,
    created TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS annotation_items (
    task_id TEXT NOT NULL REFERENCES annotation_tasks(id) ON DELETE CASCADE,
    item INTEGER NOT NULL,
    run_id TEXT,
    idx INTEGER,
    row_key TEXT,
    data TEXT NOT NULL,
    PRIMARY KEY (task_id, item)
)""",
    """CREATE TABLE IF NOT EXISTS annotations (
    task_id TEXT NOT NULL,
    item INTEGER NOT NULL,
    annotator TEXT NOT NULL,
    dimension TEXT NOT NULL,
    value REAL,
    choice TEXT,
    created TEXT NOT NULL,
    PRIMARY KEY (task_id, item, annotator, dimension)
)""",
    # Feedback from production (people/feedback.py), linked to an interaction by its id; the time
    # index serves the per-window aggregates, the interaction index the joins with a run's rows.
    """CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    interaction_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    value REAL,
    text TEXT,
    session_id TEXT,
    user_id TEXT,
    created TEXT NOT NULL,
    received TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS feedback_interaction ON feedback (interaction_id)",
    "CREATE INDEX IF NOT EXISTS feedback_created ON feedback (created)",
)
"""Version 4: people in the loop: annotation tasks, items and answers, and production feedback."""


@dataclass(frozen=True)
class PerDialect:
    """One statement written per backend, where the portable text and :func:`statements_for`'s
    rules do not suffice; ``None``: nothing to do on that backend."""

    sqlite: str | None
    postgresql: str | None


Statement: TypeAlias = "str | PerDialect"

MIGRATIONS: tuple[tuple[Statement, ...], ...] = (V1, V2, V3, V4)
"""Every step, oldest first; the newest schema version is ``len(MIGRATIONS)``."""

SCHEMA_VERSION = len(MIGRATIONS)


_PG_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bINTEGER\s+PRIMARY\s+KEY(\s+AUTOINCREMENT)?\b", re.I),
     "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
    (re.compile(r"\bREAL\b", re.I), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b", re.I), "BYTEA"),
    (re.compile(r"\)\s*WITHOUT\s+ROWID\s*$", re.I), ")"),
)
_TRIGGER = re.compile(r"^\s*(CREATE|DROP)\s+TRIGGER\b", re.I)


def statements_for(dialect: str, step: tuple[Statement, ...]) -> list[str]:
    """A step's statements as the backend ``dialect`` (``sqlite`` or ``postgresql``) runs them."""
    out: list[str] = []
    for statement in step:
        if isinstance(statement, PerDialect):
            text = statement.sqlite if dialect == "sqlite" else statement.postgresql
            if text is not None:
                out.append(text)
        elif dialect == "sqlite":
            out.append(statement)
        elif not _TRIGGER.match(statement):
            for pattern, replacement in _PG_RULES:
                statement = pattern.sub(replacement, statement)
            out.append(statement)
    return out


def schema_version(conn: sqlite3.Connection) -> int:
    """The version a database is at (0: new, or written before versions existed)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def check_version(version: int, path: Path | str) -> None:
    """Raise :class:`StoreVersionError` when ``version`` is newer than this code knows."""
    if version > SCHEMA_VERSION:
        raise StoreVersionError(
            f"the run store {path} has schema version {version}, newer than this touchstone knows "
            f"(up to {SCHEMA_VERSION}); upgrade touchstone, or use another store path"
        )


def migrate(conn: sqlite3.Connection, path: Path | str) -> int:
    """Bring the database forward to :data:`SCHEMA_VERSION`; returns the version it was at.

    A database already at the newest version costs one ``PRAGMA`` read and takes no write lock."""
    found = schema_version(conn)
    check_version(found, path)
    if found == SCHEMA_VERSION:
        return found
    previous = conn.isolation_level
    conn.commit()
    conn.isolation_level = None  # statements as written: our own BEGIN/COMMIT, DDL inside them
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = schema_version(conn)  # another process may have migrated while we waited
            check_version(found, path)
            for step in MIGRATIONS[found:]:
                for statement in statements_for("sqlite", step):
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.isolation_level = previous
    return found


PG_VERSION_TABLE = "touchstone_schema"
PG_LOCK_KEY = 0x70756368_73746F6E & 0x7FFFFFFFFFFFFFFF
"""The advisory lock migrations hold on PostgreSQL (one fixed 64-bit key: "touchstone")."""


def pg_schema_version(conn: Any) -> int:
    """The version of a PostgreSQL store (0: new, or no version table yet)."""
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (f"{PG_VERSION_TABLE}",)
    ).fetchone()
    if not row[0]:
        return 0
    got = conn.execute(f"SELECT max(version) FROM {PG_VERSION_TABLE}").fetchone()
    return int(got[0] or 0)


def pg_migrate(conn: Any, where: str) -> int:
    """Bring a PostgreSQL store (a psycopg connection in autocommit mode) forward to
    :data:`SCHEMA_VERSION`; returns the version it was at. One transaction under an advisory lock,
    so a second process opening the store meanwhile waits, then finds it migrated. A connection
    that breaks releases the lock with its session."""
    found = pg_schema_version(conn)
    check_version(found, where)
    if found == SCHEMA_VERSION:
        return found
    # The lock is the session's, taken before the transaction: a transaction begun after it reads
    # the catalog as the previous holder committed it (one begun before could see the tables as
    # missing and create them again).
    conn.execute("SELECT pg_advisory_lock(%s)", (PG_LOCK_KEY,))
    try:
        with conn.transaction():
            found = pg_schema_version(conn)  # another process may have migrated while we waited
            check_version(found, where)
            for step in MIGRATIONS[found:]:
                for statement in statements_for("postgresql", step):
                    conn.execute(statement)
            conn.execute(f"CREATE TABLE IF NOT EXISTS {PG_VERSION_TABLE} (version INTEGER NOT NULL)")
            conn.execute(f"DELETE FROM {PG_VERSION_TABLE}")
            conn.execute(f"INSERT INTO {PG_VERSION_TABLE} (version) VALUES (%s)", (SCHEMA_VERSION,))
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (PG_LOCK_KEY,))
    return found
