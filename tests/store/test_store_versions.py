"""The store's schema versions: a store written before versions existed is brought forward in place,
a newer one is refused, and the typed score columns sit beside the JSON outputs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import cast

import pytest

from touchstone.errors import ConfigurationError, StoreError
from touchstone.scores import ErrorInfo, Score, Status, score_line
from touchstone.store import RunStore, ScoreRecord, ScoreValue, Store, StoreVersionError, open_store
from touchstone.store.migrations import SCHEMA_VERSION
from touchstone.store.postgres import PostgresStore
from touchstone.store.sqlite import RunInfo, StoredRow

# The layout of the releases before schema versions, written as they wrote it (user_version 0).
V1_SQL = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, name TEXT, started TEXT NOT NULL, finished TEXT, status TEXT NOT NULL,
    config TEXT NOT NULL, metrics TEXT, summary TEXT, version TEXT
);
CREATE TABLE IF NOT EXISTS rows (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL, source TEXT,
    line INTEGER, data TEXT NOT NULL, target TEXT, target_error TEXT, PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS scores (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL,
    evaluator TEXT NOT NULL, outputs TEXT NOT NULL, failed INTEGER NOT NULL, usage TEXT,
    created TEXT NOT NULL, PRIMARY KEY (run_id, idx, evaluator)
);
"""


def _v1_store(path: Path) -> None:
    c = sqlite3.connect(path)
    c.execute("PRAGMA journal_mode=WAL")
    c.executescript(V1_SQL)
    c.execute(
        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("old-run", "before", "2024-01-01T00:00:00+00:00", "2024-01-01T00:01:00+00:00", "completed",
         json.dumps({"n_rows": 2}), json.dumps({"f1.f1_score": 0.75}), json.dumps({"summary": {}}), "0.1.0"),
    )
    c.executemany(
        "INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?)",
        [("old-run", i, "d.jsonl", i + 1, json.dumps({"response": f"r{i}"}), None, None) for i in range(2)],
    )
    c.executemany(
        "INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?, ?)",
        [("old-run", i, "f1", json.dumps({"f1_score": 0.5 + i / 2}), 0, None, "2024-01-01T00:00:30+00:00")
         for i in range(2)],
    )
    c.commit()
    c.close()


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as c:
        return {
            r[0]
            for r in c.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index', 'trigger')")
        }


