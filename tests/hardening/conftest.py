"""Shared pieces of the hardening corpus: one fake judge per module, a CLI runner that keeps stdout and
stderr, checks that a refused input cost nothing (no judge call, no run in the store)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakes.openai_server import FakeOpenAIServer
from touchstone.cli import app

INPUTS = Path(__file__).parent / "inputs"
JUDGE_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY",
             "AZURE_OPENAI_DEPLOYMENT", "TOUCHSTONE_JUDGE_MODEL", "TOUCHSTONE_STORE")
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Characters that must never reach the terminal raw (newline and tab are fine)."""


@dataclass
class Outcome:
    code: int
    output: str
    exception: BaseException | None


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeOpenAIServer]:
    """One fake judge for the module; tests call ``judge.reset()`` through ``fresh_judge``."""
    server = FakeOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fresh_judge(judge: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    """The module's judge with its request log cleared, and no judge configured by the environment."""
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)
    judge.reset()
    return judge


def run_cli(*args: str, env: dict[str, str] | None = None) -> Outcome:
    """``touchstone ARGS`` in process; stdout and stderr together."""
    result = CliRunner().invoke(app, list(args), env=env)
    return Outcome(result.exit_code, result.output, result.exception)


def stored_runs(store: Path) -> int:
    """How many runs a store file holds (0 when it was never created)."""
    if not store.exists():
        return 0
    import sqlite3

    with sqlite3.connect(store) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "runs" not in tables:
            return 0
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
