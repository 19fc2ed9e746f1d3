"""AI-assisted quality metrics judged by an LLM (SPEC 3.1, 3.2) that are more than a prompt:
groundedness, relevance, and the question-answering composite (coherence, fluency and similarity
are prompt-only values: :mod:`touchstone.evaluators.prompt_metrics`).

Each takes a model configuration (``OpenAIModelConfiguration``, ``AzureOpenAIModelConfiguration`` or
a plain dict), scores 1–5 (higher is better, pass threshold 3 by default) and returns the compatible
SDK's keys: ``m``, ``gpt_m``, ``m_score``, ``m_passed``, ``m_result``, ``m_reason``, ``m_status``,
``m_threshold``, ``m_properties`` (prompt version and hash, judge model, score mode), or ``m_error``
when no score could be obtained. Those that accept ``conversation=`` judge each assistant turn and add
``evaluation_per_turn``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from touchstone.evaluators.agent.messages import INTERMEDIATE, is_intermediate, preprocess, tool_calls_in
from touchstone.evaluators.base import Evaluator, InputSpec
from touchstone.evaluators.judge import JudgeEvaluator, Judgement, no_judge_error, score_schema
from touchstone.evaluators.judge.conversation import Turn
from touchstone.evaluators.judge.prompt_inputs import as_text, check_messages, context_block
from touchstone.evaluators.judge.prompts import PromptTemplate, format_documents, load_prompt
from touchstone.evaluators.judge.reply import ParsedReply
from touchstone.evaluators.prompt_metrics import CoherenceEvaluator, FluencyEvaluator, SimilarityEvaluator
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome

_QUERY = InputSpec(
    "query", "messages", required=False,
    description="what the user asked: a string, or an agent's messages up to the user's last one",
)
_RESPONSE = InputSpec(
    "response", "messages", required=False,
    description="the application's answer: a string, or an agent's messages (tool calls and results)",
)
_CONTEXT = InputSpec(
    "context", "context", required=False, description="what the answer should be grounded in"
)
_GROUND_TRUTH = InputSpec("ground_truth", "texts", required=False, description="the expected answer(s)")
_CONVERSATION = InputSpec(
    "conversation", "conversation", required=False, description="a chat: {messages, context?}"
)


def _single_entry(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and len(value) == 1)


def file_search_context(response: Any) -> str | None:
    """The text an agent's ``file_search`` calls returned (the context its answer should rest on), as
    ``file name:`` lines followed by the passages; None when it made no such call."""
    lines = []
    for call in tool_calls_in(preprocess(response)):
        if call.get("name") != "file_search":
            continue
        results = call.get("tool_result")
        for result in results if isinstance(results, list) else [results]:
            for hit in result if isinstance(result, list) else [result]:
                if not isinstance(hit, Mapping):
                    continue
                texts = [c.get("text") for c in hit.get("content") or [] if isinstance(c, Mapping)]
                lines += [f"{hit.get('file_name', 'unknown file')}:\n- {t}" for t in texts if t]
    return "\n\n".join(lines) if lines else None


NO_AGENT_CONTEXT = (
    "GroundednessEvaluator: No valid context provided or could be extracted from the query or response. "
    "Please either provide valid context or pass the full items list for 'response' and 'query' to "
    "extract context from tool calls."
)
"""The compatible SDK's reason for an agent row with no context to judge against (not applicable)."""


