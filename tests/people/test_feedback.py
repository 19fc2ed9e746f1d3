"""Production feedback: validation naming the field, storage on both backends, per-window aggregates
with the judge metric beside them, and feedback as a column of a run's rows."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from tests.people.conftest import make_run

from touchstone.errors import InputValidationError
from touchstone.people import feedback as fb
from touchstone.store.base import Store


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
