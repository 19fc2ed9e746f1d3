"""The fake server's default judge reply follows the schema it is asked for: in ``response_format``,
or written out in the prompt as prompt-only structured-output libraries (ragas) do, with ``$ref``s."""

from __future__ import annotations

import json

from tests.fakes.openai_server import FakeRequest, judge_handler, prompt_schema, schema_instance

NLI = {
    "$defs": {
        "Verdict": {
            "properties": {
                "statement": {"type": "string"},
                "reason": {"type": "string"},
                "verdict": {"type": "integer"},
            },
            "required": ["statement", "reason", "verdict"],
            "type": "object",
        }
    },
    "properties": {"statements": {"items": {"$ref": "#/$defs/Verdict"}, "type": "array"}},
    "required": ["statements"],
    "type": "object",
}


def _request(prompt: str, body: dict[str, object] | None = None) -> FakeRequest:
    return FakeRequest(
        "POST",
        "/v1/chat/completions",
        {},
        {"messages": [{"role": "user", "content": prompt}], **(body or {})},
        1,
    )


def test_refs_are_followed() -> None:
    value = schema_instance(NLI)
    assert set(value) == {"statements"}
    [item] = value["statements"]
    assert set(item) == {"statement", "reason", "verdict"} and isinstance(item["verdict"], int)


def test_schema_written_in_the_prompt() -> None:
    prompt = ("Format the outputs in JSON.\nPlease return the output in a JSON format that complies with the "
              f"following schema as specified in JSON Schema:\n{json.dumps(NLI)}Do not use single quotes.")
    assert prompt_schema(prompt) == NLI
    reply = json.loads(judge_handler(_request(prompt)))
    assert set(reply["statements"][0]) == {"statement", "reason", "verdict"}


def test_no_schema_gives_the_usual_judge_keys() -> None:
    assert prompt_schema("Rate the answer from 1 to 5. JSON Schema: none here") is None
    reply = json.loads(judge_handler(_request("Rate the answer from 1 to 5.")))
    assert reply["score"] == 4 and "reason" in reply


def test_response_format_wins_over_the_prompt() -> None:
    fmt = {
        "type": "json_schema",
        "json_schema": {
            "name": "x",
            "schema": {
                "type": "object",
                "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
            },
        },
    }
    reply = json.loads(judge_handler(_request(f"JSON Schema: {json.dumps(NLI)}", {"response_format": fmt})))
    assert reply == {"score": 4}
