"""Fault corpus (issue 12): resume checks and retries, judge faults that stay fast and say what they
are, store, file and cache faults as one clear message and a non-zero exit, never a traceback.

Judge calls go to the loopback fake server; store faults are real (a folder as the store, a damaged
file, a lock held by another process); a full disk is simulated by making the writer raise ENOSPC
(no tmpfs can be mounted in the test)."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.fakes.judge_eval import ToyJudgeEvaluator, toy_judge_handler
from tests.fakes.openai_server import FakeOpenAIServer, FaultPlan, Reply
from touchstone import F1ScoreEvaluator, RunStore, evaluate
from touchstone.cli.app import app
from touchstone.engine.liveness import shown_status
from touchstone.errors import ConfigurationError, OutputWriteError, StoreError
from touchstone.judges.cache import CacheFailureWarning, JudgeCache
from touchstone.judges.limiter import AdaptiveLimiter
from touchstone.store import sqlite as sqlite_store

FAST: dict[str, Any] = {"timeout": 2.0, "judge_settings": {"backoff_base": 0.001, "backoff_max": 0.01}}
runner = CliRunner()


def rows(n: int, tag: str = "") -> list[dict[str, str]]:
    return [{"query": f"question {i}", "response": f"answer {tag}{i} " * (1 + i % 3)} for i in range(n)]


def judge(server: FakeOpenAIServer) -> ToyJudgeEvaluator:
    return ToyJudgeEvaluator({"model": "fake-judge", "base_url": server.base_url, "api_key": "sk-test"})


def run(server: FakeOpenAIServer, store: Path, data: list[dict[str, str]], **options: Any) -> Any:
    return evaluate(data=data, evaluators={"judge": judge(server)}, store=store, cache=False,
                    **{**FAST, **options})


def eval_cli(*args: str) -> Any:
    return runner.invoke(app, ["eval", *args, "-q"])


def assert_clean(result: Any, code: int, words: str) -> None:
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exit_code == code, text
    assert "Traceback" not in text and words in text


# ------------------------------------------------------------------ resume
def test_resume_with_changed_data_is_refused(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.handler = toy_judge_handler
    first = run(fake_openai, tmp_path / "runs.db", rows(6))
    calls = fake_openai.count
    with pytest.raises(ConfigurationError, match="other data"):
        run(fake_openai, tmp_path / "runs.db", rows(6, tag="x"), resume=first.run["id"])
    assert fake_openai.count == calls  # refused before any judge call


def test_resume_after_an_outage_scores_the_failures_again(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.handler = lambda r: Reply(status=503, error="down for maintenance")
    data = rows(8)
    out = run(fake_openai, tmp_path / "runs.db", data, max_retries=0, judge_settings={
        "backoff_base": 0.001, "backoff_max": 0.01})
    assert out.n_failed == 8
    fake_openai.reset()
    fake_openai.handler = toy_judge_handler
    again = run(fake_openai, tmp_path / "runs.db", data, resume=out.run["id"])
    assert again.n_failed == 0 and fake_openai.count == 8  # each failed row asked once more
    fake_openai.reset()
    third = run(fake_openai, tmp_path / "runs.db", data, resume=out.run["id"])
    assert third.n_failed == 0 and fake_openai.count == 0  # nothing failed is left: nothing asked


def test_resume_retry_choices(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.handler = lambda r: Reply(status=503, error="down")
    data = rows(3)
    out = run(fake_openai, tmp_path / "runs.db", data, max_retries=0)
    assert out.n_failed == 3
    fake_openai.reset()
    fake_openai.handler = toy_judge_handler
    kept = run(fake_openai, tmp_path / "runs.db", data, resume=out.run["id"], retry_failed="none")
    assert kept.n_failed == 3 and fake_openai.count == 0
    retried = run(fake_openai, tmp_path / "runs.db", data, resume=out.run["id"], retry_failed="all")
    assert retried.n_failed == 0 and fake_openai.count == 3


# ------------------------------------------------------------------ judge faults
def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_connection_refused_says_so(transport: str, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    ev = ToyJudgeEvaluator({"model": "m", "base_url": url, "api_key": "k"})
    from touchstone.errors import RunAbortedError

    with pytest.raises(RunAbortedError) as info:
        evaluate(data=rows(5), evaluators={"judge": ev}, store=tmp_path / "r.db", cache=False,
                 http_transport=transport, **FAST)
    assert "connection refused" in str(info.value) and "timed out" not in str(info.value)


def test_sporadic_429s_at_served_levels_do_not_lower_the_limit() -> None:
    import asyncio

    async def main() -> AdaptiveLimiter:
        limiter = AdaptiveLimiter(8)
        for _ in range(20):  # 8 at once are served, then one of them is refused now and then
            tickets = [await limiter.acquire() for _ in range(8)]
            for t in tickets[1:]:
                limiter.release(t, "success")
            limiter.release(tickets[0], "rate_limited")
        slow = await limiter.acquire()
        limiter.release(slow, "error")  # a timeout or dropped connection: no change either
        return limiter

    limiter = asyncio.run(main())
    assert limiter.decreases == 0 and limiter.current == 8 and limiter.ignored_refusals == 20


def test_hung_requests_are_retried_and_do_not_fail_rows(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.handler = toy_judge_handler
    fake_openai.faults = FaultPlan(rate=0.3, kinds=("hang", "429", "500"), seed=5)
    fake_openai.hang_seconds = 1.0
    out = run(fake_openai, tmp_path / "r.db", rows(60), concurrency=8)
    assert out.n_failed == 0
    assert out.run["judge"]["models"][0]["concurrency_min"] >= 4  # 429s at served levels: no collapse
    assert out.run["judge"]["stats"]["calls"] == fake_openai.count


@pytest.mark.parametrize("hedge", [True, False])
def test_hedging_can_be_turned_off(hedge: bool, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """On a paid API each hedge is billed: ``hedge=False`` sends no request twice (a hung one is
    waited for, then retried), and the rows still all get their scores."""
    fake_openai.handler = toy_judge_handler
    fake_openai.faults = FaultPlan(rate=0.2, kinds=("hang",), seed=11)
    fake_openai.hang_seconds = 1.0
    out = run(fake_openai, tmp_path / "r.db", rows(60), concurrency=8, hedge=hedge)
    stats = out.run["judge"]["stats"]
    assert out.n_failed == 0 and stats["calls"] == fake_openai.count
    assert out.run["judge"]["settings"]["hedge"] is hedge
    if hedge:
        assert stats.get("hedged", 0) > 0
    else:
        assert stats.get("hedged", 0) == 0 and stats["retries"] == fake_openai.faults_injected


# ------------------------------------------------------------------ store and file faults
def test_cli_store_folder_corrupt_file_and_out_file(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"response": "a", "ground_truth": "a"}\n')
    assert_clean(eval_cli(str(data), "--store", str(tmp_path)), 2, "is a folder")
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 100)
    assert_clean(eval_cli(str(data), "--store", str(bad)), 2, "damaged")
    target = tmp_path / "f.txt"
    target.write_text("keep me")
    assert_clean(eval_cli(str(data), "--store", str(tmp_path / "s.db"), "--out", str(target)), 2, "is a file")
    assert target.read_text() == "keep me"  # nothing overwritten
    assert not (tmp_path / "s.db").exists() or not RunStore(tmp_path / "s.db").list_runs()  # no run made


def _read_only(path: Path) -> Callable[[], None]:
    """Make ``path`` unwritable even for root (the immutable attribute), else by its mode; returns
    how to undo it."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        return lambda: path.chmod(mode)
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("running as root without chattr +i: a read-only file cannot be made")

    def undo() -> None:
        subprocess.run(["chattr", "-i", str(path)], check=False)

    return undo


