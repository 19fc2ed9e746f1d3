"""engine/executors/local.py: a pool whose forked workers were handed the run's records (a run that holds
them all and has at most INHERIT_MAX_ROWS) scores row indices to the same results as a pool sent
each chunk's inputs; a larger run, or one that does not hold its rows, sends the inputs."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path

import pytest

from touchstone.data.loaders import Record
from touchstone.engine.executors import LocalExecutor, WireRow, local
from touchstone.engine.executors.base import OUTPUTS
from touchstone.evaluators.text import F1ScoreEvaluator

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="records are handed over by fork"
)


def _records(n: int) -> list[Record]:
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    return [
        Record({"response": " ".join(words[: 1 + i % 5]), "ground_truth": " ".join(words[i % 3 :])},
               "rows", i + 1)
        for i in range(n)
    ]


def _score(executor: LocalExecutor, indices: list[int]) -> list[WireRow]:
    plan = (("response", ("response",)), ("ground_truth", ("ground_truth",)))
    try:
        return asyncio.run(executor.score_indices(F1ScoreEvaluator(), plan, indices))
    finally:
        executor.close()


def test_inherited_records_give_the_results_of_sent_inputs() -> None:
    records = _records(300)
    indices = list(range(7, 290, 3))
    inherited = LocalExecutor(records, processes=2, whole=records)
    assert inherited._inherited
    sent = LocalExecutor(records, processes=2)
    assert not sent._inherited
    got = _score(inherited, indices)
    assert got == _score(sent, indices)
    one = F1ScoreEvaluator()
    data = [records[i].data for i in indices]
    assert [row[OUTPUTS]["f1_score"] for row in got] == [
        one(response=d["response"], ground_truth=d["ground_truth"])["f1_score"] for d in data
    ]


def test_a_run_over_the_limit_sends_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "INHERIT_MAX_ROWS", 100)
    records = _records(101)
    executor = LocalExecutor(records, processes=2, whole=records)
    assert not executor._inherited
    assert len(_score(executor, [0, 100])) == 2


def test_a_worker_without_records_says_so() -> None:
    with pytest.raises(RuntimeError, match="not handed the run's records"):
        local.score_inherited(F1ScoreEvaluator(), (), [0])


def test_workers_holding_the_records_encode_them_as_the_store_does() -> None:
    from touchstone.store.sql import dumps

    records = _records(50)
    odd = {"response": "caf\u00e9 \u2028 x", "ground_truth": None, "n": [1, {"k": 2.5}]}
    records[3] = Record(odd, "rows", 4)
    executor = LocalExecutor(records, processes=2, whole=records)
    try:
        got = asyncio.run(executor.encoded_rows([0, 3, 49]))
    finally:
        executor.close()
    assert got == [dumps(records[i].data) for i in (0, 3, 49)]
    sent = LocalExecutor(records, processes=2)
    try:
        assert asyncio.run(sent.encoded_rows([0])) is None  # the store encodes them then
    finally:
        sent.close()


def test_a_pooled_run_stores_the_rows_it_was_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from touchstone import evaluate
    from touchstone.engine import runner
    from touchstone.store import open_store

    monkeypatch.setattr(runner, "PARALLEL_MIN_ROWS", 100)
    data = [dict(r.data, extra={"i": i, "t": "\u00e9"}) for i, r in enumerate(_records(300))]
    store = str(tmp_path / "runs.db")
    result = evaluate(data=data, evaluators={"f1": F1ScoreEvaluator()}, store=store, workers=2)
    stored = open_store(store).get_rows(result.run["id"])
    assert [row.data for row in stored] == data
