"""Claude models through Anthropic's Messages API (``pip install 'touchstone-genai[anthropic]'``).

The backend builds a Messages API body from the provider-neutral request (system prompt at the top
level, a ``max_tokens`` always present; ``response_format``, log-probabilities and ``seed`` have no
equivalent and are never sent: structured output is plain text parsed tolerantly) and turns the reply
back into OpenAI's ``chat.completion`` shape, raising the same error classes as every provider.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

from touchstone.errors import ConfigurationError
from touchstone.judges.config import JudgeSettings, ProviderModelConfiguration
from touchstone.judges.errors import (
    FatalProviderError,
    RateLimited,
    RowRejected,
    TransientError,
    redact,
)
from touchstone.judges.providers.base import (
    BackendBase,
    ChatRequest,
    Response,
    classify_status,
    connection_failure,
)
from touchstone.judges.providers.registry import register_provider

NOT_IN_MESSAGES_API = ("response_format", "logprobs", "top_logprobs", "seed")
"""Request parameters the Messages API has no equivalent for: never sent (structured output falls back
to free text parsed tolerantly, log-probability scoring to the sampled score)."""

_FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                   "tool_use": "tool_calls", "refusal": "content_filter"}
DEFAULT_MAX_TOKENS = 1024


@register_provider("anthropic")
class AnthropicBackend(BackendBase):
    """Claude models through the ``anthropic`` package's async client (Messages API)."""

    def __init__(self, config: ProviderModelConfiguration, settings: JudgeSettings) -> None:
        try:
            import anthropic
        except ImportError:
            raise ConfigurationError(
                "the Anthropic adapter needs the anthropic package: pip install 'touchstone-genai[anthropic]'"
            ) from None
        host = (
            (urlsplit(config.base_url).netloc or config.base_url) if config.base_url else "api.anthropic.com"
        )
        super().__init__(settings, host=host)
        # Recorded in the provenance as what this provider does not take; the body never has them.
        self.unsupported.update(NOT_IN_MESSAGES_API)
        self.structured.fix("text")
        self._anthropic = anthropic
        self._secret = config.resolved_api_key()
        if not self._secret:
            raise ConfigurationError("no Anthropic API key: set ANTHROPIC_API_KEY or pass api_key")
        self.client = anthropic.AsyncAnthropic(
            api_key=self._secret, base_url=config.base_url, max_retries=0, timeout=settings.timeout
        )

    def chat_body(self, model: str, request: ChatRequest) -> dict[str, Any]:
        """``messages.create`` keywords: system messages joined into ``system``; ``max_tokens``
        always (the API requires it); ``temperature`` unless the model refused it."""
        if request["n"] != 1:
            raise FatalProviderError(
                "the Messages API returns one completion per request: n > 1 is not supported"
            )
        messages = request["messages"]
        body: dict[str, Any] = {
            "model": model,
            "messages": [m for m in messages if m.get("role") != "system"],
            "max_tokens": request["max_tokens"] or DEFAULT_MAX_TOKENS,
        }
        system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system")
        if system:
            body["system"] = system
        if request["temperature"] is not None and "temperature" not in self.unsupported:
            body["temperature"] = request["temperature"]
        return body

    async def chat(self, body: dict[str, Any], timeout: float) -> Response:
        anthropic = self._anthropic
        kwargs = dict(body)
        if "temperature" in kwargs:
            # anthropic>=1.0 dropped ``temperature`` from ``messages.create``'s keywords (the API still
            # takes it, except for models that deprecated it: their 400 makes the session drop it);
            # ``extra_body`` puts it on the wire with every SDK version.
            kwargs["extra_body"] = {"temperature": kwargs.pop("temperature")}
        try:
            msg = await asyncio.wait_for(self.client.messages.create(**kwargs), timeout + 1.0)
        except anthropic.APIStatusError as exc:
            failure = classify_status(exc.status_code, exc.body, exc.response.headers, body)
            if (
                exc.status_code == 529
            ):  # Anthropic is overloaded: back off and lower concurrency, as for a 429
                failure = RateLimited(f"overloaded (HTTP 529): {_error_message(exc.body)}", 529,
                                      retry_after=failure.retry_after)
            elif isinstance(failure, FatalProviderError) and "prompt is too long" in failure.message.lower():
                # Anthropic's "context length exceeded": this row's prompt, not the run, is at fault
                failure = RowRejected(f"HTTP 400 prompt too long: {_error_message(exc.body)}", 400)
            failure.message = redact(failure.message, [self._secret])
            raise failure from None
        except (asyncio.TimeoutError, anthropic.APITimeoutError, anthropic.APIConnectionError) as exc:
            raise connection_failure(exc, self.host, timeout) from None
        except (anthropic.APIError, ValueError):  # a body that is not a message (e.g. truncated JSON)
            raise TransientError("malformed reply") from None
        try:
            text = "".join(getattr(block, "text", "") or "" for block in msg.content)
            usage = {
                "prompt_tokens": int(msg.usage.input_tokens),
                "completion_tokens": int(msg.usage.output_tokens),
            }
        except (AttributeError, TypeError, ValueError):
            raise TransientError("malformed reply (not a message)") from None
        finish = _FINISH_REASONS.get(str(msg.stop_reason), msg.stop_reason)
        data = {
            "model": str(msg.model),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
            ],
            "usage": usage,
        }
        return Response(data)

    async def embed(self, model: str, texts: list[str], timeout: float) -> Response:
        raise FatalProviderError("Anthropic has no embeddings API; use another model for embeddings")

    async def aclose(self) -> None:
        await self.client.close()


def _error_message(body: Any) -> str:
    err = body.get("error", body) if isinstance(body, dict) else None
    return str(err.get("message") or "") if isinstance(err, dict) else str(body or "")
