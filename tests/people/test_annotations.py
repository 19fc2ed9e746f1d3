"""Annotation tasks in the store: made from runs, datasets and the queue; blinded, per-annotator
order and sides; answers stored in original terms; progress; export and import."""

from __future__ import annotations

import pytest
from tests.people.conftest import make_run

from touchstone.people import annotations as an
from touchstone.people import queue as q
from touchstone.store.base import Store

ROWS = [{"id": f"q{i}", "query": f"question {i}", "context": f"ctx {i}", "response": f"answer {i}"}
        for i in range(12)]


def test_likert_task_from_a_run_answers_progress_export_import(any_store: Store) -> None:
    run = make_run(any_store, "secret-system-A", ROWS)
    task = an.create_task_from_run(any_store, run, ["fluency", "my own"], name="t")
    assert task.kind == "likert" and task.dimensions == ("fluency", "my own")
    items = an.items_of(any_store, task.id)
    assert [i.idx for i in items] == list(range(12)) and items[3].row_key == "q3"
    view = an.item_view(task, items[3], "ann1")
    assert view == {"item": 3, "query": "question 3", "context": "ctx 3",
                    "responses": [{"slot": "", "text": "answer 3"}]}
    assert "secret-system-A" not in str(view)
    an.save_answers(any_store, task.id, "ann1", [{"item": 3, "dimension": "fluency", "value": 4},
                                                  {"item": 3, "dimension": "my own", "value": 2}])
    an.save_answers(any_store, task.id, "ann1", [{"item": 3, "dimension": "fluency", "value": 5}])  # replaces
    an.save_answers(any_store, task.id, "ann2", [{"item": 3, "dimension": "fluency", "value": 1}])
    assert an.progress(any_store, task, "ann1")["done"] == 1
    assert an.progress(any_store, task, "ann2")["done"] == 0  # one dimension of two
    rows = an.export_rows(any_store, task.id)
    assert [(r["row"], r["idx"], r["annotator"], r["dimension"], r["value"]) for r in rows] == [
        ("q3", 3, "ann1", "fluency", 5), ("q3", 3, "ann1", "my own", 2), ("q3", 3, "ann2", "fluency", 1)]
    other = an.create_task_from_run(any_store, run, ["fluency", "my own"], indices=[3])
    again = [{**r, "item": 0, "value": str(r["value"])} for r in rows]
    assert an.import_rows(any_store, other.id, again) == 3
    assert an.answers_of(any_store, other.id, "ann2") == [(0, "ann2", "fluency", 1.0)]


@pytest.mark.parametrize(("answer", "says"), [
    ({"item": 99, "dimension": "fluency", "value": 3}, "item"),
    ({"item": 0, "dimension": "taste", "value": 3}, "dimension"),
    ({"item": 0, "dimension": "fluency", "value": 6}, "value"),
    ({"item": 0, "dimension": "fluency", "value": 2.5}, "value"),
    ({"item": True, "dimension": "fluency", "value": 3}, "item"),
])
def test_bad_answers_are_refused(sqlite_store: Store, answer: dict[str, object], says: str) -> None:
    task = an.create_task_from_run(sqlite_store, make_run(sqlite_store, "r", ROWS[:2]), ["fluency"])
    with pytest.raises(an.AnnotationError, match=says):
        an.save_answers(sqlite_store, task.id, "ann", [answer])
    with pytest.raises(an.AnnotationError, match="annotator"):
        an.save_answers(sqlite_store, task.id, "<script>", [])
    assert an.answers_of(sqlite_store, task.id) == []


def test_order_is_stable_per_annotator_and_differs_between_annotators() -> None:
    first = an.order_for("task-1", "alice", 40)
    assert first == an.order_for("task-1", "alice", 40) and sorted(first) == list(range(40))
    assert first != an.order_for("task-1", "bob", 40)
    assert first != an.order_for("task-2", "alice", 40)
    sides = [an.sides_for("task-1", "alice", i, 2) for i in range(40)]
    assert [1, 0] in sides and [0, 1] in sides  # both sides used


def test_pairwise_task_hides_systems_and_stores_answers_in_original_terms(sqlite_store: Store) -> None:
    a = make_run(sqlite_store, "system-alpha", ROWS)
    reversed_rows = [{**r, "response": "B says " + r["response"]} for r in ROWS[::-1]]
    b = make_run(sqlite_store, "system-beta", reversed_rows)
    task = an.create_task_from_run(sqlite_store, a, against=b)
    assert task.kind == "pairwise" and task.dimensions == ("overall",)
    items = an.items_of(sqlite_store, task.id)
    assert len(items) == 12
    # paired by id, not by position (the second run's rows are reversed)
    assert [r["text"] for r in items[2].data["responses"]] == ["answer 2", "B says answer 2"]
    for item in items:
        view = an.item_view(task, item, "carol")
        assert "system-" not in str(view)
        sides = an.sides_for(task.id, "carol", item.item, 2)
        assert [r["text"] for r in view["responses"]] == [item.data["responses"][s]["text"] for s in sides]
        # carol picks the left one as shown: stored as the system that was on the left
        an.save_answers(sqlite_store, task.id, "carol", [{"item": item.item, "dimension": "overall",
                                                          "value": "a"}], shown=True)
    rows = an.export_rows(sqlite_store, task.id)
    for row, item in zip(rows, items, strict=True):
        left = an.sides_for(task.id, "carol", item.item, 2)[0]
        assert row["winner"] == ("model_a", "model_b")[left]
        assert (row["model_a"], row["model_b"]) == ("system-alpha", "system-beta")
    an.save_answers(sqlite_store, task.id, "dave", [{"item": 0, "dimension": "overall", "value": "tie"}])
    assert an.export_rows(sqlite_store, task.id)[1]["winner"] == "tie"


def test_task_from_dataset_records_and_from_the_queue(sqlite_store: Store) -> None:
    pair = an.create_task_from_records(sqlite_store, [
        {"query": "q", "response_a": "x", "response_b": "y", "model_a": "m1", "model_b": "m2"}])
    assert pair.kind == "pairwise"
    likert = an.create_task_from_records(sqlite_store, [{"question": "q", "answer": "x", "id": "k"}],
                                         ["fluency"])
    assert an.items_of(sqlite_store, likert.id)[0].row_key == "k"
    with pytest.raises(an.AnnotationError, match="response_b"):
        an.create_task_from_records(sqlite_store, [{"query": "q", "response_a": "x"}])
    with pytest.raises(an.AnnotationError, match="no records"):
        an.create_task_from_records(sqlite_store, [])

    values = [(5.0, {"coherence_threshold": 3})] * 12
    values[7] = (3.0, {"coherence_threshold": 3})
    run = make_run(sqlite_store, "r", ROWS, {"coherence": values})
    queue = q.build_queue(sqlite_store, run, budget=1)
    task = an.create_task_from_run(sqlite_store, run, ["coherence"], indices=[x.idx for x in queue])
    assert [i.idx for i in an.items_of(sqlite_store, task.id)] == [7]
    with pytest.raises(an.AnnotationError, match="no row 99"):
        an.create_task_from_run(sqlite_store, run, indices=[99])
    assert {t.id for t, _, _ in an.list_tasks(sqlite_store)} == {task.id, pair.id, likert.id}


def test_a_conversation_row_shows_its_earlier_turns_as_the_query() -> None:
    content = an.content_of({"conversation": {"messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "and?"}, {"role": "assistant", "content": "bye"}]}})
    assert content["response"] == "bye" and content["query"] == "user: hi\n\nassistant: hello\n\nuser: and?"
