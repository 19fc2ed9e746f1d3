"""A run with a target keeps the target's outputs in the store only (read back a page at a time, a few
pages held): a large run gives the same rows, metrics and summary as when every output was held."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from touchstone import BleuScoreEvaluator, F1ScoreEvaluator, evaluate
from touchstone.engine import runner, stored_targets
from touchstone.engine.run import session
from touchstone.engine.stored_targets import StoredTargets
from touchstone.evaluators.base import EvaluatorLike
from touchstone.store import RunStore

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran"]


def app(query: str) -> dict[str, Any]:
    """Answers vary with the query; some rows fail, some give a column more."""
    n = len(query)
    if n % 11 == 0:
        raise RuntimeError(f"no answer for {n}")
    out: dict[str, Any] = {"response": " ".join(reversed(query.split())), "took": n % 3}
    if n % 4 == 0:
        out["extra"] = {"k": n}
    return out


def uses_target(response: str, took: int) -> dict[str, Any]:
    return {"mixed": len(response) + took}


def rows(n: int) -> list[dict[str, Any]]:
    rng = random.Random(5)
    out = []
    for _ in range(n):
        query = " ".join(rng.choices(WORDS, k=rng.randint(1, 9)))
        out.append({"query": query, "ground_truth": " ".join(rng.sample(query.split(), 1))})
    return out


def run(tmp_path: Path, name: str) -> Any:
    evs: dict[str, EvaluatorLike] = {
        "f1": F1ScoreEvaluator(), "bleu": BleuScoreEvaluator(), "mixed": uses_target,
    }
    config = {"mixed": {"column_mapping": {"response": "${target.response}", "took": "${target.took}"}}}
    return evaluate(data=rows(900), target=app, evaluators=evs, evaluator_config=config,
                    store=tmp_path / f"{name}.db")


def test_large_target_run_same_as_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "ROWS_IN_MEMORY", 100)
    monkeypatch.setattr(stored_targets, "PAGE_ROWS", 40)
    monkeypatch.setattr(stored_targets, "PAGES", 2)
    held: list[StoredTargets] = []
    most = [0]

    class Watched(StoredTargets):
        def __init__(self, store: Any, run_id: str) -> None:
            super().__init__(store, run_id, stored_targets.PAGE_ROWS, stored_targets.PAGES)
            held.append(self)

        def _page(self, i: int) -> dict[int, Any]:
            page = super()._page(i)
            most[0] = max(most[0], len(self._pages))
            return page

    monkeypatch.setattr(session, "StoredTargets", Watched)
    streamed = run(tmp_path, "store")
    assert held and 0 < most[0] <= 2  # bounded: two pages of 40 rows at most

    monkeypatch.setattr(session, "StoredTargets", lambda store, run_id: {})  # every output held, as before
    before = run(tmp_path, "held")
    assert list(streamed.rows) == list(before.rows)
    assert any("outputs.target_error" in row for row in streamed.rows)
    assert streamed.metrics == before.metrics and streamed.summary == before.summary


def test_pages_read_back_what_the_store_holds(tmp_path: Path) -> None:
    from touchstone.store import StoredRow

    store = RunStore(tmp_path / "s.db")
    run_id = store.create_run({}, None, "0")
    store.put_rows(run_id, [StoredRow(i, "x", i, {"q": i}, {"r": i} if i % 3 else None,
                                      None if i % 3 else f"failed {i}") for i in range(25)])
    targets = StoredTargets(store, run_id, page_rows=4, pages=2)
    assert [targets.get(i) for i in range(25)] == [
        ({"r": i}, None) if i % 3 else (None, f"failed {i}") for i in range(25)
    ]
    assert targets.get(30, "none") == "none" and len(targets._pages) == 2
    targets[31] = ({"r": 31}, None)  # set before the store has it: the page keeps it
    assert targets.get(31) == ({"r": 31}, None)
    targets.update({0: (None, "changed")})
    assert targets.get(0) == (None, "changed")
    store.close()
