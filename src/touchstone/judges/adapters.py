"""Adapters for judge providers that do not speak the OpenAI protocol (Anthropic, Gemini, Bedrock...).

An adapter is a factory ``(ProviderModelConfiguration, JudgeSettings) -> Backend`` registered under a
provider name (:func:`register_adapter`); its backend (see
:class:`~touchstone.judges.providers.base.Backend`) builds the provider's request body from the
session's provider-neutral request, turns the reply into an OpenAI-shaped ``chat.completion`` dict and
raises the :mod:`touchstone.judges.errors` classes, so caching, retries, concurrency and accounting
work unchanged. Adapters import their SDK lazily; a missing SDK gives an install hint.

Built in: ``anthropic`` (``pip install 'touchstone[anthropic]'``, see
:mod:`touchstone.judges.providers.anthropic`). Providers with an OpenAI-compatible endpoint (Gemini's,
Bedrock access gateways, LiteLLM proxy, vLLM, llama.cpp...) need no adapter: use
``OpenAIModelConfiguration(model, base_url=...)``.
"""

from __future__ import annotations

from touchstone.judges.providers.anthropic import AnthropicBackend
from touchstone.judges.providers.registry import AdapterFactory, make_adapter_backend, register_adapter

__all__ = ["AdapterFactory", "AnthropicBackend", "make_adapter_backend", "register_adapter"]
