"""Perplexity (SPEC 3.3): exp(mean negative log-likelihood per token) of a text under a causal
language model; per text, their mean (the summary's mean of ``perplexity``), and the corpus
perplexity exp(total NLL / total tokens) (``corpus_perplexity``, from the per-row NLL sums and token
counts kept in ``perplexity_properties``).

Two providers:

* **local**: a Hugging Face causal LM given by directory (weights never downloaded). Computed as
  Hugging Face ``evaluate``'s ``perplexity`` metric: the text is tokenised without special tokens;
  with ``add_start_token=True`` (the default) the tokenizer's BOS token is prepended so the first word
  is predicted too; ``max_length`` truncates (minus one for the BOS); NLL is the cross-entropy of each
  token given the ones before it. Rows are batched by length (right padding, masked), each distinct
  text computed once.
* **API**: an OpenAI-compatible ``/v1/completions`` endpoint that returns prompt log-probabilities
  (``echo=True, logprobs=0, max_tokens=0``; vLLM and the legacy OpenAI completions API do). The
  server's first token has no log-probability, so it is not counted: this is the
  ``add_start_token=False`` convention. Texts of concurrent rows go out in one request (micro-batching,
  as for embeddings).

A text with no token to predict (empty; or a single token without a start token) has no perplexity:
the row records why, it is never scored as a number.
"""

from __future__ import annotations

import asyncio
import importlib
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from touchstone.embeddings.batching import EmbeddingBatcher, EmbeddingMemo
from touchstone.embeddings.deps import check_local, guard_forked_torch, import_local
from touchstone.embeddings.local import resolve_model
from touchstone.errors import ConfigurationError, RunAbortedError
from touchstone.evaluators.base import MODEL_BATCH_ROWS, Evaluator, InputSpec, _run_coroutine
from touchstone.evaluators.lazy import LazyModelState
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome

_FEATURE = "perplexity with a local model"


class NoTokensError(ValueError):
    """The text has no token whose probability could be computed."""


def _from_stats(nll: float, tokens: float) -> float:
    if tokens < 1:
        raise NoTokensError("the text has no token to predict (empty, or one token without a start token)")
    return math.exp(nll / tokens)


