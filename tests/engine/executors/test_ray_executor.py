"""The Ray executor on a real local cluster (``ray start --head`` on 127.0.0.1, two CPUs, started once
for the module and stopped at its end): the same rows and metrics as the local executor for lexical
and judge metrics (a JSONL, CSV or Parquet file read by Ray Data, not by the driver, gives the local
run's rows and problems), the judge's concurrency kept under the fake server's cap across both judge
workers (one cluster-wide limit) and their provenance merged into the run's, a judge worker or a
task's worker killed mid-run loses no row, and a run whose driver was killed resumes to the local
run's rows. Only this cluster's processes are ever killed (found by a marker in their environment)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.judge_eval import ToyJudgeEvaluator, toy_judge_handler
from tests.fakes.openai_server import FakeOpenAIServer

from touchstone import (
    BleuScoreEvaluator,
    ExactMatchEvaluator,
    F1ScoreEvaluator,
    RunStore,
    evaluate,
)

ray = pytest.importorskip("ray")

from touchstone.engine.executors import RayExecutor  # noqa: E402
from touchstone.errors import InputValidationError  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
RAY = Path(sys.executable).with_name("ray")
MARKER = "TOUCHSTONE_TEST_RAY_CLUSTER"
CLUSTER: dict[str, str] = {}
"""The running cluster's marker value (its temporary directory)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The address of a two-CPU Ray cluster on 127.0.0.1; the driver (this process) connected."""
    port = free_port()
    temp = Path("/tmp") / f"rt{os.getpid()}"  # Ray's socket paths must stay short
    # no token authentication: the cluster is this test's own, on this machine
    auth = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    # the marker in the environment the cluster's processes inherit: the tests kill only those
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0", MARKER: str(temp)}
    # --block: the head's processes end with this one, so stopping it touches no other Ray on the machine
    head = subprocess.Popen(
        [str(RAY), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}",
         "--num-cpus=2", "--include-dashboard=false", f"--temp-dir={temp}", "--disable-usage-stats"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    CLUSTER["marker"] = str(temp)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                ray.init(address=address, log_to_driver=False)
                break
            except Exception:  # the head is still starting
                if time.monotonic() > deadline or head.poll() is not None:
                    raise
                time.sleep(1)
        yield address
    finally:
        ray.shutdown()
        stop_cluster(head, temp)
        if auth is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = auth


def stop_cluster(head: subprocess.Popen[bytes], temp: Path) -> None:
    """End the head's process group and any process of this cluster outside it (found by its
    temporary directory): only this test's processes, never another Ray on the machine."""
    os.killpg(head.pid, signal.SIGKILL)
    head.wait()
    marker = str(temp).encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes():
                    os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                continue
    shutil.rmtree(temp, ignore_errors=True)


def text_rows(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "blue", "Sky", "sky."]

    def sentence() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(0, 9)))

    rows = []
    for i in range(n):
        truth = sentence()
        response = truth if rng.random() < 0.2 else sentence()
        rows.append({"query": f"question {i}", "response": response, "ground_truth": truth})
    return rows


def comparable(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if "duration" not in k} for row in rows]


def test_lexical_metrics_same_as_local(cluster: str, tmp_path: Path) -> None:
    rows = text_rows(3000, seed=7)

    def evs() -> dict[str, Any]:
        return {"f1": F1ScoreEvaluator(), "em": ExactMatchEvaluator(), "bleu": BleuScoreEvaluator()}

    local = evaluate(data=rows, evaluators=evs(), store=tmp_path / "a.db")
    remote = evaluate(data=rows, evaluators=evs(), store=tmp_path / "b.db",
                      executor=RayExecutor(address=cluster))
    assert remote.rows == local.rows
    assert remote.metrics == local.metrics
    assert remote.summary == local.summary


