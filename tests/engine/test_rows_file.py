"""evaluate(output_path=...) writes rows.jsonl (and the SDK file's rows) while the run goes: rows are
appended in order as they complete, read back from the store; the finished files are byte for byte
what ``EvaluationResult.write`` writes from the result. Checked on random runs of every kind: small
and large (streamed, rows read back from the store), with a target, resumed, with failed scores,
with judge metrics whose replies finish out of order, and a command-line run killed with SIGKILL."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.engine.test_streaming_run import odd, write_rows
from tests.fakes.judge_eval import ToyJudgeEvaluator, toy_judge_handler
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, schema_instance

from touchstone import F1ScoreEvaluator, evaluate
from touchstone.data import streaming
from touchstone.engine import rows_file, runner
from touchstone.engine.result import RESULTS_FILE
from touchstone.engine.rows_file import RowsFile
from touchstone.evaluators.base import EvaluatorLike

ROOT = Path(__file__).resolve().parents[2]
FILES = ("rows.jsonl", RESULTS_FILE, "summary.json")


@pytest.fixture()
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[RowsFile]]:
    """Ticks every few milliseconds (so small runs write during the run too); the RowsFile of each run."""
    monkeypatch.setattr(rows_file, "TICK_SECONDS", 0.005)
    made: list[RowsFile] = []

    def opening(path: Any) -> RowsFile | None:
        found = rows_file.open_rows_file(path)
        if found is not None:
            made.append(found)
        return found

    monkeypatch.setattr(runner, "open_rows_file", opening)
    yield made


@pytest.fixture()
def large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file streamed, every run's rows read back from the store, small pages."""
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(runner, "ROWS_IN_MEMORY", 0)
    monkeypatch.setattr(rows_file, "PAGE_ROWS", 37)


def same_files(out: Path, result: Any, tmp_path: Path) -> None:
    """``out`` holds exactly what ``result.write`` writes today."""
    ref = tmp_path / f"ref-{out.name}"
    result.write(ref)
    for name in FILES:
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)  # no temporary file left


def slow(response: str) -> dict[str, Any]:
    """A metric slow enough that the files are written several times during a run."""
    time.sleep(0.0002)
    return {"slow_len": len(response)}


def jittery(seed: int) -> Any:
    rng = random.Random(seed)

    def score(response: str, ground_truth: str) -> dict[str, Any]:
        if rng.random() < 0.01:
            time.sleep(0.002)
        return odd(response, ground_truth)

    return score


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_small_runs_write_todays_bytes(made: list[RowsFile], tmp_path: Path, seed: int) -> None:
    path = tmp_path / "data.jsonl"
    write_rows(path, 1500 + 300 * seed, seed=seed)
    evs = {"f1": F1ScoreEvaluator(), "odd": jittery(seed), "slow": slow}
    out = tmp_path / "out"
    result = evaluate(data=str(path), evaluators=evs, store=tmp_path / "s.db", output_path=out)
    assert made[0].during_run > 0  # rows were written before the end
    same_files(out, result, tmp_path)


def test_rows_file_grows_in_place_as_a_prefix(made: list[RowsFile], tmp_path: Path) -> None:
    """A run whose columns never change: what rows.jsonl held mid-run is the start of the final file."""
    seen: list[bytes] = []
    out = tmp_path / "out"

    def watch(response: str) -> dict[str, Any]:
        time.sleep(0.0005)
        if response == "r 1500" and (out / "rows.jsonl").exists():
            seen.append((out / "rows.jsonl").read_bytes())
        return {"watch": 1.0}

    data = [{"response": f"r {i}", "ground_truth": f"r {i % 7}"} for i in range(2000)]
    result = evaluate(data=data, evaluators={"f1": F1ScoreEvaluator(), "watch": watch},
                      store=tmp_path / "s.db", output_path=out)
    same_files(out, result, tmp_path)
    final = (out / "rows.jsonl").read_bytes()
    assert seen and seen[0] and seen[0].endswith(b"\n") and final.startswith(seen[0])
    assert made[0].during_run >= seen[0].count(b"\n")


def test_values_the_store_keeps_as_text(made: list[RowsFile], tmp_path: Path) -> None:
    """A small run renders its rows from the Outcomes in memory: a numpy integer is a number there,
    text in the store (written mid-run); the finished files are still what the result gives."""
    import numpy as np

    def numpy_metric(response: str) -> dict[str, Any]:
        time.sleep(0.0003)
        return {"np_len": np.int64(len(response)), "np_ratio": np.float32(len(response) / 3)}

    data = [{"response": f"r {i}", "ground_truth": "r"} for i in range(1500)]
    out = tmp_path / "out"
    result = evaluate(data=data, evaluators={"n": numpy_metric}, store=tmp_path / "s.db", output_path=out)
    assert made[0].during_run > 0 and result.rows[0]["outputs.n.np_len"] == 3
    same_files(out, result, tmp_path)


