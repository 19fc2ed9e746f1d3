"""Store writes made by one thread of their own, in the order they are handed over.

A run's parent process reads results from its workers (or judge replies) on its event loop, feeds
them to the figures, and writes them to the store. Written on the loop, the writes held it up: on a
100,000-row run of five text metrics, SQLite's inserts and commits were a fifth of the parent's
CPU, and the workers waited for their next chunk meanwhile. SQLite and psycopg release the GIL
while the database works, so a writing thread overlaps most of that with the loop.

Nothing is lost or reordered: writes run one at a time in the order given; at most
:attr:`StoreThread.max_pending` wait (then the caller waits for the oldest, so a slow disk slows the
run instead of filling memory); an error of a write is raised by the next :meth:`~StoreThread.submit`
or by :meth:`~StoreThread.drain`, which returns once everything handed over is written.
"""

from __future__ import annotations

import collections
import concurrent.futures
from collections.abc import Callable
from typing import Any


class StoreThread:
    """One writing thread; :meth:`close` drains it and stops it (later writes run in the caller)."""

    def __init__(self, max_pending: int = 4) -> None:
        self.max_pending = max_pending
        self._pool: concurrent.futures.ThreadPoolExecutor | None = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="touchstone-store"
        )
        self._pending: collections.deque[concurrent.futures.Future[Any]] = collections.deque()

    def submit(self, write: Callable[..., Any], *args: Any) -> None:
        """Hand ``write(*args)`` over (raising the error of an earlier write, if one failed)."""
        pending = self._pending
        while pending and (pending[0].done() or len(pending) >= self.max_pending):
            pending.popleft().result()
        if self._pool is None:  # closed: the run is stopping, write here
            write(*args)
            return
        pending.append(self._pool.submit(write, *args))

    def drain(self) -> None:
        """Return once every write handed over is done (raising the first error met)."""
        while self._pending:
            self._pending.popleft().result()

    def close(self) -> None:
        """:meth:`drain`, then stop the thread, also when a write failed."""
        try:
            self.drain()
        finally:
            pool, self._pool = self._pool, None
            if pool is not None:
                pool.shutdown(wait=True)
