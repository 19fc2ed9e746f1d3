"""ContentSafetyEvaluator on the fake judge: per-category thresholds, the one-call mode agreeing with
the four-call mode, calls per row, failures; evaluate()'s SDK metrics and summary; the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.evaluators.safety.safety_fakes import CATEGORIES, hashed_severity, severity_handler
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest
from typer.testing import CliRunner

from touchstone import ContentSafetyEvaluator, ViolenceEvaluator, evaluate
from touchstone.cli.app import app
from touchstone.evaluators.safety import severity_label

CALL_KEYS = (
    "_total_tokens",
    "_prompt_tokens",
    "_completion_tokens",
    "_finish_reason",
    "_sample_input",
    "_sample_output",
    "_model",
)


def engine_score(ev: Any, **inputs: Any) -> Any:
    return asyncio.run(ev.ascore(ev.check_call_inputs(inputs)))


def without_call_keys(out: dict[str, Any]) -> dict[str, Any]:
    """The outputs without the per-call metadata (which differs between one and four calls)."""
    kept = {k: v for k, v in out.items() if not k.endswith(CALL_KEYS)}
    if "evaluation_per_turn" in kept:
        kept["evaluation_per_turn"] = without_call_keys(kept["evaluation_per_turn"])
    return kept


def conversation(*responses: str) -> dict[str, Any]:
    messages: list[dict[str, str]] = []
    for i, r in enumerate(responses):
        messages += [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": r}]
    return {"messages": messages}


def test_keys_thresholds_and_results_per_category(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    scripted = {"violence": 5, "sexual": 1, "self_harm": 3, "hate_unfairness": 6}
    fake_openai.handler = severity_handler(lambda c, r: scripted[c])
    thresholds = {"violence": 5, "sexual": 0, "self_harm": 2, "hate_unfairness": 7}
    for one_call in (False, True):
        ev = ContentSafetyEvaluator(
            judge_config, one_call=one_call, **{f"{c}_threshold": t for c, t in thresholds.items()}
        )
        out = ev(query="q", response=f"answer {one_call}")
        assert [k for k in out if not k.endswith(CALL_KEYS)] == [
            k for c in CATEGORIES for k in (c, f"{c}_score", f"{c}_reason", f"{c}_threshold", f"{c}_result")
        ]
        for c in CATEGORIES:
            assert out[c] == severity_label(scripted[c])
            assert out[f"{c}_score"] == float(scripted[c])
            assert out[f"{c}_threshold"] == thresholds[c]
            assert out[f"{c}_result"] == ("pass" if scripted[c] <= thresholds[c] else "fail")


def test_one_call_mode_agrees_with_four_calls(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    fake_openai.handler = severity_handler()
    four = ContentSafetyEvaluator(judge_config, violence_threshold=2, self_harm_threshold=5)
    one = ContentSafetyEvaluator(judge_config, one_call=True, violence_threshold=2, self_harm_threshold=5)
    rows: list[dict[str, Any]] = [{"query": f"q{i}", "response": f"response number {i}"} for i in range(40)]
    rows += [
        {"conversation": conversation(*(f"conv {i} turn {t}" for t in range(1 + i % 3)))} for i in range(10)
    ]
    for row in rows:
        fake_openai.reset()
        a = four(**row)
        calls_four = fake_openai.count
        fake_openai.reset()
        b = one(**row)
        calls_one = fake_openai.count
        assert without_call_keys(a) == without_call_keys(b)
        turns = len(row["conversation"]["messages"]) // 2 if "conversation" in row else 1
        assert (calls_four, calls_one) == (4 * turns, turns)
        if "response" in row:
            for c in CATEGORIES:
                assert a[f"{c}_score"] == hashed_severity(c, row["response"])


def test_one_call_reply_missing_a_category_fails_all_four(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> str:
        seen.append(req)
        return json.dumps({c: {"reason": "r", "score": 2} for c in CATEGORIES[:3]})

    fake_openai.handler = handler
    outcome = engine_score(ContentSafetyEvaluator(judge_config, one_call=True), response="text")
    assert len(seen) == 2 and "hate_unfairness" in seen[1].last_user  # the repair names the problem
    assert all(outcome[f"{c}_error"] for c in CATEGORIES)
    assert all(f"{c}_score" not in outcome for c in CATEGORIES)
    assert [s.name for s in outcome.scores] == list(CATEGORIES) and all(not s.ok for s in outcome.scores)


def test_one_call_out_of_range_is_a_failure(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    fake_openai.handler = lambda req: json.dumps(
        {c: {"reason": "r", "score": 8 if c == "sexual" else 1} for c in CATEGORIES}
    )
    outcome = engine_score(ContentSafetyEvaluator(judge_config, one_call=True), response="text")
    assert outcome.failed and "sexual.score" in outcome["sexual_error"] and fake_openai.count == 2


def test_four_calls_one_category_failing(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    fake_openai.handler = severity_handler(lambda c, r: 11 if c == "self_harm" else 2)
    outcome = engine_score(ContentSafetyEvaluator(judge_config), response="text")
    assert outcome["self_harm_error"] and "self_harm_score" not in outcome
    assert outcome["violence_score"] == 2.0 and outcome.failed


def write_rows(path: Path, n: int) -> list[str]:
    responses = [f"reply {i}" for i in range(n)]
    path.write_text(
        "".join(json.dumps({"query": f"q{i}", "response": r}) + "\n" for i, r in enumerate(responses))
    )
    return responses


def test_evaluate_metrics_and_summary(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.handler = severity_handler(lambda c, r: 9 if r == "reply 0" else hashed_severity(c, r))
    responses = write_rows(tmp_path / "rows.jsonl", 30)
    result = evaluate(
        data=str(tmp_path / "rows.jsonl"),
        evaluators={
            "violence": ViolenceEvaluator(judge_config, defect_level=6),
            "cs": ContentSafetyEvaluator(judge_config, one_call=True),
        },
        store=tmp_path / "runs.db",
    )
    scored = responses[1:]  # reply 0 failed (severity 9 is outside the scale)
    for name, category in (("violence", "violence"), *(("cs", c) for c in CATEGORIES)):
        severities = [hashed_severity(category, r) for r in scored]
        sdk_rate = round(sum(s >= 4 for s in severities) / len(severities), 2)
        assert result.metrics[f"{name}.{category}_defect_rate"] == sdk_rate
        entry = result.summary[f"{name}.{category}"]
        level = 6 if name == "violence" else 4
        assert entry["defect_level"] == level and entry["n_failed"] == 1 and entry["n"] == 29
        assert entry["n_defects"] == sum(s >= level for s in severities)
        assert entry["defect_rate"] == pytest.approx(entry["n_defects"] / 29)
        assert entry["count_per_level"] == {str(k): severities.count(k) for k in range(8)}
    row0 = result.rows[0]
    assert row0["outputs.violence.violence_error"] and row0["outputs.cs.sexual_error"]


def test_cli_defect_level(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.handler = severity_handler()
    responses = write_rows(tmp_path / "rows.jsonl", 12)
    args = [
        "eval",
        str(tmp_path / "rows.jsonl"),
        "-m",
        "violence,f1_score",
        "--judge-model",
        "fake-judge",
        "--judge-base-url",
        judge_config["base_url"],
        "--store",
        str(tmp_path / "runs.db"),
        "--map",
        "ground_truth=query",
        "--defect-level",
        "5",
        "-o",
        str(tmp_path / "out"),
        "-q",
    ]
    result = CliRunner().invoke(app, args, env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"})
    assert result.exit_code == 0, result.output
    k = sum(hashed_severity("violence", r) >= 5 for r in responses)
    assert f"defect rate {k / 12:.1%} at >= 5" in result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    entry = summary["summary"]["violence.violence"]
    assert entry["defect_level"] == 5 and entry["n_defects"] == k
    bad = CliRunner().invoke(
        app, [*args[:3], "f1_score", *args[4:]], env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}
    )
    assert bad.exit_code == 2 and "--defect-level" in bad.output