def test_ray_dataset_input_same_as_local(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ray Dataset read by Ray Data (here from a Parquet file, in several blocks) gives the local
    run's rows over the same file, row for row, with the rows numbered in the file's order; its CPU
    metrics ran in map_batches."""
    import pandas as pd

    from touchstone.engine.executors.ray import data as ray_data

    mapped: list[int] = []
    real = ray_data.map_scores

    def spy(*args: Any) -> Any:
        mapped.append(1)
        return real(*args)

    monkeypatch.setattr(ray_data, "map_scores", spy)

    rows = text_rows(1000, seed=13)
    path = tmp_path / "rows.parquet"
    pd.DataFrame(rows).to_parquet(path, row_group_size=200)

    def evs() -> dict[str, Any]:
        return {"f1": F1ScoreEvaluator(), "bleu": BleuScoreEvaluator()}

    local = evaluate(data=str(path), evaluators=evs(), store=tmp_path / "a.db")
    dataset = ray.data.read_parquet(str(path)).repartition(5)
    remote = evaluate(data=dataset, evaluators=evs(), store=tmp_path / "b.db",
                      executor=RayExecutor(address=cluster))
    assert mapped
    assert list(remote.rows) == list(local.rows)
    assert remote.metrics == local.metrics
    assert remote.summary == local.summary


def test_ray_dataset_problems_reported_before_scoring(cluster: str, tmp_path: Path) -> None:
    rows = text_rows(30, seed=1)
    for row in rows[10:13]:
        del row["response"]
    with pytest.raises(InputValidationError) as caught:
        evaluate(data=ray.data.from_items(rows), evaluators={"f1": F1ScoreEvaluator()},
                 store=tmp_path / "a.db", executor=RayExecutor(address=cluster))
    assert [p.line for p in caught.value.problems] == [11, 12, 13]
    assert all(p.source == "<ray dataset>" for p in caught.value.problems)


def tricky_rows(n: int, seed: int) -> list[dict[str, Any]]:
    """Rows whose cells Ray's own readers would change: a column of mixed types, nested values,
    texts with commas, quotes, newlines and non-ASCII letters, empty cells."""
    rows = text_rows(n, seed)
    for i, row in enumerate(rows):
        row["meta"] = [7, "seven", {"n": [1, 2]}, None, 2.5][i % 5]
        if i % 7 == 0:
            row["response"] = f'"{row["response"]}", dit-il,\nen été'
        if i % 11 == 0:
            row["note"] = ""
    return rows


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as a JSONL (with a UTF-8 byte-order mark and blank lines), CSV (BOM, quoted cells,
    empty cells) or Parquet file, by the path's suffix."""
    import pandas as pd

    if path.suffix == ".jsonl":
        lines = [json.dumps(r, ensure_ascii=False) for r in rows]
        lines[3:3] = ["", "   "]
        path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode() + b"\n")
    elif path.suffix == ".csv":
        frame = pd.DataFrame([{k: v for k, v in r.items() if k != "meta"} for r in rows])
        frame.to_csv(path, index=False, encoding="utf-8-sig")
    else:
        frame = pd.DataFrame([{k: v for k, v in r.items() if k != "meta"} for r in rows])
        frame["meta"] = [json.dumps(r["meta"]) for r in rows]
        frame.to_parquet(path, row_group_size=150)


@pytest.mark.parametrize(("suffix", "streamed"), [(".jsonl", False), (".jsonl", True), (".csv", False),
                                                   (".csv", True), (".parquet", False), (".parquet", True)])
