"""Which backend serves a model configuration: OpenAI and Azure OpenAI (and every OpenAI-compatible
server) built in; other providers registered by name (``anthropic`` built in, imported on first use).
"""

from __future__ import annotations

from collections.abc import Callable

from touchstone.errors import ConfigurationError
from touchstone.judges.config import (
    AzureOpenAIConfig,
    JudgeSettings,
    ModelConfiguration,
    OpenAIConfig,
    ProviderModelConfiguration,
)
from touchstone.judges.providers.base import Backend

AdapterFactory = Callable[[ProviderModelConfiguration, JudgeSettings], Backend]


def _anthropic(config: ProviderModelConfiguration, settings: JudgeSettings) -> Backend:
    from touchstone.judges.providers.anthropic import AnthropicBackend

    return AnthropicBackend(config, settings)


_ADAPTERS: dict[str, AdapterFactory] = {"anthropic": _anthropic}


def register_adapter(name: str, factory: AdapterFactory) -> None:
    """Make ``ProviderModelConfiguration(provider_name=name, ...)`` use ``factory``."""
    _ADAPTERS[name] = factory


def make_adapter_backend(config: ModelConfiguration, settings: JudgeSettings) -> Backend:
    """The registered adapter's backend for a :class:`ProviderModelConfiguration`."""
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


def make_backend(config: ModelConfiguration, settings: JudgeSettings) -> Backend:
    """The backend for a configuration."""
    if isinstance(config, (OpenAIConfig, AzureOpenAIConfig)):
        from touchstone.judges.providers.openai_compat import OpenAIBackend

        return OpenAIBackend(config, settings)
    return make_adapter_backend(config, settings)
