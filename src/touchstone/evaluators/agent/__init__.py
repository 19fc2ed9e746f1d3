"""Agent evaluators with the compatible SDK's inputs and outputs: response completeness, intent
resolution, task adherence and tool call accuracy (see :mod:`.evaluators`; their shared base in
:mod:`.judged`), and the SDK's agent message format (see :mod:`.messages`)."""

from touchstone.evaluators.agent.evaluators import (
    IntentResolutionEvaluator,
    ResponseCompletenessEvaluator,
    TaskAdherenceEvaluator,
    ToolCallAccuracyEvaluator,
)
from touchstone.evaluators.agent.judged import AgentJudgeEvaluator
from touchstone.evaluators.agent.messages import AgentInputError

__all__ = [
    "AgentInputError",
    "AgentJudgeEvaluator",
    "IntentResolutionEvaluator",
    "ResponseCompletenessEvaluator",
    "TaskAdherenceEvaluator",
    "ToolCallAccuracyEvaluator",
]