def test_file_input_read_by_ray_data_same_as_local(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    suffix: str, streamed: bool,
) -> None:
    """A file path under the Ray executor is read by Ray Data in the cluster (the driver's loader is
    never called) in several parts (JSON lines: byte ranges; a streamed Parquet file: row groups;
    CSV: one part) and parsed by the project's rules: the local run's rows, metrics and summary, row
    for row, for a file loaded whole and for one streamed (the threshold lowered to 0 for both)."""
    import logging
    import re

    from touchstone.data import streaming
    from touchstone.engine import runner
    from touchstone.engine.executors.ray import data as ray_data
    from touchstone.engine.executors.ray import files as ray_files

    monkeypatch.setattr(ray_files, "BLOCK_BYTES", 10_000)  # several blocks: their order is the file's
    monkeypatch.setattr(ray_files, "MIN_RANGE_BYTES", 8192)  # parts of 8 kB: several per file
    monkeypatch.setattr(ray_files, "MAX_RANGE_BYTES", 8192)
    if streamed:
        monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    path = tmp_path / f"rows{suffix}"
    write_rows(path, tricky_rows(700, seed=29))

    def evs() -> dict[str, Any]:
        return {"f1": F1ScoreEvaluator(), "em": ExactMatchEvaluator()}

    local = evaluate(data=str(path), evaluators=evs(), store=tmp_path / "a.db")

    def driver_loader(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the driver read the file")

    mapped: list[int] = []
    real = ray_data.map_scores

    def spy(*args: Any) -> Any:
        mapped.append(1)
        return real(*args)

    monkeypatch.setattr(runner, "open_source", driver_loader)
    monkeypatch.setattr(ray_data, "map_scores", spy)
    with caplog.at_level(logging.INFO, logger="touchstone.engine.executors.ray.files"):
        remote = evaluate(data=str(path), evaluators=evs(), store=tmp_path / "b.db",
                          executor=RayExecutor(address=cluster))
    ours = [r.getMessage() for r in caplog.records if r.name == "touchstone.engine.executors.ray.files"]
    assert len(ours) == 1
    found = re.fullmatch(rf"read by Ray Data: {re.escape(str(path))} \(700 rows, (\d+) parts, (\d+) blocks\)",
                         ours[0])
    assert found is not None
    parts, blocks = int(found[1]), int(found[2])
    split = suffix == ".jsonl" or (suffix == ".parquet" and streamed)
    assert parts > 3 if split else parts == 1
    assert blocks >= max(7, parts)
    assert mapped  # the CPU metrics ran in map_batches over the file's dataset
    assert list(remote.rows) == list(local.rows)
    assert remote.metrics == local.metrics
    assert remote.summary == local.summary


@pytest.mark.parametrize("streamed", [False, True])
def test_file_problems_named_as_a_local_run_names_them(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: bool
) -> None:
    """A bad file read by Ray Data in several parts fails before anything is scored (no run stored)
    with the local run's problems: the file, the line, the field and what was expected; among them
    a JSON lines file cut in tiny ranges with a BOM, CRLF lines, blank lines, multi-byte characters
    across the cuts, bad lines in a middle range and no final newline."""
    from touchstone.data import streaming
    from touchstone.engine.executors.ray import files as ray_files

    monkeypatch.setattr(ray_files, "MIN_RANGE_BYTES", 300)
    monkeypatch.setattr(ray_files, "MAX_RANGE_BYTES", 300)
    if streamed:
        monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    rows = text_rows(40, seed=3)
    for row in rows[10:12]:
        del row["response"]
    missing = tmp_path / "missing.jsonl"
    missing.write_text("".join(json.dumps(r) + "\n" for r in rows))
    broken = tmp_path / "broken.jsonl"
    lines = [json.dumps(r) for r in rows[:20]]
    lines[4], lines[9] = '{"query": "q", "response": ', "[1, 2]"
    broken.write_text("\n".join(lines) + "\n")
    csv_file = tmp_path / "cells.csv"
    csv_file.write_text("query,response,ground_truth\nq,a,a\nq,b,b,extra\n")
    tricky = tmp_path / "tricky.jsonl"
    lines = [json.dumps({**row, "response": f"{'x' * (i % 5)}é€😀中 {row['response']}"}, ensure_ascii=False)
             for i, row in enumerate(text_rows(40, seed=5))]
    lines[3:3] = ["", "  ", "\t"]
    lines[21], lines[24], lines[26] = '{"response": "cut', '"a string"', lines[26].replace("é", "\\ud800", 1)
    tricky.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode())
    assert tricky.stat().st_size > 6 * 300
    for path in (missing, broken, tricky, csv_file):
        caught = {}
        for kind, executor in (("local", None), ("ray", RayExecutor(address=cluster))):
            with pytest.raises(InputValidationError) as exc:
                evaluate(data=str(path), evaluators={"f1": F1ScoreEvaluator()},
                         store=tmp_path / f"{kind}.db", executor=executor)
            caught[kind] = exc.value
        assert caught["ray"].problems == caught["local"].problems
        assert str(caught["ray"]) == str(caught["local"])
        assert all(p.source == str(path) and p.line for p in caught["ray"].problems)
        if path == tricky:
            assert [p.line for p in caught["ray"].problems] == [22, 25, 27]
    assert caught["ray"].problems[0].line == 3
    for executor in (None, RayExecutor(address=cluster)):  # named on the driver, before Ray reads
        with pytest.raises(InputValidationError, match="file not found"):
            evaluate(data=str(tmp_path / "absent.csv"), evaluators={"f1": F1ScoreEvaluator()},
                     store=tmp_path / "absent.db", executor=executor)
    assert not (tmp_path / "ray.db").exists() or not RunStore(tmp_path / "ray.db").list_runs()


