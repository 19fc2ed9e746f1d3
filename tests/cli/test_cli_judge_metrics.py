"""touchstone eval with judge metrics against the loopback fake server: examples/qa.jsonl and
examples/chat.jsonl give rows.jsonl and summary.json with the documented keys; a judge metric with
no judge configured is a clear error before anything runs; --metric-file adds custom metrics."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, schema_instance
from typer.testing import CliRunner

from touchstone.cli import app

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
runner = CliRunner()
JUDGE_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY",
             "AZURE_OPENAI_DEPLOYMENT", "TOUCHSTONE_JUDGE_MODEL")
SINGLE = ["groundedness", "relevance", "coherence", "fluency", "similarity", "retrieval", "retrieval_score"]
CHAT = ["groundedness", "relevance", "coherence", "fluency", "retrieval", "retrieval_score"]


@pytest.fixture(autouse=True)
def _no_judge_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


def judge_replies(fake: FakeOpenAIServer, score: int = 4) -> None:
    """Every metric's schema answered with a valid instance (score ``score``; intents half covered)."""

    def handler(req: FakeRequest) -> str:
        schema = req.json_schema or {}
        if "intents" in schema.get("properties", {}):
            return json.dumps(
                {
                    "intents": [
                        {"intent": "a", "verdict": "Yes", "document_ids": ["kb-01"]},
                        {"intent": "b", "verdict": "No", "document_ids": []},
                    ],
                    "reason": "half",
                }
            )
        reply = schema_instance(schema, prefer=score)
        reply["score"] = score
        return json.dumps(reply)

    fake.handler = handler


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.output


def read(out: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = [json.loads(x) for x in (out / "rows.jsonl").read_text().splitlines()]
    return rows, json.loads((out / "summary.json").read_text())


def test_qa_example_with_judge_metrics(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    judge_replies(fake_openai, score=4)
    out = tmp_path / "o"
    code, output = invoke(
        "eval",
        str(EXAMPLES / "qa.jsonl"),
        "-m",
        ",".join(SINGLE),
        "--judge-model",
        "fake-judge",
        "--judge-base-url",
        fake_openai.base_url,
        "--out",
        str(out),
        "--store",
        str(tmp_path / "runs.db"),
        "-q",
        env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"},
    )
    assert code == 0, output
    rows, summary = read(out)
    assert len(rows) == sum(1 for _ in (EXAMPLES / "qa.jsonl").open())
    for row in rows:
        for m in SINGLE[:-1]:
            for key in (m, f"gpt_{m}", f"{m}_reason", f"{m}_result", f"{m}_threshold"):
                assert f"outputs.{m}.{key}" in row, (m, key)
            assert row[f"outputs.{m}.{m}"] == 4 and row[f"outputs.{m}.{m}_result"] == "pass"
            assert row[f"outputs.{m}.{m}_properties"]["prompt_hash"].startswith("sha256:")
        assert row["outputs.retrieval_score.retrieval_score"] == pytest.approx(2.0)
        assert row["outputs.retrieval_score.retrieval_coverage"] == 0.5
    for m in SINGLE[:-1]:
        assert summary["metrics"][f"{m}.{m}"] == 4
        assert summary["summary"][f"{m}.{m}"]["n_failed"] == 0
    assert summary["metrics"]["retrieval_score.retrieval_score"] == pytest.approx(2.0)
    judge = summary["run"]["config"]["evaluators"]["groundedness"]["options"]["judge"]
    assert judge["model"] == "fake-judge" and "sk-test" not in json.dumps(summary)


def test_chat_example_with_judge_metrics(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    judge_replies(fake_openai, score=2)
    out = tmp_path / "o"
    code, output = invoke(
        "eval", str(EXAMPLES / "chat.jsonl"), "-m", ",".join(CHAT), "--out", str(out),
        "--store", str(tmp_path / "runs.db"), "-q",
        env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000", "OPENAI_BASE_URL": fake_openai.base_url,
             "TOUCHSTONE_JUDGE_MODEL": "fake-judge"},
    )
    assert code == 0, output
    rows, summary = read(out)
    chats = [json.loads(x) for x in (EXAMPLES / "chat.jsonl").read_text().splitlines()]
    for row, chat in zip(rows, chats, strict=True):
        n_turns = sum(1 for m in chat["messages"] if m["role"] == "assistant")
        for m in CHAT:
            per_turn = row[f"outputs.{m}.evaluation_per_turn.{m}"]  # spread per key, as the SDK's rows
            assert len(per_turn) == n_turns
            assert f"outputs.{m}.{m}_reason" in row and f"outputs.{m}.{m}_result" in row
        assert row["outputs.groundedness.groundedness"] == 2
        assert row["outputs.groundedness.groundedness_result"] == "fail"
    assert summary["metrics"]["groundedness.groundedness"] == 2
    assert summary["summary"]["groundedness.groundedness"]["n"] == len(chats)


def test_judge_metric_without_a_judge_is_a_clear_error(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    code, output = invoke(
        "eval", str(EXAMPLES / "qa.jsonl"), "-m", "f1_score,groundedness", "--store", str(store), "-q"
    )
    assert code == 2
    assert "metric groundedness needs a judge model" in output and "--judge-model" in output
    assert "OPENAI_API_KEY" in output and "Traceback" not in output
    assert fake_openai.count == 0
    assert not store.exists() or "groundedness" not in store.read_bytes().decode("latin-1")


def test_metric_file(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    judge_replies(fake_openai, score=5)
    (tmp_path / "checks.py").write_text(
        "def mentions_hours(response):\n    return float('hour' in response)\n"
    )
    metrics = tmp_path / "metrics.yaml"
    metrics.write_text(textwrap.dedent("""
        metrics:
          - name: politeness
            criteria: The response is courteous and respectful.
            inputs: [query, response]
          - name: mentions_hours
            function: checks.py:mentions_hours
            threshold: 1
        """))
    out = tmp_path / "o"
    code, output = invoke(
        "eval",
        str(EXAMPLES / "qa.jsonl"),
        "-m",
        "f1_score,politeness",
        "--metric-file",
        str(metrics),
        "--threshold",
        "politeness=4",
        "--judge-model",
        "fake-judge",
        "--judge-base-url",
        fake_openai.base_url,
        "--out",
        str(out),
        "--store",
        str(tmp_path / "runs.db"),
        "-q",
        env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"},
    )
    assert code == 0, output
    rows, summary = read(out)
    assert all(r["outputs.politeness.politeness"] == 5 for r in rows)
    assert all(r["outputs.politeness.politeness_threshold"] == 4 for r in rows)
    assert {r["outputs.mentions_hours.mentions_hours"] for r in rows} <= {0.0, 1.0}
    assert "f1_score.f1_score" in summary["metrics"] and "mentions_hours.mentions_hours" in summary["metrics"]


def test_metric_file_rubric_without_judge(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics.yaml"
    metrics.write_text("metrics:\n  - name: tone\n    criteria: Friendly.\n")
    code, output = invoke("eval", str(EXAMPLES / "qa.jsonl"), "-m", "f1_score", "--metric-file", str(metrics),
                          "--store", str(tmp_path / "runs.db"), "-q")
    assert code == 2 and "metric tone needs a judge model" in output
