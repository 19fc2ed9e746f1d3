"""Embedding each distinct text once: a bounded memo, and a micro-batcher for async providers.

The engine scores I/O-bound evaluators one row at a time, from many concurrent workers. The
:class:`EmbeddingBatcher` turns those per-row requests into few API calls: texts requested within
``window_s`` of each other (or until ``max_batch`` texts are waiting) go out in one request; a text
already embedded comes from the memo, and a text already waiting or in flight is shared, not sent twice.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

EmbedFn = Callable[[list[str]], Awaitable[Sequence[Sequence[float]]]]


class EmbeddingMemo:
    """Text -> embedding, least recently used first out beyond ``max_entries``. One memo belongs to one
    embedding model (an evaluator instance), so the text alone is the key."""

    def __init__(self, max_entries: int = 200_000) -> None:
        self.max_entries = int(max_entries)
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def __getstate__(self) -> dict[str, Any]:
        # A copy sent to a worker process starts empty: a cache, not state worth pickling per batch.
        return {"max_entries": self.max_entries, "_data": OrderedDict(), "hits": 0, "misses": 0}

    def get(self, text: str) -> np.ndarray | None:
        vector = self._data.get(text)
        if vector is None:
            self.misses += 1
            return None
        self.hits += 1
        self._data.move_to_end(text)
        return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        if self.max_entries <= 0:
            return
        self._data[text] = vector
        self._data.move_to_end(text)
        while len(self._data) > self.max_entries:
            self._data.popitem(last=False)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity; 0.0 when either vector is zero (no direction to compare)."""
    na = float(np.linalg.norm(a))
    nb = float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


class EmbeddingBatcher:
    """Collects texts from concurrent callers and embeds them in batched requests through ``embed``.

    Any per-text vector works (perplexity batches ``[NLL, tokens]`` with ``dtype=np.float64``).
    Bound to the event loop it is first used on; used from another loop (``evaluator(...)`` runs
    each call on a fresh loop), it starts over with the same memo."""

    def __init__(
        self,
        embed: EmbedFn,
        memo: EmbeddingMemo,
        *,
        max_batch: int = 256,
        window_s: float = 0.005,
        dtype: Any = np.float32,
    ):
        self._embed = embed
        self.dtype = dtype
        self.memo = memo
        self.max_batch = max(1, int(max_batch))
        self.window_s = float(window_s)
        self.requests = 0
        self.texts_sent = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[str, asyncio.Future[np.ndarray]] = {}
        self._queue: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_loop=None, _pending={}, _queue=[], _timer=None, _tasks=set())
        return state

    async def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The embeddings of ``texts``, in order."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._pending, self._queue, self._timer, self._tasks = loop, {}, [], None, set()
        waits: list[asyncio.Future[np.ndarray] | np.ndarray] = []
        for text in texts:
            vector = self.memo.get(text)
            if vector is not None:
                waits.append(vector)
                continue
            future = self._pending.get(text)
            if future is None:
                future = loop.create_future()
                self._pending[text] = future
                self._queue.append(text)
            waits.append(future)
        if len(self._queue) >= self.max_batch:
            self._flush()
        elif self._queue and self._timer is None:
            self._timer = loop.call_later(self.window_s, self._flush)
        return [w if isinstance(w, np.ndarray) else await asyncio.shield(w) for w in waits]

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            task = asyncio.get_running_loop().create_task(self._send(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: list[str]) -> None:
        self.requests += 1
        self.texts_sent += len(batch)
        try:
            vectors = await self._embed(batch)
            if len(vectors) != len(batch):
                raise ValueError(f"the embeddings API returned {len(vectors)} vectors for {len(batch)} texts")
            for text, vector in zip(batch, vectors, strict=True):
                array = np.asarray(vector, dtype=self.dtype)
                self.memo.put(text, array)
                future = self._pending.pop(text, None)
                if future is not None and not future.done():
                    future.set_result(array)
        except BaseException as exc:
            for text in batch:
                future = self._pending.pop(text, None)
                if future is not None and not future.done():
                    future.set_exception(exc)
                    future.exception()  # retrieved here too: a caller that went away leaves no warning
            if not isinstance(exc, Exception):
                raise
