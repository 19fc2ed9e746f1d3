"""Stores for the people-in-the-loop tests: SQLite, and a fresh PostgreSQL database (a real server)
where the test says so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from touchstone.scores import Score
from touchstone.store import open_store
from touchstone.store.base import ScoreRecord, Store, StoredRow


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A new store on each backend."""
    where = str(tmp_path / "runs.db") if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))
    store = open_store(where)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    store = open_store(str(tmp_path / "runs.db"))
    try:
        yield store
    finally:
        store.close()


def make_run(store: Store, name: str, rows: list[dict[str, Any]],
             scores: dict[str, list[tuple[float, dict[str, Any]]]] | None = None) -> str:
    """A finished run of ``rows``; ``scores``: per evaluator (= metric), each row's value and extra
    flat outputs (threshold, properties)."""
    run_id = store.create_run({"evaluators": {k: {} for k in scores or {}}}, name, "test")
    store.put_rows(run_id, [StoredRow(i, "data.jsonl", i + 1, r, None, None) for i, r in enumerate(rows)])
    for metric, values in (scores or {}).items():
        store.put_scores(run_id, metric, [
            ScoreRecord(i, {metric: v, **extra}, False, None, [Score(metric, v)])
            for i, (v, extra) in enumerate(values)
        ])
    store.finish_run(run_id, "completed", {}, {})
    return run_id