def test_map_batches_scores_a_dataset_where_its_blocks_are(cluster: str) -> None:
    """The map_batches path (how a run over a Ray Dataset scores CPU metrics): each row still to
    score comes back once, under its index, scored as the local executor scores it; rows already
    stored are skipped."""
    import asyncio

    import numpy as np

    from touchstone.engine.executors import direct_inputs, score_wire
    from touchstone.engine.executors.ray.data import map_scores, open_dataset
    from touchstone.engine.run.inputs import direct_plan as _direct_plan

    rows = text_rows(1200, seed=17)
    evs: dict[str, Any] = {"f1": F1ScoreEvaluator(), "em": ExactMatchEvaluator()}
    source = open_dataset(ray.data.from_items(rows).repartition(4), evs, {}, has_target=False)
    plans = {name: _direct_plan(ev, {}, False) for name, ev in evs.items()}
    stored = {name: np.zeros(len(rows), dtype=bool) for name in evs}
    stored["f1"][100:300] = True  # scored before (a resume): not asked again

    async def collect() -> dict[str, dict[int, Any]]:
        got: dict[str, dict[int, Any]] = {name: {} for name in evs}
        async for name, indices, wire in map_scores(source, evs, plans, stored):
            for i, row in zip(indices, wire, strict=True):
                assert i not in got[name], "a row scored twice"
                got[name][i] = row
        return got

    got = asyncio.run(collect())
    for name, ev in evs.items():
        todo = [i for i in range(len(rows)) if not stored[name][i]]
        assert sorted(got[name]) == todo
        expected = score_wire(ev, [direct_inputs(plans[name], rows[i]) for i in todo])
        assert [got[name][i] for i in todo] == expected


def judge(server: FakeOpenAIServer) -> ToyJudgeEvaluator:
    return ToyJudgeEvaluator({"model": "fake-judge", "base_url": server.base_url, "api_key": "sk-x"})


def test_judge_metric_same_as_local_within_the_servers_cap(
    cluster: str, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.handler = toy_judge_handler
    # 50 ms: a loaded machine's scheduling hiccups stay well below the stall cut-off, so no request
    # looks stalled and hands its slot on while the server still counts it (at 20 ms, with the test
    # suites of other work beside it, a few dozen did and met the cap)
    fake_openai.latency = 0.05
    fake_openai.max_concurrency = 8
    rows = text_rows(240, seed=11)
    local = evaluate(data=rows, evaluators={"judge": judge(fake_openai)}, store=tmp_path / "a.db",
                     cache=False, concurrency=8)
    fake_openai.reset()
    remote = evaluate(data=rows, evaluators={"judge": judge(fake_openai)}, store=tmp_path / "b.db",
                      cache=False, concurrency=8, executor=RayExecutor(address=cluster, judge_workers=2))
    assert comparable(remote.rows) == comparable(local.rows)
    assert remote.metrics == local.metrics
    assert remote.run["status"] == "completed"
    # two workers, one limit of 8: the server was never asked for more than it takes
    assert fake_openai.rejected_busy <= 1
    assert fake_openai.max_active <= 8
    # the judge workers' provenance and counters, merged as one session's
    info = remote.run["judge"]
    assert set(local.run["judge"]) <= set(info)
    assert info["stats"]["calls"] == fake_openai.count_path("/chat/completions")
    assert info["stats"]["prompt_tokens"] == local.run["judge"]["stats"]["prompt_tokens"]
    assert remote.run["usage"]["prompt_tokens"] == local.run["usage"]["prompt_tokens"]
    assert [m["model"] for m in info["models"]] == ["fake-judge"]
    assert info["models"][0]["concurrency_final"] <= 8  # the workers' shares add up to the limit
    assert info["workers"] == 2 and info["cluster_limits"][0]["maximum"] == 8


def cluster_pids(prefix: bytes) -> list[int]:
    """Processes of this test's cluster whose command line starts with ``prefix`` (Ray names a worker
    process after what it runs: ``ray::JudgeWorker...``, ``ray::score_wire``): never another Ray's
    on the machine, such as a benchmark's."""
    marker = f"{MARKER}={CLUSTER['marker']}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "cmdline").read_bytes().startswith(prefix) and marker in (
                entry / "environ"
            ).read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def judge_worker_pids() -> list[int]:
    return cluster_pids(b"ray::JudgeWorker")