def test_old_store_is_migrated_in_place_keeping_its_data(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _v1_store(db)
    assert "score_values" not in _tables(db)

    store = RunStore(db)
    assert store.schema_version == SCHEMA_VERSION
    tables = _tables(db)
    assert {"score_values", "runs_delete_values"} <= tables and "scores_replace_values" not in tables
    info = store.get_run("old-run")
    assert info is not None and info.status == "completed" and info.metrics == {"f1.f1_score": 0.75}
    assert [r.data for r in store.get_rows("old-run")] == [{"response": "r0"}, {"response": "r1"}]
    assert store.get_scores("old-run") == {
        (0, "f1"): ({"f1_score": 0.5}, None),
        (1, "f1"): ({"f1_score": 1.0}, None),
    }
    assert store.score_values("old-run") == []  # old runs are not back-filled from their JSON

    # The migrated store takes new runs with typed scores.
    run_id = store.create_run({"n_rows": 1}, "after", "0.2.0")
    store.put_scores(
        run_id, "f1", [ScoreRecord(0, {"f1_score": 0.25}, False, None, [Score("f1_score", 0.25)])]
    )
    assert [v.value for v in store.score_values(run_id)] == [0.25]
    store.close()

    # Opening again changes nothing.
    before = sqlite3.connect(db).execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    again = RunStore(db)
    assert again.schema_version == SCHEMA_VERSION
    assert sqlite3.connect(db).execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall() == before
    assert {r.id for r in again.list_runs()} == {"old-run", run_id}
    assert again.count_scores("old-run") == 2


def test_new_store_is_at_newest_version(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "new.db")
    assert store.schema_version == SCHEMA_VERSION
    assert sqlite3.connect(tmp_path / "new.db").execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_store_from_a_newer_version_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "future.db"
    RunStore(db).close()
    with sqlite3.connect(db) as c:
        c.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(
        StoreVersionError, match=rf"schema version {SCHEMA_VERSION + 1}.*upgrade touchstone"
    ) as err:
        RunStore(db)
    assert isinstance(err.value, ConfigurationError)
    assert str(db) in str(err.value)
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1


def test_typed_scores_are_queryable_beside_the_json(store_location: str) -> None:
    store = open_store(store_location)
    run_id = store.create_run({}, None, "0.2.0")
    ok = Score("groundedness", 4.0, passed=True, threshold=3.0, reason="fine", label="good")
    bad = Score.failed("groundedness", ErrorInfo("judge_call", "HTTP 500"))
    store.put_scores(
        run_id,
        "groundedness",
        [
            ScoreRecord(0, {"groundedness": 4.0, "groundedness_result": "pass"}, False, {"calls": 1}, [ok]),
            # pre-encoded outputs
            ScoreRecord(1, '{"groundedness": null, "groundedness_error": "HTTP 500"}', True, None, [bad]),
        ],
    )
    store.put_scores(run_id, "rouge", [ScoreRecord(
        0, {"rouge_precision": 0.5, "rouge_recall": 1.0}, False, None,
        [Score("rouge_precision", 0.5), Score("rouge_recall", 1)],
    )])
    store.put_scores(run_id, "legacy", [ScoreRecord(0, {"x": 1.0}, False, None)])  # no scores: JSON only

    assert store.get_scores(run_id)[1, "groundedness"] == (
        {"groundedness": None, "groundedness_error": "HTTP 500"},
        None,
    )
    assert store.score_values(run_id, "groundedness") == [
        ScoreValue(run_id, 0, "groundedness", "groundedness", 4.0, "good", Status.OK, None, True),
        ScoreValue(run_id, 1, "groundedness", "groundedness", None, None, Status.FAILED, "judge_call", None),
    ]
    recall = store.score_values(run_id, metric="rouge_recall")
    assert [(v.evaluator, v.value, v.ok) for v in recall] == [("rouge", 1.0, True)]
    assert isinstance(recall[0].value, float)
    assert store.score_values(run_id, "legacy") == []
    assert len(store.score_values(run_id)) == 4

    # The same (row, evaluator) written again replaces its typed lines as a whole.
    rouge_f1 = ScoreRecord(0, {"rouge_f1": 0.7}, False, None, [Score("rouge_f1", 0.7)])
    store.put_scores(run_id, "rouge", [rouge_f1])
    assert [(v.metric, v.value) for v in store.score_values(run_id, "rouge")] == [("rouge_f1", 0.7)]
    # Rows that are not consecutive (a resume re-scoring some rows), as ScoreLine records: only the
    # rows written again lose their earlier lines.
    store.put_scores(run_id, "rouge", [
        ScoreRecord(i, {}, False, None, [Score("rouge_f1", i / 10)]) for i in range(5)
    ])
    store.put_scores(run_id, "rouge", [
        ScoreRecord(i, {}, False, None, [score_line("rouge_p", 0.5, None, "ok", None, 1)]) for i in (3, 1)
    ])
    assert [(v.idx, v.metric, v.value, v.passed) for v in store.score_values(run_id, "rouge")] == [
        (0, "rouge_f1", 0.0, None), (1, "rouge_p", 0.5, True), (2, "rouge_f1", 0.2, None),
        (3, "rouge_p", 0.5, True), (4, "rouge_f1", 0.4, None),
    ]
    store.put_scores(run_id, "rouge", [rouge_f1])

    # Plain SQL over the columns: what the typed lines are for (the same portable SQL on both backends).
    assert store.fetch_all(
        "SELECT evaluator, metric, COUNT(*), SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) "
        "FROM score_values WHERE run_id = ? GROUP BY evaluator, metric ORDER BY evaluator, metric",
        (run_id,),
    ) == [("groundedness", "groundedness", 2, 1), ("rouge", "rouge_f1", 3, 0), ("rouge", "rouge_p", 2, 0)]
    store.close()


def test_a_failed_write_leaves_neither_json_nor_typed_lines(store_location: str) -> None:
    store = open_store(store_location)
    run_id = store.create_run({}, None, "0.2.0")
    unbindable = Score("m", 1.0, label=object())  # type: ignore[arg-type]
    # raised by the second statement, after the JSON was inserted (the driver's error, as a StoreError)
    with pytest.raises((sqlite3.Error, StoreError)):
        store.put_scores(run_id, "m", [ScoreRecord(0, {"m": 1.0}, False, None, [unbindable])])
    assert store.count_scores(run_id) == 0 and store.score_values(run_id) == []
    store.put_scores(run_id, "m", [ScoreRecord(0, {"m": 1.0}, False, None, [Score("m", 1.0)])])  # usable
    assert store.count_scores(run_id) == 1


def test_sqlite_store_implements_the_protocol(tmp_path: Path) -> None:
    store = open_store(tmp_path / "p.db")
    assert isinstance(store, Store) and isinstance(store, RunStore)
    assert open_store(store) is store
    assert store.persistent and store.path == tmp_path / "p.db"
    memory = open_store(":memory:")
    assert not memory.persistent
    run_id = memory.create_run({"a": 1}, "m", "0.2.0")
    memory.put_rows(run_id, [StoredRow(0, None, None, {"q": 1}, None, None)])
    assert isinstance(memory.get_run(run_id), RunInfo)
    with pytest.raises(TypeError):
        open_store(42)  # type: ignore[arg-type]


def test_old_imports_keep_working() -> None:
    from touchstone.store.base import RunInfo as BaseRunInfo
    from touchstone.store.base import StoredRow as BaseStoredRow
    from touchstone.store.sqlite import RunInfo as SqliteRunInfo
    from touchstone.store.sqlite import StoredRow as SqliteStoredRow

    assert BaseRunInfo is SqliteRunInfo and BaseStoredRow is SqliteStoredRow


def test_typed_lines_are_read_and_replaced_through_the_key(tmp_path: Path) -> None:
    """No scan and no sort: each question asked of score_values is a prefix of its primary key."""
    store = RunStore(tmp_path / "s.db")
    with sqlite3.connect(tmp_path / "s.db") as c:
        for sql, args in [
            ("SELECT value FROM score_values WHERE run_id = ? AND evaluator = ? AND metric = ? "
             "ORDER BY evaluator, idx, metric", ("r", "e", "m")),
            ("SELECT value FROM score_values WHERE run_id = ? ORDER BY evaluator, idx, metric", ("r",)),
            ("DELETE FROM score_values WHERE run_id = ? AND evaluator = ? AND idx = ?", ("r", "e", 1)),
        ]:
            plan = " ".join(str(r[3]) for r in c.execute("EXPLAIN QUERY PLAN " + sql, args))
            assert "USING PRIMARY KEY (run_id=?" in plan and "TEMP B-TREE" not in plan, plan
    store.close()


def test_stores_opened_at_once_on_a_new_store_migrate_it_once(store_location: str) -> None:
    """Several connections opening the same new store together: one migrates, the others wait for
    its lock (SQLite's write lock, PostgreSQL's advisory lock) and find the newest version (no 'table
    already exists')."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        stores = list(pool.map(lambda _: open_store(store_location), range(8)))
    assert {cast("RunStore | PostgresStore", s).schema_version for s in stores} == {SCHEMA_VERSION}
    run_id = stores[0].create_run({}, None, "0.2.0")
    assert stores[-1].get_run(run_id) is not None
    for s in stores:
        s.close()
