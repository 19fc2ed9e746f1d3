"""The people-in-the-loop tables (schema version 4) and :meth:`Store.execute_many` on both backends."""

from __future__ import annotations

import pytest

from touchstone.errors import StoreError
from touchstone.store import open_store

TASK_INSERT = ("INSERT INTO annotation_tasks (id, name, kind, dimensions, source, created) "
               "VALUES (?, ?, ?, ?, ?, ?)")


def test_execute_many_writes_in_one_transaction_and_upserts(store_location: str) -> None:
    store = open_store(store_location)
    try:
        store.execute_many(
            TASK_INSERT, [("t1", "task", "likert", '["fluency"]', None, "2026-01-01T00:00:00+00:00")],
        )
        upsert = ("INSERT INTO annotations (task_id, item, annotator, dimension, value, choice, created) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (task_id, item, annotator, dimension) "
                  "DO UPDATE SET value = excluded.value, choice = excluded.choice, "
                  "created = excluded.created")
        store.execute_many(upsert, [("t1", 0, "ann", "fluency", 3.0, None, "x"),
                                    ("t1", 1, "ann", "fluency", 4.0, None, "x")])
        store.execute_many(upsert, [("t1", 0, "ann", "fluency", 5.0, None, "y")])
        assert store.fetch_all("SELECT item, value FROM annotations ORDER BY item") == [(0, 5.0), (1, 4.0)]
        store.execute_many("INSERT INTO feedback (interaction_id, kind, value, text, session_id, user_id, "
                           "created, received) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           [("i1", "thumbs_up", None, None, None, None, "c", "r")] * 3)
        ids = [r[0] for r in store.fetch_all("SELECT id FROM feedback ORDER BY id")]
        assert len(set(ids)) == 3
        store.execute_many("DELETE FROM feedback", [])  # nothing to run: no transaction, no error
        assert len(store.fetch_all("SELECT id FROM feedback")) == 3
        # a failing line rolls the whole batch back
        with pytest.raises(StoreError):
            store.execute_many(TASK_INSERT, [("t2", None, "likert", "[]", None, "c"),
                                             ("t1", None, "likert", "[]", None, "c")])
        assert store.fetch_all("SELECT id FROM annotation_tasks ORDER BY id") == [("t1",)]
    finally:
        store.close()
