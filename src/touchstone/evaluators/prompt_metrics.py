"""The built-in judged metrics that are only a prompt, as values (:class:`PromptMetric`): coherence,
fluency and similarity (the compatible SDK's quality metrics), completeness and conciseness (texts
written from a source). Each scores 1-5 with one judge call per row, passes at 3, and returns the
keys of every 1-5 judge metric (``m``, ``gpt_m``, ``m_score``, ``m_result``, ``m_reason``,
``m_threshold``, ``m_properties``...).

Each value is bound to the class name users of the compatible SDK import (``FluencyEvaluator``...),
one line per metric; their constructors take the judge's model configuration and the options of every
judge metric (``threshold``, ``score_mode``, ``conversation_aggregation``, ``conversation_mode``...).
"""

from __future__ import annotations

from touchstone.evaluators.base import InputSpec
from touchstone.evaluators.judge.prompt_metric import PromptMetric, PromptMetricEvaluator
from touchstone.evaluators.registry import register

_AGENT_QUERY = InputSpec(
    "query", "messages", required=False,
    description="what the user asked: a string, or an agent's messages up to the user's last one",
)
_AGENT_RESPONSE = InputSpec(
    "response", "messages", required=False,
    description="the application's answer: a string, or an agent's messages (tool calls and results)",
)
_CONVERSATION = InputSpec(
    "conversation", "conversation", required=False, description="a chat: {messages, context?}"
)
_SOURCE = InputSpec("context", "context", description="the source the response was written from")
_WRITTEN = InputSpec("response", "text", description="the summary or answer under evaluation")
_ASKED = InputSpec("query", "text", required=False, description="the question or instruction, if any")

COHERENCE = PromptMetric(
    name="coherence",
    prompt="coherence",
    inputs=(_AGENT_QUERY, _AGENT_RESPONSE, _CONVERSATION),
    input_modes=(("query", "response"), ("conversation",)),
    description="LLM judge: do the response's sentences fit together (1-5)",
)
FLUENCY = PromptMetric(
    name="fluency",
    prompt="fluency",
    inputs=(_AGENT_QUERY, _AGENT_RESPONSE, _CONVERSATION),
    input_modes=(("response",), ("conversation",)),
    description="LLM judge: grammar, syntax and vocabulary of the response (1-5)",
    messages_input="checked",
)
SIMILARITY = PromptMetric(
    name="similarity",
    prompt="similarity",
    inputs=(
        InputSpec("query", "text", description="what the user asked"),
        InputSpec("response", "text", description="the application's answer"),
        InputSpec("ground_truth", "texts", description="the expected answer(s)"),
    ),
    description="LLM judge: is the response equivalent to the ground truth (1-5)",
)
COMPLETENESS = PromptMetric(
    name="completeness",
    prompt="completeness",
    inputs=(_ASKED, _SOURCE, _WRITTEN),
    description="LLM judge: share of the source's key points the response keeps (1-5)",
    skip_when_empty=("response", "context"),
    skip_reason="the source (context) or the response is empty",
)
CONCISENESS = PromptMetric(
    name="conciseness",
    prompt="conciseness",
    inputs=(_ASKED, _WRITTEN),
    description="LLM judge: no padding, repetition or digression in the response (1-5)",
    tier="low",  # a short judgement on the response alone: a small judge model does it well
    skip_when_empty=("response",),
    skip_reason="the response is empty",
)

PROMPT_METRICS = (COHERENCE, FLUENCY, SIMILARITY, COMPLETENESS, CONCISENESS)
"""The built-in prompt-only metrics."""


@register
class CoherenceEvaluator(PromptMetricEvaluator):
    """Whether the response's sentences fit together and read naturally as a whole (SPEC 3.1)."""

    definition = COHERENCE


@register
class FluencyEvaluator(PromptMetricEvaluator):
    """Grammar, syntax and vocabulary of the response's individual sentences (SPEC 3.1)."""

    definition = FLUENCY


@register
class SimilarityEvaluator(PromptMetricEvaluator):
    """How equivalent the information in the response is to the correct answer (SPEC 3.1)."""

    definition = SIMILARITY


@register
class CompletenessEvaluator(PromptMetricEvaluator):
    """How many of the source's key points the response keeps (1-5), judged point by point against
    the source given as ``context``; with a ``query``, the points that matter for it."""

    definition = COMPLETENESS


@register
class ConcisenessEvaluator(PromptMetricEvaluator):
    """Whether the response says what it has to without padding, repetition or digressions (1-5)."""

    definition = CONCISENESS
