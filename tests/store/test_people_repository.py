"""The store's people repository (:class:`~touchstone.store.people.SqlPeopleRepository`) on both
backends: annotation tasks, items and answers, a run's rows and outputs as the queue reads them,
feedback and its per-window sums."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from touchstone.errors import InputValidationError, StoreError
from touchstone.store import open_store
from touchstone.store.base import ScoreRecord, Store, StoredRow
from touchstone.store.people import (
    ROW_FILTERS,
    Answer,
    AnswerLine,
    Item,
    KindCount,
    PeopleRepository,
    StoredFeedback,
    Task,
    TaskCounts,
    WindowInteraction,
    WindowTotals,
    row_filter_sql,
)


@pytest.fixture
def store(store_location: str) -> Iterator[Store]:
    opened = open_store(store_location)
    try:
        yield opened
    finally:
        opened.close()


T1 = Task("t1", "first", "likert", ("fluency", "coherence"), "run r", "2026-01-01T00:00:00+00:00")
T2 = Task("t2", None, "pairwise", ("overall",), None, "2026-02-01T00:00:00+00:00")


def test_tasks_items_and_answers_round_trip(store: Store) -> None:
    people = store.people
    assert isinstance(people, PeopleRepository)
    items = [Item(0, "run-1", 3, "q3", {"query": "¿qué?", "responses": [{"system": "s", "text": "ünï"}]}),
             Item(1, None, None, None, {"query": "", "context": "c", "responses": []})]
    people.add_task(T1, items)
    people.add_task(T2, [Item(0, None, 0, "row-0", {"responses": [{"text": "a"}, {"text": "b"}]})])
    assert people.task("t1") == T1 and people.task("t2") == T2 and people.task("nope") is None
    assert people.items("t1") == items and people.items("nope") == []
    assert (people.item_count("t1"), people.item_count("t2"), people.item_count("nope")) == (2, 1, 0)

    people.save_answers([AnswerLine("t1", 1, "ann", "fluency", 4.0, None, "x"),
                         AnswerLine("t1", 0, "ann", "fluency", 3.0, None, "x"),
                         AnswerLine("t1", 0, "bob", "coherence", 2.0, None, "x")])
    people.save_answers([AnswerLine("t1", 0, "ann", "fluency", 5.0, None, "y")])  # replaces ann's
    people.save_answers([AnswerLine("t2", 0, "ann", "overall", None, "b", "x")])
    people.save_answers([])  # nothing to write: no transaction, no error
    assert people.answers("t1") == [Answer(0, "ann", "fluency", 5.0), Answer(0, "bob", "coherence", 2.0),
                                    Answer(1, "ann", "fluency", 4.0)]
    assert people.answers("t1", "bob") == [Answer(0, "bob", "coherence", 2.0)]
    assert people.answers("t2") == [Answer(0, "ann", "overall", "b")]  # a choice in stored terms
    assert people.answers("t1", "nobody") == []
    # newest first, with the number of items and of annotators who answered
    assert people.tasks() == [TaskCounts(T2, 1, 1), TaskCounts(T1, 2, 2)]


def test_a_task_is_written_whole_or_not_at_all(store: Store) -> None:
    people = store.people
    people.add_task(T1, [Item(0, None, 0, None, {})])
    broken = Task("t3", None, "likert", ("fluency",), None, "2026-03-01T00:00:00+00:00")
    with pytest.raises(StoreError):  # item 0 twice: the task's line is rolled back with the items
        people.add_task(broken, [Item(0, None, 0, None, {}), Item(0, None, 1, None, {})])
    assert people.task("t3") is None and people.items("t3") == []
    with pytest.raises(StoreError):  # an id already taken
        people.add_task(Task("t1", "again", "likert", ("x",), None, "c"), [Item(0, None, 0, None, {})])
    assert people.task("t1") == T1 and [t.task.id for t in people.tasks()] == ["t1"]


def test_a_runs_rows_and_outputs_as_the_queue_reads_them(store: Store) -> None:
    run = store.create_run({}, "r", "test")
    store.put_rows(run, [StoredRow(i, "d.jsonl", i + 1, {"id": f"q{i}", "x": [1.5, None]}, None, None)
                         for i in (2, 0, 1)])
    store.put_scores(run, "judge", [
        ScoreRecord(0, {"judge": 4.0, "judge_threshold": 3}, False, None),
        ScoreRecord(1, "[1, 2]", False, None),  # not an object: left out
        ScoreRecord(2, "not json", True, None),  # not readable: left out
    ])
    store.put_scores(run, "other", [ScoreRecord(0, {"other": "é"}, False, None)])
    people = store.people
    inputs = people.row_inputs(run)
    assert list(inputs) == [0, 1, 2]  # by index
    assert inputs[1].replace(" ", "") == '{"id":"q1","x":[1.5,null]}'
    assert sorted(people.row_indices(run)) == [0, 1, 2]
    assert people.outputs_by_row(run) == {(0, "judge"): {"judge": 4.0, "judge_threshold": 3},
                                          (0, "other"): {"other": "é"}}
    assert people.row_inputs("nope") == {} and people.row_indices("nope") == []
    assert people.outputs_by_row("nope") == {}


EVENTS = [
    StoredFeedback("a", "rating", 4.0, None, "s1", "u1", "2026-11-23T16:30:00+00:00"),
    StoredFeedback("a", "thumbs_down", None, None, None, None, "2026-11-23T09:00:00+00:00"),
    StoredFeedback("b", "rating", 2.0, None, None, None, "2026-11-23T16:30:00+00:00"),
    StoredFeedback("b", "task_completion", 1.0, None, None, None, "2026-11-24T08:00:00+00:00"),
    StoredFeedback("c", "task_completion", 0.0, None, None, None, "2026-11-24T09:00:00+00:00"),
    StoredFeedback("c", "error_report", None, "it broke: «ü»", None, None, "2026-11-25T00:00:00+00:00"),
]


def test_feedback_is_written_and_read_back_oldest_first(store: Store) -> None:
    people = store.people
    people.add_feedback(EVENTS, "2026-12-01T00:00:00+00:00")
    people.add_feedback([], "2026-12-01T00:00:00+00:00")  # nothing to write
    by_time = sorted(range(len(EVENTS)), key=lambda i: (EVENTS[i].created, i))  # ties: arrival order
    assert people.feedback() == [EVENTS[i] for i in by_time]
    assert people.feedback(["c", "a"]) == [EVENTS[1], EVENTS[0], EVENTS[4], EVENTS[5]]
    assert people.feedback([]) == [] and people.feedback(["nobody"]) == []


def test_feedback_sums_per_time_window(store: Store) -> None:
    people = store.people
    people.add_feedback(EVENTS, "2026-12-01T00:00:00+00:00")
    by_day = people.feedback_by_kind(10, None, None)
    assert [k.start for k in by_day] == sorted(k.start for k in by_day)  # windows in order
    assert sorted(by_day) == [
        KindCount("2026-11-23", "rating", 2, 3.0),
        KindCount("2026-11-23", "thumbs_down", 1, None),
        KindCount("2026-11-24", "task_completion", 2, 0.5),
        KindCount("2026-11-25", "error_report", 1, None),
    ]
    assert sorted(people.feedback_window_totals(10, None, None)) == [
        WindowTotals("2026-11-23", 0, 2), WindowTotals("2026-11-24", 1, 2), WindowTotals("2026-11-25", 0, 1)]
    # by hour, from 16:00 on the 23rd to the 24th inclusive (``until`` a prefix)
    assert people.feedback_by_kind(13, "2026-11-23T16", "2026-11-24") == [
        KindCount("2026-11-23T16", "rating", 2, 3.0),
        KindCount("2026-11-24T08", "task_completion", 1, 1.0),
        KindCount("2026-11-24T09", "task_completion", 1, 0.0),
    ]
    assert sorted(people.feedback_interactions(7, None, "2026-11-24")) == [
        WindowInteraction("2026-11", i) for i in "abc"]
    assert people.feedback_by_kind(10, "2027", None) == []
    assert people.feedback_window_totals(10, "2027", None) == []


def test_the_row_filter_is_checked_before_any_sql_is_written() -> None:
    assert row_filter_sql("sqlite") == ("", [])
    clause, params = row_filter_sql("postgresql", "thumbs_down", 2)
    assert clause.startswith("EXISTS (") and params == ["thumbs_down", 2.0]
    assert set(ROW_FILTERS) >= {"any", "none", "failure", "rating", "abandonment"}
    with pytest.raises(InputValidationError, match="feedback must be one of"):
        row_filter_sql("sqlite", "thumbs_sideways")
    with pytest.raises(InputValidationError, match="rating_at_most must be a finite number"):
        row_filter_sql("sqlite", "", float("nan"))
