"""Interactions are checked one by one with a reason; durations and windows; the webhook is never
fatal and never shows the URL's credentials."""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest

from touchstone.engine.planning import plan_evaluation
from touchstone.errors import InputValidationError
from touchstone.monitor.alerts import Alert
from touchstone.monitor.interactions import InteractionError, RowChecker, content_id, parse_interaction
from touchstone.monitor.sinks import WebhookSink, redact_url
from touchstone.monitor.windows import iso, parse_duration, parse_timestamp, window_start

OK = {"timestamp": "2025-05-01T12:30:00+02:00", "query": "q", "response": "r"}


def test_a_valid_interaction() -> None:
    got = parse_interaction({**OK, "id": 17, "extra": [1]})
    assert got.id == "17" and got.key == "17"
    assert got.timestamp == parse_timestamp("2025-05-01T10:30:00Z")
    assert got.data == {**OK, "id": "17", "extra": [1]}
    # without an id: a digest of the content, the same each time
    a, b = parse_interaction(dict(OK)), parse_interaction(dict(OK))
    assert a.id == b.id == content_id(OK)
    assert parse_interaction(dict(OK), sample_key="trace-1").key == "trace-1"
    conversation = {
        "timestamp": "2025-05-01T00:00:00",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    }
    assert parse_interaction(conversation).timestamp == parse_timestamp("2025-05-01T00:00:00Z")


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        ([1], "expected a JSON object, got list"),
        ({"query": "q"}, "missing field 'timestamp'"),
        ({**OK, "timestamp": "May 1st"}, "field 'timestamp': expected an ISO 8601 timestamp"),
        ({**OK, "timestamp": 1746100800}, "field 'timestamp': expected an ISO 8601 text, got int"),
        ({**OK, "id": True}, "field 'id': expected a non-empty string or an integer"),
        ({**OK, "id": ""}, "field 'id'"),
        ({**OK, "response": 5}, "field 'response': expected a string"),
        ({**OK, "context": {"x": 1}}, "field 'context'"),
        ({**OK, "ground_truth": []}, "field 'ground_truth'"),
        ({"timestamp": OK["timestamp"], "messages": [{"content": "no role"}]}, "field 'messages'"),
        ({"timestamp": OK["timestamp"], "model": "x"}, "nothing to evaluate"),
    ],
)
def test_bad_interactions_say_why(obj: Any, why: str) -> None:
    with pytest.raises(InteractionError, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse_interaction(obj)


def test_row_checker_names_the_missing_input() -> None:
    checker = RowChecker(plan_evaluation(["f1_score"], {}, {}).evaluators, {})
    assert checker.problem(parse_interaction({**OK, "ground_truth": "r"})) is None
    why = checker.problem(parse_interaction(OK))
    assert why is not None and "ground_truth" in why


def test_durations_and_windows() -> None:
    assert [parse_duration(t) for t in ("90s", "30m", "1h", "1d", "1.5h")] == [90, 1800, 3600, 86400, 5400]
    for bad in ("", "1w", "h", "0m", "0.5s", "-1h"):
        with pytest.raises(InputValidationError, match="--window"):
            parse_duration(bad)
    assert parse_duration("0s", "--grace", minimum=0) == 0
    ts = parse_timestamp("2025-05-01T12:34:56.5Z")
    assert iso(window_start(ts, 3600)) == "2025-05-01T12:00:00Z"
    assert iso(window_start(ts, 86400)) == "2025-05-01T00:00:00Z"
    assert iso(window_start(ts, 1800)) == "2025-05-01T12:30:00Z"
    assert iso(ts) == "2025-05-01T12:34:56.500000Z"


def alert() -> Alert:
    return Alert(
        "m",
        "2025-05-01T12:00:00Z",
        "2025-05-01T13:00:00Z",
        "f1_score",
        "threshold",
        "window mean under threshold",
        0.2,
        0.5,
        10,
    )


def test_webhook_never_fatal_and_never_shows_credentials(caplog: Any) -> None:
    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://bob:hunter2-secret@127.0.0.1:{port}/hook?token=tok-secret"
    sink = WebhookSink(url, retries=1, backoff=0.01, timeout=2)
    with caplog.at_level(logging.WARNING, logger="touchstone.monitor"):
        sink.send([alert()])  # returns; logs once
    assert sink.failed == 1 and sink.delivered == 0
    text = caplog.text
    assert "not delivered" in text and f"127.0.0.1:{port}/hook" in text
    assert "hunter2" not in text and "tok-secret" not in text and "bob" not in text
    assert redact_url(url) == f"http://127.0.0.1:{port}/hook"
    with pytest.raises(ValueError, match="http") as info:
        WebhookSink("ftp://carol:pw-secret@example.org/x")
    assert "pw-secret" not in str(info.value)


def test_row_checker_on_a_batch_names_each_bad_row() -> None:
    checker = RowChecker(plan_evaluation(["f1_score"], {}, {}).evaluators, {})
    batch = [
        parse_interaction({**OK, "id": str(i), **({"ground_truth": "r"} if i % 3 else {})}) for i in range(9)
    ]
    problems = checker.problems(batch)
    assert [p is None for p in problems] == [bool(i % 3) for i in range(9)]
    assert all("ground_truth" in p for p in problems if p is not None)
    # a mapping to a column no row has: every row is told, one at a time
    mapped = RowChecker(
        plan_evaluation(["f1_score"], {}, {}).evaluators,
        {"default": {"column_mapping": {"ground_truth": "${data.expected}"}}},
    )
    rows = [parse_interaction({**OK, "id": "a", "expected": "r"}), parse_interaction({**OK, "id": "b"})]
    found = mapped.problems(rows)
    assert found[0] is None and found[1] is not None and "expected" in found[1]