def test_small_runs_read_nothing_back(
    made: list[RowsFile], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small run's rows are appended from the Outcomes and records it holds: nothing it wrote is
    read back from the store, and the files are still what the result gives."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a small run's rows were read back from the store")

    monkeypatch.setattr(rows_file, "read_parts", refuse)
    data = [{"response": f"r {i}", "ground_truth": "r"} for i in range(1500)]
    out = tmp_path / "out"
    result = evaluate(data=data, evaluators={"f1": F1ScoreEvaluator(), "slow": slow},
                      store=tmp_path / "s.db", output_path=out)
    assert made[0].during_run > 0 and not made[0].broken
    same_files(out, result, tmp_path)


@pytest.mark.parametrize("seed", [4, 5])
def test_large_streamed_runs_write_todays_bytes(
    made: list[RowsFile], large: None, tmp_path: Path, seed: int
) -> None:
    path = tmp_path / "data.jsonl"
    write_rows(path, 1200, seed=seed)
    out = tmp_path / "out"
    evs = {"f1": F1ScoreEvaluator(), "odd": jittery(seed), "slow": slow}
    result = evaluate(data=str(path), evaluators=evs, store=tmp_path / "s.db", output_path=out)
    assert not isinstance(result.rows, list) and made[0].during_run > 0
    same_files(out, result, tmp_path)


