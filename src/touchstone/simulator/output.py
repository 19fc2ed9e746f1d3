"""The simulators' results: lists of conversations in SPEC 2.2's format, as JSON lines.

Each item is ``{"template_parameters": {...}, "messages": [{"role", "content", "context"?}, ...],
"$schema": ...}`` as the compatible SDK returns it; a conversation whose target failed also has
``"error": {"kind", "message", "turn"}``. ``to_json_lines()`` writes the conversations as they are
(ready for ``touchstone eval -m violence``); ``to_eval_qr_json_lines()`` one query/response row per
complete exchange (user message then assistant message), with the conversation's ``category``.
"""

from __future__ import annotations

import json
from typing import Any

CONVERSATION_SCHEMA = "http://azureml/sdk-2-0/ChatConversation.json"
"""The ``$schema`` the SDK puts on every simulated conversation."""


def _dumps(item: Any) -> str:
    return json.dumps(item, ensure_ascii=False)


def _exchanges(messages: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(user, assistant) pairs: each assistant message with the user message before it."""
    pairs = []
    user: dict[str, Any] | None = None
    for message in messages:
        if message.get("role") == "user":
            user = message
        elif message.get("role") == "assistant" and user is not None:
            pairs.append((user, message))
            user = None
    return pairs


def qa_rows(item: dict[str, Any]) -> list[dict[str, Any]]:
    """One conversation as query/response rows (with ``context`` when a turn carried one)."""
    category = (item.get("template_parameters") or {}).get("category")
    rows = []
    for user, assistant in _exchanges(list(item.get("messages") or [])):
        row: dict[str, Any] = {"query": user.get("content", ""), "response": assistant.get("content", "")}
        user_context, assistant_context = user.get("context"), assistant.get("context")
        if user_context or assistant_context:
            both = {"user_context": user_context or "", "assistant_context": assistant_context or ""}
            row["context"] = str(both)
        row["category"] = category
        rows.append(row)
    return rows


class JsonLineList(list[dict[str, Any]]):
    """The conversations a simulator produced. ``judge`` holds the attacker model's accounting
    (calls, tokens, cost, retries) when the simulator ran its own judge session."""

    judge: dict[str, Any] | None = None

    def to_json_lines(self) -> str:
        """Every conversation as one JSON line."""
        return "".join(_dumps(item) + "\n" for item in self)

    def to_eval_qr_json_lines(self) -> str:
        """Every complete exchange of every conversation as a ``{"query", "response", "category"}``
        JSON line."""
        return "".join(_dumps(row) + "\n" for item in self for row in qa_rows(item))


class JsonLineChatProtocol(dict[str, Any]):
    """One conversation, with the same conversions."""

    def to_json(self) -> str:
        return _dumps(self)

    def to_eval_qr_json_lines(self) -> str:
        return "".join(_dumps(row) + "\n" for row in qa_rows(self))
