"""engine/store_thread.py: writes run in the order given, off the caller's thread; an error of one
is raised by the next submit or by drain; at most max_pending wait; after close, writes run inline."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from touchstone.engine.store_thread import StoreThread


def test_writes_run_in_order_on_one_other_thread() -> None:
    done: list[int] = []
    threads: set[int] = set()

    def write(i: int) -> None:
        threads.add(threading.get_ident())
        done.append(i)

    writer = StoreThread(max_pending=3)
    for i in range(200):
        writer.submit(write, i)
    writer.drain()
    assert done == list(range(200))
    assert threads and threading.get_ident() not in threads and len(threads) == 1
    writer.close()


def test_an_error_is_raised_by_the_next_submit_or_by_drain() -> None:
    writer = StoreThread()

    def fail() -> None:
        raise OSError("disk full")

    writer.submit(fail)
    with pytest.raises(OSError, match="disk full"):
        writer.drain()
    writer.submit(fail)
    time.sleep(0.05)  # let it fail: the next hand-over reports it
    with pytest.raises(OSError, match="disk full"):
        writer.submit(lambda: None)
    writer.close()


def test_the_caller_waits_once_max_pending_writes_wait() -> None:
    gate = threading.Event()
    started: list[int] = []

    def slow(i: int) -> None:
        started.append(i)
        gate.wait(5)

    writer = StoreThread(max_pending=2)
    writer.submit(slow, 0)
    writer.submit(slow, 1)
    blocked = threading.Thread(target=writer.submit, args=(slow, 2))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # two wait: the third hand-over waits for the oldest
    gate.set()
    blocked.join(5)
    assert not blocked.is_alive()
    writer.close()
    assert started == [0, 1, 2]


def test_close_drains_and_later_writes_run_in_the_caller() -> None:
    done: list[tuple[int, int]] = []
    writer = StoreThread()
    writer.submit(lambda: done.append((1, threading.get_ident())))
    writer.close()
    assert [i for i, _ in done] == [1]
    writer.submit(lambda: done.append((2, threading.get_ident())))
    assert done[-1] == (2, threading.get_ident())


def test_a_run_whose_store_fails_to_write_results_says_so(tmp_path: Path) -> None:
    from touchstone import evaluate
    from touchstone.evaluators.text import F1ScoreEvaluator
    from touchstone.store.sqlite import RunStore

    class FullDisk(RunStore):
        def put_scores(self, *args: Any, **kwargs: Any) -> None:
            raise OSError("no space left on device")

    data = [{"response": f"a b {i}", "ground_truth": "a b"} for i in range(40)]
    with pytest.raises(OSError, match="no space left"):
        store = FullDisk(tmp_path / "runs.db")
        evaluate(data=data, evaluators={"f1": F1ScoreEvaluator()}, store=store, workers=1)
