"""OpenTelemetry GenAI spans (OTLP/HTTP, JSON or protobuf) read into interactions.

A span is an interaction when it describes a model call: a ``gen_ai.operation.name`` attribute, or
any of the message forms the GenAI semantic conventions have used. The messages are read from,
in this order of preference:

1. ``gen_ai.input.messages`` / ``gen_ai.output.messages`` attributes (JSON: ``role`` and ``parts``
   of ``{"type": "text", "content": ...}``), and ``gen_ai.system_instructions``;
2. span events ``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
   ``gen_ai.tool.message`` (``content`` attribute) and ``gen_ai.choice`` (``message`` or ``content``),
   and the older ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events (``gen_ai.prompt``
   / ``gen_ai.completion``, JSON lists of messages);
3. flattened ``gen_ai.prompt.<i>.role|content`` and ``gen_ai.completion.<i>.content`` attributes.

The row: ``query`` is the last user message, ``response`` the (first) output message, ``context``
the text of tool messages in the input (what a retrieval step handed the model), ``timestamp`` the
span's start, ``id`` the span id; sampling uses the trace id, so a trace is kept or dropped whole.
``trace_id``, ``span_id`` and the model (``gen_ai.request.model``) pass through to the results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from touchstone.monitor.windows import iso

PROTOBUF_HINT = "reading OTLP protobuf needs opentelemetry-proto: pip install 'touchstone-genai[otel]'"
ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_FLAT = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(role|content)$")


# --- OTLP/JSON and protobuf to one plain shape: spans as dicts with decoded attribute values ----------


def _any_json(value: dict[str, Any]) -> Any:
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [_any_json(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return _attrs_json((value["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _attrs_json(items: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {kv["key"]: _any_json(kv.get("value") or {}) for kv in items or () if "key" in kv}


def spans_from_json(body: Any) -> Iterator[dict[str, Any]]:
    """The spans of an OTLP/JSON ``ExportTraceServiceRequest`` (ids as hex, times in ns)."""
    if not isinstance(body, dict):
        raise ValueError("expected an OTLP ExportTraceServiceRequest object with resourceSpans")
    for rs in body.get("resourceSpans") or ():
        for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or ():
            for span in ss.get("spans") or ():
                yield {
                    "trace_id": str(span.get("traceId") or "").lower(),
                    "span_id": str(span.get("spanId") or "").lower(),
                    "name": span.get("name", ""),
                    "start": int(span.get("startTimeUnixNano") or 0),
                    "attributes": _attrs_json(span.get("attributes")),
                    "events": [
                        {"name": ev.get("name", ""), "attributes": _attrs_json(ev.get("attributes"))}
                        for ev in span.get("events") or ()
                    ],
                }


def _any_proto(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_any_proto(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_proto(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return None if kind is None else getattr(value, kind)


def spans_from_protobuf(payload: bytes) -> Iterator[dict[str, Any]]:
    """The spans of a protobuf ``ExportTraceServiceRequest``."""
    try:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError as exc:  # pragma: no cover - the otel extra is installed in development
        raise RuntimeError(PROTOBUF_HINT) from exc
    request = ExportTraceServiceRequest()
    request.ParseFromString(payload)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield {
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "name": span.name,
                    "start": span.start_time_unix_nano,
                    "attributes": {kv.key: _any_proto(kv.value) for kv in span.attributes},
                    "events": [
                        {
                            "name": ev.name,
                            "attributes": {kv.key: _any_proto(kv.value) for kv in ev.attributes},
                        }
                        for ev in span.events
                    ],
                }


# --- GenAI messages --------------------------------------------------------------------------------


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def text_of(content: Any) -> str | None:
    """The text of a message's content: a string, a list of parts (``{"type": "text", "content"}``
    or ``{"text": ...}``), or a message object holding either."""
    content = _maybe_json(content)
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        for key in ("content", "parts", "text"):
            if key in content:
                return text_of(content[key])
        return None
    if isinstance(content, list):
        texts = [t for t in (_part_text(p) for p in content) if t]
        return "\n".join(texts) if texts else None
    return None


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type", "text") == "text":
        value = part.get("content", part.get("text"))
        return value if isinstance(value, str) else None
    return None


def _messages(value: Any) -> list[tuple[str, str]]:
    value = _maybe_json(value)
    if isinstance(value, dict):
        value = [value]
    found: list[tuple[str, str]] = []
    for msg in value if isinstance(value, list) else ():
        if isinstance(msg, dict):
            text = text_of(msg.get("parts", msg.get("content", msg.get("message"))))
            if text is not None:
                found.append((str(msg.get("role") or "assistant"), text))
    return found


def span_messages(span: dict[str, Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(input messages, output messages)`` of a span as ``(role, text)`` pairs."""
    attrs = span["attributes"]
    inputs = _messages(attrs.get("gen_ai.input.messages"))
    outputs = _messages(attrs.get("gen_ai.output.messages"))
    if inputs or outputs:
        system = text_of(attrs.get("gen_ai.system_instructions"))
        return ([("system", system)] if system else []) + inputs, outputs
    for ev in span["events"]:
        name, ev_attrs = ev["name"], ev["attributes"]
        if name in ROLE_EVENTS:
            text = text_of(ev_attrs.get("content", ev_attrs.get("gen_ai.event.content")))
            if text is not None:
                inputs.append((ROLE_EVENTS[name], text))
        elif name == "gen_ai.choice":
            text = text_of(ev_attrs.get("message", ev_attrs.get("content")))
            if text is not None:
                outputs.append(("assistant", text))
        elif name == "gen_ai.content.prompt":
            inputs.extend(_messages(ev_attrs.get("gen_ai.prompt")))
        elif name == "gen_ai.content.completion":
            outputs.extend(_messages(ev_attrs.get("gen_ai.completion")))
    if inputs or outputs:
        return inputs, outputs
    return _flattened(attrs)


