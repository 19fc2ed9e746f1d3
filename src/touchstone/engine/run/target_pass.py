"""The input rows of a run stored (with the target's output or error on each, when the run has a
target) and fed to the figures, batch by batch.

A resumed run reads back which rows it stored already (and what the target gave on them), so the
target is called only on rows it has not answered yet.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from touchstone.data.loaders import Record
from touchstone.engine.stored_targets import TargetResult
from touchstone.evaluators.base import describe_exception
from touchstone.store import StoredRow

if TYPE_CHECKING:
    from touchstone.engine.run.session import RunSession

Encoder = Callable[[list[int]], Awaitable["list[str] | None"]]
"""Gives the JSON of the rows with these indices for the store (a pool's workers make it), or None."""


async def rows_pass(run: RunSession) -> None:
    """Store the input rows (running the target on those that need it) batch by batch, and feed
    every row to the figures."""
    for start, batch in run.source.batches():
        await batch_rows(run, start, batch)


async def batch_rows(run: RunSession, start: int, batch: list[Record], encode: Encoder | None = None) -> None:
    """Store one batch's input rows (running the target on those that need it) and feed them
    to the figures. ``encode``: gives the rows' JSON for the store (a pool's workers make it)."""
    stop = start + len(batch)
    stored: dict[int, TargetResult] = {}
    if run.resumed:
        for idx, target, error in run.store.results.target_outputs(run.ctx.run_id, start, stop):
            stored[idx] = (target, error)
    missing = [i for i in range(start, stop) if i not in stored]
    if run.target is None:
        recs = [(i, batch[i - start]) for i in missing]
        texts = await encode(missing) if encode is not None and missing else None
        run.sink.put_rows_later([
            StoredRow(i, rec.source, rec.line, rec.data, None, None, None if texts is None else texts[k])
            for k, (i, rec) in enumerate(recs)
        ])
    else:
        run.targets.update(stored)
        await _run_target(run, start, batch, missing)
    add_row = run.acc.add_row
    if run.target is None and not stored:
        for offset, rec in enumerate(batch):
            add_row(start + offset, rec.data, rec.source)
        return
    for offset, rec in enumerate(batch):
        i = start + offset
        got = run.targets.get(i) if run.target is not None else stored.get(i)
        add_row(i, rec.data, rec.source, *(got or (None, None)))


async def _run_target(run: RunSession, start: int, batch: list[Record], missing: list[int]) -> None:
    """Call the target on rows ``missing`` of the batch (at most ``target_concurrency`` at once),
    storing each row with its output or error as soon as it answers."""
    limit = asyncio.Semaphore(int(run.ctx.options.get("target_concurrency", 8)))
    fn = run.target
    assert fn is not None
    params = inspect.signature(fn).parameters
    takes_all = any(p.kind == p.VAR_KEYWORD for p in params.values())

    async def call(i: int) -> None:
        rec = batch[i - start]
        data = rec.data
        kwargs = data if takes_all else {k: v for k, v in data.items() if k in params}
        async with limit:
            try:
                if inspect.iscoroutinefunction(fn):
                    out = await fn(**kwargs)
                else:
                    out = await asyncio.to_thread(fn, **kwargs)
                if not isinstance(out, Mapping):
                    raise TypeError(f"the target must return a dict, it returned {type(out).__name__}")
                result: tuple[dict[str, Any] | None, str | None] = (dict(out), None)
            except Exception as exc:
                result = (None, describe_exception(exc))
        run.targets[i] = result
        run.sink.put_rows([StoredRow(i, rec.source, rec.line, rec.data, result[0], result[1])])

    await asyncio.gather(*(call(i) for i in missing))
