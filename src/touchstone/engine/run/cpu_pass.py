"""The CPU-bound evaluators of a run, scored in chunks of each batch through an executor.

A large input goes to a pool of worker processes (fixed chunks, a few in flight per worker; rows
of plain columns are looked up by the workers themselves, which send back the outputs already
encoded for the store); a small one is scored in process, in chunks sized to take about
:data:`CHUNK_SECONDS` each. Results are written by the sink's writing thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from typing import TYPE_CHECKING

from touchstone.engine.executors import Executor, WireRow, default_processes, make_executor
from touchstone.engine.executors.base import ENCODED, FAILED, LINES, OUTPUTS
from touchstone.engine.run.target_pass import batch_rows
from touchstone.engine.run.window import RecordWindow
from touchstone.evaluators.base import Evaluator
from touchstone.scores import CompactOutcome, Outcome
from touchstone.store import ScoreRecord

if TYPE_CHECKING:
    from touchstone.engine.run.session import RunSession

MIN_CHUNK = 8
CHUNK_SECONDS = 0.25


async def run_cpu_bound(run: RunSession, evs: dict[str, Evaluator]) -> None:
    """Score every row the CPU-bound evaluators ``evs`` still have to score."""
    pending = sum(run.pending(n) for n in evs)
    if not pending:
        return
    window = RecordWindow(run.n, run.source.records)
    executor = make_executor(
        run.executor_choice, window, run.ctx.options,
        processes=default_processes(run.workers, pending, run.limits.parallel_min_rows),
        whole=run.source.records,
    )
    try:
        if executor.parallel:
            await _parallel(run, evs, executor, window)
        else:
            await _inline(run, evs, executor, window)
    finally:
        executor.close()


def _store_outcomes(run: RunSession, name: str, pairs: list[tuple[int, Outcome]]) -> None:
    run.sink.put_scores_later(name, [ScoreRecord(i, out, out.failed, None, out.scores) for i, out in pairs])
    for i, out in pairs:
        run.record(name, i, out, None)


def _store_wire(run: RunSession, name: str, ev: Evaluator, chunk: list[int], wire: list[WireRow]) -> None:
    """Write what worker processes sent back as it is, and feed it to the figures."""
    run.sink.put_scores_later(name, [
        ScoreRecord(i, row[ENCODED], row[FAILED], None, row[LINES])
        for i, row in zip(chunk, wire, strict=True)
    ])
    error_key = f"{ev.info.prefix}_error"
    acc, keep, scores = run.acc, run.keep, run.scores
    for i, row in zip(chunk, wire, strict=True):
        outputs, failed, lines = row[OUTPUTS], row[FAILED], row[LINES]
        acc.add_result(name, i, outputs, failed, lines)
        if keep:
            error = outputs.get(error_key) if failed else None
            message = None if error is None else str(error)
            scores[i, name] = (CompactOutcome(outputs, lines, failed, message), None)


async def _score_chunk(
    run: RunSession, name: str, ev: Evaluator, executor: Executor, window: RecordWindow, chunk: list[int]
) -> None:
    plan = run.plan(name)
    if executor.parallel and plan:
        wire = await executor.score_indices(ev, plan, chunk)
        _store_wire(run, name, ev, chunk, wire)
    else:
        prepared = [(i, run.inputs_for(name, i, window[i].data)) for i in chunk]
        good = [(i, inp) for i, inp in prepared if isinstance(inp, dict)]
        outs = await executor.score_batch(ev, [inp for _, inp in good])
        by_idx = {i: out for (i, _), out in zip(good, outs, strict=True)}
        pairs = [(i, by_idx[i] if isinstance(inp, dict) else ev.failure(str(inp))) for i, inp in prepared]
        _store_outcomes(run, name, pairs)
    run.tick(len(chunk))


async def _parallel(
    run: RunSession, evs: dict[str, Evaluator], executor: Executor, window: RecordWindow
) -> None:
    """Large input: fixed chunks of a batch, a few in flight per worker process; a batch is let go
    once its chunks are done."""
    in_flight = asyncio.Semaphore(max(1, run.workers or (os.cpu_count() or 1)) * 2)
    batch_size = run.limits.batch_rows

    async def limited(name: str, ev: Evaluator, chunk: list[int]) -> None:
        try:
            await _score_chunk(run, name, ev, executor, window, chunk)
        finally:
            in_flight.release()

    async def retire(start: int, tasks: list[asyncio.Task[None]]) -> None:
        try:
            await asyncio.gather(*tasks)
        finally:
            window.release(start)

    mapped = getattr(executor, "map_source", None)  # a Ray Dataset: map_batches where its blocks are
    results = mapped(run.source, evs, {n: run.plan(n) for n in evs}, run.stored) if mapped else None
    if results is not None:
        if run.rows_with_sync:
            for start, batch in run.source.batches():
                await batch_rows(run, start, batch)
        async for scored in results:
            _store_wire(run, scored.evaluator, evs[scored.evaluator], scored.indices, scored.rows)
            run.tick(len(scored.indices))
        return
    retiring: list[asyncio.Task[None]] = []
    encode = getattr(executor, "encoded_rows", None)
    for start, batch in run.source.batches():
        tasks: list[asyncio.Task[None]] = []
        if run.rows_with_sync:
            # The rows' JSON is made by a worker beside the batch's scoring (rows of ranked
            # lists are large: encoding them was a third of what the store's thread did).
            tasks.append(asyncio.create_task(batch_rows(run, start, batch, encode)))
        window.hold(start, batch)
        if run.keep:
            # The results held so far leave the collector's view (the pool's close gives them
            # back): each older-generation pass walked all of them again, 2 s of the parent's
            # 15 s of CPU on 100,000 rows of five metrics.
            gc.freeze()
        for name, ev in evs.items():
            todo = run.todo(name, start, len(batch))
            for s in range(0, len(todo), batch_size):
                await in_flight.acquire()
                tasks.append(asyncio.create_task(limited(name, ev, todo[s : s + batch_size])))
        retiring.append(asyncio.create_task(retire(start, tasks)))
        done = [t for t in retiring if t.done()]
        for t in done:
            retiring.remove(t)
            t.result()  # a failed chunk stops the run here
    await asyncio.gather(*retiring)


async def _inline(
    run: RunSession, evs: dict[str, Evaluator], executor: Executor, window: RecordWindow
) -> None:
    """In process: chunks sized to take about CHUNK_SECONDS each, so a slow metric (a user's
    function) still stores its scores every fraction of a second, and a fast one pays little
    per-chunk overhead. A model metric (embeddings, BERTScore) asks for larger batches through
    ``min_batch_rows``: its batched forward passes need them more than it needs frequent writes."""
    sizes = {name: max(MIN_CHUNK, ev.min_batch_rows) for name, ev in evs.items()}
    batch_size = run.limits.batch_rows
    for start, batch in run.source.batches():
        if run.rows_with_sync:
            await batch_rows(run, start, batch)
        window.hold(start, batch)
        for name, ev in evs.items():
            floor = max(MIN_CHUNK, ev.min_batch_rows)
            indices = run.todo(name, start, len(batch))
            pos = 0
            while pos < len(indices):
                chunk = indices[pos : pos + sizes[name]]
                started = time.perf_counter()
                await _score_chunk(run, name, ev, executor, window, chunk)
                elapsed = max(time.perf_counter() - started, 1e-6)
                pos += len(chunk)
                sizes[name] = int(max(floor, min(batch_size, len(chunk) * CHUNK_SECONDS / elapsed)))
        window.release(start)
