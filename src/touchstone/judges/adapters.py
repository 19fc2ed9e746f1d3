"""Adapters for judge providers that do not speak the OpenAI protocol (Anthropic, Gemini, Bedrock...).

An adapter is a factory ``(ProviderModelConfiguration, JudgeSettings) -> Backend`` registered under a
provider name; its backend turns an OpenAI-shaped request body into the provider's call and the reply
back into an OpenAI-shaped ``chat.completion`` dict, raising :class:`~touchstone.judges.backends.Failure`
with the same kinds, so caching, retries, concurrency and accounting work unchanged. Adapters import
their SDK lazily; a missing SDK gives an install hint.

Built in: ``anthropic`` (``pip install 'touchstone[anthropic]'``). Providers with an OpenAI-compatible
endpoint (Gemini's, Bedrock access gateways, LiteLLM proxy, vLLM...) need no adapter: use
``OpenAIModelConfiguration(model, base_url=...)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from touchstone.errors import ConfigurationError
from touchstone.judges import backends as bk
from touchstone.judges.config import JudgeSettings, ModelConfiguration, ProviderModelConfiguration
from touchstone.judges.errors import redact

AdapterFactory = Callable[[ProviderModelConfiguration, JudgeSettings], bk.Backend]
_ADAPTERS: dict[str, AdapterFactory] = {}


def register_adapter(name: str, factory: AdapterFactory) -> None:
    """Make ``ProviderModelConfiguration(provider_name=name, ...)`` use ``factory``."""
    _ADAPTERS[name] = factory


def make_adapter_backend(config: ModelConfiguration, settings: JudgeSettings) -> bk.Backend:
    if not isinstance(config, ProviderModelConfiguration):
        raise ConfigurationError(f"no adapter for {type(config).__name__}")
    factory = _ADAPTERS.get(config.provider_name)
    if factory is None:
        known = ", ".join(sorted(_ADAPTERS)) or "none"
        raise ConfigurationError(
            f"no adapter for provider {config.provider_name!r} (registered: {known}); for an "
            "OpenAI-compatible endpoint use OpenAIModelConfiguration(model, base_url=...)"
        )
    return factory(config, settings)


_NOT_IN_MESSAGES_API = ("response_format", "logprobs", "top_logprobs", "seed")
"""Request parameters the Messages API has no equivalent for: never sent (structured output falls back
to free text parsed tolerantly, log-probability scoring to the sampled score)."""

_FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                   "tool_use": "tool_calls", "refusal": "content_filter"}


class AnthropicBackend(bk.BackendBase):
    """Claude models through the ``anthropic`` package's async client (Messages API)."""

    def __init__(self, config: ProviderModelConfiguration, settings: JudgeSettings) -> None:
        try:
            import anthropic
        except ImportError:
            raise ConfigurationError(
                "the Anthropic adapter needs the anthropic package: pip install 'touchstone[anthropic]'"
            ) from None
        host = (urlsplit(config.base_url).netloc or config.base_url) if config.base_url else "api.anthropic.com"
        super().__init__(settings, host=host)
        # Known up front, so the session leaves them out of every request: a request refused here
        # would be counted as a call although nothing was sent.
        self.unsupported.update(_NOT_IN_MESSAGES_API)
        self._anthropic = anthropic
        self._secret = config.resolved_api_key()
        if not self._secret:
            raise ConfigurationError("no Anthropic API key: set ANTHROPIC_API_KEY or pass api_key")
        self.client = anthropic.AsyncAnthropic(
            api_key=self._secret, base_url=config.base_url, max_retries=0, timeout=settings.timeout
        )

    async def chat(self, body: dict[str, Any], timeout: float) -> bk.Response:
        anthropic = self._anthropic
        for unsupported in _NOT_IN_MESSAGES_API:
            if unsupported in body:
                raise bk.Failure(bk.UNSUPPORTED, f"{unsupported} is not supported by Anthropic", 400, param=unsupported)
        if int(body.get("n") or 1) != 1:
            raise bk.Failure(bk.FATAL, "the Messages API returns one completion per request: n > 1 is not supported")
        system = "\n\n".join(m["content"] for m in body["messages"] if m.get("role") == "system")
        messages = [m for m in body["messages"] if m.get("role") != "system"]
        kwargs: dict[str, Any] = {
            "model": body["model"],
            "messages": messages,
            "max_tokens": body.get("max_tokens") or body.get("max_completion_tokens") or 1024,
        }
        if system:
            kwargs["system"] = system
        if "temperature" in body:
            # anthropic>=1.0 dropped ``temperature`` from ``messages.create``'s keywords (the API still
            # takes it, except for models that deprecated it: their 400 makes the session drop it);
            # ``extra_body`` puts it on the wire with every SDK version.
            kwargs["extra_body"] = {"temperature": body["temperature"]}
        try:
            msg = await asyncio.wait_for(self.client.messages.create(**kwargs), timeout + 1.0)
        except (asyncio.TimeoutError, anthropic.APITimeoutError):
            raise bk.Failure(bk.TRANSIENT, f"timed out after {timeout:g} s") from None
        except anthropic.APIStatusError as exc:
            failure = bk.classify_status(exc.status_code, exc.body, exc.response.headers, body)
            if exc.status_code == 529:  # Anthropic is overloaded: back off and lower concurrency, as for a 429
                failure = bk.Failure(bk.RATE_LIMIT, f"overloaded (HTTP 529): {_error_message(exc.body)}", 529,
                                     failure.retry_after)
            elif failure.kind == bk.FATAL and "prompt is too long" in failure.message.lower():
                # Anthropic's "context length exceeded": this row's prompt, not the run, is at fault
                failure = bk.Failure(bk.ROW, f"HTTP 400 prompt too long: {_error_message(exc.body)}", 400)
            failure.message = redact(failure.message, [self._secret])
            raise failure from None
        except anthropic.APIConnectionError:
            raise bk.Failure(bk.TRANSIENT, "connection error") from None
        except (anthropic.APIError, ValueError):  # a body that is not a message (e.g. truncated JSON)
            raise bk.Failure(bk.TRANSIENT, "malformed reply") from None
        try:
            text = "".join(getattr(block, "text", "") or "" for block in msg.content)
            usage = {"prompt_tokens": int(msg.usage.input_tokens), "completion_tokens": int(msg.usage.output_tokens)}
        except (AttributeError, TypeError, ValueError):
            raise bk.Failure(bk.TRANSIENT, "malformed reply (not a message)") from None
        finish = _FINISH_REASONS.get(str(msg.stop_reason), msg.stop_reason)
        data = {
            "model": str(msg.model),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": usage,
        }
        return bk.Response(data)

    async def embed(self, model: str, texts: list[str], timeout: float) -> bk.Response:
        raise bk.Failure(bk.FATAL, "Anthropic has no embeddings API; use another model for embeddings")

    async def aclose(self) -> None:
        await self.client.close()


def _error_message(body: Any) -> str:
    err = body.get("error", body) if isinstance(body, dict) else None
    return str(err.get("message") or "") if isinstance(err, dict) else str(body or "")


register_adapter("anthropic", AnthropicBackend)
