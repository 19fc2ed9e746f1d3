"""The kinds of values an evaluator input can take, how each is checked and normalised (SPEC 2)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

InputKind = Literal[
    "text",  # a string
    "texts",  # a string, or a list of strings (several ground truths)
    "context",  # a string, or a list of documents {id?, title?, content} (or of strings)
    "conversation",  # {"messages": [...], "context"?: ...}
    "messages",  # a string, or a list of chat messages {role, content} (an agent's query or response)
    "ranked_documents",  # list of {document_id, relevance_score?} or a ranked list of ids
    "relevance_labels",  # list of {document_id, query_relevance_label: int} or a list of relevant ids
    "any",
]

ROLES = ("system", "user", "assistant")


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _got(value: Any) -> str:
    return f"got {type_name(value)} ({_preview(value)})"


def check_value(kind: InputKind, value: Any) -> str | None:
    """Return ``None`` when ``value`` is valid for ``kind``, else what was expected and what came."""
    if kind == "any":
        return None
    if kind == "text":
        return None if isinstance(value, str) else f"expected a string, {_got(value)}"
    if kind == "texts":
        if isinstance(value, str):
            return None
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return None
        if isinstance(value, list) and not value:
            return "expected a string or a non-empty list of strings, got an empty list"
        return f"expected a string or a list of strings, {_got(value)}"
    if kind == "context":
        return _check_context(value)
    if kind == "conversation":
        return check_conversation(value)
    if kind == "messages":
        if isinstance(value, str) or (
            isinstance(value, list) and value and all(isinstance(m, Mapping) and "role" in m for m in value)
        ):
            return None
        return f"expected a string or a non-empty list of messages with a role, {_got(value)}"
    if kind == "ranked_documents":
        return _check_id_list(value, "relevance_score", numeric_required=False)
    if kind == "relevance_labels":
        return _check_id_list(value, "query_relevance_label", numeric_required=True)
    raise ValueError(f"unknown input kind {kind!r}")


def _check_context(value: Any) -> str | None:
    if isinstance(value, str):
        return None
    if isinstance(value, Mapping) and "citations" in value:
        value = value["citations"]
    if isinstance(value, list):
        for i, doc in enumerate(value):
            if isinstance(doc, str):
                continue
            if not isinstance(doc, Mapping):
                return (
                    f'expected each document to be an object with "content", item {i + 1} is {type_name(doc)}'
                )
            if not isinstance(doc.get("content"), str):
                return f'expected document {i + 1} to have a string "content", {_got(doc.get("content"))}'
        return None
    return f"expected a string or a list of documents {{id?, title?, content}}, {_got(value)}"


def joined_texts(items: list[Any] | tuple[Any, ...]) -> str | None:
    """The texts of a list that holds only texts, joined at C speed (no character is made or lost by
    joining); None when it holds anything else."""
    try:
        return "".join(items)
    except TypeError:
        return None


def _check_id_list(value: Any, score_field: str, numeric_required: bool) -> str | None:
    if not isinstance(value, list):
        return f"expected a list of document ids or of {{document_id, {score_field}}} objects, {_got(value)}"
    if joined_texts(value) is not None:  # ids that are all texts (the usual ranking): nothing to check
        return None
    for i, item in enumerate(value):
        kind = type(item)
        if kind is str or kind is int:  # the usual ids, told apart at once
            continue
        if kind is dict:  # the usual object, with a plain id and score
            doc_id, score = item.get("document_id"), item.get(score_field)
            if (type(doc_id) is str or type(doc_id) is int) and (
                type(score) is float or type(score) is int) and (
                    not numeric_required or (math.isfinite(score) and score == int(score))):
                continue
        if isinstance(item, bool):
            return f"expected item {i + 1} to be a document id or an object, got a boolean"
        if isinstance(item, (str, int)):
            continue
        if not isinstance(item, Mapping):
            return f"expected item {i + 1} to be a document id or an object, {_got(item)}"
        doc_id = item.get("document_id")
        if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
            return f'expected item {i + 1} to have a "document_id" (string or integer), {_got(doc_id)}'
        score = item.get(score_field)
        if score is None and not numeric_required:
            continue
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            return f'expected item {i + 1} to have a numeric "{score_field}", {_got(score)}'
        if numeric_required and (not math.isfinite(float(score)) or float(score) != int(score)):
            return f'expected item {i + 1} "{score_field}" to be an integer, got {score}'
    return None


def check_conversation(value: Any) -> str | None:
    if not isinstance(value, Mapping):
        return f'expected an object with "messages", {_got(value)}'
    messages = value.get("messages")
    if not isinstance(messages, list) or not messages:
        return f'expected "messages" to be a non-empty list, {_got(messages)}'
    # A conversation without an assistant message is accepted, as the compatible SDK accepts it: it has
    # nothing to judge, so its metrics give no value (evaluators/conversation.py).
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            return f"expected message {i + 1} to be an object, {_got(msg)}"
        role = msg.get("role")
        if role not in ROLES:
            return f"message {i + 1}: expected role to be one of {', '.join(ROLES)}, got {_preview(role)}"
        if not isinstance(msg.get("content"), str):
            return f'message {i + 1}: expected "content" to be a string, {_got(msg.get("content"))}'
        if "context" in msg and msg["context"] is not None:
            err = _check_context(msg["context"])
            if err:
                return f"message {i + 1} context: {err}"
    if value.get("context") is not None:
        err = _check_context(value["context"])
        if err:
            return f"conversation context: {err}"
    return None


# ---------------------------------------------------------------------------- normalisation
def as_text_list(value: str | list[str]) -> list[str]:
    """Ground truth as a list of strings."""
    return [value] if isinstance(value, str) else list(value)


def context_documents(value: Any) -> list[dict[str, Any]]:
    """Context as a list of documents ``{id, title?, content}``; ids default to ``doc-<n>``."""
    if value is None:
        return []
    if isinstance(value, Mapping) and "citations" in value:
        value = value["citations"]
    if isinstance(value, str):
        return [{"id": "doc-1", "content": value}]
    docs = []
    for i, doc in enumerate(value):
        if isinstance(doc, str):
            docs.append({"id": f"doc-{i + 1}", "content": doc})
        else:
            d = dict(doc)
            d.setdefault("id", f"doc-{i + 1}")
            docs.append(d)
    return docs


def context_text(value: Any) -> str:
    """Context as one string (documents joined by blank lines)."""
    if isinstance(value, str):
        return value
    return "\n\n".join(d["content"] for d in context_documents(value))


def ranked_ids(value: list[Any]) -> list[str]:
    """Retrieved documents as ids, best first. Objects with ``relevance_score`` are sorted by it,
    descending, ties keeping their original order (a stable sort)."""
    if all(not isinstance(v, Mapping) for v in value):
        return [str(v) for v in value]
    items = [
        (str(v["document_id"]), v.get("relevance_score")) if isinstance(v, Mapping) else (str(v), None)
        for v in value
    ]
    if all(score is not None for _, score in items):
        items = sorted(items, key=lambda it: -float(it[1]))  # type: ignore[arg-type]
    return [doc_id for doc_id, _ in items]


def relevance_labels(value: list[Any]) -> dict[str, int]:
    """Relevance labels as ``{document_id: label}``; a plain list of ids means label 1 each."""
    labels: dict[str, int] = {}
    for v in value:
        if isinstance(v, Mapping):
            labels[str(v["document_id"])] = int(v["query_relevance_label"])
        else:
            labels[str(v)] = 1
    return labels
