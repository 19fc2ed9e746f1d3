"""The judge session: the machinery shared by every judge call of a run.

One session per run (entered by a run hook around ``evaluate()``), or one per standalone client and
event loop. It holds, per endpoint and key, an adaptive concurrency limiter and optional RPM/TPM
caps; the response cache; the counters reported with the run; and the run's abort state: once a
call fails in a way every call would (bad key, unknown model, exhausted quota), every later call
raises the same :class:`~touchstone.errors.RunAbortedError` at once, without a request.

A call: cache lookup (a hit costs nothing) -> join an identical call in flight -> caps and a
concurrency slot -> request -> on 429 halve concurrency and wait as the server asks, on 5xx, timeouts,
dropped connections and malformed bodies back off exponentially with jitter, on a rejected optional
parameter (``logprobs``, ``seed``...) send again without it, on a rejected structured-output mode
try the next one (negotiated once per server: see :class:`~touchstone.judges.backends.StructuredOutput`)
-> validate -> cache -> account (``add_usage``) -> reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, NoReturn, TypeVar

from touchstone.engine.context import RunContext, add_usage, register_run_hook
from touchstone.errors import ConfigurationError, RunAbortedError
from touchstone.judges import known_servers
from touchstone.judges.cache import JudgeCache, cache_key, chat_cache_key
from touchstone.judges.config import JudgeSettings, ModelConfiguration
from touchstone.judges.errors import (
    FatalProviderError,
    JudgeCallError,
    ProviderError,
    RateLimited,
    RowRejected,
    TransientError,
    UnsupportedParameter,
    redact,
)
from touchstone.judges.limiter import AdaptiveLimiter, Ticket
from touchstone.judges.pricing import cost_usd
from touchstone.judges.providers.base import Backend, ChatRequest, Response, Unreachable
from touchstone.judges.providers.registry import make_backend
from touchstone.judges.replies import ChatReply, TokenLogprob, Usage, Validator

_T = TypeVar("_T")

_current: ContextVar[JudgeSession | None] = ContextVar("touchstone_judge_session", default=None)

CACHE_VERSION = 1
DRY_RUN_COMPLETION_TOKENS = 150


def current_session() -> JudgeSession | None:
    """The judge session of the run in progress, if any."""
    return _current.get()


class _InvalidReply(TransientError):
    """A reply that failed the caller's validation: asked again at once (never cached)."""

    kind = "invalid_output"


SAME_FIRST_FAILURES = 4
"""A backend whose first calls (none has succeeded yet) all fail with this many identical HTTP 500
errors (or find no server: connection refused, unknown host) stops the run: a server fault that
retrying every row will not fix (an overload varies, is a 502/503/504, or comes after successes)."""

_DETERMINISTIC_STATUSES = (500, 501)

HEDGE_SHARE = 0.1
"""Hedged requests (a stalled request sent once more) are at most this share of the calls..."""
HEDGE_FREE = 4
"""...plus this many."""


