"""Chat messages as JSON text, encoded once per distinct long text.

A judge prompt is mostly the same long text on every row (the rubric), and each call's messages are
JSON-encoded several times: for the cache key, for the request body and for the SDK's
``sample_input`` property. Encoding a 9 kB prompt costs about 50 µs each time, a fifth of the CPU a
row of a one-call safety run spends in this process. :func:`messages_json` gives exactly
``json.dumps(messages, ensure_ascii=False)`` but keeps the encoded form of each long string in a
small memo (a rubric is the same string object on every row, whose hash Python keeps), so the rubric
is encoded once per run, and :func:`body_json` splices that text into a request body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

LONG = 512
"""Strings at least this long are memoised (shorter ones are cheaper to encode than to look up)."""
MEMO_SIZE = 256
"""Distinct long strings kept; the memo is emptied when full (a run has a few rubrics, and a text
seen once costs one dictionary insert)."""

_encode = json.JSONEncoder(ensure_ascii=False).encode
_memo: dict[str, str] = {}


def text_json(text: str) -> str:
    """``json.dumps(text, ensure_ascii=False)``, memoised for long texts."""
    if len(text) < LONG:
        return _encode(text)
    encoded = _memo.get(text)
    if encoded is None:
        if len(_memo) >= MEMO_SIZE:
            _memo.clear()
        encoded = _memo[text] = _encode(text)
    return encoded


def messages_json(messages: Sequence[Mapping[str, Any]]) -> str:
    """Exactly ``json.dumps(list(messages), ensure_ascii=False)`` for chat messages (any other
    value inside a message is encoded by ``json`` as usual)."""
    parts = []
    for message in messages:
        fields = []
        for key, value in message.items():
            encoded = text_json(value) if isinstance(value, str) else _encode(value)
            fields.append(f"{_encode(key)}: {encoded}")
        parts.append("{" + ", ".join(fields) + "}")
    return "[" + ", ".join(parts) + "]"


def body_json(body: Mapping[str, Any]) -> str:
    """A request body as JSON text, its ``messages`` encoded through :func:`messages_json` (the same
    JSON value as ``json.dumps(body)``; the text may differ in key order only)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return _encode(body)
    rest = {k: v for k, v in body.items() if k != "messages"}
    head = _encode(rest)
    joined = '"messages": ' + messages_json(messages)
    return "{" + joined + "}" if head == "{}" else head[:-1] + ", " + joined + "}"
