"""The judge session: the machinery shared by every judge call of a run.

One session per run (opened by the engine around ``evaluate()``, see :func:`judge_run_scope`), or
one per standalone client and event loop. It is a composition of small parts, each in its module:

- :mod:`~touchstone.judges.cache` (the response cache, keys and policy) ->
- :mod:`~touchstone.judges.joining` (an identical call in flight is joined, not repeated) ->
- :mod:`~touchstone.judges.retry` (the one retry loop) around
  :mod:`~touchstone.judges.limits` (contact gate, RPM/TPM caps) and
  :mod:`~touchstone.judges.hedging` (a concurrency slot; a stalled request sent once more) ->
- :mod:`~touchstone.judges.accounting` (the session's counters and the current score's usage);

with :mod:`~touchstone.judges.negotiation` (structured-output mode and refused parameters, once per
server), :mod:`~touchstone.judges.openai_replies` (reading replies),
:mod:`~touchstone.judges.backend_pool` (one backend per server and key, from the provider registry;
the dry run is a provider) and :mod:`~touchstone.judges.abort` (once a call fails in a way every call
would, every later call raises the same :class:`~touchstone.errors.RunAbortedError` at once).
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from touchstone.errors import RunAbortedError
from touchstone.judges.abort import AbortState
from touchstone.judges.accounting import Accounting
from touchstone.judges.backend_pool import BackendPool
from touchstone.judges.cache import JudgeCache, chat_key
from touchstone.judges.config import JudgeSettings, ModelConfiguration
from touchstone.judges.hedging import Hedging
from touchstone.judges.joining import InFlight, Stored
from touchstone.judges.limits import Limits
from touchstone.judges.negotiation import Negotiation
from touchstone.judges.openai_replies import (
    estimate_prompt_tokens,
    is_valid,
    reply_from,
    stored_reply,
    validation_error,
)
from touchstone.judges.providers.base import Backend, ChatRequest
from touchstone.judges.replies import ChatReply, Validator
from touchstone.judges.retry import InvalidReply, RetryLoop
from touchstone.judges.vectors import VectorCalls

_current: ContextVar[JudgeSession | None] = ContextVar("touchstone_judge_session", default=None)
"""The session judge calls go through (set by :func:`judge_session`; a Ray worker sets its own)."""


def current_session() -> JudgeSession | None:
    """The judge session of the run in progress, if any."""
    return _current.get()


class JudgeSession:
    """Concurrency limits, cache, retries, counters and abort state shared by a run's judge calls."""

    def __init__(self, settings: JudgeSettings | None = None) -> None:
        self.settings = settings = settings or JudgeSettings()
        settings.validate()
        self._abort = AbortState()
        self._accounting = Accounting(settings.prices)
        self._pool = BackendPool(settings, self._abort)
        self._negotiation = Negotiation()
        self._inflight = InFlight()
        self._retry = RetryLoop(settings, self._accounting, self._abort)
        self._limits = Limits(Hedging(settings.hedge, self._accounting, self._abort), self._abort,
                              settings.max_retry_wait)
        self._vectors = VectorCalls(
            settings, pool=self._pool, limits=self._limits, retry=self._retry, accounting=self._accounting,
            abort=self._abort, backend_of=self.backend, cache_of=lambda: self.cache,
        )
        self._cache: JudgeCache | None = None
        self._final_info: dict[str, Any] | None = None
        self.users = 0
        """Standalone calls in progress (see :class:`~touchstone.judges.client.SessionJudgeClient`)."""

    @property
    def aborted(self) -> RunAbortedError | None:
        """Why the run was stopped (None while it goes on)."""
        return self._abort.error

    @property
    def stats(self) -> dict[str, float]:
        """The session's counters: calls, cache hits, retries, tokens, cost..."""
        return self._accounting.stats

    @property
    def fallbacks(self) -> dict[str, list[str]]:
        """Per model, what its server refused (optional parameters, structured-output modes)."""
        return self._negotiation.fallbacks

    @property
    def cache(self) -> JudgeCache | None:
        """The response cache (None when the settings turn it off, and in a dry run)."""
        if not self.settings.cache or self.settings.dry_run:
            return None
        if self._cache is None:
            self._cache = JudgeCache(self.settings.resolved_cache_path())
        return self._cache

    def backend(self, config: ModelConfiguration) -> Backend:
        """The backend serving ``config`` (made on first use)."""
        return self._pool.get(config)

    async def close_connections(self) -> None:
        """Close the HTTP clients (they are opened again by the next call, with fresh limits)."""
        await self._pool.close()

    async def aclose(self) -> None:
        """Close HTTP clients and the cache; :meth:`info` stays available."""
        self._final_info = self.info()
        await self._pool.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    @property
    def used(self) -> bool:
        """Whether any judge call was made through this session."""
        return bool(self._pool.configs)

    def info(self) -> dict[str, Any]:
        """Provenance and counters, stored with the run (no secrets). Per model: the negotiated
        ``structured_output`` mode (``json_schema``, ``json_object`` or ``text``) once a call with a
        schema decided it, the parameters the server refused, the concurrency reached."""
        if self._final_info is not None and not self._pool.backends:
            return {**self._final_info, "stats": dict(self.stats)}
        return {"models": self._pool.models(), "settings": self.settings.public(), "stats": dict(self.stats)}

    # ------------------------------------------------------------------ chat
    async def chat(
        self,
        config: ModelConfiguration,
        messages: list[dict[str, str]],
        *,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "judgement",
        logprobs: bool = False,
        top_logprobs: int | None = None,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        n: int = 1,
        validate: Validator | None = None,
    ) -> ChatReply:
        """See :meth:`touchstone.judges.protocol.JudgeClient.chat`."""
        if self._abort.error is not None:
            self._abort.raise_copy()
        session_key, identity = self._pool.identities(config)
        self._pool.note(session_key, config)
        request: ChatRequest = {
            "messages": messages,
            "json_schema": json_schema,
            "schema_name": schema_name,
            "logprobs": bool(logprobs or top_logprobs),
            "top_logprobs": top_logprobs,
            "max_tokens": max_tokens,
            "temperature": None if config.reasoning else temperature,
            "n": n,
            "seed": self.settings.seed,
            "reasoning": config.reasoning,
        }
        key = chat_key(identity, config.model_name, request)
        cache = self.cache
        if cache is not None:
            hit = cache.get_chat(key)
            if hit is not None:
                reply = reply_from(hit, cached=True)
                if is_valid(reply, validate):
                    self._accounting.count(cache_hits=1)
                    return reply
        if self._inflight.pending(key):  # the same call is in flight: share its reply
            shared = await self._inflight.join(key)
            if shared is not None:
                reply = reply_from(shared, cached=True)
                if is_valid(reply, validate):
                    self._accounting.count(cache_hits=1)
                    return reply
        future = self._inflight.lead(key)
        try:
            stored, reply = await self._call_chat(config, request, validate)
        except BaseException as exc:
            self._inflight.done(key, future, exc)
            raise
        self._inflight.done(key, future, stored)
        if cache is not None:
            cache.put_chat(key, config.model_name, stored)
        return reply

    async def _call_chat(
        self, config: ModelConfiguration, request: ChatRequest, validate: Validator | None
    ) -> tuple[Stored, ChatReply]:
        backend = self.backend(config)
        model = config.model_name
        timeout = self.settings.timeout
        tokens = estimate_prompt_tokens(request["messages"]) + (request["max_tokens"] or 256)
        wants_schema = request["json_schema"] is not None
        send, account = self._limits.send, self._accounting.reply

        async def attempt() -> tuple[Stored, ChatReply]:
            body = backend.chat_body(model, request)
            response = await send(backend, tokens, functools.partial(backend.chat, body, timeout))
            stored = stored_reply(response.data, model, structured="response_format" in body)
            if wants_schema:
                backend.structured.open = True  # the server took the mode this body was sent in
            reply = reply_from(stored, cached=False)
            account(model, reply.usage.prompt_tokens, reply.usage.completion_tokens)
            if validate is not None and not is_valid(reply, validate):
                why = validation_error(reply, validate)
                raise InvalidReply(f"the reply did not match the expected format: {why}")
            return stored, reply

        refusals = self._negotiation.on_refusal(config, backend)
        run = functools.partial(
            self._retry.run, config, backend, attempt, label="judge call", unsupported=refusals
        )
        if not wants_schema or backend.structured.open:  # the common case: no gate to pass
            return await run()
        return await self._negotiation.structured(backend, run)

    # ------------------------------------------------------------ embeddings and prompt log-probabilities
    async def embed(
        self, config: ModelConfiguration, texts: list[str], *, model: str | None = None
    ) -> list[list[float]]:
        """See :meth:`touchstone.judges.protocol.EmbeddingClient.embed`."""
        return await self._vectors.embed(config, texts, model)

    async def completions_logprobs(
        self, config: ModelConfiguration, prompts: list[str], *, model: str | None = None
    ) -> list[list[float | None]]:
        """See :meth:`touchstone.judges.client.SessionJudgeClient.completions_logprobs`."""
        return await self._vectors.prompt_logprobs(config, prompts, model)


# --------------------------------------------------------------------------- scopes
@asynccontextmanager
async def judge_session(settings: JudgeSettings | None = None) -> AsyncIterator[JudgeSession]:
    """Make every judge call inside the block share one session (as a run does)."""
    session = JudgeSession(settings)
    token = _current.set(session)
    try:
        yield session
    finally:
        _current.reset(token)
        await session.aclose()


class RunScope(Protocol):
    """What the judge session reads of a run: its options and where its provenance goes (the
    engine's ``RunContext`` is one)."""

    @property
    def options(self) -> Mapping[str, Any]: ...

    @property
    def info(self) -> dict[str, Any]: ...


@asynccontextmanager
async def judge_run_scope(run: RunScope) -> AsyncIterator[JudgeSession]:
    """The judge session of one run, with settings from the run's options; on the way out the
    session's provenance and counters go to ``run.info["judge"]`` (when a judge was used)."""
    settings = JudgeSettings.from_options(run.options)
    async with judge_session(settings) as session:
        started = time.monotonic()
        try:
            yield session
        finally:
            if session.used:
                info = session.info()
                info["seconds"] = round(time.monotonic() - started, 3)
                run.info["judge"] = info
