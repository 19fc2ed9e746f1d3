"""The SQLite store's schema, as an ordered list of migration steps.

The schema version is SQLite's ``PRAGMA user_version``: step ``k`` (counting from 1) takes a
database from version ``k - 1`` to ``k``. A store written before versions existed has
``user_version`` 0 and the version-1 tables; since step 1 only creates what is missing, it is a
no-op there, and such a database is brought forward like a new one.

Opening a store applies the missing steps, all in one write transaction (``BEGIN IMMEDIATE``, so
two processes opening the same file at once do not both migrate it); a store whose version is above
the newest step raises :class:`~touchstone.store.base.StoreVersionError` and is left as it is.

Adding a step: append it to :data:`MIGRATIONS` (never edit a released step); the store's code may
then rely on it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

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

MIGRATIONS: tuple[tuple[str, ...], ...] = (V1, V2, V3)
"""Every step, oldest first; the newest schema version is ``len(MIGRATIONS)``."""

SCHEMA_VERSION = len(MIGRATIONS)


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
                for statement in step:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.isolation_level = previous
    return found
