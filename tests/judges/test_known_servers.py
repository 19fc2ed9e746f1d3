"""What a run learnt about a judge server (it answers; the structured-output mode it takes) is reused
by the next run, in the same process or in another one (through the shared file): no contact probe,
no renegotiation. Still, a remembered server that now fails every call stops the run early, and
nothing is reused past its time or across keys; the file holds no secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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
    assert model["negotiated"] == "remembered from an earlier run in this process"


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


def test_a_new_process_starts_from_the_shared_file(
    watched: tuple[FakeOpenAIServer, list[int]], tmp_path: Path
) -> None:
    server, in_flight = watched
    run(server, tmp_path, "first")
    path = known_servers.servers_path()
    assert path is not None and path.is_file()
    server.reset()
    in_flight.clear()
    root = Path(__file__).resolve().parents[2]
    script = (
        "import json, sys\n"
        "from tests.fakes.judge_eval import ToyJudgeEvaluator\n"
        "from touchstone import evaluate\n"
        "cfg = {'model': 'fake-judge', 'base_url': sys.argv[1], 'api_key': sys.argv[2]}\n"
        "r = evaluate(data=[{'query': f'q{i}', 'response': f'answer {i}'} for i in range(12)],\n"
        "             evaluators={'judge': ToyJudgeEvaluator(cfg)}, store=sys.argv[3], cache=False,\n"
        "             concurrency=8)\n"
        "print(json.dumps([r.n_failed, r.run['judge']['models'][0].get('negotiated', '')]))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "src")])}
    done = subprocess.run(
        [sys.executable, "-c", script, server.base_url, KEY, str(tmp_path / "child.db")],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    failed, negotiated = json.loads(done.stdout.strip().splitlines()[-1])
    assert failed == 0 and negotiated.startswith("remembered") and "another process" in negotiated
    assert formats(server) == ["json_object"] * 12  # the other process did not try json_schema
    assert in_flight[1] >= 2  # nor probe the server first


def test_a_server_never_met_is_probed_again(
    watched: tuple[FakeOpenAIServer, list[int]], tmp_path: Path
) -> None:
    server, in_flight = watched
    run(server, tmp_path, "first")
    known_servers.forget_all()  # a new process: the file still knows the server
    server.reset()
    in_flight.clear()
    second = run(server, tmp_path, "second")
    assert formats(server)[0] == "json_object" and in_flight[1] >= 2
    assert "the shared servers file" in second.run["judge"]["models"][0]["negotiated"]
    known_servers.forget_all(disk=True)  # a new machine
    server.reset()
    in_flight.clear()
    run(server, tmp_path, "third")
    assert formats(server)[0] == "json_schema" and in_flight[1] == 1


def test_the_shared_file_holds_no_secret(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.handler = toy_judge_handler
    host = fake_openai.base_url.split("//", 1)[1]
    config = {"model": "fake-judge", "base_url": f"http://alice:pa55word-xyz@{host}", "api_key": KEY}
    evaluate(data=[{"query": "q", "response": "answer"}], evaluators={"judge": ToyJudgeEvaluator(config)},
             store=tmp_path / "s.db", cache=False, **FAST)
    path = known_servers.servers_path()
    assert path is not None
    text = path.read_text()
    assert "fake-judge" in text and host.lower() in text
    for secret in (KEY, "abcdef123456", "alice", "pa55word"):
        assert secret not in text


def test_off_keeps_nothing_on_disk(
    watched: tuple[FakeOpenAIServer, list[int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, in_flight = watched
    monkeypatch.setenv("TOUCHSTONE_SERVERS", "off")
    assert known_servers.servers_path() is None
    run(server, tmp_path, "first")
    known_servers.forget_all()
    server.reset()
    in_flight.clear()
    run(server, tmp_path, "second")
    assert formats(server)[0] == "json_schema" and in_flight[1] == 1


@pytest.mark.parametrize("content", ["{not json", "[]", '{"version": 99, "servers": {}}',
                                     '{"version": 1, "servers": {"k": {"structured": 3}}}'])
def test_a_damaged_file_is_passed_over_and_replaced(
    watched: tuple[FakeOpenAIServer, list[int]], tmp_path: Path, content: str
) -> None:
    server, _ = watched
    path = known_servers.servers_path()
    assert path is not None
    path.write_text(content)
    first = run(server, tmp_path, "first")
    assert first.n_failed == 0 and formats(server)[0] == "json_schema"
    doc = json.loads(path.read_text())
    assert doc["version"] == 1 and len(doc["servers"]) == 1


def test_stale_servers_are_not_used_and_leave_the_file(
    watched: tuple[FakeOpenAIServer, list[int]], tmp_path: Path
) -> None:
    server, in_flight = watched
    path = known_servers.servers_path()
    assert path is not None
    run(server, tmp_path, "first")
    doc = json.loads(path.read_text())
    (key,) = doc["servers"]
    doc["servers"][key]["learnt_at"] = time.time() - known_servers.REMEMBER_FOR - 5
    doc["servers"]["openai:old.example|cred:0|m"] = {**doc["servers"][key]}
    path.write_text(json.dumps(doc))
    known_servers.forget_all()
    server.reset()
    in_flight.clear()
    run(server, tmp_path, "second")
    assert formats(server)[0] == "json_schema" and in_flight[1] == 1  # stale: negotiated afresh
    assert list(json.loads(path.read_text())["servers"]) == [key]  # the other stale one is gone


def test_an_unwritable_location_costs_only_the_head_start(
    watched: tuple[FakeOpenAIServer, list[int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = watched
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TOUCHSTONE_SERVERS", str(blocker / "servers.json"))  # its folder is a file
    result = run(server, tmp_path, "first")
    assert result.n_failed == 0 and not (blocker / "servers.json").exists()


def test_the_file_keeps_the_newest_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(known_servers, "MAX_SERVERS_ON_DISK", 3)
    now = time.time()
    for i in range(5):
        traits = known_servers.ServerTraits("json_schema", frozenset(), now - 100 + i)
        known_servers._write(f"server-{i}", traits)
    path = known_servers.servers_path()
    assert path is not None
    assert sorted(json.loads(path.read_text())["servers"]) == ["server-2", "server-3", "server-4"]