class JudgeSession:
    """Concurrency limits, cache, retries, counters and abort state shared by a run's judge calls."""

    def __init__(self, settings: JudgeSettings | None = None) -> None:
        self.settings = settings or JudgeSettings()
        self.settings.validate()
        self._backends: dict[str, Backend] = {}
        self._configs: dict[str, ModelConfiguration] = {}
        self._cache: JudgeCache | None = None
        self._inflight: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.aborted: RunAbortedError | None = None
        self.stats: dict[str, float] = {
            "calls": 0,
            "cache_hits": 0,
            "retries": 0,
            "rate_limited": 0,
            "failed_calls": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
        }
        self.fallbacks: dict[str, list[str]] = {}
        self._rng = random.Random()
        self._final_info: dict[str, Any] | None = None
        self.users = 0
        self._hedges = 0
        self._remembered: dict[str, str] = {}  # backends started from an earlier run's knowledge: from where
        self._config_ids: dict[int, tuple[ModelConfiguration, str, str]] = {}

    # ------------------------------------------------------------------ resources
    @property
    def cache(self) -> JudgeCache | None:
        if not self.settings.cache or self.settings.dry_run:
            return None
        if self._cache is None:
            self._cache = JudgeCache(self.settings.resolved_cache_path())
        return self._cache

    def _session_key(self, config: ModelConfiguration) -> str:
        return self._identities(config)[0]

    def _cache_identity(self, config: ModelConfiguration) -> str:
        return self._identities(config)[1]

    def _identities(self, config: ModelConfiguration) -> tuple[str, str]:
        """``config.session_key()`` and ``config.cache_identity()``, computed once per configuration
        object (each hashes the credential: 50 µs a call, on every judge call otherwise). The entry
        holds the configuration, so its id is not reused while the entry lives."""
        known = self._config_ids.get(id(config))
        if known is None or known[0] is not config:
            known = self._config_ids[id(config)] = (config, config.session_key(), config.cache_identity())
        return known[1], known[2]

    def _server_key(self, config: ModelConfiguration) -> str:
        """What :mod:`~touchstone.judges.known_servers` keeps a server under on disk: provider,
        endpoint without credentials, a salted digest of the credential, and the model."""
        return f"{self._cache_identity(config)}|{config.model_name}"

    def backend(self, config: ModelConfiguration) -> Backend:
        key = self._session_key(config)
        backend = self._backends.get(key)
        if backend is None:
            if self.aborted is not None:
                raise self._abort_copy()
            try:
                backend = make_backend(config, self.settings)
            except ConfigurationError as exc:
                self.aborted = RunAbortedError(f"judge model {config.model_name!r}: {exc}")
                raise self._abort_copy() from None
            traits = known_servers.recall(key, backend, self._server_key(config))
            if traits is not None:
                self._remembered[key] = traits.source
            self._backends[key] = backend
            self._configs[key] = config
        return backend

    async def close_connections(self) -> None:
        """Close the HTTP clients (they are opened again by the next call, with fresh limits)."""
        for key, backend in self._backends.items():
            config = self._configs.get(key)
            known_servers.remember(key, backend, None if config is None else self._server_key(config))
        backends = list(self._backends.values())
        self._backends.clear()
        for backend in backends:
            with contextlib.suppress(Exception):  # closing must not hide the run's own outcome
                await backend.aclose()

    async def aclose(self) -> None:
        """Close HTTP clients and the cache; :meth:`info` stays available."""
        self._final_info = self.info()
        await self.close_connections()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def info(self) -> dict[str, Any]:
        """Provenance and counters, stored with the run (no secrets). Per model: the negotiated
        ``structured_output`` mode (``json_schema``, ``json_object`` or ``text``) once a call with a
        schema decided it, the parameters the server refused, the concurrency reached."""
        if self._final_info is not None and not self._backends:
            return {**self._final_info, "stats": dict(self.stats)}
        models = []
        for key, config in self._configs.items():
            backend = self._backends.get(key)
            entry: dict[str, Any] = {
                "provider": config.provider,
                "model": config.model_name,
                "host": backend.host if backend is not None else None,
                "reasoning": config.reasoning,
            }
            if backend is not None:
                entry["concurrency_final"] = backend.limiter.current
                entry["concurrency_min"] = int(backend.limiter.min_limit)
                entry["concurrency_decreases"] = backend.limiter.decreases
                entry["unsupported_params"] = sorted(backend.unsupported)
                if backend.structured.decided:
                    entry["structured_output"] = backend.structured.mode
                if key in self._remembered:
                    entry["negotiated"] = (
                        "remembered from an earlier run in this process" if self._remembered[key] == "process"
                        else "remembered from an earlier run of another process (the shared servers file)"
                    )
                transport = getattr(backend, "transport", None)
                if transport is not None:
                    entry["http_transport"] = transport
            models.append(entry)
        return {"models": models, "settings": self.settings.public(), "stats": dict(self.stats)}

    def _abort_copy(self) -> RunAbortedError:
        assert self.aborted is not None
        return RunAbortedError(str(self.aborted))

    def _count(self, **amounts: float) -> None:
        for key, value in amounts.items():
            self.stats[key] = self.stats.get(key, 0) + value
        add_usage(**amounts)

    def _account(self, model: str, prompt: int, completion: int | None) -> None:
        """Tokens and cost of one reply (``completion`` None: a call that generates nothing)."""
        amounts: dict[str, float] = {"prompt_tokens": prompt}
        if completion is not None:
            amounts["completion_tokens"] = completion
        cost = cost_usd(model, prompt, completion or 0, self.settings.prices)
        if cost is not None:
            amounts["cost_usd"] = cost
        self._count(**amounts)

    def _backoff(self, attempt: int) -> float:
        base: float = min(self.settings.backoff_max, self.settings.backoff_base * 2 ** max(0, attempt - 1))
        return base * self._rng.uniform(0.5, 1.0)

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
        """See :meth:`touchstone.judges.client.JudgeClient.chat`."""
        if self.aborted is not None:
            raise self._abort_copy()
        self._configs.setdefault(self._session_key(config), config)
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
        key = chat_cache_key(
            {
                "v": CACHE_VERSION,
                "kind": "chat",
                "provider": self._cache_identity(config),
                "model": config.model_name,
                **request,
            }
        )
        if self.settings.dry_run:
            return self._dry_chat(config, request)

        cache = self.cache
        if cache is not None:
            hit = cache.get_chat(key)
            if hit is not None:
                reply = _reply_from(hit, cached=True)
                if _is_valid(reply, validate):
                    self._count(cache_hits=1)
                    return reply
        pending = self._inflight.get(key)
        if pending is not None:  # the same call is in flight: share its reply
            try:
                stored = await asyncio.shield(pending)
            except Exception:
                stored = None
            if stored is not None:
                reply = _reply_from(stored, cached=True)
                if _is_valid(reply, validate):
                    self._count(cache_hits=1)
                    return reply

        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            stored, reply = await self._call_chat(config, request, validate)
        except BaseException as exc:
            if not fut.done():
                fut.set_exception(exc if isinstance(exc, Exception) else asyncio.CancelledError())
                fut.exception()  # retrieved: waiters handle it themselves
            raise
        finally:
            if self._inflight.get(key) is fut:
                del self._inflight[key]
        fut.set_result(stored)
        if cache is not None:
            cache.put_chat(key, config.model_name, stored)
        return reply

    async def _call_chat(
        self, config: ModelConfiguration, request: ChatRequest, validate: Validator | None
    ) -> tuple[dict[str, Any], ChatReply]:
        backend = self.backend(config)
        model = config.model_name
        timeout = self.settings.timeout
        tokens = _estimate_prompt_tokens(request["messages"]) + (request["max_tokens"] or 256)
        wants_schema = request["json_schema"] is not None

        async def attempt() -> tuple[dict[str, Any], ChatReply]:
            body = backend.chat_body(model, request)
            response = await self._send(backend, tokens, functools.partial(backend.chat, body, timeout))
            stored = _stored_reply(response.data, model, structured="response_format" in body)
            if wants_schema:
                backend.structured.open = True  # the server took the mode this body was sent in
            reply = _reply_from(stored, cached=False)
            self._account(model, reply.usage.prompt_tokens, reply.usage.completion_tokens)
            if validate is not None and not _is_valid(reply, validate):
                raise _InvalidReply(
                    f"the reply did not match the expected format: {_validation_error(reply, validate)}"
                )
            return stored, reply

        refused: list[tuple[str, str | None]] = []  # what this call was refused (rarely anything)

        def without(error: UnsupportedParameter) -> bool:
            """Send again without the refused parameter (or in the next structured-output mode)."""
            seen = (error.param, error.value)
            if seen in refused:
                return False  # refused again although left out: the server means something else
            refused.append(seen)
            if error.param == "response_format":
                self._downgrade(backend, config, error.value or backend.structured.mode)
            elif error.param not in backend.unsupported:
                self._drop_param(backend, config, error.param)
            return bool(error.param)

        structured = backend.structured
        if not wants_schema or structured.open:
            return await self._with_retries(config, backend, attempt, label="judge call", unsupported=without)
        if "response_format" in backend.unsupported:  # known up front
            structured.fix("text")
            return await self._with_retries(config, backend, attempt, label="judge call", unsupported=without)
        probing = await structured.acquire()  # the mode is negotiated by one call; the others wait
        try:
            return await self._with_retries(config, backend, attempt, label="judge call", unsupported=without)
        finally:
            if probing:
                structured.release()

    # ------------------------------------------------------------------ the one retry loop
    async def _with_retries(
        self,
        config: ModelConfiguration,
        backend: Backend,
        attempt: Callable[[], Awaitable[_T]],
        *,
        label: str,
        unsupported: Callable[[UnsupportedParameter], bool] | None = None,
    ) -> _T:
        """``await attempt()`` until it returns, dispatching on the error it raises: rate limits wait
        as the server asks; transient faults (and replies that failed validation) retry with backoff,
        up to the settings' bounds, then fail this call (:class:`JudgeCallError`); a refused optional
        parameter retries when ``unsupported`` says so; a refused row fails this call; anything else
        (authentication, unknown model, quota, a server fault every first call meets) stops the run."""
        errors = rate_limited = 0
        while True:
            started = time.monotonic()
            try:
                return await attempt()
            except RateLimited as exc:
                rate_limited += 1
                if rate_limited > self.settings.max_rate_limit_retries:
                    raise self._give_up(
                        f"{label} still rate limited after {rate_limited} attempts: {exc}", exc.kind
                    ) from None
                self._count(retries=1, rate_limited=1)
                wait = exc.retry_after
                wait = self._backoff(rate_limited) if wait is None else wait * self._rng.uniform(1.0, 1.1)
                await asyncio.sleep(min(wait, self.settings.max_retry_wait))
            except TransientError as exc:
                errors += 1
                if errors > self.settings.max_retries:
                    raise self._give_up(f"{label} failed after {errors} attempts: {exc}", exc.kind) from None
                if isinstance(exc, _InvalidReply):
                    self._count(retries=1, invalid_replies=1)
                    continue  # the server answered: ask again at once
                self._check_first_failures(config, backend, exc)
                self._count(retries=1)
                # The backoff spaces attempts out: an attempt that itself took long (a hang that ended
                # in a dropped connection or a timeout) has waited already.
                wait = max(self._backoff(errors), exc.retry_after or 0.0) - (time.monotonic() - started)
                await asyncio.sleep(min(max(0.0, wait), self.settings.max_retry_wait))
            except UnsupportedParameter as exc:
                if unsupported is not None and unsupported(exc):
                    continue
                self._count(failed_calls=1)
                raise JudgeCallError(f"{label} rejected: {exc}", kind=exc.kind) from None
            except RowRejected as exc:
                self._count(failed_calls=1)
                raise JudgeCallError(f"{label} rejected: {exc}", kind=exc.kind) from None
            except ProviderError as exc:  # fatal, quota: every call would fail the same way
                self._abort(config, backend, exc)

    def _check_first_failures(
        self, config: ModelConfiguration, backend: Backend, error: TransientError
    ) -> None:
        """Stop the run when the backend's first calls all met the same HTTP 500 or found no server
        (see :data:`SAME_FIRST_FAILURES`); anything after a success keeps its retries."""
        if backend.confirmed:
            return
        if error.status not in _DETERMINISTIC_STATUSES and not isinstance(error, Unreachable):
            return
        if error.message == backend.first_failure:
            backend.first_failures += 1
        else:
            backend.first_failure, backend.first_failures = error.message, 1
        if backend.first_failures >= SAME_FIRST_FAILURES:
            self._abort(config, backend, error, because=(
                f"the first {backend.first_failures} calls all failed with this same error and none has "
                "succeeded: a server fault that retrying will not fix"
            ))

    async def _send(self, backend: Backend, tokens: int, send: Callable[[], Awaitable[Response]]) -> Response:
        """One request under the caps and the concurrency limit; counts it as a call. Until the
        backend's first success, one request at a time (its ``contact`` gate): a server that fails
        every call costs a few requests, not one per row in flight."""
        contact = backend.contact
        probing = False if contact.open else await contact.acquire()
        try:
            if backend.rpm is not None:
                await backend.rpm.take(1)
            if backend.tpm is not None:
                await backend.tpm.take(tokens)
            if self.aborted is not None:
                raise self._abort_copy()
            response = await self._request(backend, send)
            contact.open = backend.confirmed = True
        finally:
            if probing:
                contact.release()
        if response.pause:
            backend.limiter.pause(min(response.pause, self.settings.max_retry_wait))
        return response

    async def _slot(self, limiter: AdaptiveLimiter) -> Ticket:
        ticket = await limiter.acquire()
        if self.aborted is not None:
            limiter.release(ticket, "cancelled")
            raise self._abort_copy()
        return ticket

    async def _timed(
        self, limiter: AdaptiveLimiter, ticket: Ticket, request: Awaitable[Response]
    ) -> Response:
        """One request on a held slot, counted as a call. One far slower than the server's recent
        replies hands its slot on (it goes on waiting up to its timeout): hung requests do not hold
        the run up, and neither they nor timeouts lower the limit (only 429s do)."""
        stall = limiter.stall_after()
        loop = asyncio.get_running_loop()
        watch = None if stall is None else loop.call_later(stall, limiter.detach, ticket)
        outcome = "error"
        try:
            response = await request
            outcome = "success"
        except RateLimited:
            outcome = "rate_limited"
            raise
        finally:
            if watch is not None:
                watch.cancel()
            limiter.release(ticket, outcome)
            self._count(calls=1)
        if limiter.waiting:
            # the slot went to a waiting request: let it go out before this reply is processed
            await asyncio.sleep(0)
        return response

    async def _request(self, backend: Backend, send: Callable[[], Awaitable[Response]]) -> Response:
        """A request that, once stalled, is *hedged*: the same request is sent once more beside it and
        the first reply wins (the other is cancelled). Hedges are few (:data:`HEDGE_SHARE` of the
        calls): only requests far slower than the server's recent replies get one."""
        limiter = backend.limiter
        ticket = await self._slot(limiter)
        stall = limiter.stall_after()
        if (
            stall is None
            or not self.settings.hedge
            or self._hedges >= HEDGE_SHARE * self.stats["calls"] + HEDGE_FREE
        ):
            return await self._timed(limiter, ticket, send())
        first = asyncio.ensure_future(self._timed(limiter, ticket, send()))
        tasks = [first]
        try:
            done, _ = await asyncio.wait(tasks, timeout=stall)
            if done or self.aborted is not None:
                return await first
            self._hedges += 1
            self._count(hedged=1)

            async def again() -> Response:
                return await self._timed(limiter, await self._slot(limiter), send())

            tasks.append(asyncio.ensure_future(again()))
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            winner = done.pop()
            error = winner.exception()
            if error is None:
                return winner.result()
            other = tasks[1] if winner is first else first
            try:
                return await other
            except Exception:
                raise error from None
        finally:
            pending = [task for task in tasks if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                # let the loser end here, so its call is counted in this row's usage before the row
                # returns (counted later, it would reach the run's total but no row's)
                await asyncio.gather(*pending, return_exceptions=True)

    def _downgrade(self, backend: Backend, config: ModelConfiguration, rejected: str) -> None:
        """The server refused structured-output mode ``rejected``: the next one (recorded once)."""
        if backend.structured.downgrade(rejected) == "text" and "response_format" not in backend.unsupported:
            backend.unsupported.add("response_format")
            self.fallbacks.setdefault(config.model_name, []).append("response_format")

    def _drop_param(self, backend: Backend, config: ModelConfiguration, param: str) -> None:
        backend.unsupported.add(param)
        if param == "logprobs":
            backend.unsupported.add("top_logprobs")
        self.fallbacks.setdefault(config.model_name, []).append(param)

    def _give_up(self, message: str, kind: str) -> JudgeCallError:
        self._count(failed_calls=1)
        return JudgeCallError(message, kind=kind)

    def _abort(
        self,
        config: ModelConfiguration,
        backend: Backend,
        error: ProviderError,
        *,
        because: str | None = None,
    ) -> NoReturn:
        if self.aborted is None:
            text = redact(error.message, [config.resolved_api_key()])
            why = because or "every remaining call would fail the same way"
            self.aborted = RunAbortedError(
                f"judge model {config.model_name!r} at {backend.host}: {text}. The run was stopped: {why}."
            )
        raise self._abort_copy()

    def _dry_chat(self, config: ModelConfiguration, request: ChatRequest) -> ChatReply:
        prompt = _estimate_prompt_tokens(request["messages"])
        completion = (
            min(request["max_tokens"] or DRY_RUN_COMPLETION_TOKENS, DRY_RUN_COMPLETION_TOKENS) * request["n"]
        )
        amounts: dict[str, float] = {"calls": 1, "prompt_tokens": prompt, "completion_tokens": completion}
        cost = cost_usd(config.model_name, prompt, completion, self.settings.prices)
        if cost is not None:
            amounts["cost_usd"] = cost
        self._count(**amounts)
        schema = request["json_schema"]
        text = _placeholder_json(schema) if schema else ""
        return ChatReply(text=text, choices=[text] * request["n"], structured=schema is not None,
                         model=config.model_name, usage=Usage(prompt, completion))

    # ------------------------------------------------------------ embeddings and prompt log-probabilities
    async def embed(
        self, config: ModelConfiguration, texts: list[str], *, model: str | None = None
    ) -> list[list[float]]:
        """See :meth:`touchstone.judges.client.JudgeClient.embed`."""
        name = model or config.model_name

        async def fetch(backend: Backend, batch: list[str]) -> list[list[float]]:
            response = await self._send(
                backend, sum(_estimate_text_tokens(t) for t in batch),
                lambda: backend.embed(name, batch, self.settings.timeout),
            )
            vectors = _parse_embeddings(response.data, len(batch))
            usage = response.data.get("usage") or {}
            self._account(name, int(usage.get("prompt_tokens") or 0), None)
            return vectors

        return await self._per_text(config, "embed", name, texts, fetch, label="embedding call", dry=[0.0])

    async def completions_logprobs(
        self, config: ModelConfiguration, prompts: list[str], *, model: str | None = None
    ) -> list[list[float | None]]:
        """See :meth:`touchstone.judges.client.JudgeClient.completions_logprobs`."""
        name = model or config.model_name

        async def fetch(backend: Backend, batch: list[str]) -> list[list[float]]:
            response = await self._send(
                backend, sum(_estimate_text_tokens(t) for t in batch),
                lambda: backend.completions(name, batch, self.settings.timeout),
            )
            values = _parse_prompt_logprobs(response.data, len(batch))
            usage = response.data.get("usage") or {}
            self._account(name, int(usage.get("prompt_tokens") or 0), None)
            return values

        found = await self._per_text(
            config, "prompt_logprobs", name, prompts, fetch, label="completions call", dry=[math.nan, 0.0]
        )
        return [[None if math.isnan(v) else v for v in values] for values in found]

    async def _per_text(
        self,
        config: ModelConfiguration,
        kind: str,
        name: str,
        texts: list[str],
        fetch: Callable[[Backend, list[str]], Awaitable[list[list[float]]]],
        *,
        label: str,
        dry: list[float],
    ) -> list[list[float]]:
        """One float vector per text, each text cached on its own, the missing ones fetched in
        batches of ``embed_batch_size`` through the retry loop."""
        if self.aborted is not None:
            raise self._abort_copy()
        self._configs.setdefault(config.session_key(), config)
        keys = [
            cache_key(
                {
                    "v": CACHE_VERSION,
                    "kind": kind,
                    "provider": config.cache_identity(),
                    "model": name,
                    "text": t,
                }
            )
            for t in texts
        ]
        if self.settings.dry_run:
            tokens = sum(_estimate_text_tokens(t) for t in texts)
            self._count(calls=-(-len(texts) // self.settings.embed_batch_size), prompt_tokens=tokens)
            return [list(dry) for _ in texts]
        cache = self.cache
        found = cache.get_embeddings(list(dict.fromkeys(keys))) if cache is not None else {}
        hits = sum(1 for k in keys if k in found)
        if hits:
            self._count(cache_hits=hits)
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in found:
                missing.setdefault(k, t)
        if missing:
            backend = self.backend(config)
            items = list(missing.items())
            size = max(1, self.settings.embed_batch_size)
            batches = [items[s : s + size] for s in range(0, len(items), size)]

            async def one(batch: list[tuple[str, str]]) -> list[list[float]]:
                texts_of = [t for _, t in batch]
                return await self._with_retries(
                    config, backend, lambda: fetch(backend, texts_of), label=label
                )

            results = await asyncio.gather(*(one(b) for b in batches))
            for batch, vectors in zip(batches, results, strict=True):
                new = [(k, v) for (k, _), v in zip(batch, vectors, strict=True)]
                found.update(new)
                if cache is not None:
                    cache.put_embeddings(name, new)
        return [found[k] for k in keys]


# --------------------------------------------------------------------------- reply helpers
def _stored_reply(data: dict[str, Any], model: str, *, structured: bool) -> dict[str, Any]:
    """The parts of a chat completion kept in the cache (a compact, provider-neutral form)."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise TransientError("malformed reply (no choices)")
    texts: list[str] = []
    finish = None
    for choice in sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise TransientError("malformed reply (a choice has no message)")
        content = message.get("content")
        if content is None and message.get("refusal"):
            content = ""
        texts.append(str(content or ""))
        finish = finish or choice.get("finish_reason")
    logprobs = None
    first = choices[0] if isinstance(choices[0], dict) else {}
    lp = first.get("logprobs")
    if isinstance(lp, dict) and isinstance(lp.get("content"), list):
        logprobs = [
            [t.get("token", ""), float(t.get("logprob", 0.0)),
             [[a.get("token", ""), float(a.get("logprob", 0.0))] for a in (t.get("top_logprobs") or [])]]
            for t in lp["content"]
            if isinstance(t, dict)
        ]
    usage = data.get("usage") or {}
    return {
        "choices": texts,
        "logprobs": logprobs,
        "structured": structured,
        "model": str(data.get("model") or model),
        "usage": [int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)],
        "finish_reason": finish,
    }


def _reply_from(stored: dict[str, Any], *, cached: bool) -> ChatReply:
    choices = [str(c) for c in stored.get("choices", [])]
    lps = stored.get("logprobs")
    usage = stored.get("usage") or [0, 0]
    return ChatReply(
        text=choices[0] if choices else "",
        choices=choices,
        logprobs=None
        if lps is None
        else [TokenLogprob(t, float(lp), [(a, float(b)) for a, b in top]) for t, lp, top in lps],
        structured=bool(stored.get("structured")),
        cached=cached,
        model=str(stored.get("model", "")),
        usage=Usage(int(usage[0]), int(usage[1])),
        finish_reason=stored.get("finish_reason"),
    )


def _is_valid(reply: ChatReply, validate: Validator | None) -> bool:
    if validate is None:
        return True
    try:
        validate(reply)
    except (ValueError, KeyError, TypeError):
        return False
    return True


def _validation_error(reply: ChatReply, validate: Validator | None) -> str:
    try:
        if validate is not None:
            validate(reply)
    except (ValueError, KeyError, TypeError) as exc:
        return str(exc)[:200] or type(exc).__name__
    return ""


def _parse_embeddings(data: dict[str, Any], expected: int) -> list[list[float]]:
    items = data.get("data")
    if not isinstance(items, list) or len(items) != expected:
        raise TransientError("malformed embeddings reply")
    try:
        ordered = sorted(items, key=lambda d: int(d.get("index", 0)))
        return [[float(x) for x in d["embedding"]] for d in ordered]
    except (KeyError, TypeError, ValueError):
        raise TransientError("malformed embeddings reply") from None


def _parse_prompt_logprobs(data: dict[str, Any], expected: int) -> list[list[float]]:
    """The prompt tokens' log-probabilities of an ``echo`` completions reply, per prompt in order
    (NaN where the server gives none: the first token)."""
    choices = data.get("choices")
    if not isinstance(choices, list) or len(choices) != expected:
        raise TransientError(f"malformed completions reply ({expected} prompts sent)")
    out: list[list[float]] = []
    for choice in sorted(choices, key=lambda c: int(c.get("index", 0)) if isinstance(c, dict) else 0):
        logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
        values = logprobs.get("token_logprobs") if isinstance(logprobs, dict) else None
        if not isinstance(values, list):
            raise FatalProviderError(
                "the completions endpoint returned no prompt log-probabilities (echo with logprobs); "
                "it cannot score prompts"
            )
        try:
            out.append([math.nan if v is None else float(v) for v in values])
        except (TypeError, ValueError):
            raise TransientError("malformed completions reply (log-probabilities)") from None
    return out


def _estimate_text_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _estimate_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(_estimate_text_tokens(str(m.get("content", ""))) + 4 for m in messages) + 3


def _placeholder_json(schema: dict[str, Any]) -> str:
    import json

    def value(s: dict[str, Any]) -> Any:
        kind = s.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if "enum" in s:
            return s["enum"][0]
        if kind == "object":
            return {k: value(v) for k, v in (s.get("properties") or {}).items()}
        if kind == "array":  # as many items as the schema requires (a verdict per document...)
            return [value(s.get("items") or {}) for _ in range(int(s.get("minItems", 0)))]
        if kind == "integer":
            return int(s.get("minimum", 0))
        if kind == "number":
            return float(s.get("minimum", 0))
        if kind == "boolean":
            return False
        if kind == "string":
            return ""
        return None

    return json.dumps(value(schema))


# --------------------------------------------------------------------------- run hook
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


@asynccontextmanager
async def _run_hook(ctx: RunContext) -> AsyncIterator[None]:
    settings = JudgeSettings.from_options(ctx.options)
    async with judge_session(settings) as session:
        started = time.monotonic()
        try:
            yield
        finally:
            if session._configs:
                info = session.info()
                info["seconds"] = round(time.monotonic() - started, 3)
                ctx.info["judge"] = info


register_run_hook(_run_hook)
