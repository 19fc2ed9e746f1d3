"""One production interaction: a row in the data format of SPEC 2 plus ``timestamp`` and ``id``.

:func:`parse_interaction` checks one decoded object and says why it is rejected (an
:class:`InteractionError`, counted and logged by the caller, never fatal to the monitor);
:class:`RowChecker` also checks that the chosen metrics find their inputs in it, as ``evaluate()``
would, so that one bad interaction cannot stop the evaluation of its window.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from touchstone.data.kinds import InputKind, check_conversation, check_value
from touchstone.monitor.windows import parse_timestamp


class InteractionError(ValueError):
    """An interaction that cannot be monitored, with what is wrong and what was expected."""


class NotJson(str):
    """A line or body that was not JSON, in place of its object: the text says why."""


@dataclass(slots=True)
class Interaction:
    """A validated interaction: ``data`` is the row given to ``evaluate()`` (with ``id`` and
    ``timestamp`` kept as pass-through columns), ``key`` what sampling hashes (the trace id for
    spans, else the id), ``timestamp`` in Unix seconds."""

    id: str
    key: str
    timestamp: float
    data: dict[str, Any]


FIELD_KINDS: dict[str, InputKind] = {
    "query": "text",
    "question": "text",
    "response": "text",
    "answer": "text",
    "context": "context",
    "ground_truth": "texts",
    "retrieved_documents": "ranked_documents",
    "retrieval_ground_truth": "relevance_labels",
}
"""The fields of SPEC 2 and the kind each must have when present."""


def content_id(obj: Mapping[str, Any]) -> str:
    """An id for an interaction given without one: a digest of its content, so the same interaction
    read twice gets the same id (and the same sampling decision)."""
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return "sha1:" + hashlib.sha1(text.encode("utf-8")).hexdigest()


def parse_interaction(obj: Any, sample_key: str | None = None) -> Interaction:
    """An :class:`Interaction` from one decoded JSON value, or :class:`InteractionError`.

    ``sample_key`` overrides what sampling hashes (a span's trace id)."""
    if isinstance(obj, NotJson):
        raise InteractionError(f"not JSON ({obj})")
    if not isinstance(obj, dict):
        raise InteractionError(f"expected a JSON object, got {type(obj).__name__}")
    if "timestamp" not in obj:
        raise InteractionError("missing field 'timestamp' (an ISO 8601 time such as 2025-05-01T12:00:00Z)")
    try:
        ts = parse_timestamp(obj["timestamp"])
    except ValueError as exc:
        raise InteractionError(f"field 'timestamp': {exc}") from None
    raw_id = obj.get("id")
    if raw_id is None:
        ident = content_id(obj)
    elif isinstance(raw_id, str) and raw_id:
        ident = raw_id
    elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
        ident = str(raw_id)
    else:
        raise InteractionError(f"field 'id': expected a non-empty string or an integer, got {raw_id!r:.40}")
    problem = _field_problem(obj)
    if problem:
        raise InteractionError(problem)
    data = dict(obj)
    data["id"] = ident
    return Interaction(ident, sample_key or ident, ts, data)


def _field_problem(obj: Mapping[str, Any]) -> str | None:
    for name, kind in FIELD_KINDS.items():
        if name in obj and obj[name] is not None:
            why = check_value(kind, obj[name])
            if why:
                return f"field {name!r}: {why}"
    if "messages" in obj:
        why = check_conversation({"messages": obj["messages"]})
        if why:
            return f"field 'messages': {why}"
    elif not any(obj.get(name) is not None for name in ("query", "question", "response", "answer")):
        return "no 'query', 'response' or 'messages': nothing to evaluate"
    return None


class RowChecker:
    """Checks that each chosen evaluator finds its inputs in an interaction's row (what
    ``evaluate()`` validates for a whole file, here one row at a time)."""

    def __init__(self, evaluators: Mapping[str, Any], evaluator_config: Mapping[str, Any] | None) -> None:
        from touchstone.data.mapping import evaluator_mappings
        from touchstone.evaluators.custom import as_sdk_evaluator

        self.evaluators = {name: as_sdk_evaluator(ev, name) for name, ev in evaluators.items()}
        self.mappings = evaluator_mappings(list(self.evaluators), evaluator_config)

    def problem(self, interaction: Interaction) -> str | None:
        """None when every evaluator can score the row, else the first problem found."""
        return self.problems([interaction])[0]

    def problems(self, interactions: Sequence[Interaction]) -> list[str | None]:
        """For each interaction, None or its first problem (one validation pass over all of them)."""
        from touchstone.data.loaders import Record
        from touchstone.data.validation import validate_records
        from touchstone.errors import InputValidationError

        records = [Record(i.data, "interaction", n) for n, i in enumerate(interactions, start=1)]
        try:
            validate_records(records, self.evaluators, self.mappings, has_target=False)
        except InputValidationError as exc:
            found: list[str | None] = [None] * len(records)
            for p in exc.problems:
                if p.line is None:  # about the batch as a whole (a mapped column absent): one at a time
                    return [self.problems([i])[0] for i in interactions] if len(records) > 1 else [p.message]
                if found[p.line - 1] is None:
                    found[p.line - 1] = f"field {p.field!r}: {p.message}" if p.field else p.message
            return found
        return [None] * len(records)
