"""Custom metrics: rubric metrics in Python and YAML, function metrics, from evaluate()."""

from __future__ import annotations

import json
import math
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, Reply

from touchstone import evaluate
from touchstone.errors import ConfigurationError
from touchstone.evaluators.custom import FunctionMetric, RubricEvaluator, function_metric, metrics_from_file


def blocks(text: str) -> dict[str, str]:
    return {
        m.group(1): m.group(2) for m in re.finditer(r'<data name="(\w+)">\n(.*?)\n</data>', text, re.DOTALL)
    }


def record(fake: FakeOpenAIServer, reply: dict[str, Any]) -> list[FakeRequest]:
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> str:
        seen.append(req)
        return json.dumps(reply)

    fake.handler = handler
    return seen


def test_rubric_in_python(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    seen = record(fake_openai, {"reason": "Curt but polite.", "score": 7})
    ev = RubricEvaluator(
        "politeness",
        "The response is courteous and respectful to the user.",
        model_config=judge_config,
        inputs=["query", "response"],
        scale=(1, 10),
        threshold=6,
        examples=[
            {
                "inputs": {"query": "Where is my order?", "response": "Figure it out."},
                "score": 1,
                "reason": "Rude.",
            }
        ],
        scale_guide={1: "rude", 10: "warm and respectful"},
    )
    out = ev(query="Where is my parcel?", response="It ships tomorrow.")
    system = seen[0].messages[0]["content"]
    assert "The response is courteous and respectful to the user." in system
    assert "integers from 1 to 10" in system and "10 - warm and respectful" in system
    assert 'Expected rating: {"reason": "Rude.", "score": 1}' in system
    assert blocks(seen[0].last_user) == {"query": "Where is my parcel?", "response": "It ships tomorrow."}
    assert seen[0].json_schema["properties"]["score"]["enum"] == list(range(1, 11))  # type: ignore[index]
    assert out["politeness"] == 7 and out["gpt_politeness"] == 7 and out["politeness_result"] == "pass"
    assert out["politeness_reason"] == "Curt but polite." and out["politeness_threshold"] == 6
    props = out["politeness_properties"]
    assert props["prompt"] == "rubric" and props["prompt_version"] == "1.0.0+politeness.1"
    other = RubricEvaluator("politeness", "Something else.", model_config=judge_config)
    assert other.prompt.hash != ev.prompt.hash  # the rubric's words are part of the prompt's identity


def test_rubric_out_of_its_scale_fails(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    import asyncio

    record(fake_openai, {"reason": "x", "score": 4})
    ev = RubricEvaluator("brevity", "Short.", model_config=judge_config, inputs=["response"], scale=(0, 3))
    out = asyncio.run(ev.ascore({"response": "ok"}))
    assert "outside the 0-3 scale" in out["brevity_error"] and "brevity" not in out


def test_rubric_logprobs(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    text = '{"reason": "ok", "score": 2}'
    i = text.index("2}")
    toks = [
        (text[:i], -0.01, []),
        ("2", math.log(0.5), [("2", math.log(0.5)), ("3", math.log(0.3)), ("1", math.log(0.2))]),
        (text[i + 1 :], -0.01, []),
    ]
    fake_openai.handler = lambda req: Reply(content=text, logprobs=toks)
    ev = RubricEvaluator(
        "clarity",
        "Clear.",
        model_config=judge_config,
        inputs=["response"],
        scale=(1, 3),
        score_mode="logprobs",
    )
    out = ev(response="Plain words.")
    assert out["clarity"] == pytest.approx(2 * 0.5 + 3 * 0.3 + 1 * 0.2)
    assert out["clarity_threshold"] == 2  # default: the middle of the scale


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"criteria": ""}, "criteria"),
        ({"scale": (5, 1)}, "low end"),
        ({"scale": (1,)}, "two integers"),
        ({"inputs": []}, "inputs"),
        ({"examples": [{"inputs": {"response": "x"}, "score": 9}]}, "example 1 score"),
        ({"scale_guide": {7: "x"}}, "outside the scale"),
    ],
)
def test_rubric_definition_errors(judge_config: dict[str, str], kwargs: dict[str, Any], match: str) -> None:
    args: dict[str, Any] = {"criteria": "Clear.", "model_config": judge_config, **kwargs}
    with pytest.raises(ConfigurationError, match=match):
        RubricEvaluator("clarity", args.pop("criteria"), **args)


