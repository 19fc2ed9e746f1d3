"""Embedding providers for semantic metrics: local sentence-transformers models and embeddings APIs,
with a memo and a micro-batcher so each distinct text is embedded once per run, in batches."""

from touchstone.embeddings.batching import EmbeddingBatcher, EmbeddingMemo, cosine
from touchstone.embeddings.deps import INSTALL_HINT, MissingDependencyError, check_local, import_local
from touchstone.embeddings.local import LocalEmbedder, offline_model_path, resolve_model

__all__ = [
    "INSTALL_HINT",
    "EmbeddingBatcher",
    "EmbeddingMemo",
    "LocalEmbedder",
    "MissingDependencyError",
    "check_local",
    "cosine",
    "import_local",
    "offline_model_path",
    "resolve_model",
]
