"""Executors: where the engine's work runs.

The engine hands an :class:`Executor` two kinds of work: batches of rows for CPU-bound evaluators
(``score_batch``), and many small async jobs for I/O-bound ones (judge calls), run with a bounded
number in flight. :class:`LocalExecutor` runs batches in a worker thread, or in a process pool on
large inputs, and async jobs on the running event loop; a Ray executor implements the same protocol.

Spawn-safe and without module-global state in the parent: the process pool's workers receive the
run's records once, through the pool's initializer (inherited without a copy under ``fork``,
pickled once per worker under ``spawn``), and chunks of rows are sent as row indices.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol, runtime_checkable

from touchstone.data.loaders import Record
from touchstone.evaluators.base import Evaluator
from touchstone.scores import Outcome, ScoreLine
from touchstone.store.base import score_lines
from touchstone.store.sqlite import encode_outputs

Plan = tuple[tuple[str, tuple[str, ...]], ...]
"""For an evaluator whose inputs are plain columns: ``(input, candidate columns)`` lookups."""

WireRow = tuple[str, dict[str, Any], bool, tuple[ScoreLine, ...]]
"""One row's result as a worker process sends it back: the flat outputs JSON-encoded for the store
and as a dict for the result (unpickling the dict costs the parent less than half of decoding the
JSON: pickle shares the repeated key strings), whether a score failed, and the Scores as
:data:`~touchstone.scores.ScoreLine` tuples. No :class:`~touchstone.scores.Score` objects: a
dataclass per score cost the parent process several times more, and the parent is what limits a
pooled run. The parent writes the store from these as they are and keeps each row as a
:class:`~touchstone.scores.CompactOutcome`, as a resumed run keeps what it reads back."""


@runtime_checkable
class Executor(Protocol):
    """What the engine needs from a place to run work."""

    parallel: bool
    """True when batches run in other processes (rows are then sent as indices where possible)."""

    async def score_batch(self, ev: Evaluator, rows: list[dict[str, Any]]) -> list[Outcome]:
        """``ev.score_batch(rows)``, off the event loop."""
        ...

    async def score_indices(self, ev: Evaluator, plan: Plan, indices: list[int]) -> list[WireRow]:
        """Score the records ``indices`` (plain column inputs by ``plan``) where the records live;
        each row's result as a :data:`WireRow`. Only when ``parallel``."""
        ...

    async def run_jobs(self, jobs: Iterable[Callable[[], Awaitable[None]]], concurrency: int) -> None:
        """Run async jobs with at most ``concurrency`` in progress."""
        ...

    def close(self) -> None:
        ...


class LocalExecutor:
    """Threads and, on large inputs, a process pool on this machine."""

    def __init__(self, records: Sequence[Record], *, processes: int = 0) -> None:
        self.parallel = processes > 1
        self._pool: ProcessPoolExecutor | None = None
        if self.parallel:
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            self._pool = ProcessPoolExecutor(
                max_workers=processes,
                mp_context=multiprocessing.get_context(method),
                initializer=_init_worker,
                initargs=(list(records),),
            )

    async def score_batch(self, ev: Evaluator, rows: list[dict[str, Any]]) -> list[Outcome]:
        if self._pool is not None:
            return await asyncio.get_running_loop().run_in_executor(self._pool, _score_batch, ev, rows)
        return await asyncio.to_thread(ev.score_batch, rows)

    async def score_indices(self, ev: Evaluator, plan: Plan, indices: list[int]) -> list[WireRow]:
        if self._pool is None:
            raise RuntimeError("score_indices needs a process pool")
        return await asyncio.get_running_loop().run_in_executor(self._pool, _score_indices, ev, plan, indices)

    async def run_jobs(self, jobs: Iterable[Callable[[], Awaitable[None]]], concurrency: int) -> None:
        it = iter(jobs)

        async def worker() -> None:
            for job in it:
                await job()

        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


def default_processes(requested: int | None, pending_rows: int, threshold: int) -> int:
    """Worker processes for CPU-bound metrics: ``requested``, else every core once the input is large
    enough for a pool to pay for itself."""
    workers = requested if requested is not None else (os.cpu_count() or 1)
    return workers if workers > 1 and pending_rows >= threshold else 0


# ------------------------------------------------------------------ in the worker processes
_WORKER_RECORDS: list[Record] = []
"""The run's records inside a worker process (set once by the pool's initializer)."""


def _init_worker(records: list[Record]) -> None:
    global _WORKER_RECORDS
    _WORKER_RECORDS = records


def direct_inputs(plan: Plan, data: Mapping[str, Any]) -> dict[str, Any]:
    """An evaluator's inputs from plain columns of a row (the first candidate column present)."""
    inputs: dict[str, Any] = {}
    for key, candidates in plan:
        for column in candidates:
            value = data.get(column)
            if value is not None:
                inputs[key] = value
                break
    return inputs


def _score_batch(ev: Evaluator, rows: list[dict[str, Any]]) -> list[Outcome]:
    return ev.score_batch(rows)


def _score_indices(ev: Evaluator, plan: Plan, indices: list[int]) -> list[WireRow]:
    records = _WORKER_RECORDS
    outs = ev.score_batch([direct_inputs(plan, records[i].data) for i in indices])
    return [(encode_outputs(out), dict(out), out.failed, score_lines(out.scores)) for out in outs]
