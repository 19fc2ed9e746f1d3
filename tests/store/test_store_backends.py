"""The Store protocol on both backends (SQLite file, real PostgreSQL): the dashboard's portable
queries, bulk writes, replacement semantics, and two processes writing one store."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from touchstone.errors import StoreError
from touchstone.scores import ErrorInfo, Score, score_line
from touchstone.store import ScoreRecord, Store, StoredRow, open_store
from touchstone.store.postgres import COPY_FROM, PostgresStore
from touchstone.store.sql import format_placeholders
from touchstone.store.sqlite import RunStore


def test_open_store_picks_the_backend(store_location: str, backend: str) -> None:
    store = open_store(store_location)
    assert isinstance(store, Store)
    assert isinstance(store, PostgresStore if backend == "postgresql" else RunStore)
    assert store.persistent
    assert open_store(store) is store
    store.close()


def test_fetch_all_takes_portable_sql_with_question_marks(store_location: str) -> None:
    store = open_store(store_location)
    run_id = store.create_run({"data": "d.jsonl"}, "100% sure?", "0.2.0")
    store.put_scores(run_id, "f1", [
        ScoreRecord(i, {"f1_score": i / 4}, False, None, [Score("f1_score", i / 4, passed=i >= 2)])
        for i in range(4)
    ])
    # a literal '%' and a literal '?' stay as they are; only bare ? are parameters
    rows = store.fetch_all(
        "SELECT name, '?' AS q FROM runs WHERE name LIKE '100%' AND id = ?", [run_id]
    )
    assert rows == [("100% sure?", "?")]
    got = store.fetch_all(
        "SELECT idx, value, passed FROM score_values WHERE run_id = ? AND metric = ? AND value >= ? "
        "ORDER BY idx LIMIT ? OFFSET ?",
        (run_id, "f1_score", 0.25, 2, 1),
    )
    assert got == [(2, 0.5, 1), (3, 0.75, 1)]
    assert all(isinstance(r, tuple) for r in got)
    assert store.fetch_all("SELECT COUNT(*) FROM runs") == [(1,)]
    store.close()


def test_placeholders_translate_outside_quotes_only() -> None:
    assert format_placeholders("SELECT a FROM t WHERE b = ? AND c = '?' AND d LIKE 'x%'") == (
        "SELECT a FROM t WHERE b = %s AND c = '?' AND d LIKE 'x%%'"
    )
    assert format_placeholders('SELECT "we?ird" FROM t WHERE x IN (?, ?)') == (
        'SELECT "we?ird" FROM t WHERE x IN (%s, %s)'
    )


def test_many_results_at_once_replace_earlier_ones(store_location: str) -> None:
    """A batch large enough for PostgreSQL's COPY path, written twice with changes, and holding the
    same row twice (the last write of a row wins, as SQLite's INSERT OR REPLACE has it)."""
    store = open_store(store_location)
    run_id = store.create_run({}, None, "0.2.0")
    n = COPY_FROM * 3
    store.put_rows(run_id, [StoredRow(i, "d.jsonl", i + 1, {"q": f"é{i}"}, None, None) for i in range(n)])
    store.put_scores(run_id, "m", [
        ScoreRecord(i, {"m": float(i)}, False, {"calls": 1}, [Score("m", float(i)), Score("m_extra", 1.0)])
        for i in range(n)
    ])
    assert store.count_scores(run_id) == n and len(store.score_values(run_id)) == 2 * n
    failed = Score.failed("m", ErrorInfo("judge_call", "x"))
    again = [ScoreRecord(i, {"m": -1.0}, True, None, [failed]) for i in range(0, n, 2)]
    again.append(ScoreRecord(0, {"m": 7.0}, False, None, [Score("m", 7.0)]))  # row 0 twice: the last one wins
    store.put_scores(run_id, "m", again)
    scores = store.get_scores(run_id)
    assert len(scores) == n
    assert scores[0, "m"] == ({"m": 7.0}, None) and scores[2, "m"] == ({"m": -1.0}, None)
    assert scores[1, "m"] == ({"m": 1.0}, {"calls": 1})
    values = {(v.idx, v.metric): v for v in store.score_values(run_id)}
    assert values[0, "m"].value == 7.0 and (0, "m_extra") not in values
    assert values[2, "m"].value is None and values[2, "m"].error_kind == "judge_call"
    assert (2, "m_extra") not in values
    assert values[1, "m_extra"].value == 1.0
    assert len(values) == n + n // 2  # odd rows keep two lines, even rows one
    assert [r.data["q"] for r in store.get_rows(run_id)][:2] == ["é0", "é1"]
    store.close()


def test_score_lines_with_nan_are_stored_as_missing_values(store_location: str) -> None:
    store = open_store(store_location)
    run_id = store.create_run({}, None, "0.2.0")
    line = score_line("m", float("nan"), None, "ok", None, None)
    store.put_scores(run_id, "m", [ScoreRecord(0, {"m": None}, False, None, [line])])
    (value,) = store.score_values(run_id)
    assert value.value is None
    store.close()


WRITER = textwrap.dedent(
    """
    import sys
    from touchstone.scores import Score
    from touchstone.store import ScoreRecord, StoredRow, open_store

    location, shared_run, who, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = open_store(location)
    own = store.create_run({"writer": who}, who, "0.2.0")
    store.put_rows(own, [StoredRow(i, None, None, {"i": i}, None, None) for i in range(n)])
    for i in range(n):  # one transaction per result, interleaved with the other writer's
        store.put_scores(shared_run, who, [ScoreRecord(i, {"v": i}, False, None, [Score("v", float(i))])])
        store.put_scores(own, "m", [ScoreRecord(i, {"v": i}, False, None, [Score("v", float(i))])])
    # then big batches into the same evaluator as the other process, disjoint rows
    base = 10_000 if who == "a" else 20_000
    for start in range(0, 300, 100):
        store.put_scores(shared_run, "both", [
            ScoreRecord(base + i, {"v": i}, False, None, [Score("v", float(i))])
            for i in range(start, start + 100)
        ])
    store.set_status(own, "completed")
    store.close()
    """
)


def test_two_processes_writing_one_store_lose_nothing(store_location: str) -> None:
    store = open_store(store_location)
    shared = store.create_run({}, "shared", "0.2.0")
    n = 150
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, store_location, shared, who, str(n)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for who in ("a", "b")
    ]
    for proc in procs:
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr.decode()[-2000:]
    assert store.count_scores(shared) == 2 * n + 600
    assert {k for k in store.score_keys(shared) if k[1] == "a"} == {(i, "a") for i in range(n)}
    assert len(store.score_values(shared, "both")) == 600
    runs = {r.name: r for r in store.list_runs()}
    assert set(runs) == {"shared", "a", "b"}
    for who in ("a", "b"):
        assert runs[who].status == "completed"
        assert store.count_scores(runs[who].id) == n and len(store.get_rows(runs[who].id)) == n
        assert [v.value for v in store.score_values(runs[who].id)] == [float(i) for i in range(n)]
    store.close()


