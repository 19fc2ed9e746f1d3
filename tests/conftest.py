"""Shared fixtures. ``fake_openai``: a fake OpenAI-compatible server on 127.0.0.1 (a free port),
scripted per test; see ``tests/fakes/openai_server.py``. ``pg_url``: a fresh database on a real
PostgreSQL server started once per session (``tests/store/pg_server.py``). Every test gets a
private judge cache."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.store.pg_server import pg_server, pg_url  # noqa: F401 (PostgreSQL fixtures, used by name)


@pytest.fixture(autouse=True)
def _private_judge_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Judge calls made by a test never read or write the user's ``~/.touchstone/cache.db``."""
    monkeypatch.setenv("TOUCHSTONE_CACHE", str(tmp_path_factory.mktemp("judge-cache") / "cache.db"))


@pytest.fixture(autouse=True)
def _fresh_server_knowledge(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test meets its judge servers as on a new machine: nothing remembered from another test's
    run, in this process or in the file processes share, which is the test's own (never the user's
    ``~/.touchstone/servers.json``; tests/judges/test_known_servers.py checks the remembering)."""
    from touchstone.judges import known_servers

    monkeypatch.setenv("TOUCHSTONE_SERVERS", str(tmp_path_factory.mktemp("servers") / "servers.json"))
    known_servers.forget_all()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A running fake server; set ``handler``, ``latency``, ``max_concurrency``, ``faults``... on it.
    Use ``fake_openai.base_url`` as an OpenAI configuration's ``base_url``."""
    server = FakeOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def judge_config(fake_openai: FakeOpenAIServer) -> dict[str, str]:
    """An OpenAI model configuration (plain dict) pointing at ``fake_openai``."""
    return {"model": "fake-judge", "base_url": fake_openai.base_url, "api_key": "sk-test-not-a-real-key-0000"}


