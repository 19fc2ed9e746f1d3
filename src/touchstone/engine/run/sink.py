"""Where a run's rows and results go: the run store, then whoever listens for "row written" events.

:class:`RunSink` is the one way the run passes write to the store. Each write is made now, on the
sink's writing thread (:meth:`RunSink.put_rows_later`, :meth:`RunSink.put_scores_later`: the
CPU-bound pass, whose event loop must go on reading workers' results), or grouped
(:class:`GroupWriter`: the judge pass's results, one transaction per group). Once a write is in the
store, the listeners are told which rows' inputs or which (row, evaluator) results it held (the
output files, :mod:`touchstone.engine.rows_file`, append the rows that are complete).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from touchstone.engine.store_thread import StoreThread
from touchstone.store import ScoreRecord, Store, StoredRow

FLUSH_SECONDS = 0.1
"""Results of I/O-bound evaluators wait at most this long before they are written (group commit)."""
FLUSH_ROWS = 256
"""...or until this many are waiting."""


class WriteListener(Protocol):
    """Told what each store write of the run held, once it is written (from the writing thread)."""

    def written(self, evaluator: str | None, indices: list[int]) -> None:
        """Rows ``indices``' inputs (``evaluator`` None) or evaluator ``evaluator``'s results on them."""


class RunSink:
    """The run's store writes (see the module's text). :meth:`close` (or :meth:`flush`) waits for
    the writing thread; a store error is raised by the next write handed over or by :meth:`flush`."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self._listeners: list[WriteListener] = []
        self._thread = StoreThread()
        self._groups: GroupWriter | None = None

    def subscribe(self, listener: WriteListener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: WriteListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def put_rows(self, rows: list[StoredRow]) -> None:
        """Write input rows now."""
        self.store.put_rows(self.run_id, rows)
        for listener in self._listeners:
            listener.written(None, [r.idx for r in rows])

    def put_scores(self, evaluator: str, records: Sequence[ScoreRecord]) -> None:
        """Write one evaluator's results now."""
        self.store.put_scores(self.run_id, evaluator, records)
        for listener in self._listeners:
            listener.written(evaluator, [r.idx for r in records])

    def put_rows_later(self, rows: list[StoredRow]) -> None:
        """Hand input rows to the writing thread."""
        self._thread.submit(self.put_rows, rows)

    def put_scores_later(self, evaluator: str, records: Sequence[ScoreRecord]) -> None:
        """Hand one evaluator's results to the writing thread."""
        self._thread.submit(self.put_scores, evaluator, records)

    def grouped(self) -> GroupWriter:
        """A :class:`GroupWriter` of this sink (the one :meth:`flush` also flushes)."""
        self._groups = GroupWriter(self)
        return self._groups

    def flush(self) -> None:
        """Write what waits to be written (the run is stopping): the writing thread is closed."""
        self._thread.close()
        if self._groups is not None:
            self._groups.flush()

    def close(self) -> None:
        """Wait for the writing thread and stop it (later writes are made in the caller's thread)."""
        self._thread.close()


_Group = dict[str, list[ScoreRecord]]
"""Results waiting to be written, by evaluator name."""


class GroupWriter:
    """Writes the results of I/O-bound evaluators in groups: at most :data:`FLUSH_SECONDS` after
    they are produced, or once :data:`FLUSH_ROWS` wait, and whatever waits when the run ends or
    stops. One transaction per group instead of one per row: a judge run of 2,000 rows spent more of
    its client CPU committing rows one by one than on its HTTP requests' bookkeeping.

    The groups are written by one thread of the writer's own, in order, so the event loop goes on
    reading judge replies meanwhile (a group of a one-call safety run is about 30 rows of 10 kB:
    written on the loop, the groups held it up 4% of the run). A store error is raised by the next
    ``add`` or ``flush``; :meth:`flush` returns once everything handed over is written."""

    def __init__(self, sink: RunSink) -> None:
        self._sink = sink
        self._waiting: _Group = {}
        self._count = 0
        self._thread = StoreThread()

    def add(self, name: str, record: ScoreRecord) -> None:
        self._waiting.setdefault(name, []).append(record)
        self._count += 1
        if self._count >= FLUSH_ROWS:
            self._hand_over()

    def _hand_over(self) -> None:
        """Give what waits to the writing thread (raising a store error an earlier group met)."""
        waiting, self._waiting, self._count = self._waiting, {}, 0
        if waiting:
            self._thread.submit(self._write, waiting)

    def _write(self, waiting: _Group) -> None:
        for name, records in waiting.items():
            self._sink.put_scores(name, records)

    def flush(self) -> None:
        """Write what waits and return once every group handed over is written."""
        self._hand_over()
        self._thread.drain()

    def close(self) -> None:
        """:meth:`flush`, then stop the writing thread (a later flush writes in the caller's thread)."""
        try:
            self._hand_over()
        finally:
            self._thread.close()

    async def every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self._hand_over()