@register
class GroundednessEvaluator(JudgeEvaluator):
    """Whether every claim in the response is supported by the context (SPEC 3.1); claims true in the
    world but not verifiable from the context are ungrounded. With ``conversation=``, each exchange
    is judged against its context and the conversation's score is the **mean** over turns, as the
    compatible SDK reports it; ``groundedness_turns_min`` and ``groundedness_all_turns_passed`` give
    the stricter reading (a conversation is grounded only if every turn is), and
    ``conversation_aggregation="min"`` makes it the main score. ``conversation_mode="history"`` checks
    each assistant turn against its retrieved documents with the history (ungrounded facts listed
    first); see :mod:`touchstone.evaluators.judge.conversation`."""

    metric = "groundedness"
    prefix = "groundedness"
    score_key = "groundedness"
    inputs = (_QUERY, _RESPONSE, _CONTEXT, _CONVERSATION)
    input_modes = (("response", "context"), ("query", "response"), ("conversation",))
    description = "LLM judge: are the response's claims supported by the context (1-5)"

    def __init__(self, model_config: Any, *, threshold: float | None = 3, **kwargs: Any) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt("groundedness"), load_prompt("groundedness_chat")]

    async def _single(self, **inputs: Any) -> Outcome:
        check_messages(self.metric, inputs)
        context, query, response = inputs.get("context"), inputs.get("query"), inputs["response"]
        if is_intermediate(response):
            return self.not_applicable(INTERMEDIATE)
        source = "context"
        if context:
            text = context_block(context)
        elif isinstance(response, str):
            # As the compatible SDK does, a query and response without context are judged with the
            # response as its own context (its claims must at least hold together).
            text, source = response, "response"
        else:
            # an agent's answer rests on what its file_search calls returned
            found = file_search_context(response)
            if found is None and _single_entry(response) and _single_entry(query):
                return self.not_applicable(NO_AGENT_CONTEXT)
            text, source = found or "(no context was retrieved)", "file_search"
        j = await self._judge(
            load_prompt("groundedness"),
            {"query": as_text(query), "context": text, "response": as_text(response)},
        )
        if source != "context":
            j.properties["context_from"] = source
        return self.judged(j)

    async def _turn(self, turn: Turn) -> Outcome:
        schema = score_schema(self.scale, {"ungrounded_facts": _FACTS_SCHEMA})
        j = await self._judge(
            load_prompt("groundedness_chat"),
            {
                "history": turn.history_text,
                "query": turn.query,
                "documents": format_documents(turn.documents),
                "response": turn.response,
            },
            schema=schema,
            check=_check_facts,
        )
        facts = (j.data or {}).get("ungrounded_facts")
        j.properties["ungrounded_facts"] = facts if isinstance(facts, list) else None
        return self.judged(j)


_FACTS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "fact": {"type": "string"},
            "problem": {"type": "string", "enum": ["absent", "contradicts", "distorts"]},
        },
        "required": ["fact", "problem"],
        "additionalProperties": False,
    },
}


def _check_facts(parsed: ParsedReply) -> str | None:
    facts = (parsed.data or {}).get("ungrounded_facts")
    if facts is not None and not isinstance(facts, list):
        return 'the "ungrounded_facts" field is not a list'
    return None


@register
class RelevanceEvaluator(JudgeEvaluator):
    """How well the response addresses the main aspects of the query (SPEC 3.1). With
    ``conversation=`` each exchange is judged as a query and response, as the compatible SDK does.
    With ``conversation_mode="history"`` (SPEC 3.2): a turn whose assistant message carries
    ``ground_truth`` is rated against it; otherwise the judge first writes a reference answer from
    the history, question and retrieved documents alone, then rates the reply against it; a turn
    with no relevant document retrieved is rated 5. ``domain`` names the application's field (e.g.
    ``"outdoor retail"``)."""

    metric = "relevance"
    prefix = "relevance"
    score_key = "relevance"
    inputs = (_QUERY, _RESPONSE, _CONTEXT, _CONVERSATION)
    input_modes = (("query", "response"), ("conversation",))
    description = "LLM judge: does the response address the query (1-5)"
    messages_input = "checked"

    def __init__(
        self,
        model_config: Any,
        *,
        threshold: float | None = 3,
        domain: str = "general assistance",
        **kwargs: Any,
    ) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)
        self.domain = domain

    @classmethod
    def from_options(
        cls,
        *,
        model_config: Any = None,
        threshold: float | None = None,
        domain: str | None = None,
        score_mode: str | None = None,
        conversation_aggregation: str | None = None,
        **_: Any,
    ) -> JudgeEvaluator:
        """The registry's factory (CLI): a clear error when no judge is configured."""
        if model_config is None:
            raise no_judge_error(cls.metric)
        return cls(model_config, threshold=threshold, domain=domain or "general assistance",
                   score_mode=score_mode or "sampled", conversation_aggregation=conversation_aggregation)

    def options(self) -> dict[str, Any]:
        return {**super().options(), "domain": self.domain}

    def prompts(self) -> list[PromptTemplate]:
        return [
            load_prompt("relevance"),
            load_prompt("relevance_chat"),
            load_prompt("relevance_ground_truth"),
        ]

    async def _single(self, **inputs: Any) -> Outcome:
        check_messages(self.metric, inputs)
        context = inputs.get("context")
        if is_intermediate(inputs["response"]):
            return self.not_applicable(INTERMEDIATE)
        j = await self._judge(
            load_prompt("relevance"),
            {
                "query": as_text(inputs["query"]),
                "context": context_block(context) if context is not None else None,
                "response": as_text(inputs["response"]),
            },
        )
        return self.judged(j)

    async def _turn(self, turn: Turn) -> Outcome:
        if turn.ground_truth is not None:
            j = await self._judge(
                load_prompt("relevance_ground_truth"),
                {
                    "history": turn.history_text,
                    "query": turn.query,
                    "ground_truth": turn.ground_truth,
                    "response": turn.response,
                },
            )
            j.properties["with_ground_truth"] = True
            return self.judged(j)
        prompt = load_prompt("relevance_chat")
        if not turn.documents:
            # SPEC 3.2: with no relevant document retrieved no reference answer can be written: 5
            props = {
                **prompt.provenance(),
                "score_mode": "rule",
                "relevant_documents_found": False,
                "judge_model": None,
            }
            return self.result(
                5, reason="No documents were retrieved for this turn, so no reference answer can be written; "
                "rated 5 as the metric defines.", properties=props,
            )
        schema = score_schema(
            self.scale,
            {"relevant_documents_found": {"type": "boolean"}, "reference_answer": {"type": "string"}},
        )
        j = await self._judge(
            prompt,
            {
                "history": turn.history_text,
                "query": turn.query,
                "documents": format_documents(turn.documents),
                "response": turn.response,
            },
            params={"domain": self.domain},
            schema=schema,
            check=_check_reference,
        )
        data = j.data or {}
        j.properties["reference_answer"] = data.get("reference_answer")
        found = data.get("relevant_documents_found")
        j.properties["relevant_documents_found"] = found
        if found is False and j.score != 5:
            j.properties["judge_score"] = j.score
            j.properties["score_mode"] = "rule"
            j = Judgement(5, j.reason, j.data, j.properties)
        return self.judged(j)


