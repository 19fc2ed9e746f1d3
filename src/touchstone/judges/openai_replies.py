"""Reading OpenAI-shaped replies: chat completions into the compact form the cache keeps and into
:class:`~touchstone.judges.replies.ChatReply`, embeddings and prompt log-probabilities into vectors.

Every provider returns OpenAI's shapes (see :class:`~touchstone.judges.providers.base.Backend`), so
this is the only reader. A reply that is not what it should be raises
:class:`~touchstone.judges.errors.TransientError` (asked again) or, when the server cannot give what
was asked at all, :class:`~touchstone.judges.errors.FatalProviderError`.
"""

from __future__ import annotations

import math
from typing import Any

from touchstone.judges.errors import FatalProviderError, TransientError
from touchstone.judges.replies import ChatReply, TokenLogprob, Usage, Validator


def stored_reply(data: dict[str, Any], model: str, *, structured: bool) -> dict[str, Any]:
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


def reply_from(stored: dict[str, Any], *, cached: bool) -> ChatReply:
    """The :class:`ChatReply` of a stored reply (``cached``: it came from the cache or a joined call)."""
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


def is_valid(reply: ChatReply, validate: Validator | None) -> bool:
    """Whether the caller's ``validate`` accepts ``reply`` (no validator: every reply)."""
    if validate is None:
        return True
    try:
        validate(reply)
    except (ValueError, KeyError, TypeError):
        return False
    return True


def validation_error(reply: ChatReply, validate: Validator | None) -> str:
    """Why ``validate`` refuses ``reply``, in a few words (empty when it does not)."""
    try:
        if validate is not None:
            validate(reply)
    except (ValueError, KeyError, TypeError) as exc:
        return str(exc)[:200] or type(exc).__name__
    return ""


def parse_embeddings(data: dict[str, Any], expected: int) -> list[list[float]]:
    """The vectors of an embeddings reply, in the order of the texts sent (``expected`` of them)."""
    items = data.get("data")
    if not isinstance(items, list) or len(items) != expected:
        raise TransientError("malformed embeddings reply")
    try:
        ordered = sorted(items, key=lambda d: int(d.get("index", 0)))
        return [[float(x) for x in d["embedding"]] for d in ordered]
    except (KeyError, TypeError, ValueError):
        raise TransientError("malformed embeddings reply") from None


def parse_prompt_logprobs(data: dict[str, Any], expected: int) -> list[list[float]]:
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


def estimate_text_tokens(text: str) -> int:
    """A rough token count (four characters a token): enough for token caps and dry-run estimates."""
    return max(1, len(text) // 4)


def estimate_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """A rough token count of chat messages, with the few tokens each message's framing adds."""
    return sum(estimate_text_tokens(str(m.get("content", ""))) + 4 for m in messages) + 3
