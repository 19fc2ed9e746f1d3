"""The compatibility suite's own machinery: the comparison, the typed emit, the rewrite, the judge."""

from __future__ import annotations

import json
import sys

from tests.compat.harness import SNIPPETS, compare, rewrite
from tests.compat.judge import DEFAULT_SCORE, compat_judge, marker_score
from tests.fakes.openai_server import FakeRequest

sys.path.insert(0, str(SNIPPETS))
from _emit import flatten


def _ok(leaves: dict[str, list[object]]) -> dict[str, object]:
    return {"ok": True, "stdout_json": leaves, "error": None, "error_type": None}


def test_flatten_records_json_types_and_paths() -> None:
    leaves = flatten(
        {"a": 1, "b": 1.0, "c": True, "d": None, "e": [], "f/g": {"h": float("nan")}, "s": "/t/x"}, tmp="/t"
    )
    assert leaves == {
        "/a": ["int", 1],
        "/b": ["float", 1.0],
        "/c": ["bool", True],
        "/d": ["null", None],
        "/e": ["array", []],
        "/f~1g/h": ["float", "NaN"],
        "/s": ["str", "<tmp>/x"],
    }


def test_compare_allows_extra_keys_and_reports_type_value_and_missing() -> None:
    golden = _ok(
        {"/x": ["float", 4.0], "/y": ["int", 3], "/z": ["str", "a"], "/p/prompt_tokens": ["int", 10]}
    )
    same = _ok(
        {
            "/x": ["float", 4.0 + 1e-12],
            "/y": ["int", 3],
            "/z": ["str", "a"],
            "/p/prompt_tokens": ["int", 99],
            "/extra": ["str", "fine"],
        }
    )
    assert compare(golden, same) == []
    other = _ok({"/x": ["int", 4], "/y": ["int", 2]})
    problems = compare(golden, other)
    assert problems == [
        "`/p/prompt_tokens` missing (SDK: int 10)",
        "`/x` type int 4 vs SDK float 4.0",
        "`/y` value 2 vs SDK 3",
        "`/z` missing (SDK: str 'a')",
    ]


def test_compare_of_failures_compares_the_exception_class() -> None:
    failed = {"ok": False, "stdout_json": None, "error": "KeyError: 'x'", "error_type": "KeyError"}
    assert compare(failed, dict(failed)) == []
    assert compare(failed, _ok({}))[0].startswith("SDK raised KeyError")
    assert compare(_ok({}), failed) == ["touchstone crashed: KeyError: 'x'"]


def test_rewrite_changes_only_the_package_name() -> None:
    source = (
        "from azure.ai.evaluation import F1ScoreEvaluator\nfrom azure.ai.evaluation._exceptions import E\n"
    )
    assert (
        rewrite(source) == "from touchstone import F1ScoreEvaluator\nfrom touchstone._exceptions import E\n"
    )


def test_judge_gives_both_tools_the_marker_score() -> None:
    assert marker_score("no marker") == DEFAULT_SCORE
    assert marker_score("history [J5] ... response [J2]") == 2
    sdk = FakeRequest(
        "POST",
        "/v1/chat/completions",
        {},
        {
            "messages": [{"role": "user", "content": "RESPONSE: fine [J2]"}],
            "response_format": {"type": "json_object"},
        },
        1,
    )
    schema = {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "score": {"type": "integer", "minimum": 1, "maximum": 5},
        },
    }
    ours = FakeRequest(
        "POST",
        "/v1/chat/completions",
        {},
        {
            "messages": [{"role": "user", "content": "<response>fine [J2]</response>"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": schema}},
        },
        1,
    )
    sdk_reply = json.loads(compat_judge(sdk))
    our_reply = json.loads(compat_judge(ours))
    assert sdk_reply["score"] == our_reply["score"] == 2
    assert sdk_reply["reason"] == our_reply["reason"]
    binary = dict(schema, properties={"score": {"type": ["integer", "null"], "enum": [0, 1, None]}})
    ours.body["response_format"]["json_schema"]["schema"] = binary
    assert json.loads(compat_judge(ours))["score"] == 0