def test_judge_worker_killed_mid_run_loses_no_row(
    cluster: str, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.handler = toy_judge_handler
    fake_openai.latency = 0.02
    rows = text_rows(600, seed=3)
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            pids = judge_worker_pids()
            if pids and fake_openai.count >= 100:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.02)

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    result = evaluate(data=rows, evaluators={"judge": judge(fake_openai)}, store=tmp_path / "r.db",
                      cache=False, concurrency=16, executor=RayExecutor(address=cluster))
    killer.join()
    assert killed, "no judge worker was seen to kill"
    assert result.run["status"] == "completed"
    assert len(result.rows) == len(rows)
    stored = RunStore(tmp_path / "r.db").get_scores(result.run["id"])
    assert len(stored) == len(rows)
    expected = evaluate(data=rows, evaluators={"judge": judge(fake_openai)}, store=tmp_path / "l.db",
                        cache=False, concurrency=16)
    assert comparable(result.rows) == comparable(expected.rows)


def test_command_line_executor_ray(cluster: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from touchstone.cli import app

    data = ROOT / "examples" / "qa.jsonl"
    cli = CliRunner()
    outs = {}
    for kind in ("local", "ray"):
        extra = ["--executor", "ray", "--ray-address", cluster] if kind == "ray" else []
        result = cli.invoke(app, ["eval", str(data), "-m", "f1_score,bleu_score", "--store",
                                  str(tmp_path / f"{kind}.db"), "--out", str(tmp_path / kind), "-q", *extra])
        assert result.exit_code == 0, result.output
        outs[kind] = (tmp_path / kind / "rows.jsonl").read_text()
    assert outs["ray"] == outs["local"]


def slow_f1() -> F1ScoreEvaluator:
    """F1 whose batches take long enough for a test to kill the worker process scoring one (its
    class made here, so that Ray sends it by value: workers cannot import this test module)."""

    class SlowF1(F1ScoreEvaluator):
        def score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
            time.sleep(1.5)
            return super().score_batch(rows)

    return SlowF1()


def kill_first(prefix: bytes, ready: Callable[[], bool], killed: list[int]) -> threading.Thread:
    """A thread that kills the first process of this cluster named ``prefix`` once ``ready()``."""

    def run() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            pids = cluster_pids(prefix) if ready() else []
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.02)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_task_worker_killed_mid_run_loses_no_row(cluster: str, tmp_path: Path) -> None:
    """A worker process killed while it scores a batch of a CPU metric: Ray runs the batch again."""
    rows = text_rows(3000, seed=5)
    killed: list[int] = []
    killer = kill_first(b"ray::score_wire", lambda: True, killed)
    remote = evaluate(data=rows, evaluators={"f1": slow_f1()}, store=tmp_path / "r.db",
                      executor=RayExecutor(address=cluster))
    killer.join()
    assert killed, "no task worker was seen to kill"
    local = evaluate(data=rows, evaluators={"f1": F1ScoreEvaluator()}, store=tmp_path / "l.db")
    assert remote.run["status"] == "completed"
    assert len(RunStore(tmp_path / "r.db").get_scores(remote.run["id"])) == len(rows)
    assert list(remote.rows) == list(local.rows)
    assert remote.metrics == local.metrics


DRIVER = """
import json, sys
from tests.fakes.judge_eval import ToyJudgeEvaluator
from touchstone import evaluate
from touchstone.engine.executors import RayExecutor
args = json.loads(sys.argv[1])
judge = ToyJudgeEvaluator({"model": "fake-judge", "base_url": args["base_url"], "api_key": "sk-x"})
evaluate(data=args["data"], evaluators={"judge": judge}, store=args["store"], cache=False, concurrency=8,
         executor=RayExecutor(address=args["address"]))
"""


def stored_scores(store: Path) -> tuple[str | None, int]:
    """The run in ``store`` and how many scores it holds (none yet: ``(None, 0)``)."""
    if not store.exists():
        return None, 0
    runs = RunStore(store).list_runs()
    return (runs[0].id, len(RunStore(store).score_keys(runs[0].id))) if runs else (None, 0)


