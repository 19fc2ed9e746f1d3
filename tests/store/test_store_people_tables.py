"""The people-in-the-loop tables (schema version 4) written through the store's people repository on
both backends: each write is one transaction, answers are upserted, feedback lines get ids of their
own."""

from __future__ import annotations

import pytest

from touchstone.errors import StoreError
from touchstone.store import open_store
from touchstone.store.people import AnswerLine, Item, StoredFeedback, Task


def test_writes_are_one_transaction_each_and_answers_upsert(store_location: str) -> None:
    store = open_store(store_location)
    try:
        people = store.people
        people.add_task(Task("t1", "task", "likert", ("fluency",), None, "2026-01-01T00:00:00+00:00"),
                        [Item(0, None, 0, None, {}), Item(1, None, 1, None, {})])
        people.save_answers([AnswerLine("t1", 0, "ann", "fluency", 3.0, None, "x"),
                             AnswerLine("t1", 1, "ann", "fluency", 4.0, None, "x")])
        people.save_answers([AnswerLine("t1", 0, "ann", "fluency", 5.0, None, "y")])
        assert [(a.item, a.value) for a in people.answers("t1")] == [(0, 5.0), (1, 4.0)]
        event = StoredFeedback("i1", "thumbs_up", None, None, None, None, "c")
        people.add_feedback([event] * 3, "r")
        assert people.feedback(["i1"]) == [event] * 3  # three lines, not one replaced twice
        people.add_feedback([], "r")  # nothing to write: no transaction, no error
        assert len(people.feedback()) == 3
        # a failing line rolls the whole batch back: the task's line goes with its items
        with pytest.raises(StoreError):
            people.add_task(Task("t2", None, "likert", ("fluency",), None, "c"),
                            [Item(0, None, 0, None, {}), Item(0, None, 1, None, {})])
        assert [t.task.id for t in people.tasks()] == ["t1"]
    finally:
        store.close()
