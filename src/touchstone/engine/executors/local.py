"""The local executor: threads, and on large inputs a process pool, on this machine.

Spawn-safe and without module-global state in the parent. A run that reads its rows in batches
sends each chunk to a worker as the evaluator's inputs of those rows only (under ``fork``, workers
that inherited a large dataset touched its pages and each ended up holding a copy: about 1 GiB per
worker at 1,000,000 rows). A run whose rows are all in memory anyway and few enough
(:data:`INHERIT_MAX_ROWS`) hands them to the workers it forks, through the pool's initializer (not
pickled under ``fork``), and sends chunks as row indices: pickling every chunk's inputs once per
evaluator, in the parent, cost a tenth of the parent's CPU on 100,000 rows of five text metrics. The
parent's objects are frozen out of the collector before the workers fork. A worker
exits when the process that started the pool dies (``PR_SET_PDEATHSIG`` on Linux, a watchdog
thread polling the parent elsewhere): a killed run leaves no worker behind.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from touchstone.data.loaders import Record
from touchstone.engine.executors.base import Plan, WireRow, run_bounded
from touchstone.engine.executors.scoring import direct_inputs, score_batch, score_wire, score_with_usage
from touchstone.evaluators.base import Evaluator
from touchstone.scores import Outcome
from touchstone.store import encode_outputs


class LocalExecutor:
    """Threads and, on large inputs, a process pool on this machine."""

    def __init__(
        self, records: Sequence[Record], *, processes: int = 0, whole: Sequence[Record] | None = None
    ) -> None:
        """``whole``: every record of the run, when the run holds them all (then handed to forked
        workers if there are at most :data:`INHERIT_MAX_ROWS`)."""
        self.parallel = processes > 1
        self._records = records
        self._pool: ProcessPoolExecutor | None = None
        self._inherited = False
        if self.parallel:
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            if method == "fork":
                # What the parent holds now (modules, evaluators, the batch being read) moves to the
                # collector's permanent generation: the workers' collections then never write to
                # those inherited objects, so their pages stay shared instead of being copied.
                gc.freeze()
            self._inherited = method == "fork" and whole is not None and len(whole) <= INHERIT_MAX_ROWS
            self._pool = ProcessPoolExecutor(
                max_workers=processes,
                mp_context=multiprocessing.get_context(method),
                initializer=start_worker,
                initargs=(os.getpid(), whole if self._inherited else None),
            )

    async def score_batch(self, ev: Evaluator, rows: list[dict[str, Any]]) -> list[Outcome]:
        if self._pool is not None:
            return await asyncio.get_running_loop().run_in_executor(self._pool, score_batch, ev, rows)
        return await asyncio.to_thread(ev.score_batch, rows)

    async def score_indices(self, ev: Evaluator, plan: Plan, indices: list[int]) -> list[WireRow]:
        if self._pool is None:
            raise RuntimeError("score_indices needs a process pool")
        loop = asyncio.get_running_loop()
        if self._inherited:  # the worker has the records: only the indices travel
            return await loop.run_in_executor(self._pool, score_inherited, ev, plan, indices)
        rows = [direct_inputs(plan, self._records[i].data) for i in indices]
        return await loop.run_in_executor(self._pool, score_wire, ev, rows)

    async def encoded_rows(self, indices: list[int]) -> list[str] | None:
        """The rows ``indices``' data as the store's JSON, encoded by a worker that holds the records;
        None when the workers do not hold them (the store encodes them then)."""
        if self._pool is None or not self._inherited:
            return None
        return await asyncio.get_running_loop().run_in_executor(self._pool, encode_inherited, indices)

    async def run_jobs(self, jobs: Iterable[Callable[[], Awaitable[None]]], concurrency: int) -> None:
        await run_bounded(jobs, concurrency)

    async def ascore(self, ev: Evaluator, inputs: dict[str, Any]) -> tuple[Outcome, dict[str, Any]]:
        return await score_with_usage(ev, inputs)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
            gc.unfreeze()  # the parent collects them again (a long session calls evaluate() often)


def default_processes(requested: int | None, pending_rows: int, threshold: int) -> int:
    """Worker processes for CPU-bound metrics: ``requested``, else every core once the input is large
    enough for a pool to pay for itself."""
    workers = requested if requested is not None else (os.cpu_count() or 1)
    return workers if workers > 1 and pending_rows >= threshold else 0


# ------------------------------------------------------------------ in the worker processes
PR_SET_PDEATHSIG = 1
PARENT_POLL_SECONDS = 0.5
INHERIT_MAX_ROWS = 100_000
"""Most rows a run hands to the workers it forks (each worker's copy-on-write pages of them become
its own as it reads them); a larger run sends each chunk's inputs."""


class _Worker:
    """What a worker process of the pool was given when it started (set in the worker only)."""

    records: Sequence[Record] | None = None


def start_worker(parent: int, records: Sequence[Record] | None) -> None:
    """A pool worker's start: end with ``parent``; keep the run's records when it was handed them."""
    exit_with_parent(parent)
    _Worker.records = records


def encode_inherited(indices: list[int]) -> list[str]:
    """In a worker holding the run's records: the rows ``indices``' data as the store's JSON."""
    return [encode_outputs(record.data) for record in _inherited_records(indices)]


def _inherited_records(indices: list[int]) -> list[Record]:
    records = _Worker.records
    if records is None:
        raise RuntimeError("this worker process was not handed the run's records")
    return [records[i] for i in indices]


def score_inherited(ev: Evaluator, plan: Plan, indices: list[int]) -> list[WireRow]:
    """In a worker holding the run's records: score the rows ``indices`` (plain column inputs)."""
    return score_wire(ev, [direct_inputs(plan, record.data) for record in _inherited_records(indices)])


def exit_with_parent(parent: int) -> None:
    """Make this process end when ``parent`` dies: the kernel's parent-death signal on Linux (set
    here, then the parent checked once, as it may have died before), elsewhere a daemon thread that
    notices the process being re-parented."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass  # no prctl: fall back to polling

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="touchstone-parent-watch", daemon=True).start()
