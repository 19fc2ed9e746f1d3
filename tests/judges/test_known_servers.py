"""What a run learnt about a judge server (it answers; the structured-output mode it takes) is reused
by the next run in the same process: no contact probe, no renegotiation. Still, a remembered server
that now fails every call stops the run early, and nothing is reused past its time or across keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.fakes.judge_eval import ToyJudgeEvaluator, expected_score, toy_judge_handler
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, Reply

from touchstone import evaluate
from touchstone.errors import RunAbortedError
from touchstone.judges import known_servers

KEY = "sk-test-secret-key-abcdef123456"
FAST: dict[str, Any] = {"timeout": 2.0, "judge_settings": {"backoff_base": 0.001, "backoff_max": 0.01}}


def run(server: FakeOpenAIServer, tmp_path: Path, name: str, *, key: str = KEY, n: int = 12) -> Any:
    config = {"model": "fake-judge", "base_url": server.base_url, "api_key": key}
    return evaluate(
        data=[{"query": f"q{i}", "response": f"answer {i}"} for i in range(n)],
        evaluators={"judge": ToyJudgeEvaluator(config)}, store=tmp_path / f"{name}.db",
        cache=False, concurrency=8, **FAST,
    )


def formats(server: FakeOpenAIServer) -> list[str | None]:
    return [(r.body.get("response_format") or {}).get("type") for r in server.requests]


@pytest.fixture
def watched(fake_openai: FakeOpenAIServer) -> tuple[FakeOpenAIServer, list[int]]:
    """The server answers the toy judge after 0.2 s and notes how many requests were in flight when
    each arrived (1 for the second request means it waited for the first: the contact probe)."""
    in_flight: list[int] = []

    def handler(r: FakeRequest) -> Reply:
        in_flight.append(fake_openai.active)
        return toy_judge_handler(r)

    fake_openai.handler = handler
    fake_openai.latency = 0.2
    fake_openai.rejected_formats = frozenset({"json_schema"})
    return fake_openai, in_flight


def test_a_later_run_starts_from_what_the_first_learnt(
    watched: tuple[FakeOpenAIServer, list[int]], tmp_path: Path
) -> None:
    server, in_flight = watched
    first = run(server, tmp_path, "first")
    assert formats(server) == ["json_schema"] + ["json_object"] * 12
    assert in_flight[1] == 1  # a new server: the second request waited for the first
    assert "negotiated" not in first.run["judge"]["models"][0]
    server.reset()
    in_flight.clear()

    second = run(server, tmp_path, "second")
    assert second.n_failed == 0
    assert [r["outputs.judge.toy_judge"] for r in second.rows] == [
        expected_score(f"answer {i}") for i in range(12)
    ]
    assert formats(server) == ["json_object"] * 12  # no rejected json_schema this time
    assert in_flight[1] >= 2  # no probe: the first requests went out together
    model = second.run["judge"]["models"][0]
    assert model["structured_output"] == "json_object"
    assert model["negotiated"].startswith("remembered")


def test_a_remembered_server_failing_every_call_still_stops_early(
    watched: tuple[FakeOpenAIServer, list[int]], tmp_path: Path
) -> None:
    server, _ = watched
    run(server, tmp_path, "first")
    server.reset()
    server.handler = lambda r: Reply(status=500, error="llama_decode returned -3")
    with pytest.raises(RunAbortedError, match="same error"):
        run(server, tmp_path, "second", n=60)
    # the rows in flight (8) and a few retries, not 60 rows' retries
    assert server.count <= 8 + 4


def test_nothing_is_reused_past_its_time_or_for_another_key(
    watched: tuple[FakeOpenAIServer, list[int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, in_flight = watched
    run(server, tmp_path, "first")
    server.reset()
    in_flight.clear()
    run(server, tmp_path, "other-key", key="sk-another-key-000000000000")
    assert formats(server)[0] == "json_schema" and in_flight[1] == 1  # negotiated afresh
    server.reset()
    in_flight.clear()
    monkeypatch.setattr(known_servers, "REMEMBER_FOR", 0.0)
    run(server, tmp_path, "late")
    assert formats(server)[0] == "json_schema" and in_flight[1] == 1


def test_what_is_kept_holds_no_secret(watched: tuple[FakeOpenAIServer, list[int]], tmp_path: Path) -> None:
    server, _ = watched
    run(server, tmp_path, "first")
    kept = repr(known_servers._KNOWN)
    assert KEY not in kept and "abcdef123456" not in kept and "json_object" in kept
