"""The I/O-bound evaluators of a run (judges, HTTP metrics), many rows at once.

Jobs are handed out row by row (so the rows that finish first are whole), their inputs made as each
job is handed out (only the batch being read is held); results are written in groups
(:class:`~.sink.GroupWriter`).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from touchstone.engine.executors import make_executor
from touchstone.engine.run.sink import FLUSH_SECONDS
from touchstone.engine.run.window import RecordWindow
from touchstone.evaluators.base import Evaluator
from touchstone.store import ScoreRecord

if TYPE_CHECKING:
    from touchstone.engine.run.session import RunSession


def _workers(options: dict[str, Any]) -> int:
    # Twice the judge's concurrency: a prepared request waits for each slot a reply frees. More
    # only delays the first requests (every worker renders its first prompt before the first
    # connection is made: 8x cost 0.5-0.7 points of the fake server's capacity on 2,000 rows).
    return max(1, int(options.get("workers_async", 0)) or 2 * int(options.get("concurrency") or 32))


async def run_io_bound(run: RunSession, evs: dict[str, Evaluator]) -> None:
    """Score every row the I/O-bound evaluators ``evs`` still have to score."""
    names = sorted(evs)  # row by row, so the rows that finish first are whole
    pending = sum(run.pending(n) for n in names)
    if not pending:
        return

    async def job(i: int, name: str, inputs: dict[str, Any] | str) -> None:
        ev = run.evs[name]
        if isinstance(inputs, dict):
            out, usage = await executor.ascore(ev, inputs)
        else:
            out, usage = ev.failure(inputs), {}
        if usage and out.scores:
            out.scores[0].usage = usage
        writer.add(name, ScoreRecord(i, out, out.failed, usage or None, out.scores))
        run.record(name, i, out, usage or None)
        run.tick(1)

    def jobs() -> Iterator[Callable[[], Awaitable[None]]]:
        for start, batch in run.source.batches():
            todo = {name: set(run.todo(name, start, len(batch))) for name in names}
            for offset, rec in enumerate(batch):
                i = start + offset
                for name in names:
                    if i in todo[name]:
                        yield functools.partial(job, i, name, run.inputs_for(name, i, rec.data))

    writer = run.sink.grouped()
    flusher = asyncio.create_task(writer.every(FLUSH_SECONDS))
    window = RecordWindow(run.n, run.source.records)
    executor = make_executor(run.executor_choice, window, run.ctx.options)
    try:
        await executor.run_jobs(jobs(), min(_workers(run.ctx.options), pending))
    finally:
        executor.close()
        # judge calls made elsewhere (Ray workers): their provenance, as the judge session's hook gives it
        run.ctx.info.update(getattr(executor, "run_info", None) or {})
        flusher.cancel()
        writer.close()  # also when the run stops early: nothing that was scored is lost