class LocalCausalLM(LazyModelState):
    """A Hugging Face causal LM and its tokenizer, loaded on first use; NLL sums and token counts of
    texts in length-sorted, padded batches."""

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        add_start_token: bool = True,
        max_length: int | None = None,
        batch_size: int = 16,
        max_batch_tokens: int = 16_384,
        device: str | None = None,
    ) -> None:
        check_local(_FEATURE, "torch", "transformers")
        self.path, self.name = resolve_model(model, _FEATURE)
        self.add_start_token = bool(add_start_token)
        self.max_length = None if max_length is None else int(max_length)
        self.batch_size = max(1, int(batch_size))
        self.max_batch_tokens = max(1, int(max_batch_tokens))
        self.device = device
        self._init_lazy()

    def _load(self) -> dict[str, Any]:
        if not self._lazy:
            torch = import_local(_FEATURE, "torch")
            transformers = import_local(_FEATURE, "transformers")
            tokenizer = transformers.AutoTokenizer.from_pretrained(self.path, local_files_only=True)
            model = transformers.AutoModelForCausalLM.from_pretrained(self.path, local_files_only=True)
            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            model.to(device).eval()
            if self.add_start_token and tokenizer.bos_token_id is None:
                raise ConfigurationError(
                    f"perplexity: the tokenizer of {self.name} has no BOS token; pass add_start_token=False"
                )
            limit = getattr(model.config, "max_position_embeddings", None) or getattr(
                model.config, "n_positions", None
            )
            self._lazy.update(torch=torch, tokenizer=tokenizer, model=model, device=device, limit=limit)
        return self._lazy

    def token_ids(self, text: str) -> list[int]:
        """The ids scored for ``text``: its tokens (truncated to ``max_length``), after BOS if any."""
        lazy = self._load()
        ids = list(lazy["tokenizer"](text, add_special_tokens=False)["input_ids"])
        if self.max_length is not None:
            ids = ids[: self.max_length - 1 if self.add_start_token else self.max_length]
        if self.add_start_token:
            ids = [int(lazy["tokenizer"].bos_token_id), *ids]
        return ids

    def statistics(self, texts: Sequence[str]) -> dict[str, tuple[float, int] | Exception]:
        """``text -> (NLL sum in nats, predicted tokens)`` for the distinct ``texts``, or why not."""
        guard_forked_torch()
        with self._lazy_lock:
            lazy = self._load()
            torch, model, limit = lazy["torch"], lazy["model"], lazy["limit"]
            out: dict[str, tuple[float, int] | Exception] = {}
            encoded: list[tuple[str, list[int]]] = []
            for text in dict.fromkeys(texts):
                ids = self.token_ids(text)
                if len(ids) < 2:
                    out[text] = NoTokensError(
                        "the text has no token to predict (empty, or one token without a start token)"
                    )
                elif limit is not None and len(ids) > limit:
                    out[text] = ValueError(
                        f"the text has {len(ids)} tokens and the model takes at most {limit}; "
                        "set max_length to truncate"
                    )
                else:
                    encoded.append((text, ids))
            encoded.sort(key=lambda item: len(item[1]))
            start = 0
            while start < len(encoded):
                stop = start + 1
                while (
                    stop < len(encoded)
                    and stop - start < self.batch_size
                    and (stop - start + 1) * len(encoded[stop][1]) <= self.max_batch_tokens
                ):
                    stop += 1
                batch = encoded[start:stop]
                width = len(batch[-1][1])
                input_ids = torch.zeros((len(batch), width), dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, (_, ids) in enumerate(batch):
                    input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                    mask[row, : len(ids)] = 1
                input_ids, mask = input_ids.to(lazy["device"]), mask.to(lazy["device"])
                with torch.no_grad():
                    logits = model(input_ids, attention_mask=mask).logits
                shift_logits = logits[..., :-1, :].float()
                shift_labels = input_ids[..., 1:]
                shift_mask = mask[..., 1:]
                nll = torch.nn.functional.cross_entropy(
                    shift_logits.transpose(1, 2), shift_labels, reduction="none"
                )
                sums = (nll * shift_mask).sum(1).tolist()
                counts = shift_mask.sum(1).tolist()
                for (text, _), total, count in zip(batch, sums, counts, strict=True):
                    out[text] = (float(total), int(count))
                start = stop
            return out


def _api_config(model_config: Any) -> Any:
    return importlib.import_module("touchstone.judges.config").as_model_config(model_config)


class CompletionsLogprobs:
    """Prompt log-probabilities from an OpenAI-compatible ``/v1/completions`` endpoint (``echo`` with
    ``logprobs``), many prompts per request, through the judge session
    (:meth:`~touchstone.judges.client.JudgeClient.completions_logprobs`): the run's limits, cache,
    retries, token accounting and abort apply as to every judge call."""

    def __init__(self, model_config: Any, model: str | None = None) -> None:
        self.config = _api_config(model_config)
        self.model = model or self.config.model_name
        self._judge: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_judge": None}  # the client holds per-event-loop sessions

    async def statistics(self, texts: list[str]) -> list[list[float]]:
        """``[NLL sum, predicted tokens]`` per text."""
        if self._judge is None:
            self._judge = importlib.import_module("touchstone.judges.client").get_judge_client(self.config)
        found = await self._judge.completions_logprobs(list(texts), model=self.model)
        out: list[list[float]] = []
        for logprobs in found:
            values = [float(v) for v in logprobs if v is not None]
            out.append([-math.fsum(values), float(len(values))])
        return out


@register
class PerplexityEvaluator(Evaluator):
    """Perplexity of ``response`` under a causal language model: a local Hugging Face model
    (``model``: its directory) or an OpenAI-compatible completions endpoint returning prompt
    log-probabilities (``model_config``; ``model`` then names the served model). Lower is better;
    no default threshold (perplexity depends on the model and the text domain).

    Args:
        add_start_token: prepend the tokenizer's BOS token (local; Hugging Face ``evaluate``'s default).
        max_length: truncate texts to this many tokens, BOS included (local).
        batch_size, max_batch_tokens: texts and padded tokens per forward pass (local).
        max_batch: texts per completions request (API).
    """

    metric = "perplexity"
    prefix = "perplexity"
    score_key = "perplexity"
    inputs = (InputSpec("response", "text", description="the text whose perplexity is measured"),)
    description = "perplexity of the response under a causal LM (local HF model or completions logprobs)"
    value_range = ">=1"
    higher_is_better = False
    default_threshold: ClassVar[float | None] = None
    min_batch_rows: ClassVar[int] = MODEL_BATCH_ROWS

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        model_config: Any = None,
        add_start_token: bool = True,
        max_length: int | None = None,
        batch_size: int = 16,
        max_batch_tokens: int = 16_384,
        max_batch: int = 64,
        device: str | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(threshold=threshold)
        self.memo = EmbeddingMemo(200_000)
        self.local: LocalCausalLM | None = None
        self.api: CompletionsLogprobs | None = None
        self.batcher: EmbeddingBatcher | None = None
        if model_config is None:
            if model is None:
                raise ConfigurationError(
                    "perplexity needs a causal language model: model=<directory of a Hugging Face causal LM> "
                    "or model_config=<an OpenAI-compatible completions endpoint>"
                )
            self.local = LocalCausalLM(
                model,
                add_start_token=add_start_token,
                max_length=max_length,
                batch_size=batch_size,
                max_batch_tokens=max_batch_tokens,
                device=device,
            )
            self.model_name = self.local.name
        else:
            self.api = CompletionsLogprobs(model_config, None if model is None else os.fspath(model))
            self.batcher = EmbeddingBatcher(
                self.api.statistics, self.memo, max_batch=max_batch, dtype=np.float64
            )
            self.model_name = self.api.model
            self.is_async = True  # type: ignore[misc]

    def options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {**super().options(), "model": self.model_name}
        if self.local is not None:
            opts.update(
                provider="local",
                path=self.local.path,
                add_start_token=self.local.add_start_token,
                max_length=self.local.max_length,
            )
        else:
            assert self.api is not None
            opts.update(provider="completions", endpoint=self.api.config.endpoint(), add_start_token=False)
        return opts

    def _outputs(self, nll: float, tokens: float) -> Outcome:
        value = _from_stats(nll, tokens)
        return self.result(value, properties={"nll": nll, "tokens": int(tokens)})

    # ----------------------------------------------------------------- local
    def _local_stats(self, texts: Sequence[str]) -> dict[str, tuple[float, int] | Exception]:
        assert self.local is not None
        found: dict[str, tuple[float, int] | Exception] = {}
        todo = []
        for text in dict.fromkeys(texts):
            cached = self.memo.get(text)
            if cached is None:
                todo.append(text)
            else:
                found[text] = (float(cached[0]), int(cached[1]))
        for text, stats in self.local.statistics(todo).items():
            if not isinstance(stats, Exception):
                self.memo.put(text, np.asarray(stats, dtype=np.float64))
            found[text] = stats
        return found

    def _score(self, **inputs: Any) -> Outcome:
        text: str = inputs["response"]
        stats = self._local_stats([text])[text]
        if isinstance(stats, Exception):
            raise stats
        return self._outputs(*stats)

    def score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        if self.local is None:
            return list(_run_coroutine(self._ascore_rows(rows)))
        try:
            stats = self._local_stats([row["response"] for row in rows])
        except RunAbortedError:
            raise
        except Exception as exc:  # the model could not run: every row of the batch failed
            return [self.failure(exc) for _ in rows]
        out: list[Outcome] = []
        for row in rows:
            item = stats[row["response"]]
            try:
                if isinstance(item, Exception):
                    raise item
                out.append(self._outputs(*item))
            except Exception as exc:
                out.append(self.failure(exc))
        return out

    # ----------------------------------------------------------------- API
    async def _ascore(self, **inputs: Any) -> Outcome:
        if self.batcher is None:
            return self._score(**inputs)
        (stats,) = await self.batcher.embed([inputs["response"]])
        return self._outputs(float(stats[0]), float(stats[1]))

    async def _ascore_rows(self, rows: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        return list(await asyncio.gather(*(self.ascore(row) for row in rows)))

    # ----------------------------------------------------------------- corpus
    def corpus_metrics(
        self, inputs: Sequence[Mapping[str, Any]], outputs: Sequence[Outcome]
    ) -> dict[str, float]:
        nll = 0.0
        tokens = 0
        for out in outputs:
            props = out.get(f"{self.prefix}_properties")
            if self.error_key in out or not isinstance(props, Mapping):
                continue
            nll += float(props["nll"])
            tokens += int(props["tokens"])
        if tokens == 0:
            return {}
        return {"corpus_perplexity": math.exp(nll / tokens)}