@pytest.mark.parametrize("what", ["file", "folder"])
def test_cli_read_only_store(tmp_path: Path, what: str) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"response": "a", "ground_truth": "a"}\n')
    folder = tmp_path / "store"
    folder.mkdir()
    store = folder / "s.db"
    if what == "file":
        assert eval_cli(str(data), "--store", str(store)).exit_code == 0
    undo = _read_only(store if what == "file" else folder)
    try:  # its own process, as a user runs it (no connection of this process is reused)
        command = [sys.executable, "-m", "touchstone.cli", "eval", str(data), "--store", str(store), "-q"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    finally:
        undo()
    output = result.stdout + result.stderr
    assert result.returncode in (1, 2), output
    assert "Traceback" not in output and ("read-only" in output or "writable" in output)
    assert output.count("error:") == 1  # one clear message


LOCKER = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(30)
"""


def test_store_locked_by_another_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    RunStore(path).close()
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT", 0.3)
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        with pytest.raises((StoreError, ConfigurationError)) as info:
            evaluate(data=[{"response": "a", "ground_truth": "a"}], evaluators={"f1": F1ScoreEvaluator()},
                     store=path)
        assert "locked by another process" in str(info.value)
    finally:
        locker.kill()
        locker.wait()


def test_full_disk_leaves_no_truncated_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC simulated: the file write raises as a full disk does part-way through."""
    out_dir = tmp_path / "out"
    result = evaluate(data=[{"response": "a", "ground_truth": "a"}] * 3,
                      evaluators={"f1": F1ScoreEvaluator()}, store=tmp_path / "s.db")
    result.write(out_dir)
    before = (out_dir / "rows.jsonl").read_text()

    def full(fd: int) -> None:  # the disk fills while the file is written: the kernel says so on sync
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputWriteError, match="No space left"):
        result.write(out_dir)
    monkeypatch.undo()
    assert (out_dir / "rows.jsonl").read_text() == before  # the old file whole, not a truncated one
    assert not [p for p in out_dir.iterdir() if p.name.endswith(".tmp")]