def _flattened(attrs: dict[str, Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    parts: dict[tuple[str, int], dict[str, Any]] = {}
    for key, value in attrs.items():
        match = _FLAT.match(key)
        if match:
            parts.setdefault((match.group(1), int(match.group(2))), {})[match.group(3)] = value
    inputs = [
        (str(p.get("role") or "user"), str(p["content"]))
        for (kind, _), p in sorted(parts.items())
        if kind == "prompt" and "content" in p
    ]
    outputs = [
        (str(p.get("role") or "assistant"), str(p["content"]))
        for (kind, _), p in sorted(parts.items())
        if kind == "completion" and "content" in p
    ]
    return inputs, outputs


def is_genai_span(span: dict[str, Any]) -> bool:
    attrs = span["attributes"]
    return (
        "gen_ai.operation.name" in attrs
        or any(k.startswith("gen_ai.") for k in attrs)
        or any(ev["name"].startswith("gen_ai.") for ev in span["events"])
    )


def span_row(span: dict[str, Any]) -> dict[str, Any] | None:
    """The interaction row of one GenAI span (None when the span is not a model call with messages)."""
    if not is_genai_span(span):
        return None
    inputs, outputs = span_messages(span)
    if not inputs and not outputs:
        return None
    row: dict[str, Any] = {
        "timestamp": iso(span["start"] / 1e9),
        "id": span["span_id"] or None,
        "trace_id": span["trace_id"],
        "span_id": span["span_id"],
    }
    users = [text for role, text in inputs if role == "user"]
    if users:
        row["query"] = users[-1]
    answers = [text for role, text in outputs if role in ("assistant", "model")]
    if answers:
        row["response"] = answers[0]
    tools = [text for role, text in inputs if role == "tool"]
    if tools:
        row["context"] = "\n\n".join(tools)
    model = span["attributes"].get("gen_ai.request.model") or span["attributes"].get("gen_ai.response.model")
    if model:
        row["model"] = str(model)
    return row
