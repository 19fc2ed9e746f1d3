"""The store suite runs on both backends: ``store_location`` is a SQLite file or a fresh PostgreSQL
database (a real server, ``tests/store/pg_server.py``), as :func:`touchstone.store.open_store` takes
them."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """The backend under test."""
    return str(request.param)


@pytest.fixture
def store_location(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """Where a store of ``backend`` lives: a file path, or a ``postgresql://`` URL with a password."""
    if backend == "sqlite":
        return str(tmp_path / "runs.db")
    return str(request.getfixturevalue("pg_url"))
