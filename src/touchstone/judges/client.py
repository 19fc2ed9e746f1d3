"""The judge client every LLM-judged metric calls.

``get_judge_client(model_config)`` returns a :class:`SessionJudgeClient` for one model configuration
(it satisfies the :class:`~touchstone.judges.protocol.JudgeClient` protocol, which callers type
against). The
client is a light handle: each call goes through the *judge session* current at call time (see
:mod:`touchstone.judges.session`): inside ``evaluate()`` that is the run's one shared session (one
concurrency limit, one cache, one set of counters for the whole run); outside a run, a standalone
session private to the handle and the event loop. So an evaluator may create its client in
``__init__`` and use it inside and outside runs alike.

A call is cached, rate limited, retried and accounted for (``touchstone.judges.accounting.add_usage``)
by the session. It raises :class:`~touchstone.judges.errors.JudgeCallError` when this call failed
after its retries (the engine records the row as failed) and
:class:`~touchstone.errors.RunAbortedError` when no call can succeed (bad key, unknown model or
deployment, exhausted quota, a request the server rejects): the run stops with that message.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator
from typing import Any

from touchstone.judges.config import JudgeSettings, ModelConfigLike, ModelConfiguration, as_model_config
from touchstone.judges.protocol import EmbeddingClient, JudgeClient

# The reply types live in their own module so the session (which builds them) need not import this
# one; they are re-exported here, where callers have always found them.
from touchstone.judges.replies import ChatReply, TokenLogprob, Usage, Validator
from touchstone.judges.session import JudgeSession, current_session

__all__ = [
    "ChatReply",
    "EmbeddingClient",
    "JudgeClient",
    "SessionJudgeClient",
    "TokenLogprob",
    "Usage",
    "Validator",
    "get_judge_client",
]


class SessionJudgeClient:
    """A handle on one judge model whose calls go through the judge session current at call time.
    Obtain it with :func:`get_judge_client`."""

    def __init__(self, model_config: ModelConfigLike, settings: JudgeSettings | None = None) -> None:
        self.config: ModelConfiguration = as_model_config(model_config)
        self.settings = settings
        self._standalone: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, JudgeSession] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"SessionJudgeClient({self.config!r})"

    def __getstate__(self) -> dict[str, Any]:
        # Sent to another process (a Ray worker): the standalone sessions stay with their loops here.
        return {**self.__dict__, "_standalone": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._standalone = weakref.WeakKeyDictionary()

    @property
    def model(self) -> str:
        """The model (or Azure deployment) name."""
        return self.config.model_name

    def _session(self) -> tuple[JudgeSession, bool]:
        """The run's session, else this handle's standalone session for the running loop."""
        session = current_session()
        if session is not None:
            return session, False
        loop = asyncio.get_running_loop()
        session = self._standalone.get(loop)
        if session is None:
            session = JudgeSession(self.settings or JudgeSettings())
            self._standalone[loop] = session
        return session, True

    async def chat(
        self,
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
        """One chat completion.

        ``json_schema`` requests structured output, negotiated once per server: ``response_format``
        ``json_schema`` (strict); when the server rejects it, ``json_object`` with the schema (the
        dialect of llama.cpp servers); when that is rejected too, plain text parsed tolerantly
        (``ChatReply.structured`` is False then). The session's provenance records the mode.
        ``logprobs``/``top_logprobs``
        request token log-probabilities (dropped likewise when unsupported). For reasoning models
        temperature is not sent and ``max_tokens`` becomes ``max_completion_tokens``. ``validate``
        (optional) checks a reply; a ``ValueError`` from it makes the call retry."""
        session, standalone = self._session()
        async with _using(session, standalone):
            return await session.chat(
                self.config,
                messages,
                json_schema=json_schema,
                schema_name=schema_name,
                logprobs=logprobs,
                top_logprobs=top_logprobs,
                max_tokens=max_tokens,
                temperature=temperature,
                n=n,
                validate=validate,
            )

    async def embed(self, texts: list[str], *, model: str | None = None) -> list[list[float]]:
        """Embeddings of ``texts`` (in order), in batched requests with the same concurrency, retry,
        cache and accounting as chat calls. ``model``: the embedding model (Azure: the deployment);
        default: the configuration's model."""
        session, standalone = self._session()
        async with _using(session, standalone):
            return await session.embed(self.config, texts, model=model)

    async def completions_logprobs(
        self, prompts: list[str], *, model: str | None = None
    ) -> list[list[float | None]]:
        """The log-probability of each token of each prompt under the model, in order (``None`` where
        the server gives none: the first token), from an OpenAI-compatible ``/v1/completions``
        endpoint (``echo`` with ``logprobs``, ``max_tokens=0``: nothing is generated; vLLM and
        llama.cpp servers have it). Batched, cached per prompt, retried, limited and accounted
        like every judge call. ``model``: the served model, default the configuration's."""
        session, standalone = self._session()
        async with _using(session, standalone):
            return await session.completions_logprobs(self.config, prompts, model=model)


@contextlib.asynccontextmanager
async def _using(session: JudgeSession, standalone: bool) -> AsyncIterator[None]:
    """Outside a run, HTTP connections are closed when the last call in progress ends, so none is
    left behind on an event loop that ``asyncio.run`` is about to close."""
    if not standalone:
        yield
        return
    session.users += 1
    try:
        yield
    finally:
        session.users -= 1
        if session.users == 0:
            await session.close_connections()


def get_judge_client(
    model_config: ModelConfigLike, *, settings: JudgeSettings | None = None
) -> SessionJudgeClient:
    """The judge client for ``model_config`` (a configuration object or a plain dict).

    Inside a run every call goes through the run's shared judge session (settings from
    ``evaluate(**options)``: ``concurrency``, ``cache``, ``timeout``, ``max_retries``...); outside a
    run through a standalone session with ``settings`` (default :class:`JudgeSettings`)."""
    return SessionJudgeClient(model_config, settings)
