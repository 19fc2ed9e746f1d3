"""The rows' digest computed in a forked child (data/digest_aside.py) is the in-process digest."""

from __future__ import annotations

import math
import os
import random
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from touchstone.data import digest_aside
from touchstone.data.digest_aside import PendingDigest, can_fork_aside
from touchstone.data.loaders import Record
from touchstone.data.streaming import data_digest, open_source
from touchstone.errors import InputValidationError
from touchstone.evaluators.text import F1ScoreEvaluator

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


@pytest.fixture
def aside_always(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Fork for any number of rows on any machine; yields the pids of the children forked."""
    monkeypatch.setattr(digest_aside, "ASIDE_MIN_ROWS", 1)
    monkeypatch.setattr(digest_aside, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(digest_aside, "_single_threaded", lambda: True)  # whatever pytest runs
    pids: list[int] = []
    fork = PendingDigest._fork

    def recording(self: PendingDigest) -> None:
        fork(self)
        pids.append(self._pid)

    monkeypatch.setattr(PendingDigest, "_fork", recording)
    yield pids


def _gone(pid: int) -> bool:
    """True when ``pid`` is no child of ours any more (reaped)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


class _Opaque:
    pass


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice(["plain", "naïve café", "日本語", "emoji 🙂", "lone \ud800 half", ""])
    if kind == 1:
        return rng.randint(-(10**20), 10**20)
    if kind == 2:
        return rng.choice([0.1, -2.5, math.nan, math.inf, -math.inf, 1e308])
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return _Opaque()
    if kind == 5:
        return f"doc{rng.randrange(1000)}"
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    if kind == 7:
        return {rng.choice(["b", "a", "ключ", "z"]): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [f"d{rng.randrange(99)}" for _ in range(rng.randrange(30))]


def _records(seed: int, n: int) -> list[Record]:
    rng = random.Random(seed)
    return [Record({f"c{k}": _value(rng) for k in range(rng.randrange(1, 5))}, "<list>", i + 1)
            for i in range(n)]


@pytest.mark.parametrize("seed", range(12))
def test_the_child_gives_the_digest_computed_here(seed: int, aside_always: list[int]) -> None:
    records = _records(seed, random.Random(seed).randrange(1, 300))
    pending = PendingDigest(records, data_digest)
    assert pending.forked
    assert pending.result() == data_digest([records])
    assert not pending.forked and _gone(aside_always[0])


def test_a_child_that_gives_no_answer_leaves_the_digest_to_this_process(aside_always: list[int]) -> None:
    parent = os.getpid()

    def failing_in_child(batches: Sequence[Sequence[Record]]) -> str:
        if os.getpid() != parent:
            raise MemoryError("the child ran out of memory")
        return data_digest(batches)

    records = _records(99, 50)
    pending = PendingDigest(records, failing_in_child)
    assert pending.forked
    assert pending.result() == data_digest([records])
    assert _gone(aside_always[0])


def test_cancel_stops_and_reaps_the_child(aside_always: list[int]) -> None:
    gate = threading.Event()

    def slow(batches: Sequence[Sequence[Record]]) -> str:
        gate.wait(60)  # never set in the child: only a kill ends it
        return data_digest(batches)

    pending = PendingDigest(_records(3, 10), slow)
    assert pending.forked
    pending.cancel()
    assert not pending.forked and _gone(aside_always[0])
    pending.cancel()  # a second cancel is harmless


def test_rows_refused_by_validation_leave_no_child(aside_always: list[int]) -> None:
    rows: list[dict[str, Any]] = [{"response": "a b", "ground_truth": "a"} for _ in range(40)]
    rows[17] = {"response": "a b"}  # ground_truth missing
    with pytest.raises(InputValidationError, match="ground_truth"):
        open_source(rows, {"f1": F1ScoreEvaluator()}, {}, has_target=False)
    assert len(aside_always) == 1 and _gone(aside_always[0])


def test_a_list_source_gets_the_digest_of_its_rows(aside_always: list[int]) -> None:
    rows = [{"response": f"answer {i} ✓", "ground_truth": f"answer {i % 7}"} for i in range(300)]
    source = open_source(rows, {"f1": F1ScoreEvaluator()}, {}, has_target=False)
    assert aside_always, "the digest was computed in a child"
    assert source.records is not None
    assert source.digest == data_digest([source.records])


def test_when_no_child_is_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_aside, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(digest_aside, "_single_threaded", lambda: True)
    lo, hi = digest_aside.ASIDE_MIN_ROWS, digest_aside.ASIDE_MAX_ROWS
    assert can_fork_aside(lo) and can_fork_aside(hi)
    assert not can_fork_aside(lo - 1)  # too few rows to be worth a child
    assert not can_fork_aside(hi + 1)  # so many that holding them twice is a risk
    monkeypatch.setattr(digest_aside, "_single_threaded", lambda: False)
    assert not can_fork_aside(lo)  # another thread: a fork could inherit a held lock
    monkeypatch.setattr(digest_aside, "_single_threaded", lambda: True)
    monkeypatch.setattr(digest_aside, "_usable_cpus", lambda: 1)
    assert not can_fork_aside(lo)  # one core: nothing runs beside the checks


def test_without_a_child_the_digest_is_computed_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_aside, "can_fork_aside", lambda n: False)
    records = _records(5, 20)
    pending = PendingDigest(records, data_digest)
    assert not pending.forked
    assert pending.result() == data_digest([records])


def test_the_usable_cores_are_counted() -> None:
    assert 1 <= digest_aside._usable_cpus() <= (os.cpu_count() or 1)


def test_another_live_thread_is_seen() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, args=(30,))
    thread.start()
    try:
        assert not digest_aside._single_threaded()
    finally:
        stop.set()
        thread.join()


def test_an_interrupted_wait_kills_the_child(
    aside_always: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()

    def slow(batches: Sequence[Sequence[Record]]) -> str:
        gate.wait(60)
        return data_digest(batches)

    pending = PendingDigest(_records(4, 10), slow)

    def interrupted(fd: int, size: int) -> bytes:
        raise KeyboardInterrupt

    monkeypatch.setattr("touchstone.data.digest_aside.os.read", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pending.result()
    assert not pending.forked and _gone(aside_always[0])
