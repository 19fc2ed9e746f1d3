"""Which provider serves a model configuration: providers registered by name.

A provider is one module whose backend class (or any factory ``(config, settings) -> Backend``) is
registered with :func:`register_provider`::

    @register_provider("echo")
    class EchoBackend(BackendBase):
        def __init__(self, config: ModelConfiguration, settings: JudgeSettings) -> None: ...

A configuration names its provider (:attr:`~touchstone.judges.config.ModelConfigBase.provider`:
``openai``, ``azure_openai``, or a :class:`~touchstone.judges.config.ProviderModelConfiguration`'s
``provider_name``); the command line's ``--judge-provider`` sets it. The dry run is a provider too
(``dry_run``): with ``JudgeSettings(dry_run=True)`` it serves every configuration.

The built-in providers are listed in :data:`BUILT_IN` and imported on first use (a provider's SDK is
loaded only when a run needs it); other packages add theirs through the ``touchstone.judge_providers``
entry point group (each entry point names a module that registers its providers when imported).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, TypeVar

from touchstone.errors import ConfigurationError
from touchstone.judges.config import JudgeSettings, ModelConfiguration
from touchstone.judges.providers.base import Backend

ProviderFactory = Callable[[Any, JudgeSettings], Backend]
"""Builds the backend of one configuration (the configuration's type is the provider's own)."""
_F = TypeVar("_F", bound=ProviderFactory)

DRY_RUN = "dry_run"
"""The provider that answers every call of a dry run with a placeholder (no request is made)."""

BUILT_IN: dict[str, str] = {
    "openai": "touchstone.judges.providers.openai_compat",
    "azure_openai": "touchstone.judges.providers.openai_compat",
    "anthropic": "touchstone.judges.providers.anthropic",
    DRY_RUN: "touchstone.judges.providers.dry_run",
}
"""Provider name -> the module that registers it (imported on first use)."""

ENTRY_POINT_GROUP = "touchstone.judge_providers"

_PROVIDERS: dict[str, ProviderFactory] = {}


def register_provider(*names: str) -> Callable[[_F], _F]:
    """Register the decorated backend class (or factory) as the provider ``names`` (the last
    registration of a name wins, so a user's module may replace a built-in one)."""
    if not names:
        raise ValueError("register_provider needs at least one provider name")

    def register(factory: _F) -> _F:
        for name in names:
            _PROVIDERS[name] = factory
        return factory

    return register


def provider_names() -> list[str]:
    """The providers that can be named: registered, built in, or offered by an entry point."""
    found = set(_PROVIDERS) | set(BUILT_IN) | {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(found - {DRY_RUN})


def provider(name: str) -> ProviderFactory:
    """The factory registered as ``name``, importing its module first when it is built in or offered
    by an entry point. Raises :class:`~touchstone.errors.ConfigurationError` for an unknown name."""
    factory = _PROVIDERS.get(name)
    if factory is not None:
        return factory
    module = BUILT_IN.get(name)
    if module is None:
        for point in entry_points(group=ENTRY_POINT_GROUP, name=name):
            module = point.module
            break
    if module is not None:
        importlib.import_module(module)
        factory = _PROVIDERS.get(name)
        if factory is not None:
            return factory
    known = ", ".join(provider_names())
    raise ConfigurationError(
        f"no judge provider {name!r} (known: {known}); for an OpenAI-compatible endpoint use the "
        "openai provider with a base URL"
    )


def make_backend(config: ModelConfiguration, settings: JudgeSettings) -> Backend:
    """The backend for ``config``: its provider's, or the dry run's when ``settings.dry_run``."""
    return provider(DRY_RUN if settings.dry_run else config.provider)(config, settings)
