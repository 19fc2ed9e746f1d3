"""Production feedback: validation naming the field, storage on both backends, per-window aggregates
with the judge metric beside them, and feedback as a column of a run's rows."""

from __future__ import annotations

import pickle
import random
from typing import Any, cast

import pytest
from tests.people.conftest import make_run

from touchstone.errors import InputValidationError
from touchstone.people import feedback as fb
from touchstone.store.base import Store
from touchstone.store.people import ROW_FILTERS, interaction_id_sql, row_filter_sql
from touchstone.store.sql import SqlStore


@pytest.mark.parametrize(("body", "field"), [
    ([], "events"),
    ("thumbs", "body"),
    ({"kind": "thumbs_up"}, "interaction_id"),
    ({"interaction_id": "", "kind": "thumbs_up"}, "interaction_id"),
    ({"interaction_id": 7, "kind": "thumbs_up"}, "interaction_id"),
    ({"interaction_id": "i", "kind": "like"}, "kind"),
    ({"interaction_id": "i", "kind": "rating"}, "value"),
    ({"interaction_id": "i", "kind": "rating", "value": 6}, "value"),
    ({"interaction_id": "i", "kind": "rating", "value": True}, "value"),
    ({"interaction_id": "i", "kind": "rating", "value": "4"}, "value"),
    ({"interaction_id": "i", "kind": "session_length", "value": -1}, "value"),
    ({"interaction_id": "i", "kind": "task_completion", "value": 0.5}, "value"),
    ({"interaction_id": "i", "kind": "thumbs_up", "value": 1}, "value"),
    ({"interaction_id": "i", "kind": "error_report"}, "text"),
    ({"interaction_id": "i", "kind": "error_report", "text": 3}, "text"),
    ({"interaction_id": "i", "kind": "thumbs_up", "created": "yesterday"}, "created"),
    ({"interaction_id": "i", "kind": "thumbs_up", "colour": "red"}, "colour"),
    ({"interaction_id": "i" * 300, "kind": "thumbs_up"}, "interaction_id"),
    ({"events": [{"interaction_id": "i", "kind": "thumbs_up"}, {"interaction_id": "i", "kind": "x"}]},
     "events[1].kind"),
    ({"events": {"interaction_id": "i"}}, "events"),
    ({"events": [], "extra": 1}, "extra"),
])
def test_malformed_events_name_the_field(body: Any, field: str) -> None:
    with pytest.raises(fb.FeedbackError) as caught:
        fb.parse_events(body)
    assert caught.value.field == field
    assert field in str(caught.value)
    assert pickle.loads(pickle.dumps(caught.value)).field == field


def test_valid_events_are_normalised() -> None:
    events = fb.parse_events([
        {"interaction_id": "a", "kind": "rating", "value": 4, "created": "2026-11-23T10:15:00Z"},
        {"interaction_id": "a", "kind": "task_completion", "created": "2026-11-23T12:15:00+02:00"},
        {"interaction_id": "b", "kind": "error_report", "text": "<b>wrong</b>", "user_id": "u1"},
    ])
    assert events[0].value == 4.0 and events[0].created == "2026-11-23T10:15:00+00:00"
    assert events[1].value == 1.0 and events[1].created == "2026-11-23T10:15:00+00:00"
    assert events[2].failure and not events[0].failure
    assert fb.FeedbackEvent("c", "rating", 2).failure
    with pytest.raises(fb.FeedbackError):
        fb.FeedbackEvent("c", "rating", 9)


