"""Calls that return one float vector per text (embeddings, prompt log-probabilities): each text is
cached on its own, and the texts missing from the cache are sent in batches of ``embed_batch_size``,
each batch through the session's retry loop and limits."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable

from touchstone.judges.abort import AbortState
from touchstone.judges.accounting import Accounting
from touchstone.judges.backend_pool import BackendPool
from touchstone.judges.cache import JudgeCache, text_key
from touchstone.judges.config import JudgeSettings, ModelConfiguration
from touchstone.judges.limits import Limits
from touchstone.judges.openai_replies import estimate_text_tokens, parse_embeddings, parse_prompt_logprobs
from touchstone.judges.providers.base import Backend, Response
from touchstone.judges.retry import RetryLoop

Vectors = list[list[float]]


class VectorCalls:
    """A session's embeddings and prompt log-probability calls. ``backend_of`` and ``cache_of`` are
    the session's own (a subclass may serve backends its way)."""

    def __init__(
        self,
        settings: JudgeSettings,
        *,
        pool: BackendPool,
        limits: Limits,
        retry: RetryLoop,
        accounting: Accounting,
        abort: AbortState,
        backend_of: Callable[[ModelConfiguration], Backend],
        cache_of: Callable[[], JudgeCache | None],
    ) -> None:
        self._settings = settings
        self._pool = pool
        self._limits = limits
        self._retry = retry
        self._accounting = accounting
        self._abort = abort
        self._backend_of = backend_of
        self._cache_of = cache_of

    async def embed(self, config: ModelConfiguration, texts: list[str], model: str | None) -> Vectors:
        """The embedding of each text, in order (``model``: default the configuration's)."""
        name = model or config.model_name
        timeout = self._settings.timeout

        async def fetch(backend: Backend, batch: list[str]) -> Vectors:
            response = await self._send(backend, batch, lambda: backend.embed(name, batch, timeout))
            return self._read(name, response, parse_embeddings(response.data, len(batch)))

        return await self._per_text(config, "embed", name, texts, fetch, label="embedding call")

    async def prompt_logprobs(
        self, config: ModelConfiguration, prompts: list[str], model: str | None
    ) -> list[list[float | None]]:
        """The log-probability of each token of each prompt (None where the server gives none)."""
        name = model or config.model_name
        timeout = self._settings.timeout

        async def fetch(backend: Backend, batch: list[str]) -> Vectors:
            response = await self._send(backend, batch, lambda: backend.completions(name, batch, timeout))
            return self._read(name, response, parse_prompt_logprobs(response.data, len(batch)))

        found = await self._per_text(
            config, "prompt_logprobs", name, prompts, fetch, label="completions call"
        )
        return [[None if math.isnan(v) else v for v in values] for values in found]

    def _send(
        self, backend: Backend, batch: list[str], send: Callable[[], Awaitable[Response]]
    ) -> Awaitable[Response]:
        return self._limits.send(backend, sum(estimate_text_tokens(t) for t in batch), send)

    def _read(self, name: str, response: Response, vectors: Vectors) -> Vectors:
        usage = response.data.get("usage") or {}
        self._accounting.reply(name, int(usage.get("prompt_tokens") or 0), None)
        return vectors

    async def _per_text(
        self,
        config: ModelConfiguration,
        kind: str,
        name: str,
        texts: list[str],
        fetch: Callable[[Backend, list[str]], Awaitable[Vectors]],
        *,
        label: str,
    ) -> Vectors:
        """One vector per text: cached ones from the cache (``kind``, the provider's identity and
        ``name`` make the keys), the others fetched in batches and cached. A text given twice is
        fetched once."""
        self._abort.check()
        session_key, identity = self._pool.identities(config)
        self._pool.note(session_key, config)
        cache = self._cache_of()
        keys = [text_key(kind, identity, name, t) for t in texts]
        found = cache.get_embeddings(list(dict.fromkeys(keys))) if cache is not None else {}
        hits = sum(1 for k in keys if k in found)
        if hits:
            self._accounting.count(cache_hits=hits)
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in found:
                missing.setdefault(k, t)
        if missing:
            backend = self._backend_of(config)
            items = list(missing.items())
            size = max(1, self._settings.embed_batch_size)
            batches = [items[s : s + size] for s in range(0, len(items), size)]

            async def one(batch: list[tuple[str, str]]) -> Vectors:
                texts_of = [t for _, t in batch]
                return await self._retry.run(config, backend, lambda: fetch(backend, texts_of), label=label)

            results = await asyncio.gather(*(one(b) for b in batches))
            for batch, vectors in zip(batches, results, strict=True):
                new = [(k, v) for (k, _), v in zip(batch, vectors, strict=True)]
                found.update(new)
                if cache is not None:
                    cache.put_embeddings(name, new)
        return [found[k] for k in keys]