def test_unknown_run_and_empty_writes(store_location: str) -> None:
    store = open_store(store_location)
    assert store.get_run("nope") is None and store.list_runs() == []
    run_id = store.create_run({}, None, "0.2.0")
    store.put_scores(run_id, "m", [])
    store.put_rows(run_id, [])
    assert store.count_scores(run_id) == 0 and store.get_scores(run_id) == {}
    assert store.score_keys(run_id) == set()
    with pytest.raises((sqlite3.IntegrityError, StoreError), match=r"(?i)foreign key"):
        store.put_scores("no-such-run", "m", [ScoreRecord(0, {}, False, None)])
    with pytest.raises((sqlite3.Error, StoreError)) as err:
        store.fetch_all("SELECT colour FROM nowhere WHERE x = ?", (1,))
    assert "nowhere" in str(err.value)
    assert store.count_scores("no-such-run") == 0
    store.close()


def test_a_run_id_already_taken_is_drawn_again(store_location: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids are the second and 24 random bits: two runs drawing the same id in one second get two
    ids, not a failed write (hundreds of runs a second made it happen)."""
    import uuid

    from touchstone.store import open_store

    store = open_store(store_location)
    fixed = uuid.UUID("0123456789abcdef0123456789abcdef")
    draws = iter([fixed, fixed, fixed, uuid.UUID("fedcba9876543210fedcba9876543210")])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(draws))
    first = store.create_run({}, "a", "0")
    second = store.create_run({}, "b", "0")
    assert first.endswith("-012345") and first != second
    if second[:15] == first[:15]:  # the same second: the taken draw was drawn again
        assert second.endswith("-fedcba")
    assert {r.name for r in store.list_runs()} >= {"a", "b"}
