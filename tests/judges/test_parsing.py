"""Tolerant extraction of the JSON object in a judge's reply (the scanner the score parser shares)."""

from __future__ import annotations

import pytest

from touchstone.judges.parsing import extract_json, json_objects


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"score": 4, "reason": "ok"}', {"score": 4, "reason": "ok"}),
        ('```json\n{"score": 2}\n```', {"score": 2}),
        ('Here you go:\n```\n{"score": 3}\n```\nThanks.', {"score": 3}),
        (
            'I think {"score": 5, "reason": "a {brace} inside"} is right.',
            {"score": 5, "reason": "a {brace} inside"},
        ),
        ("{'score': 1, 'ok': True}", {"score": 1, "ok": True}),
        ('{"score": 4, "flag": true,}', {"score": 4, "flag": True}),
        ('{"a": {"b": 1}}', {"a": {"b": 1}}),
        ('draft {"score": 1} final {"score": 4}', {"score": 4}),
        ("no object here", None),
        ("{not json at all}", None),
        ('[{"score": 4}]', None),
        ("", None),
    ],
)
def test_extract_json(text: str, expected: dict[str, object] | None) -> None:
    assert extract_json(text) == expected


def test_json_objects_reports_top_level_spans() -> None:
    text = 'x {"a": [1, {"b": 2}]} y [3, 4] z'
    found = json_objects(text)
    assert [obj for obj, _, _ in found] == [{"a": [1, {"b": 2}]}, [3, 4]]
    for _obj, start, end in found:
        assert text[start] in "{[" and text[end - 1] in "}]"
