"""``touchstone simulate`` and ``touchstone redteam`` on the fake attacker/judge, against an HTTP
application on 127.0.0.1 and a module:function callback: JSONL that ``touchstone eval`` accepts,
reproducible by seed, the scorecard table and JSON, bad options refused (exit 2) before any call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import binomtest
from tests.fakes.openai_server import FakeOpenAIServer
from tests.simulator.sim_fakes import handler
from tests.simulator.target_server import target_server
from typer.testing import CliRunner

from touchstone.cli.app import app

ENV = {"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer(handler=handler).start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def app_url() -> Iterator[str]:
    with target_server() as (url, _):
        yield url


def invoke(args: list[str]) -> Any:
    return CliRunner().invoke(app, args, env=ENV)


def judge_args(judge: FakeOpenAIServer) -> list[str]:
    return ["--judge-model", "fake", "--judge-base-url", judge.base_url]


def test_simulate_writes_conversations_that_eval_accepts(
    judge: FakeOpenAIServer, app_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "sim.jsonl"
    args = ["simulate", "--scenario", "qa", "--target", app_url + "/v1", "--max-simulation-results", "4",
            "--seed", "7", "--out", str(out), "-q", *judge_args(judge)]
    result = invoke(args)
    assert result.exit_code == 0, result.output
    first = out.read_text()
    lines = [json.loads(line) for line in first.splitlines()]
    assert len(lines) == 4 and all(item["messages"][-1]["role"] == "assistant" for item in lines)
    assert [item["id"] for item in lines] == ["c1", "c2", "c3", "c4"]
    assert "4 conversations" in result.output
    assert invoke(args).exit_code == 0
    assert out.read_text() == first  # same seed, same file
    evaluated = invoke(["eval", str(out), "-m", "violence", *judge_args(judge), "--store",
                        str(tmp_path / "runs.db"), "-q"])
    assert evaluated.exit_code == 0, evaluated.output


def test_simulate_with_a_json_post_target_jailbreak_and_qr(
    judge: FakeOpenAIServer, app_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "qr.jsonl"
    result = invoke(["simulate", "-s", "conversation", "--max-conversation-turns", "2",
                     "-t", app_url + "/ask", "--target-body", '{"q": "{query}"}',
                     "--target-response-path", "data.answer", "-n", "2", "--seed", "1", "--jailbreak", "--qr",
                     "-o", str(out), "-q", *judge_args(judge)])
    assert result.exit_code == 0, result.output
    regular = [json.loads(x) for x in out.read_text().splitlines()]
    jailbroken = [json.loads(x) for x in (tmp_path / "qr.jailbreak.jsonl").read_text().splitlines()]
    assert len(regular) == len(jailbroken) == 4  # two conversations of two exchanges
    assert set(regular[0]) == {"id", "query", "response", "category"}
    assert regular[0]["query"] in jailbroken[0]["query"]
    # the same ids in both files, one per exchange, so touchstone jailbreak pairs the rows by id
    assert [r["id"] for r in regular] == [r["id"] for r in jailbroken] == ["c1-t1", "c1-t2", "c2-t1", "c2-t2"]


def test_simulate_indirect_with_a_callback(judge: FakeOpenAIServer, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # so that tests.simulator imports
    out = tmp_path / "xpia.jsonl"
    result = invoke(["simulate", "-s", "indirect", "-t", "tests.simulator.sim_fakes:callback", "-n", "3",
                     "-o", str(out), "-q", *judge_args(judge)])
    assert result.exit_code == 0, result.output
    items = [json.loads(x) for x in out.read_text().splitlines()]
    assert {"xpia_attack_type", "action", "document_type"} <= set(items[0]["template_parameters"]["metadata"])


def test_simulate_all_conversations_failing_exits_1(judge: FakeOpenAIServer, tmp_path: Path) -> None:
    result = invoke(["simulate", "-s", "qa", "-t", "http://127.0.0.1:9/v1", "--target-timeout", "2",
                     "-n", "2", "-o", str(tmp_path / "x.jsonl"), "-q", *judge_args(judge)])
    assert result.exit_code == 1
    assert "target_error" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "nope"], "unknown scenario"),
        (["-s", "qa", "-n", "0"], "--max-simulation-results"),
        (["-s", "qa", "--target-body", "{bad"], "not valid JSON"),
        (["-s", "indirect", "--jailbreak"], "--jailbreak"),
    ],
)
def test_simulate_bad_options_exit_2_before_any_call(
    judge: FakeOpenAIServer, tmp_path: Path, args: list[str], message: str
) -> None:
    before = len(judge.requests)
    result = invoke(["simulate", *args, "-t", "http://127.0.0.1:9/ask", "-o", str(tmp_path / "x.jsonl"),
                     *judge_args(judge)])
    assert result.exit_code == 2 and message in result.output
    assert len(judge.requests) == before


def test_redteam_table_and_json(judge: FakeOpenAIServer, app_url: str, tmp_path: Path) -> None:
    args = ["redteam", app_url + "/v1", "--strategies", "baseline,base64", "--categories", "violence",
            "--objectives", "2", "--seed", "3", "-q", *judge_args(judge)]
    table = invoke([*args, "--out", str(tmp_path / "attacks.jsonl")])
    assert table.exit_code == 0, table.output
    assert "attack success rate" in table.output and "base64" in table.output
    assert len((tmp_path / "attacks.jsonl").read_text().splitlines()) == 4
    doc = json.loads(invoke([*args, "--json"]).output)
    card = doc["scorecard"]
    wilson = binomtest(2, 2).proportion_ci(method="wilson")
    assert card["per_strategy"]["base64"] == {"asr": 1.0, "ci95": pytest.approx([wilson.low, wilson.high]),
                                              "n_success": 2, "n": 2, "n_failed": 0}
    assert doc["settings"]["seed"] == 3 and len(doc["attacks"]) == 4


def test_redteam_bad_options_exit_2(judge: FakeOpenAIServer, app_url: str) -> None:
    for extra, message in ((["--categories", "violence,nope"], "risk categories"),
                           (["--strategies", "base65"], "unknown attack strategy"),
                           (["--defect-level", "9"], "defect")):
        result = invoke(["redteam", app_url + "/v1", *extra, *judge_args(judge)])
        assert result.exit_code == 2 and message in result.output, result.output
