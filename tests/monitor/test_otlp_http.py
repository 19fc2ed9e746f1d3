"""The monitor's HTTP endpoint: spans exported by the real ``opentelemetry-sdk`` OTLPSpanExporter
(OTLP/HTTP protobuf), OTLP/JSON, and ``/v1/interactions`` (JSON, array, JSONL) become the right
records; bodies that cannot be read get 400; bad interactions are counted, not fatal."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from touchstone.engine.planning import JudgeChoice, plan_evaluation
from touchstone.monitor.service import Monitor, MonitorConfig
from touchstone.monitor.sources.http import MonitorHTTPServer
from touchstone.monitor.state import MonitorState
from touchstone.store import RunStore

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Monitor, str]]:
    # coherence needs query and response: the endpoint's rows are checked against it (no judge call)
    plan = plan_evaluation(["coherence"], {}, {}, judge=JudgeChoice("m", "http://127.0.0.1:9/v1"))
    monitor = Monitor(
        MonitorConfig("t", 3600), plan, RunStore(tmp_path / "runs.db"), MonitorState(tmp_path / "s")
    )
    server = MonitorHTTPServer(monitor).start()
    try:
        yield monitor, server.url
    finally:
        server.stop()


def rows(monitor: Monitor) -> list[dict[str, Any]]:
    return sorted(
        (i.data for w in monitor.windows.values() for i in w.values()), key=lambda d: d["timestamp"]
    )


def post(
    url: str, body: bytes, content_type: str, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type, **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_spans_from_the_sdk_exporter_protobuf(served: tuple[Monitor, str]) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    monitor, url = served
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("app")
    # the current conventions: gen_ai.input.messages / gen_ai.output.messages with parts
    with tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.request.model", "gpt-4o")
        span.set_attribute(
            "gen_ai.input.messages",
            json.dumps(
                [
                    {"role": "user", "parts": [{"type": "text", "content": "Do you ship to Canada?"}]},
                    {
                        "role": "tool",
                        "parts": [{"type": "text", "content": "Canada takes 5-7 business days."}],
                    },
                ]
            ),
        )
        span.set_attribute(
            "gen_ai.output.messages",
            json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": "Yes, in 5-7 business days."}],
                        "finish_reason": "stop",
                    },
                ]
            ),
        )
        first = span.get_span_context()
    # the event conventions: gen_ai.user.message / gen_ai.choice span events
    with tracer.start_as_current_span("chat llama") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.add_event("gen_ai.system.message", {"content": "Be brief."})
        span.add_event("gen_ai.user.message", {"content": "Which lantern lasts longest?"})
        span.add_event(
            "gen_ai.choice", {"index": 0, "message": json.dumps({"content": "The Trailglow 300."})}
        )
        second = span.get_span_context()
    # a span that is not a model call is skipped
    with tracer.start_as_current_span("db query") as span:
        span.set_attribute("db.system", "postgresql")
    provider.shutdown()

    got = rows(monitor)
    assert len(got) == 2 and monitor.counts["spans_skipped"] == 1
    by_span = {r["span_id"]: r for r in got}
    a = by_span[format(first.span_id, "016x")]
    assert a["query"] == "Do you ship to Canada?"
    assert a["response"] == "Yes, in 5-7 business days."
    assert a["context"] == "Canada takes 5-7 business days."
    assert a["trace_id"] == format(first.trace_id, "032x") and a["model"] == "gpt-4o"
    assert a["id"] == a["span_id"] and a["timestamp"].endswith("Z")
    b = by_span[format(second.span_id, "016x")]
    assert (b["query"], b["response"]) == ("Which lantern lasts longest?", "The Trailglow 300.")
    assert "context" not in b


def otlp_json(spans: list[dict[str, Any]]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def test_otlp_json_and_flattened_attributes(served: tuple[Monitor, str]) -> None:
    monitor, url = served
    span = {
        "traceId": TRACE,
        "spanId": SPAN,
        "name": "chat",
        "startTimeUnixNano": "1746100800000000000",
        "attributes": [
            attr("gen_ai.system", "openai"),
            attr("gen_ai.prompt.0.role", "user"),
            attr("gen_ai.prompt.0.content", "What is 2+2?"),
            attr("gen_ai.completion.0.role", "assistant"),
            attr("gen_ai.completion.0.content", "4"),
        ],
    }
    status, body = post(
        f"{url}/v1/traces", gzip.compress(otlp_json([span])), "application/json", {"Content-Encoding": "gzip"}
    )
    assert status == 200 and json.loads(body) == {}
    assert rows(monitor) == [
        {
            "timestamp": "2025-05-01T12:00:00Z",
            "id": SPAN,
            "trace_id": TRACE,
            "span_id": SPAN,
            "query": "What is 2+2?",
            "response": "4",
        }
    ]
    assert next(iter(next(iter(monitor.windows.values())).values())).key == TRACE  # sampled by trace
    status, body = post(f"{url}/v1/traces", b"{not json", "application/json")
    assert status == 400 and b"cannot read the body" in body


def test_interactions_endpoint_json_array_jsonl(served: tuple[Monitor, str]) -> None:
    monitor, url = served
    one = {"id": "a", "timestamp": "2025-05-01T12:00:00Z", "query": "q", "response": "r"}
    status, body = post(f"{url}/v1/interactions", json.dumps(one).encode(), "application/json")
    assert status == 200 and json.loads(body) == {"received": 1, "kept": 1}
    many = [{**one, "id": "b"}, {**one, "id": "c", "timestamp": "yesterday"}]
    status, body = post(f"{url}/v1/interactions", json.dumps(many).encode(), "application/json")
    answer = json.loads(body)
    assert {k: answer[k] for k in ("received", "kept")} == {"received": 2, "kept": 1}
    (refused,) = answer["rejected"]  # the sender is told which interaction was refused, and why
    assert refused["where"] == "request item 2" and "timestamp" in refused["reason"]
    lines = "\n".join(
        [
            json.dumps({**one, "id": "d"}),
            "{oops",
            json.dumps({**one, "id": "e", "query": None, "response": None}),
        ]
    )
    status, body = post(f"{url}/v1/interactions", lines.encode(), "application/x-ndjson")
    answer = json.loads(body)
    assert {k: answer[k] for k in ("received", "kept")} == {"received": 3, "kept": 1}
    assert [r["where"] for r in answer["rejected"]] == ["request line 2", "request line 3"]
    assert [r["id"] for r in rows(monitor)] == ["a", "b", "d"]
    assert monitor.counts["invalid"] == 3
    status, _ = post(f"{url}/v1/interactions", b"\xff\xfe", "application/json")
    assert status == 400
    status, _ = post(f"{url}/v1/nothing", b"{}", "application/json")
    assert status == 404
