"""``touchstone ui``: serves the dashboard over the given store on a loopback port, prints its address,
stops cleanly on Ctrl+C; bad options and a missing ``ui`` extra are one clear error with exit 2."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tests.ui.conftest import UIRuns
from typer.testing import CliRunner

from touchstone.cli.app import app
from touchstone.cli.ui import is_loopback


def test_serves_the_store_and_stops_on_ctrl_c(ui_runs: UIRuns, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "touchstone.cli", "ui", "--store", str(ui_runs.path), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/runs", line)
        assert found, line + (proc.stderr.read() if proc.stderr and proc.poll() is not None else "")
        assert str(ui_runs.path) in line
        deadline = time.monotonic() + 10
        while True:
            try:
                response = httpx.get(found.group(0), timeout=5)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert response.status_code == 200 and ui_runs.baseline in response.text
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_port_is_an_input_error() -> None:
    result = CliRunner().invoke(app, ["ui", "--port", "70000", "--store", ":memory:"])
    assert result.exit_code == 2
    assert "--port must be between 0 and 65535, got 70000" in result.output


def test_missing_ui_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fastapi", None)  # import fastapi -> ImportError
    result = CliRunner().invoke(app, ["ui", "--store", ":memory:"])
    assert result.exit_code == 2
    assert "needs the fastapi package" in result.output
    assert "pip install 'touchstone-genai[ui]'" in result.output


def test_loopback_hosts() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.4", "::", "example.org"))