def test_killed_run_is_shown_interrupted() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    config = {"process": {"pid": dead.pid, "host": socket.gethostname()}}
    assert shown_status("running", config) == "interrupted"
    alive = {"process": {"pid": os.getpid(), "host": socket.gethostname()}}
    assert shown_status("running", alive) == "running"
    assert shown_status("completed", config) == "completed"


# ------------------------------------------------------------------ cache faults
def test_damaged_cache_warns_once_and_fails_no_row(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.handler = toy_judge_handler
    cache = tmp_path / "cache.db"
    cache.write_bytes(b"garbage, not a database" * 200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = evaluate(data=rows(6), evaluators={"judge": judge(fake_openai)}, store=tmp_path / "r.db",
                       cache_path=str(cache), **FAST)
    assert out.n_failed == 0 and fake_openai.count == 6
    assert sum(1 for w in caught if issubclass(w.category, CacheFailureWarning)) == 1


def test_cache_write_failure_disables_the_cache(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "c.db")
    cache.put_chat("k", "m", {"choices": ["x"]})
    cache.close()  # every later operation fails as a full disk or a lost file would
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache.put_chat("k2", "m", {"choices": ["y"]})
        assert cache.get_chat("k") is None and cache.get_embeddings(["k"]) == {}
    assert cache.broken and len([w for w in caught if issubclass(w.category, CacheFailureWarning)]) == 1


def test_summary_json_is_valid_after_write(tmp_path: Path) -> None:
    result = evaluate(data=[{"response": "a", "ground_truth": "a"}], evaluators={"f1": F1ScoreEvaluator()},
                      store=tmp_path / "s.db")
    result.write(tmp_path / "o")
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["run"]["id"] == result.run["id"]
    time.sleep(0)
