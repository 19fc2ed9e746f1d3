"""``touchstone monitor`` on the command line: bad options exit 2 before anything runs (no secret in
the message), and an HTTP source serves, evaluates closed windows and stops on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from touchstone.cli.app import app
from touchstone.monitor.store import stored_windows
from touchstone.store import RunStore

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--window", "1w"], "--window"),
        (["--sample-rate", "0"], "--sample-rate"),
        (["--sample-rate", "1.5"], "--sample-rate"),
        (["--baseline", "-1"], "--baseline"),
        (["--alpha", "1"], "--alpha"),
        (["--threshold", "coherence=3"], "not one of the chosen metrics"),
        (["--threshold", "f1_score=high"], "--threshold"),
        (["--webhook", "ftp://u:pw-secret@example.org/x"], "--webhook"),
        (["--name", "a/b"], "--name"),
        (["-m", "f1_scroe"], "f1_score"),
    ],
)
def test_bad_options_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "src").mkdir()
    base = ["monitor", str(tmp_path / "src"), "-m", "f1_score", "--once", "--store", str(tmp_path / "r.db")]
    result = runner.invoke(app, base + args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "pw-secret" not in result.output


def test_bad_sources_exit_2(tmp_path: Path) -> None:
    for source, message in (
        (str(tmp_path / "missing"), "no such directory"),
        ("http://127.0.0.1:4318", "--once reads a directory"),
        ("http://host-without-port", "HOST:PORT"),
    ):
        result = runner.invoke(app, ["monitor", source, "-m", "f1_score", "--once"])
        assert result.exit_code == 2 and message in result.output, result.output


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_http_source_serves_evaluates_and_stops(tmp_path: Path) -> None:
    port = free_port()
    store = tmp_path / "runs.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "touchstone.cli",
            "monitor",
            f"http://127.0.0.1:{port}",
            "-m",
            "f1_score",
            "--window",
            "1h",
            "--poll",
            "0.2",
            "--store",
            str(store),
            "--name",
            "api",
            "-q",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        rows = [
            {
                "id": f"r{i}",
                "timestamp": f"2025-05-01T10:{i:02d}:00Z",
                "response": "a b",
                "ground_truth": "a b",
            }
            for i in range(5)
        ]
        body = "\n".join(json.dumps(r) for r in rows).encode()
        deadline = time.monotonic() + 60
        while True:  # until the server listens
            try:
                req = urllib.request.Request(
                    f"http://127.0.0.1:{port}/v1/interactions", data=body, method="POST"
                )
                with urllib.request.urlopen(req, timeout=5) as reply:
                    assert json.loads(reply.read()) == {"received": 5, "kept": 5}
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, proc.stdout and proc.stdout.read()
                time.sleep(0.2)
        while not (store.exists() and stored_windows(RunStore(store), "api")):  # the past window closes
            assert time.monotonic() < deadline, "the window was not evaluated"
            time.sleep(0.2)
        (window,) = stored_windows(RunStore(store), "api")
        assert window.summary["f1_score.f1_score"]["n"] == 5
    finally:
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=30)[0].decode()
    assert proc.returncode == 130, output
    assert "listening on http://127.0.0.1" in output


def test_closed_only_leaves_the_open_window_pending(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    src = tmp_path / "src"
    src.mkdir()
    rows = [
        {"id": "old", "timestamp": "2025-05-01T10:00:00Z", "response": "a", "ground_truth": "a"},
        {"id": "new", "timestamp": now, "response": "a", "ground_truth": "a"},
    ]
    (src / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = [
        "monitor",
        str(src),
        "-m",
        "f1_score",
        "--window",
        "1d",
        "--once",
        "--closed-only",
        "--store",
        str(tmp_path / "runs.db"),
        "--state",
        str(tmp_path / "state"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert [w.start for w in stored_windows(RunStore(tmp_path / "runs.db"), "src")] == [1746057600]
    pending = (tmp_path / "state" / "pending.jsonl").read_text().splitlines()
    assert [json.loads(p)["d"]["id"] for p in pending] == ["new"]
    result = runner.invoke(app, [a for a in args if a != "--closed-only"])  # everything present
    assert result.exit_code == 0 and len(stored_windows(RunStore(tmp_path / "runs.db"), "src")) == 2
