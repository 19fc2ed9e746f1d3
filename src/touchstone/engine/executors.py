"""Executors: where the engine's work runs.

The engine hands an :class:`Executor` two kinds of work: batches of rows for CPU-bound evaluators
(``score_batch``), and many small async jobs for I/O-bound ones (judge calls), run with a bounded
number in flight. :class:`LocalExecutor` runs batches in a worker thread, or in a process pool on
large inputs, and async jobs on the running event loop; :class:`~touchstone.engine.ray_executor.RayExecutor`
implements the same protocol on a Ray cluster (:func:`make_executor` picks one).

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
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol, Union, runtime_checkable

from touchstone.data.loaders import Record
from touchstone.engine.context import current_usage
from touchstone.errors import ConfigurationError
from touchstone.evaluators.base import Evaluator
from touchstone.scores import Outcome, ScoreLine
from touchstone.store.base import score_lines
from touchstone.store.sql import dumps
from touchstone.store.sqlite import encode_outputs

if TYPE_CHECKING:
    from touchstone.engine.ray_executor import RayExecutor

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

    async def ascore(self, ev: Evaluator, inputs: dict[str, Any]) -> tuple[Outcome, dict[str, Any]]:
        """``ev.ascore(inputs)`` for an I/O-bound evaluator, with the usage its model calls
        accounted (calls, tokens, cache hits)."""
        ...

    def close(self) -> None:
        ...


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
            return await asyncio.get_running_loop().run_in_executor(self._pool, _score_batch, ev, rows)
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
        it = iter(jobs)

        async def worker() -> None:
            for job in it:
                await job()

        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))

    async def ascore(self, ev: Evaluator, inputs: dict[str, Any]) -> tuple[Outcome, dict[str, Any]]:
        return await score_with_usage(ev, inputs)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
            gc.unfreeze()  # the parent collects them again (a long session calls evaluate() often)


ExecutorChoice = Union[str, "RayExecutor", None]
"""What ``evaluate(executor=...)`` takes: ``None`` or ``"local"``, ``"ray"``, or a configured
:class:`~touchstone.engine.ray_executor.RayExecutor`."""


def make_executor(
    choice: ExecutorChoice, records: Sequence[Record], options: Mapping[str, Any], *, processes: int = 0,
    whole: Sequence[Record] | None = None,
) -> Executor:
    """The executor ``choice`` names, for a run over ``records`` (``options``: the run's judge
    settings, which remote judge workers need to open their own sessions; ``whole``: every record,
    when the run holds them all)."""
    if choice is None or choice == "local":
        return LocalExecutor(records, processes=processes, whole=whole)
    from touchstone.engine.ray_executor import RayExecutor

    if choice == "ray":
        return RayExecutor().bind(records, options)
    if isinstance(choice, RayExecutor):
        return choice.bind(records, options)
    raise ConfigurationError(f"executor must be 'local', 'ray' or a RayExecutor, got {choice!r}")


async def score_with_usage(ev: Evaluator, inputs: dict[str, Any]) -> tuple[Outcome, dict[str, Any]]:
    """``ev.ascore(inputs)`` inside a fresh usage context; the Outcome and what its calls used."""
    usage: dict[str, Any] = {}
    token = current_usage.set(usage)
    try:
        out = await ev.ascore(inputs)
    finally:
        current_usage.reset(token)
    return out, usage


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
    return [dumps(record.data) for record in _inherited_records(indices)]


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


def score_wire(ev: Evaluator, rows: list[dict[str, Any]]) -> list[WireRow]:
    """Score ``rows`` (an evaluator's inputs) and send each result back as a :data:`WireRow`."""
    outs = ev.score_batch(rows)
    return [(encode_outputs(out), dict(out), out.failed, score_lines(out.scores)) for out in outs]
