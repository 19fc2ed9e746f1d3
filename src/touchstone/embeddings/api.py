"""Embeddings from an API: OpenAI, Azure OpenAI, or any OpenAI-compatible ``/v1/embeddings``.

Requests go through the judge client (``touchstone.judges``), so they share its concurrency limit,
retries with backoff, response cache and usage accounting.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from touchstone.judges.protocol import EmbeddingClient


def judge_client(model_config: Any) -> EmbeddingClient:
    """The shared judge client for ``model_config`` (imported late: the judge layer is optional here)."""
    client: EmbeddingClient = importlib.import_module("touchstone.judges").get_judge_client(model_config)
    return client


def describe_config(model_config: Any) -> dict[str, Any]:
    """Secret-free provenance of a model configuration (no keys, no tokens)."""
    if isinstance(model_config, Mapping):
        items = dict(model_config)
    elif hasattr(model_config, "model_dump"):
        items = dict(model_config.model_dump())
    else:
        items = {k: v for k, v in vars(model_config).items() if not k.startswith("_")}
    keep = ("type", "model", "azure_deployment", "azure_endpoint", "base_url", "api_version")
    return {k: items[k] for k in keep if items.get(k) is not None}


class ApiEmbedder:
    """Embeds texts through the judge client built from ``model_config``; ``model`` names the
    embedding model (or Azure deployment) when it differs from the configuration's model."""

    def __init__(self, model_config: Any, model: str | None = None) -> None:
        self.model_config = model_config
        self.model = model
        self._client = judge_client(model_config)  # fails early on a bad configuration

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_client"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._client = judge_client(self.model_config)

    @property
    def name(self) -> str:
        info = describe_config(self.model_config)
        return str(self.model or info.get("azure_deployment") or info.get("model") or "embeddings")

    async def embed(self, texts: list[str]) -> Sequence[Sequence[float]]:
        """One request for all of ``texts``."""
        return await self._client.embed(texts, model=self.model)
