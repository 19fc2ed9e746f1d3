"""The store's comparison reads (:class:`~touchstone.store.comparisons.SqlComparisonReads`) on both
backends: row ids, the typed score lines as cells, one row and its outputs, runs found by a name
prefix (the monitor's windows)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from touchstone.scores import Score, score_line
from touchstone.store import open_store
from touchstone.store.base import ScoreRecord, Store, StoredRow
from touchstone.store.comparisons import Cell, ComparisonReads, NamedRun


@pytest.fixture
def store(store_location: str) -> Iterator[Store]:
    opened = open_store(store_location)
    try:
        yield opened
    finally:
        opened.close()


def test_row_ids_cells_row_and_outputs(store: Store) -> None:
    run = store.create_run({}, "a", "test")
    rows = [StoredRow(0, "d.jsonl", 1, {"id": "q0", "query": "é"}, {"response": "r0"}, None),
            StoredRow(1, "d.jsonl", 2, {"query": "no id here", "note": 'say "id"'}, None, "target failed"),
            StoredRow(2, None, None, {"id": 7, "x": float("nan")}, None, None),
            StoredRow(3, None, None, {"id": {"nested": [1]}}, None, None)]
    store.put_rows(run, rows)
    store.put_scores(run, "judge", [
        ScoreRecord(2, {"score": 4.0}, False, None, [Score("score", 4, passed=True)]),
        ScoreRecord(0, {"score": 2.5}, False, None, [Score("score", 2.5, passed=False), Score("aux", None)]),
        # a failed line keeps a value here only to show that the read drops it
        ScoreRecord(1, {"score_error": "x"}, True, None,
                    [score_line("score", 3.0, None, "failed", "judge_call", None)]),
    ])
    store.put_scores(run, "em", [
        ScoreRecord(0, "[1]", False, None, [score_line("exact_match", 1.0, None, "ok", None, 1)])])
    reads = store.comparisons
    assert isinstance(reads, ComparisonReads)
    assert reads.row_ids(run, "id") == {0: "q0", 1: None, 2: 7, 3: {"nested": [1]}}
    assert reads.row_ids(run, "query") == {0: "é", 1: "no id here", 2: None, 3: None}
    cells = reads.cells(run)
    # by evaluator, then metric
    assert list(cells) == [("em", "exact_match"), ("judge", "aux"), ("judge", "score")]
    assert list(cells[("judge", "score")].items()) == [  # rows in index order; a failed value is None
        (0, Cell(2.5, False, False)), (1, Cell(None, True, None)), (2, Cell(4.0, False, True))]
    assert cells[("judge", "aux")] == {0: Cell(None, False, None)}
    assert cells[("em", "exact_match")] == {0: Cell(1.0, False, True)}
    assert reads.row(run, 0) == rows[0] and reads.row(run, 1) == rows[1] and reads.row(run, 9) is None
    assert reads.outputs(run, 0, "judge") == {"score": 2.5}
    assert reads.outputs(run, 0, "em") is None  # stored, but not an object
    assert reads.outputs(run, 5, "judge") is None and reads.outputs(run, 0, "nope") is None
    assert reads.row_ids("nope", "id") == {} and reads.cells("nope") == {}


def test_runs_named_by_a_prefix_oldest_first(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = itertools.count()
    monkeypatch.setattr("touchstone.store.sql.now", lambda: f"2026-11-27T10:00:{next(clock):02d}+00:00")
    names = ["monitor:m:2026-11-27T10:05:00Z", "other", "monitor:mx:1", "monitor:m:2026-11-27T10:00:00Z",
             "monitor:m_:1", "monitor:m%:1", "monitor:m!:1", None]
    ids = [store.create_run({}, name, "test") for name in names]
    store.finish_run(ids[0], "completed", {}, {"summary": {"judge.score": {"n": 3, "mean": 0.5}}})
    reads = store.comparisons
    found = reads.runs_named("monitor:m:")
    assert [r.id for r in found] == [ids[0], ids[3]]  # oldest first
    summary = {"summary": {"judge.score": {"n": 3, "mean": 0.5}}}
    assert found[0] == NamedRun(ids[0], names[0], "completed", summary, "2026-11-27T10:00:00+00:00")
    assert found[1].status == "running" and found[1].summary is None
    # LIKE's wildcards and the escape character in a prefix are taken literally
    assert [r.name for r in reads.runs_named("monitor:m_")] == ["monitor:m_:1"]
    assert [r.name for r in reads.runs_named("monitor:m%")] == ["monitor:m%:1"]
    assert [r.name for r in reads.runs_named("monitor:m!")] == ["monitor:m!:1"]
    assert reads.runs_named("nothing:") == []