def test_sdk_file_alone(made: list[RowsFile], large: None, tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    write_rows(path, 600, seed=9)
    target = tmp_path / "results.json"
    result = evaluate(data=str(path), evaluators={"odd": odd, "slow": slow}, store=tmp_path / "s.db",
                      output_path=target)
    ref = tmp_path / "ref.json"
    result.write(ref)
    assert target.read_bytes() == ref.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def app(query: str) -> dict[str, Any]:
    """A target whose outputs vary (a column on some rows, ints and floats) and that fails on some."""
    n = len(query)
    if n % 13 == 0:
        raise RuntimeError(f"no answer for {n}")
    out: dict[str, Any] = {"response": query.upper(), "took": n % 4 if n % 3 else n / 3}
    if n % 5 == 0:
        out["extra"] = {"k": n}
    time.sleep(0.0002)
    return out


@pytest.mark.parametrize("size", ["small", "large"])
def test_runs_with_a_target(made: list[RowsFile], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            size: str) -> None:
    if size == "large":
        monkeypatch.setattr(runner, "ROWS_IN_MEMORY", 0)
        monkeypatch.setattr(rows_file, "PAGE_ROWS", 41)
    rng = random.Random(11)
    data = [{"query": " ".join(rng.choices(["a", "bb", "ccc"], k=rng.randint(1, 12))), "ground_truth": "a"}
            for _ in range(700)]
    out = tmp_path / "out"
    result = evaluate(data=data, target=app, evaluators={"f1": F1ScoreEvaluator(), "slow": slow},
                      store=tmp_path / "s.db", output_path=out)
    assert any("outputs.target_error" in row for row in result.rows)
    same_files(out, result, tmp_path)


@pytest.mark.parametrize("size", ["small", "large"])
def test_resumed_runs_rewrite_the_files(made: list[RowsFile], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        size: str) -> None:
    if size == "large":
        monkeypatch.setattr(runner, "ROWS_IN_MEMORY", 0)
        monkeypatch.setattr(rows_file, "PAGE_ROWS", 29)
    path = tmp_path / "data.jsonl"
    write_rows(path, 900, seed=3)
    evs: dict[str, EvaluatorLike] = {"f1": F1ScoreEvaluator(), "odd": odd, "slow": slow}
    store = tmp_path / "s.db"
    first = evaluate(data=str(path), evaluators=evs, store=store)
    run_id = first.run["id"]
    with sqlite3.connect(store) as db:  # the run as a crash leaves it: some results never stored
        for table in ("scores", "score_values"):
            db.execute(f"DELETE FROM {table} WHERE run_id = ? AND idx % 7 = 3 AND evaluator = 'odd'",
                       (run_id,))
            db.execute(f"DELETE FROM {table} WHERE run_id = ? AND idx > 800", (run_id,))
    out = tmp_path / "out"
    out.mkdir()
    (out / "rows.jsonl").write_text("left by the interrupted run\n")
    result = evaluate(data=str(path), evaluators=evs, store=store, resume=run_id, output_path=out)
    assert made[0].during_run > 0
    same_files(out, result, tmp_path)
    assert list(result.rows) == list(first.rows)


def test_judge_metric_replies_out_of_order(made: list[RowsFile], fake_openai: FakeOpenAIServer,
                                           tmp_path: Path) -> None:
    fake_openai.handler = toy_judge_handler
    fake_openai.latency = 0.002
    fake_openai.latency_jitter = 0.03  # replies come back in another order than asked
    model = {"model": "fake-judge", "base_url": fake_openai.base_url, "api_key": "sk-x"}
    data = [{"query": f"q {i}", "response": f"answer {i} " * (i % 5 + 1), "ground_truth": f"answer {i}"}
            for i in range(240)]
    out = tmp_path / "out"
    result = evaluate(data=data, evaluators={"judge": ToyJudgeEvaluator(model), "f1": F1ScoreEvaluator()},
                      store=tmp_path / "s.db", output_path=out, cache=False, concurrency=8)
    assert made[0].during_run > 0
    same_files(out, result, tmp_path)


def test_no_output_path_watches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a RowsFile was made without an output path")

    monkeypatch.setattr(RowsFile, "__init__", refuse)
    result = evaluate(data=[{"response": "cat", "ground_truth": "cat"}],
                      evaluators={"f1": F1ScoreEvaluator()}, store=tmp_path / "s.db")
    assert result.rows[0]["outputs.f1.f1_score"] == 1.0


def test_an_output_folder_that_cannot_be_made_stops_the_run_first(tmp_path: Path) -> None:
    from touchstone.errors import OutputWriteError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    calls: list[str] = []

    def count(response: str) -> float:
        calls.append(response)
        return 1.0

    with pytest.raises(OutputWriteError, match="cannot create"):
        evaluate(data=[{"response": "a"}], evaluators={"n": count}, store=tmp_path / "s.db",
                 output_path=blocker / "out")
    assert calls == []


# ------------------------------------------------------------------ a run killed mid-way
def slow_judge(fake: FakeOpenAIServer) -> None:
    def handler(req: FakeRequest) -> str:
        reply = schema_instance(req.json_schema or {}, prefer=4)
        reply["score"] = 4
        return json.dumps(reply)

    fake.handler = handler
    fake.latency = 0.03


def cli(tmp_path: Path, fake: FakeOpenAIServer, out: Path, *extra: str, store: str = "runs.db"
        ) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENAI_API_KEY": "sk-test-0000"}
    return subprocess.Popen(
        [sys.executable, "-m", "touchstone.cli", "eval", str(tmp_path / "data.jsonl"), "-m", "coherence",
         "--judge-model", "fake-judge", "--judge-base-url", fake.base_url, "--concurrency", "2",
         "--store", str(tmp_path / store), "--out", str(out), "-q", "--no-cache", *extra],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n") if path.exists() else []


def test_killed_run_leaves_whole_rows_then_resume_finishes(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    slow_judge(fake_openai)
    with (tmp_path / "data.jsonl").open("w") as fh:
        for i in range(150):
            fh.write(json.dumps({"query": f"question {i}", "response": f"answer {i}"}) + "\n")
    fake_openai.latency = 0.0
    ref = tmp_path / "ref"
    whole = cli(tmp_path, fake_openai, ref, store="ref.db")
    assert whole.wait(timeout=120) == 0, whole.communicate()[0]
    expected = lines_of(ref / "rows.jsonl")

    fake_openai.latency = 0.03
    out = tmp_path / "out"
    proc = cli(tmp_path, fake_openai, out)
    try:
        deadline = time.monotonic() + 60
        while len(lines_of(out / "rows.jsonl")) < 12 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()[0]
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    killed = lines_of(out / "rows.jsonl")
    assert killed[-1] == ""  # whole lines only
    assert 10 < len(killed) - 1 < 150
    assert killed[:-1] == expected[: len(killed) - 1]  # what the finished run writes, as far as it got
    assert not (out / RESULTS_FILE).exists()

    with sqlite3.connect(tmp_path / "runs.db") as db:
        (run_id,) = db.execute("SELECT id FROM runs").fetchone()
    fake_openai.latency = 0.0
    resumed = cli(tmp_path, fake_openai, out, "--resume", run_id)
    output = resumed.communicate(timeout=120)[0]
    assert resumed.returncode == 0, output
    final = lines_of(out / "rows.jsonl")
    # (a resumed command-line run renders the threshold as its stored configuration gives it, 3.0)
    assert [json.loads(line) for line in final[:-1]] == [json.loads(line) for line in expected[:-1]]
    sdk = json.loads((out / RESULTS_FILE).read_text())
    assert sdk["rows"] == [json.loads(line) for line in final[:-1]]
    assert sdk["metrics"]["coherence.coherence"] == 4
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]  # the killed run's temporary file too


def test_cli_shows_the_run_when_only_the_files_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files cannot be finished (a full disk at the end): the table is shown, the run is stored, the
    error names the file, exit status 1."""
    from typer.testing import CliRunner

    from touchstone.cli import app as cli_app

    def full(self: RowsFile, result: Any) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RowsFile, "_finish", full)
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"response": f"r {i}", "ground_truth": "r"}) + "\n" for i in range(5)))
    got = CliRunner().invoke(cli_app, ["eval", str(data), "-m", "f1_score", "--store", str(tmp_path / "s.db"),
                                       "--out", str(tmp_path / "out")])
    assert got.exit_code == 1, got.output
    assert "f1_score" in got.output and "No space left" in got.output and "stored as" in got.output
    assert not [p for p in (tmp_path / "out").iterdir() if p.name != "rows.jsonl"]
