"""What a judge client is, for code that calls one: the judge primitive, embedding metrics, and anyone
who brings their own client (a test double, a client of another framework).

:func:`touchstone.judges.get_judge_client` returns a client that satisfies these protocols
(:class:`~touchstone.judges.client.SessionJudgeClient`); code that only calls a client should be
typed against the protocols, so any object with the same methods can stand in.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from touchstone.judges.replies import ChatReply, Validator


@runtime_checkable
class JudgeClient(Protocol):
    """A handle on one judge model: its name and one chat call."""

    @property
    def model(self) -> str:
        """The model (or deployment) name, recorded as the judge of each score."""
        ...

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
        """One chat completion of ``messages``.

        ``json_schema`` asks for a JSON reply following it (the server's structured output where it
        has one; ``ChatReply.structured`` says whether it was honoured, else the text is parsed
        tolerantly); ``logprobs``/``top_logprobs`` ask for token log-probabilities; ``n`` for that
        many choices; ``validate`` checks a reply (a ``ValueError`` from it makes the call ask again).
        Raises :class:`~touchstone.judges.errors.JudgeCallError` when this call failed and
        :class:`~touchstone.errors.RunAbortedError` when no call can succeed."""
        ...


@runtime_checkable
class EmbeddingClient(Protocol):
    """A handle on an embedding model."""

    async def embed(self, texts: list[str], *, model: str | None = None) -> list[list[float]]:
        """The embedding of each of ``texts``, in order (``model``: another model of the same server)."""
        ...
