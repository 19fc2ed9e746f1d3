"""The pairwise judge on the loopback fake server: every pair asked in both orders (the responses
swapped), agreeing orders give the vote, a position-biased judge's disagreement becomes a tie, bad
pairs are refused before any call, and ``touchstone pairwise`` writes votes ``touchstone rank`` reads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest
from typer.testing import CliRunner

from touchstone.cli.app import app
from touchstone.errors import InputValidationError
from touchstone.people.pairwise_judge import combine, judge_votes, read_pick
from touchstone.people.votes import load_battles

runner = CliRunner()
BLOCK = re.compile(r'<data name="(\w+)">\n(.*?)\n</data>', re.DOTALL)

PAIRS = [
    {
        "question_id": "p1",
        "query": "Capital of France?",
        "model_a": "sys-x",
        "model_b": "sys-y",
        "response_a": "Paris. GOOD",
        "response_b": "Lyon.",
    },
    {
        "question_id": "p2",
        "query": "2 + 2?",
        "model_a": "sys-x",
        "model_b": "sys-y",
        "response_a": "5.",
        "response_b": "4. GOOD",
    },
    {
        "question_id": "p3",
        "query": "Say hi",
        "model_a": "sys-y",
        "model_b": "sys-z",
        "response_a": "hi",
        "response_b": "hello",
    },
]


def blocks(req: FakeRequest) -> dict[str, str]:
    return dict(BLOCK.findall(req.last_user))


def content_judge(fake: FakeOpenAIServer) -> list[dict[str, str]]:
    """Prefers the response marked GOOD (a tie when none is): a judge without position bias."""
    seen: list[dict[str, str]] = []

    def handler(req: FakeRequest) -> str:
        data = blocks(req)
        seen.append(data)
        a, b = "GOOD" in data["response_a"], "GOOD" in data["response_b"]
        return json.dumps({"reason": "r", "winner": "A" if a and not b else "B" if b and not a else "tie"})

    fake.handler = handler
    return seen


def config(fake: FakeOpenAIServer) -> dict[str, str]:
    return {"model": "fake-judge", "base_url": fake.base_url, "api_key": "sk-test-not-a-real-key-0000"}


def test_both_orders_asked_and_agreeing_votes(fake_openai: FakeOpenAIServer) -> None:
    seen = content_judge(fake_openai)
    result = judge_votes(PAIRS, config(fake_openai))
    assert len(seen) == 2 * len(PAIRS)
    for pair in PAIRS:
        shown = [(d["response_a"], d["response_b"]) for d in seen if d["query"] == pair["query"]]
        assert sorted(shown) == sorted(
            [(pair["response_a"], pair["response_b"]), (pair["response_b"], pair["response_a"])]
        )
    assert [v["winner"] for v in result.votes] == ["model_a", "model_b", "tie"]
    assert [v["question_id"] for v in result.votes] == ["p1", "p2", "p3"]
    assert all(v["judge"]["orders_agree"] for v in result.votes) and result.position_ties == 0
    assert result.judge["stats"]["calls"] == 2 * len(PAIRS)  # the session's accounting is returned
    assert load_battles(result.votes) == [
        ("sys-x", "sys-y", 1.0),
        ("sys-x", "sys-y", 0.0),
        ("sys-y", "sys-z", 0.5),
    ]


def test_position_bias_becomes_a_tie(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = lambda req: json.dumps({"reason": "first is best", "winner": "A"})
    result = judge_votes(PAIRS, config(fake_openai))
    assert [v["winner"] for v in result.votes] == ["tie", "tie", "tie"]
    assert result.position_ties == 3
    assert all(v["judge"]["order_ab"] == "A" and v["judge"]["order_ba"] == "A" for v in result.votes)


def test_combine_and_reader() -> None:
    assert combine("A", "B") == "model_a" and combine("B", "A") == "model_b"
    assert combine("A", "A") == "tie" and combine("tie", "tie") == "tie" and combine("A", "tie") == "tie"
    assert read_pick('{"reason": "x", "winner": " b "}') == ("B", None)
    assert read_pick('{"winner": "Tie"}') == ("tie", None)
    assert read_pick('{"winner": "both"}')[0] is None


def test_bad_pairs_refused_before_any_call(fake_openai: FakeOpenAIServer) -> None:
    content_judge(fake_openai)
    bad = [{**PAIRS[0], "response_b": ""}, {**PAIRS[1], "model_b": "sys-x"}]
    with pytest.raises(InputValidationError) as info:
        judge_votes(bad, config(fake_openai))
    assert 'field "response_b"' in str(info.value) and "same system" in str(info.value)
    assert fake_openai.count == 0


def test_unusable_reply_is_a_failed_pair(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = lambda req: json.dumps({"reason": "x", "winner": "neither"})
    result = judge_votes(PAIRS[:1], config(fake_openai))
    assert result.votes == [] and len(result.failures) == 1 and "winner" in result.failures[0]["error"]


def test_pairwise_cli_then_rank(
    fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TOUCHSTONE_JUDGE_MODEL", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    content_judge(fake_openai)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(p) + "\n" for p in PAIRS * 4))
    votes = tmp_path / "votes.jsonl"
    result = runner.invoke(
        app,
        [
            "pairwise",
            str(pairs),
            "-o",
            str(votes),
            "--judge-model",
            "fake-judge",
            "--judge-base-url",
            fake_openai.base_url,
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "12 votes written" in " ".join(result.output.split())
    ranked = runner.invoke(app, ["rank", str(votes), "--json", "--bootstrap", "10"])
    assert ranked.exit_code == 0, ranked.output
    assert {s["system"] for s in json.loads(ranked.output)["systems"]} == {"sys-x", "sys-y", "sys-z"}
    no_judge = runner.invoke(app, ["pairwise", str(pairs), "-o", str(votes)])
    assert no_judge.exit_code == 2 and "judge" in no_judge.output