def test_rubric_needs_a_judge() -> None:
    with pytest.raises(ConfigurationError, match="needs a judge model"):
        RubricEvaluator("clarity", "Clear.", model_config=None)


def test_function_metric() -> None:
    m = FunctionMetric(lambda response: float("doc-" in response), name="cites", threshold=1)
    assert m(response="see doc-17") == {
        "cites": 1.0,
        "cites_score": 1.0,
        "cites_passed": True,
        "cites_result": "pass",
        "cites_reason": None,
        "cites_status": "completed",
        "cites_threshold": 1.0,
        "cites_properties": None,
    }
    assert m(response="no source")["cites_result"] == "fail"

    @function_metric(threshold=0.5)
    def short(response: str) -> float:
        return 1.0 if len(response) < 20 else 0.0

    assert short(response="brief")["short_result"] == "pass"
    assert function_metric(lambda response: {"n": len(response)}, name="n")(response="abc") == {"n": 3}


def _write(tmp_path: Path, text: str, name: str = "metrics.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def test_metrics_file_and_evaluate(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], tmp_path: Path
) -> None:
    _write(tmp_path, """
        def cites_a_document(response, context=None):
            return 1.0 if "Trailglow" in response else 0.0
        """, "checks.py")
    path = _write(tmp_path, """
        metrics:
          - name: politeness
            criteria: The response is courteous and respectful to the user.
            scale: [1, 5]
            inputs: [query, response]
            threshold: 4
            examples:
              - inputs: {query: "Where is my order?", response: "Figure it out yourself."}
                score: 1
                reason: Dismissive.
          - name: names_product
            function: checks.py:cites_a_document
            threshold: 1
        """)
    seen = record(fake_openai, {"reason": "Polite.", "score": 5})
    evs = metrics_from_file(path, model_config=judge_config)
    assert set(evs) == {"politeness", "names_product"}
    rows = [
        {"query": "Which lantern?", "response": "The Trailglow 300."},
        {"query": "Q", "response": "No idea."},
    ]
    result = evaluate(data=rows, evaluators=evs, store=tmp_path / "runs.db")
    r0, r1 = result["rows"]
    assert r0["outputs.politeness.politeness"] == 5 and r0["outputs.politeness.politeness_result"] == "pass"
    assert (
        r0["outputs.names_product.names_product"] == 1.0
        and r1["outputs.names_product.names_product_result"] == "fail"
    )
    assert result["metrics"]["politeness.politeness"] == 5
    assert len(seen) == 2 and "Dismissive." in seen[0].messages[0]["content"]
    config = result.run["config"]["evaluators"]["politeness"]["options"]
    assert config["rubric"]["criteria"].startswith("The response is courteous")
    assert config["prompts"]["rubric"]["hash"].startswith("sha256:")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("metrics: []", "expected a 'metrics' list"),
        ("metrics:\n  - criteria: x", "needs a 'name'"),
        ("metrics:\n  - name: a", "either 'criteria'"),
        ("metrics:\n  - name: a\n    criteria: x\n    function: m:f", "either 'criteria'"),
        ("metrics:\n  - name: a\n    criteria: x\n    colour: red", "unknown field"),
        ("metrics:\n  - name: a\n    criteria: x\n  - name: a\n    criteria: y", "defined twice"),
        ("metrics:\n  - name: a\n    function: nowhere_module_xyz:f", "cannot import"),
        ("metrics:\n  - name: a\n    function: missing.py:f", "no file"),
        ("metrics: [", "not valid YAML"),
    ],
)
def test_metrics_file_errors(tmp_path: Path, judge_config: dict[str, str], text: str, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        metrics_from_file(_write(tmp_path, text), model_config=judge_config)


def test_metrics_file_rubric_without_judge(tmp_path: Path) -> None:
    path = _write(tmp_path, "metrics:\n  - name: tone\n    criteria: Friendly.\n")
    with pytest.raises(ConfigurationError, match="metric tone needs a judge model"):
        metrics_from_file(path, model_config=None)
