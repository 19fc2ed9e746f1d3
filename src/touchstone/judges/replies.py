"""What a judge call returns: the reply, its tokens' log-probabilities and its token usage.

These types sit below both :mod:`touchstone.judges.client` (the handle evaluators hold) and
:mod:`touchstone.judges.session` (which makes the calls), so neither has to import the other's
module to name them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChatReply", "TokenLogprob", "Usage", "Validator"]


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its log-probability and the most likely alternatives
    (``top``: ``(token, logprob)`` pairs, best first)."""

    token: str
    logprob: float
    top: list[tuple[str, float]] = field(default_factory=list)


@dataclass(frozen=True)
class Usage:
    """Tokens of one call as the server reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class ChatReply:
    """The judge's answer.

    ``text`` is the first choice's content and ``choices`` all of them (``n > 1``); ``logprobs`` the
    first choice's token log-probabilities when they were asked for and returned; ``structured`` is
    True when the server honoured the JSON-schema response format (False: the text is free-form and
    must be parsed tolerantly, see :func:`touchstone.judges.parsing.extract_json`); ``cached`` is True
    when the reply came from the cache (no model call was made)."""

    text: str
    choices: list[str]
    logprobs: list[TokenLogprob] | None = None
    structured: bool = False
    cached: bool = False
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None


Validator = Callable[[ChatReply], Any]
"""Raises ``ValueError`` when a reply is unusable (e.g. violates the schema): the call is retried
(counted as a retry) and an invalid reply is never cached."""