def test_feedback_is_stored_aggregated_and_joined_to_rows(any_store: Store) -> None:
    rows = [{"id": f"q{i}", "query": f"question {i}", "response": f"answer {i}"} for i in range(4)]
    run = make_run(any_store, "prod", rows, {"coherence": [(5.0, {}), (4.0, {}), (2.0, {}), (1.0, {})]})
    events: list[dict[str, Any]] = [
        {"interaction_id": "q0", "kind": "thumbs_up", "created": "2026-11-23T10:01:00Z"},
        {"interaction_id": "q1", "kind": "thumbs_up", "created": "2026-11-23T10:02:00Z"},
        {"interaction_id": "q2", "kind": "thumbs_down", "created": "2026-11-23T10:30:00Z"},
        {"interaction_id": "q2", "kind": "rating", "value": 2, "created": "2026-11-23T10:31:00Z"},
        {"interaction_id": "q2", "kind": "rating", "value": 3, "created": "2026-11-23T10:32:00Z"},
        {"interaction_id": "q3", "kind": "abandonment", "created": "2026-11-23T11:05:00Z"},
        {"interaction_id": "q3", "kind": "session_length", "value": 30, "created": "2026-11-23T11:05:00Z"},
        {"interaction_id": "q1", "kind": "task_completion", "created": "2026-11-23T11:06:00Z"},
        {"interaction_id": "elsewhere", "kind": "return_visit", "created": "2026-11-24T08:00:00Z"},
    ]
    assert fb.record_feedback(any_store, events) == len(events)
    with pytest.raises(fb.FeedbackError):
        fb.record_feedback(any_store, [{"interaction_id": "q0", "kind": "thumbs_up"}, {"kind": "rating"}])
    assert len(fb.feedback_for(any_store)) == len(events)  # the bad batch wrote nothing

    hours = fb.aggregate(any_store, "hour", run_id=run, metric="coherence")
    assert [w.start for w in hours] == ["2026-11-23T10", "2026-11-23T11", "2026-11-24T08"]
    first, second, third = hours
    assert first.counts == {"thumbs_up": 2, "thumbs_down": 1, "rating": 2, "task_completion_done": 0}
    assert first.thumbs_up_rate == pytest.approx(2 / 3) and first.mean_rating == pytest.approx(2.5)
    assert first.interactions == 3 and first.judge_mean == pytest.approx((5 + 4 + 2) / 3)
    assert second.completion_rate == pytest.approx(0.5) and second.mean_session_length == 30
    assert second.judge_mean == pytest.approx((1 + 4) / 2) and third.judge_mean is None
    days = fb.aggregate(any_store, "day", since="2026-11-23", until="2026-11-23")
    assert [w.start for w in days] == ["2026-11-23"] and days[0].interactions == 4
    with pytest.raises(InputValidationError):
        fb.aggregate(any_store, "fortnight")

    columns = fb.run_feedback(any_store, run)
    assert set(columns) == {0, 1, 2, 3}
    assert columns[2] == {"thumbs_down": 1, "rating": 2.5, "user_failure": True}
    assert columns[1]["task_completion"] == 1.0 and not columns[1]["user_failure"]
    assert fb.filter_rows(any_store, run, "user_failure", minimum=1) == [2, 3]
    assert fb.filter_rows(any_store, run, "thumbs_up") == [0, 1]
    with pytest.raises(InputValidationError):
        fb.filter_rows(any_store, run, "mood")


def test_rows_without_an_id_column_are_linked_by_run_and_index(sqlite_store: Store) -> None:
    run = make_run(sqlite_store, "r", [{"query": "q", "response": "a"}, {"query": "q2", "response": "b"}])
    assert fb.interaction_ids(sqlite_store, run) == {0: f"{run}:0", 1: f"{run}:1"}
    fb.record_feedback(sqlite_store, [fb.FeedbackEvent(f"{run}:1", "escalation")])
    assert fb.filter_rows(sqlite_store, run, "escalation") == [1]


def _row_data(rnd: random.Random, i: int) -> Any:
    """Rows whose interaction id comes from every branch of the rule: an ``id``, an
    ``interaction_id`` (a string or a whole number), ids that do not count (true, 1.5, "", null,
    NaN) and none at all, data that is not an object, and non-finite numbers anywhere."""
    return rnd.choice([
        {"id": f"q{i}", "query": "hello"}, {"interaction_id": i, "id": "shadowed"},
        {"interaction_id": True, "id": f"q{i}"}, {"interaction_id": 1.5, "id": ""},
        {"interaction_id": "", "id": i * 1000}, {"id": None}, {"query": "q", "response": "r"},
        {"interaction_id": f"it's \"{i}\" <b>"}, [f"q{i}"],
        # non-finite numbers, which the store writes as Python does (NaN, Infinity)
        {"id": f"nan{i}", "score": float("nan"), "more": [float("inf"), -float("inf")]},
        {"interaction_id": float("nan"), "id": f"nan-id{i}"}, {"id": float("-inf"), "text": "NaN, Infinity"},
    ])