def test_run_resumes_after_its_driver_was_killed(
    cluster: str, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The driver killed mid-run (its judge workers die with its job): the run resumed from the store
    scores only the rows missing, and its rows are the local run's."""
    fake_openai.handler = toy_judge_handler
    fake_openai.latency = 0.02
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in text_rows(600, seed=9)))
    store = tmp_path / "r.db"
    args = {"data": str(data), "store": str(store), "base_url": fake_openai.base_url, "address": cluster}
    log = tmp_path / "driver.log"
    with log.open("wb") as err:
        driver = subprocess.Popen(
            [sys.executable, "-c", DRIVER, json.dumps(args)], cwd=ROOT,
            env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}, stdout=subprocess.DEVNULL, stderr=err,
        )
    try:
        deadline = time.monotonic() + 120
        # killed once it stored some rows (a driver that dies of itself before is a crash too)
        while stored_scores(store)[1] < 60 and driver.poll() is None:
            assert time.monotonic() < deadline, "the driver stored nothing: " + log.read_text()[-2000:]
            time.sleep(0.05)
    finally:
        driver.kill()
        driver.wait()
    run_id, before = stored_scores(store)
    assert run_id is not None, "the driver stopped before it began the run: " + log.read_text()[-2000:]
    assert before < 600, "the driver finished before it could be killed"
    # the dead driver's judge workers end with its job, a moment later: count requests after that
    deadline = time.monotonic() + 60
    while judge_worker_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not judge_worker_pids(), "the dead driver's judge workers outlived it"
    requests_before = fake_openai.count
    resumed = evaluate(data=data, evaluators={"judge": judge(fake_openai)}, store=store, resume=run_id,
                       cache=False, concurrency=8, executor=RayExecutor(address=cluster))
    assert resumed.run["status"] == "completed"
    assert len(RunStore(store).get_scores(run_id)) == 600
    # only what was missing was asked again (each row needs one call here: no fault, no 429)
    assert fake_openai.count - requests_before <= 600 - before
    local = evaluate(data=data, evaluators={"judge": judge(fake_openai)}, store=tmp_path / "l.db",
                     cache=False, concurrency=8)
    assert comparable(resumed.rows) == comparable(local.rows)
    assert resumed.metrics == local.metrics


def test_judge_workers_share_the_judge_cache(
    cluster: str, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The judge workers read and write the run's judge cache: what a local run cached is served to
    both workers of a Ray run without a request, and the reverse."""
    fake_openai.handler = toy_judge_handler
    cache = tmp_path / "judge-cache.db"
    rows = text_rows(60, seed=5)
    local = evaluate(data=rows, evaluators={"judge": judge(fake_openai)}, store=tmp_path / "a.db",
                     cache=True, cache_path=str(cache), concurrency=8)
    assert fake_openai.count == 60
    fake_openai.reset()
    remote = evaluate(data=rows, evaluators={"judge": judge(fake_openai)}, store=tmp_path / "b.db",
                      cache=True, cache_path=str(cache), concurrency=8,
                      executor=RayExecutor(address=cluster, judge_workers=2))
    assert fake_openai.count == 0  # every reply from the cache the local run wrote
    assert comparable(remote.rows) == comparable(local.rows)
    assert remote.run["judge"]["stats"]["cache_hits"] == 60
    more = text_rows(80, seed=5)[60:]  # rows only the Ray run scores, then a local run reads them
    evaluate(data=more, evaluators={"judge": judge(fake_openai)}, store=tmp_path / "c.db",
             cache=True, cache_path=str(cache), concurrency=8,
             executor=RayExecutor(address=cluster, judge_workers=2))
    asked = fake_openai.count
    assert asked == 20
    again = evaluate(data=more, evaluators={"judge": judge(fake_openai)}, store=tmp_path / "d.db",
                     cache=True, cache_path=str(cache), concurrency=8)
    assert fake_openai.count == asked and again.n_failed == 0


def test_command_line_ray_run_prints_no_ray_log_lines(cluster: str, tmp_path: Path) -> None:
    """Ray's own INFO lines ("Connecting to existing Ray cluster...") stay out of a run's output."""
    import os
    import subprocess
    import sys

    data = ROOT / "examples" / "qa.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "touchstone.cli", "eval", str(data), "-m", "f1_score", "--store",
         str(tmp_path / "r.db"), "-q", "--executor", "ray", "--ray-address", cluster],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "120"},
    )
    assert done.returncode == 0, done.stderr
    assert "f1_score" in done.stdout
    for stream in (done.stdout, done.stderr):
        assert " INFO " not in stream and "Connecting to existing Ray cluster" not in stream, stream
