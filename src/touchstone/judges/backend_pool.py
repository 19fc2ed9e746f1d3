"""A session's backends: one per server, model configuration and key, started from what earlier runs
learnt about the server (:mod:`touchstone.judges.known_servers`) and described in the run's provenance."""

from __future__ import annotations

import contextlib
from typing import Any

from touchstone.errors import ConfigurationError
from touchstone.judges import known_servers
from touchstone.judges.abort import AbortState
from touchstone.judges.config import JudgeSettings, ModelConfiguration
from touchstone.judges.providers.base import Backend
from touchstone.judges.providers.registry import make_backend


class BackendPool:
    """The backends of one session, by the configuration's session key."""

    __slots__ = ("_abort", "_identities", "_remembered", "_settings", "backends", "configs")

    def __init__(self, settings: JudgeSettings, abort: AbortState) -> None:
        self._settings = settings
        self._abort = abort
        self.backends: dict[str, Backend] = {}
        self.configs: dict[str, ModelConfiguration] = {}
        """Every configuration a call was made with (also those whose backend is closed)."""
        self._remembered: dict[str, str] = {}  # backends started from an earlier run's knowledge: from where
        self._identities: dict[int, tuple[ModelConfiguration, str, str]] = {}

    def identities(self, config: ModelConfiguration) -> tuple[str, str]:
        """``config.session_key()`` and ``config.cache_identity()``, computed once per configuration
        object (each hashes the credential: 50 µs a call, on every judge call otherwise). The entry
        holds the configuration, so its id is not reused while the entry lives."""
        known = self._identities.get(id(config))
        if known is None or known[0] is not config:
            known = self._identities[id(config)] = (config, config.session_key(), config.cache_identity())
        return known[1], known[2]

    def note(self, key: str, config: ModelConfiguration) -> None:
        """A call is made with ``config`` (session key ``key``): it appears in the provenance."""
        self.configs.setdefault(key, config)

    def _server_key(self, config: ModelConfiguration) -> str:
        """What :mod:`~touchstone.judges.known_servers` keeps a server under on disk: provider,
        endpoint without credentials, a salted digest of the credential, and the model."""
        return f"{self.identities(config)[1]}|{config.model_name}"

    def get(self, config: ModelConfiguration) -> Backend:
        """The backend of ``config``, made on first use; a configuration no provider can serve stops
        the run."""
        key = self.identities(config)[0]
        backend = self.backends.get(key)
        if backend is None:
            self._abort.check()
            backend = self._make(config)
            traits = known_servers.recall(key, backend, self._server_key(config))
            if traits is not None:
                self._remembered[key] = traits.source
            self.backends[key] = backend
            self.configs[key] = config
        return backend

    def _make(self, config: ModelConfiguration) -> Backend:
        try:
            return make_backend(config, self._settings)
        except ConfigurationError as exc:
            refused = f"judge model {config.model_name!r}: {exc}"
        self._abort.stop(refused)  # outside the except block: the message says it all

    async def close(self) -> None:
        """Remember what each backend learnt and close their HTTP clients (opened again by the next
        call, with fresh limits)."""
        for key, backend in self.backends.items():
            config = self.configs.get(key)
            known_servers.remember(key, backend, None if config is None else self._server_key(config))
        backends = list(self.backends.values())
        self.backends.clear()
        for backend in backends:
            with contextlib.suppress(Exception):  # closing must not hide the run's own outcome
                await backend.aclose()

    def models(self) -> list[dict[str, Any]]:
        """Per configuration used: provider, model, host and, while its backend is open, the
        negotiated ``structured_output`` mode, the parameters the server refused, the concurrency
        reached and where remembered traits came from."""
        models = []
        for key, config in self.configs.items():
            backend = self.backends.get(key)
            entry: dict[str, Any] = {
                "provider": config.provider,
                "model": config.model_name,
                "host": backend.host if backend is not None else None,
                "reasoning": config.reasoning,
            }
            if backend is not None:
                entry.update(_backend_entry(backend, self._remembered.get(key)))
            models.append(entry)
        return models


def _backend_entry(backend: Backend, remembered: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "concurrency_final": backend.limiter.current,
        "concurrency_min": int(backend.limiter.min_limit),
        "concurrency_decreases": backend.limiter.decreases,
        "unsupported_params": sorted(backend.unsupported),
    }
    if backend.structured.decided:
        entry["structured_output"] = backend.structured.mode
    if remembered is not None:
        entry["negotiated"] = (
            "remembered from an earlier run in this process" if remembered == "process"
            else "remembered from an earlier run of another process (the shared servers file)"
        )
    transport = getattr(backend, "transport", None)
    if transport is not None:
        entry["http_transport"] = transport
    return entry
