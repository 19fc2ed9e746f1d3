"""The one judge both tools talk to in the compatibility suite.

Both ``azure-ai-evaluation`` and touchstone ask the judge for JSON, in different words: the SDK's
prompty files describe ``{"reason", "score", "status"}`` (plus ``properties`` for retrieval and tool
call accuracy) with ``response_format`` ``json_object``; touchstone sends a JSON schema. This handler
answers each in the format it asked for, with the SAME score for the same judged text, so a judge
metric's value agrees between the tools whenever their aggregation rules agree.

The score comes from a marker in the judged text: ``[J<n>]`` (``n`` from 1 to 5). The LAST marker in
the prompt wins, because both tools place the text being judged after any conversation history (the
snippets put markers in responses, and in contexts for retrieval). Without a marker the score is
:data:`DEFAULT_SCORE`. A metric whose scale is binary (the SDK's task adherence, or a schema whose
``score`` has ``maximum`` 1) gets 1 when the 1-5 score is 3 or more, else 0.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes.openai_server import FakeRequest, prompt_schema, schema_instance

DEFAULT_SCORE = 4
"""The 1-5 score of a judged text without a marker."""

_MARKER = re.compile(r"\[J([1-5])\]")

REASON = "Let's think step by step: the judged text was read against the rubric."


def marker_score(prompt: str) -> int:
    """The score named by the last ``[J<n>]`` marker in ``prompt``, else :data:`DEFAULT_SCORE`."""
    found = _MARKER.findall(prompt)
    return int(found[-1]) if found else DEFAULT_SCORE


def binary(score: int) -> int:
    """A 1-5 score on a pass/fail scale (1 = pass)."""
    return 1 if score >= 3 else 0


def _fit(value: int, spec: dict[str, Any]) -> int | float:
    """``value`` (1-5) fitted to a schema's numeric bounds or ``enum``: a 0-1 scale becomes pass/fail."""
    lo = spec.get("minimum")
    hi = spec.get("maximum")
    allowed = [v for v in spec.get("enum") or [] if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if allowed:
        lo, hi = min(allowed), max(allowed)
    if hi is not None and hi <= 1:
        fitted: int | float = binary(value)
    else:
        fitted = value
        if lo is not None:
            fitted = max(fitted, lo)
        if hi is not None:
            fitted = min(fitted, hi)
    return float(fitted) if spec.get("type") == "number" else int(fitted)


def _schema_reply(schema: dict[str, Any], score: int) -> dict[str, Any] | Any:
    """An instance of ``schema`` whose top-level ``score`` (or ``rating``) carries ``score``."""
    instance = schema_instance(schema, prefer=score)
    props = schema.get("properties") or {}
    if isinstance(instance, dict):
        for key in ("score", "rating"):
            if key in instance and isinstance(props.get(key), dict):
                instance[key] = _fit(score, props[key])
        _overlay(instance)
    return instance


def _overlay(value: Any) -> None:
    """Give the keys the SDK's replies also carry the same values as there (reasons, tool-call
    counts), at any depth of a schema instance."""
    if isinstance(value, dict):
        for key in list(value):
            if key in ("reason", "explanation", "thought_chain") and isinstance(value[key], str):
                value[key] = REASON
            elif key in TOOL_CALL_PROPERTIES:
                value[key] = json.loads(json.dumps(TOOL_CALL_PROPERTIES[key]))
            else:
                _overlay(value[key])
    elif isinstance(value, list):
        for item in value:
            _overlay(item)


TOOL_CALL_PROPERTIES: dict[str, Any] = {
    "tool_calls_made_by_agent": 1,
    "correct_tool_calls_made_by_agent": 1,
    "per_tool_call_details": [],
    "excess_tool_calls": {"total": 0, "details": []},
    "missing_tool_calls": {"total": 0, "details": []},
}
"""The ``properties`` object the SDK's tool-call-accuracy prompt asks for; the same values go into
touchstone's schema instance wherever these keys appear."""


def sdk_reply(prompt: str, score: int) -> dict[str, Any]:
    """The JSON object the SDK's prompty files ask for."""
    reply: dict[str, Any] = {"reason": REASON, "explanation": REASON, "score": score, "status": "completed"}
    if "0 if there is any material failure" in prompt:  # task adherence: pass/fail
        reply["score"] = binary(score)
    if "TOOL CALLS TO BE EVALUATED" in prompt:
        reply["properties"] = json.loads(json.dumps(TOOL_CALL_PROPERTIES))
    elif '"thought_chain"' in prompt:  # retrieval
        reply["properties"] = {"thought_chain": REASON}
    return reply


def compat_judge(request: FakeRequest) -> str:
    """The handler: a schema instance for a request that carries a schema (touchstone), else the
    SDK's JSON object; both with the marker's score."""
    prompt = request.prompt
    score = marker_score(prompt)
    schema = request.json_schema or prompt_schema(prompt)
    if schema is not None:
        return json.dumps(_schema_reply(schema, score))
    return json.dumps(sdk_reply(prompt, score))