def _by_definition(columns: dict[int, dict[str, Any]], n: int, having: str,
                   rating_max: float | None) -> list[int]:
    """The rows a feedback filter keeps, from :func:`run_feedback`'s columns (the definition)."""
    kept = []
    for idx in range(n):
        c = columns.get(idx, {})
        named = {"": True, "any": bool(c), "none": not c, "failure": bool(c.get("user_failure"))}
        ok = named.get(having, having in c)
        if rating_max is not None:
            ok = ok and "rating" in c and c["rating"] <= rating_max
        if ok:
            kept.append(idx)
    return kept


def test_the_sql_row_filter_equals_the_python_definition(any_store: Store) -> None:
    rnd = random.Random(16)
    n = 400
    run = make_run(any_store, "prod", [_row_data(rnd, i) for i in range(n)])
    ids = list(fb.interaction_ids(any_store, run).values())
    events: list[dict[str, Any]] = []
    for _ in range(300):
        kind = rnd.choice(fb.KINDS)
        event: dict[str, Any] = {"interaction_id": rnd.choice(ids), "kind": kind}
        event["value"] = {"rating": rnd.randint(1, 5), "session_length": rnd.random() * 60,
                          "task_completion": rnd.choice([0, 1])}.get(kind)
        if kind == "error_report":
            event["text"] = "it broke"
        events.append(event)
    events += [{"interaction_id": f"elsewhere-{i}", "kind": "thumbs_down"} for i in range(20)]
    fb.record_feedback(any_store, events)
    columns = fb.run_feedback(any_store, run)
    dialect = str(getattr(getattr(any_store, "dialect", None), "name", "sqlite"))
    asked = [(h, None) for h in ROW_FILTERS] + [("", 2.0), ("", 3.5), ("error_report", 4.0)]
    query = cast(SqlStore, any_store)._query  # the store's own SQL fragments, run as the store runs them
    for having, rating_max in asked:
        clause, params = row_filter_sql(dialect, having, rating_max)
        got = [int(r[0]) for r in query(
            f"SELECT r.idx FROM rows r WHERE r.run_id = ? AND {clause} ORDER BY r.idx", [run, *params])]
        assert got == _by_definition(columns, n, having, rating_max), (having, rating_max)
    assert row_filter_sql(dialect) == ("", [])
    with pytest.raises(InputValidationError, match="feedback must be one of"):
        row_filter_sql(dialect, "thumbs_sideways")
    # the SQL interaction id is the Python one, row by row
    sql_ids = dict(query(f"SELECT r.idx, {interaction_id_sql(dialect)} FROM rows r WHERE r.run_id = ?",
                         [run]))
    assert {int(k): v for k, v in sql_ids.items()} == fb.interaction_ids(any_store, run)


def test_feedback_columns_of_some_interactions(sqlite_store: Store) -> None:
    fb.record_feedback(sqlite_store, [
        {"interaction_id": "a", "kind": "error_report", "text": "first"},
        {"interaction_id": "a", "kind": "error_report", "text": "<b>second</b>",
         "created": "2099-01-01T00:00:00Z"},
        {"interaction_id": "a", "kind": "rating", "value": 4},
        {"interaction_id": "b", "kind": "thumbs_up"},
    ])
    found = fb.feedback_columns(sqlite_store, ["a", "a", "c"])
    assert found == {"a": {"error_report": 2, "rating": 4.0, "user_failure": True,
                           "last_error_report": "<b>second</b>"}}
    assert fb.interaction_id_of("run", 3, {"id": 7}) == "7" and fb.interaction_id_of("run", 3, []) == "run:3"
