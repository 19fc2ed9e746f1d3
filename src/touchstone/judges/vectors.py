"""Calls that return one float vector per text (embeddings, prompt log-probabilities): each text is
cached on its own, and the texts missing from the cache are sent in batches of ``embed_batch_size``,
each batch through the session's retry loop and limits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from touchstone.judges.cache import JudgeCache, text_key
from touchstone.judges.providers.base import Backend

Fetch = Callable[[Backend, list[str]], Awaitable[list[list[float]]]]
"""Sends one batch of texts to a backend and reads its vectors (in order)."""
Retried = Callable[[Callable[[], Awaitable[list[list[float]]]]], Awaitable[list[list[float]]]]
"""Runs one batch's attempt through the retry loop."""


async def per_text(
    texts: list[str],
    *,
    kind: str,
    identity: str,
    model: str,
    cache: JudgeCache | None,
    batch_size: int,
    backend: Callable[[], Backend],
    fetch: Fetch,
    retried: Retried,
    count_hits: Callable[[int], None],
) -> list[list[float]]:
    """The vector of each of ``texts`` (in order): from the cache where it has them (``kind``,
    ``identity`` and ``model`` make the keys), else fetched, then cached. A text given twice is
    fetched once."""
    keys = [text_key(kind, identity, model, t) for t in texts]
    found = cache.get_embeddings(list(dict.fromkeys(keys))) if cache is not None else {}
    hits = sum(1 for k in keys if k in found)
    if hits:
        count_hits(hits)
    missing: dict[str, str] = {}
    for k, t in zip(keys, texts, strict=True):
        if k not in found:
            missing.setdefault(k, t)
    if missing:
        server = backend()
        items = list(missing.items())
        size = max(1, batch_size)
        batches = [items[s : s + size] for s in range(0, len(items), size)]

        async def one(batch: list[tuple[str, str]]) -> list[list[float]]:
            texts_of = [t for _, t in batch]
            return await retried(lambda: fetch(server, texts_of))

        results = await asyncio.gather(*(one(b) for b in batches))
        for batch, vectors in zip(batches, results, strict=True):
            new = [(k, v) for (k, _), v in zip(batch, vectors, strict=True)]
            found.update(new)
            if cache is not None:
                cache.put_embeddings(model, new)
    return [found[k] for k in keys]