def _check_reference(parsed: ParsedReply) -> str | None:
    data = parsed.data or {}
    found = data.get("relevant_documents_found")
    if found is not None and not isinstance(found, bool):
        return 'the "relevant_documents_found" field is not true or false'
    if found is not False and data and not isinstance(data.get("reference_answer"), str):
        return "the reply has no reference answer although relevant documents were found"
    return None


@register
class QAEvaluator(Evaluator):
    """The question-answering composite: groundedness, relevance, coherence, fluency, similarity and
    f1_score on one row, merged into one dict (each metric's own keys, each with its own threshold)."""

    metric = "qa"
    prefix = "qa"
    score_key = "qa"
    inputs = (
        InputSpec("query", "text"),
        InputSpec("response", "text"),
        InputSpec("context", "context"),
        InputSpec("ground_truth", "texts"),
    )
    description = "composite: groundedness, relevance, coherence, fluency, similarity, f1_score"
    needs_judge = True
    is_async = True
    tier = "high"  # five judge calls per row

    def __init__(
        self,
        model_config: Any,
        *,
        groundedness_threshold: float = 3,
        relevance_threshold: float = 3,
        coherence_threshold: float = 3,
        fluency_threshold: float = 3,
        similarity_threshold: float = 3,
        f1_score_threshold: float = 0.5,
        score_mode: str = "sampled",
        **kwargs: Any,
    ) -> None:
        from touchstone.evaluators.text import F1ScoreEvaluator

        super().__init__()
        if model_config is None:
            raise no_judge_error(self.metric)
        self.model_config = model_config
        self.parts: list[Evaluator] = [
            GroundednessEvaluator(
                model_config, threshold=groundedness_threshold, score_mode=score_mode, **kwargs
            ),
            RelevanceEvaluator(model_config, threshold=relevance_threshold, score_mode=score_mode, **kwargs),
            CoherenceEvaluator(model_config, threshold=coherence_threshold, score_mode=score_mode, **kwargs),
            FluencyEvaluator(model_config, threshold=fluency_threshold, score_mode=score_mode, **kwargs),
            SimilarityEvaluator(
                model_config, threshold=similarity_threshold, score_mode=score_mode, **kwargs
            ),
            F1ScoreEvaluator(threshold=f1_score_threshold),
        ]

    @classmethod
    def from_options(
        cls, *, model_config: Any = None, score_mode: str | None = None, **_: Any
    ) -> QAEvaluator:
        """The registry's factory (CLI); per-metric thresholds keep their defaults."""
        if model_config is None:
            raise no_judge_error(cls.metric)
        return cls(model_config, score_mode=score_mode or "sampled")

    def options(self) -> dict[str, Any]:
        return {ev.metric: ev.options() for ev in self.parts}

    def failure(self, error: BaseException | str, *, kind: str | None = None) -> Outcome:
        return _merge([ev.failure(error, kind=kind) for ev in self.parts])

    async def _ascore(self, **inputs: Any) -> Outcome:
        import asyncio

        async def one(ev: Evaluator) -> Outcome:
            wanted = {s.name for s in ev.inputs}
            row = {k: v for k, v in inputs.items() if k in wanted}
            return await ev.ascore(row)

        return _merge(await asyncio.gather(*(one(ev) for ev in self.parts)))


def _merge(parts: list[Outcome]) -> Outcome:
    """One Outcome holding every part's Scores and keys (the composite's main score is its first
    part's)."""
    merged = Outcome([s for part in parts for s in part.scores])
    for part in parts:
        merged.update(part)
    return merged
