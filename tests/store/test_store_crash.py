"""The run store: real SQLite in WAL mode; killing the process half-way leaves the finished rows; a
round trip on both backends."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from touchstone.store import ScoreRecord, open_store
from touchstone.store.sqlite import RunStore, StoredRow

SCRIPT = textwrap.dedent(
    """
    import sys, time
    from touchstone import evaluate

    def slow(response: str) -> float:
        time.sleep(0.02)
        return float(len(response))

    rows = [{"response": "x" * i} for i in range(400)]
    evaluate(data=rows, evaluators={"slow": slow}, store=sys.argv[1])
    """
)


def test_kill_half_way_leaves_finished_rows(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(db)])
    try:
        deadline = time.time() + 60
        done = 0
        while time.time() < deadline:
            if db.exists():
                try:
                    with sqlite3.connect(db, timeout=5) as c:
                        done = c.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
                except sqlite3.OperationalError:
                    done = 0
            if done >= 20:
                break
            time.sleep(0.05)
        assert done >= 20, "the run never stored a score"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    store = RunStore(db)
    (run,) = store.list_runs()
    assert run.status == "running"  # killed: never finished
    scores = store.get_scores(run.id)
    assert 20 <= len(scores) < 400
    for (idx, name), (outputs, _usage) in scores.items():
        assert name == "slow"
        assert outputs == {"output": float(idx)}  # a plain number is the SDK's `output`
    assert len(store.get_rows(run.id)) == 400  # inputs are written before scoring starts


def test_sqlite_store_is_in_wal_mode(tmp_path: Path) -> None:
    RunStore(tmp_path / "s.db").close()
    mode = sqlite3.connect(tmp_path / "s.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_store_roundtrip(store_location: str) -> None:
    store = open_store(store_location)
    run_id = store.create_run({"data": "x.jsonl", "n_rows": 1}, "demo", "0.1.0")
    store.put_rows(run_id, [StoredRow(0, "x.jsonl", 1, {"q": "é"}, {"response": "r"}, None)])
    store.put_scores(run_id, "f1", [ScoreRecord(0, {"f1_score": 0.5}, False, {"calls": 1})])
    assert store.get_scores(run_id) == {(0, "f1"): ({"f1_score": 0.5}, {"calls": 1})}
    store.finish_run(run_id, "completed", {"f1.f1_score": 0.5}, {"summary": {}})
    info = store.get_run(run_id)
    assert info is not None and info.status == "completed" and info.metrics == {"f1.f1_score": 0.5}
    assert [r.id for r in store.list_runs()] == [run_id]


def test_default_location_from_environment(tmp_path: Path, monkeypatch: object) -> None:
    import pytest

    mp = pytest.MonkeyPatch()
    mp.setenv("TOUCHSTONE_STORE", str(tmp_path / "env.db"))
    try:
        assert RunStore().path == tmp_path / "env.db"
    finally:
        mp.undo()
