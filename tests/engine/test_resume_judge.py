"""A judged run killed with SIGKILL and resumed ends with the results of an uninterrupted run, without
repeating the calls whose replies were already stored or cached."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.fakes.judge_eval import ToyJudgeEvaluator, toy_judge_handler
from tests.fakes.openai_server import FakeOpenAIServer

from touchstone import RunStore, evaluate

ROOT = Path(__file__).resolve().parents[2]
N = 40


def data(tmp_path: Path) -> str:
    path = tmp_path / "data.jsonl"
    with path.open("w") as fh:
        for i in range(N):
            fh.write(json.dumps({"query": f"question {i}", "response": f"answer {i} " * (i % 4 + 1)}) + "\n")
    return str(path)


def child(args: dict[str, Any]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.resume_child", json.dumps(args)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def reference(server: FakeOpenAIServer, path: str, tmp_path: Path) -> list[dict[str, Any]]:
    model = {"model": "fake-judge", "base_url": server.base_url, "api_key": "sk-x"}
    result = evaluate(
        data=path, evaluators={"judge": ToyJudgeEvaluator(model)}, store=tmp_path / "ref.db", cache=False
    )
    return list(result.rows)


def asked(server: FakeOpenAIServer, start: int, query: str) -> int:
    """Requests for row ``query`` received since request number ``start``."""
    return sum(
        1
        for r in server.requests[start:]
        if r.body["messages"][-1]["content"].startswith(f"QUERY: {query}\n")
    )


def test_sigkill_after_a_reply_then_resume(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.handler = toy_judge_handler
    fake_openai.latency = 0.02
    path = data(tmp_path)
    expected = reference(fake_openai, path, tmp_path)
    fake_openai.reset()
    args = {
        "base_url": fake_openai.base_url,
        "store": str(tmp_path / "runs.db"),
        "cache": str(tmp_path / "c.db"),
        "data": path,
        "kill_on": "question 20",
    }

    first = child(args)
    first.communicate(timeout=60)
    assert first.returncode == -signal.SIGKILL
    store = RunStore(tmp_path / "runs.db")
    (killed,) = store.list_runs()
    assert killed.status == "running"  # nobody could mark it: it was killed
    stored_before = set(store.get_scores(killed.id))
    assert (20, "judge") not in stored_before and 0 < len(stored_before) < N
    phase2 = fake_openai.count

    second = child({**args, "kill_on": None, "resume": killed.id})
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    result = json.loads(out)
    assert result["run"] == killed.id
    assert result["rows"] == expected  # identical to the uninterrupted run
    # the reply for row 20 arrived before the kill: cached, not paid for again
    assert asked(fake_openai, 0, "question 20") == 1 and asked(fake_openai, phase2, "question 20") == 0
    # no stored row was asked again
    for idx, _ in stored_before:
        assert asked(fake_openai, phase2, f"question {idx}") == 0
    assert store.get_run(killed.id).status == "completed"  # type: ignore[union-attr]


def test_sigkill_from_outside_then_resume(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.handler = toy_judge_handler
    fake_openai.latency = 0.05
    path = data(tmp_path)
    expected = reference(fake_openai, path, tmp_path)
    args = {
        "base_url": fake_openai.base_url,
        "store": str(tmp_path / "runs.db"),
        "cache": str(tmp_path / "c.db"),
        "data": path,
        "concurrency": 2,
    }
    first = child(args)
    store_path = tmp_path / "runs.db"
    deadline = time.monotonic() + 30
    run_id = None
    while time.monotonic() < deadline:
        if store_path.exists():
            runs = RunStore(store_path).list_runs()
            if runs and RunStore(store_path).count_scores(runs[0].id) >= 8:
                run_id = runs[0].id
                break
        time.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    assert run_id is not None and first.returncode == -signal.SIGKILL
    done_before = RunStore(store_path).count_scores(run_id)
    assert done_before < N

    second = child({**args, "resume": run_id})
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert json.loads(out)["rows"] == expected
