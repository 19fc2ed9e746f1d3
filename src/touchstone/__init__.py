"""touchstone: evaluate and monitor generative-AI applications.

The public surface mirrors ``azure-ai-evaluation``'s local evaluators and ``evaluate()``, so a user
of that SDK can switch by changing an import. Each name is imported when it is first used, so that
``import touchstone`` (and so the ``touchstone`` command, ``--help`` included) loads nothing it does
not need; ``touchstone.extend`` is the surface for people who extend touchstone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from touchstone._version import __version__

if TYPE_CHECKING:
    from touchstone._exceptions import ErrorBlame, ErrorCategory, ErrorTarget, EvaluationException
    from touchstone._model_configurations import AzureAIProject, Conversation, EvaluatorConfig, Message
    from touchstone.compare import compare_jailbreak, compare_runs
    from touchstone.engine.result import EvaluationResult
    from touchstone.engine.runner import EvaluationFailedError, evaluate
    from touchstone.errors import (
        ConfigurationError,
        InputValidationError,
        Problem,
        RunAbortedError,
        UnknownMetricError,
    )
    from touchstone.evaluators.agent import (
        IntentResolutionEvaluator,
        ResponseCompletenessEvaluator,
        TaskAdherenceEvaluator,
        ToolCallAccuracyEvaluator,
    )
    from touchstone.evaluators.base import Evaluator, FunctionEvaluator, InputSpec
    from touchstone.evaluators.bertscore import BertScoreEvaluator
    from touchstone.evaluators.custom import (
        FunctionMetric,
        RubricEvaluator,
        function_metric,
        metrics_from_file,
    )
    from touchstone.evaluators.groundedness_pro import GroundednessProEvaluator
    from touchstone.evaluators.perplexity import PerplexityEvaluator
    from touchstone.evaluators.prompt_metrics import CoherenceEvaluator, FluencyEvaluator, SimilarityEvaluator
    from touchstone.evaluators.quality import GroundednessEvaluator, QAEvaluator, RelevanceEvaluator
    from touchstone.evaluators.ranking import DocumentRetrievalEvaluator, RankingEvaluator
    from touchstone.evaluators.registry import available as available_metrics
    from touchstone.evaluators.retrieval_judge import RetrievalEvaluator, RetrievalScoreEvaluator
    from touchstone.evaluators.safety import (
        ContentSafetyEvaluator,
        HateUnfairnessEvaluator,
        IndirectAttackEvaluator,
        ProtectedMaterialEvaluator,
        SelfHarmEvaluator,
        SexualEvaluator,
        ViolenceEvaluator,
    )
    from touchstone.evaluators.semantic import EmbeddingSimilarityEvaluator
    from touchstone.evaluators.text import (
        BleuScoreEvaluator,
        ChrfScoreEvaluator,
        ExactMatchEvaluator,
        F1ScoreEvaluator,
        GleuScoreEvaluator,
        MeteorScoreEvaluator,
        RougeScoreEvaluator,
        RougeType,
    )
    from touchstone.judges.config import AzureOpenAIModelConfiguration, OpenAIModelConfiguration
    from touchstone.store.sqlite import RunStore

_LAZY: dict[str, str] = {
    "AzureAIProject": "touchstone._model_configurations",
    "AzureOpenAIModelConfiguration": "touchstone.judges.config",
    "BertScoreEvaluator": "touchstone.evaluators.bertscore",
    "BleuScoreEvaluator": "touchstone.evaluators.text",
    "ChrfScoreEvaluator": "touchstone.evaluators.text",
    "CoherenceEvaluator": "touchstone.evaluators.prompt_metrics",
    "ConfigurationError": "touchstone.errors",
    "ContentSafetyEvaluator": "touchstone.evaluators.safety",
    "Conversation": "touchstone._model_configurations",
    "DocumentRetrievalEvaluator": "touchstone.evaluators.ranking",
    "EmbeddingSimilarityEvaluator": "touchstone.evaluators.semantic",
    "ErrorBlame": "touchstone._exceptions",
    "ErrorCategory": "touchstone._exceptions",
    "ErrorTarget": "touchstone._exceptions",
    "EvaluationException": "touchstone._exceptions",
    "EvaluationFailedError": "touchstone.engine.runner",
    "EvaluationResult": "touchstone.engine.result",
    "Evaluator": "touchstone.evaluators.base",
    "EvaluatorConfig": "touchstone._model_configurations",
    "ExactMatchEvaluator": "touchstone.evaluators.text",
    "F1ScoreEvaluator": "touchstone.evaluators.text",
    "FluencyEvaluator": "touchstone.evaluators.prompt_metrics",
    "FunctionEvaluator": "touchstone.evaluators.base",
    "FunctionMetric": "touchstone.evaluators.custom",
    "GleuScoreEvaluator": "touchstone.evaluators.text",
    "GroundednessEvaluator": "touchstone.evaluators.quality",
    "GroundednessProEvaluator": "touchstone.evaluators.groundedness_pro",
    "HateUnfairnessEvaluator": "touchstone.evaluators.safety",
    "IndirectAttackEvaluator": "touchstone.evaluators.safety",
    "InputSpec": "touchstone.evaluators.base",
    "InputValidationError": "touchstone.errors",
    "IntentResolutionEvaluator": "touchstone.evaluators.agent",
    "Message": "touchstone._model_configurations",
    "MeteorScoreEvaluator": "touchstone.evaluators.text",
    "OpenAIModelConfiguration": "touchstone.judges.config",
    "PerplexityEvaluator": "touchstone.evaluators.perplexity",
    "Problem": "touchstone.errors",
    "ProtectedMaterialEvaluator": "touchstone.evaluators.safety",
    "QAEvaluator": "touchstone.evaluators.quality",
    "RankingEvaluator": "touchstone.evaluators.ranking",
    "RelevanceEvaluator": "touchstone.evaluators.quality",
    "ResponseCompletenessEvaluator": "touchstone.evaluators.agent",
    "RetrievalEvaluator": "touchstone.evaluators.retrieval_judge",
    "RetrievalScoreEvaluator": "touchstone.evaluators.retrieval_judge",
    "RougeScoreEvaluator": "touchstone.evaluators.text",
    "RougeType": "touchstone.evaluators.text",
    "RubricEvaluator": "touchstone.evaluators.custom",
    "RunAbortedError": "touchstone.errors",
    "RunStore": "touchstone.store.sqlite",
    "SelfHarmEvaluator": "touchstone.evaluators.safety",
    "SexualEvaluator": "touchstone.evaluators.safety",
    "SimilarityEvaluator": "touchstone.evaluators.prompt_metrics",
    "TaskAdherenceEvaluator": "touchstone.evaluators.agent",
    "ToolCallAccuracyEvaluator": "touchstone.evaluators.agent",
    "UnknownMetricError": "touchstone.errors",
    "ViolenceEvaluator": "touchstone.evaluators.safety",
    "available_metrics": "touchstone.evaluators.registry:available",
    "compare_jailbreak": "touchstone.compare",
    "compare_runs": "touchstone.compare",
    "evaluate": "touchstone.engine.runner",
    "function_metric": "touchstone.evaluators.custom",
    "metrics_from_file": "touchstone.evaluators.custom",
}
"""Public name -> ``module`` (the same name there) or ``module:attribute``."""


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'touchstone' has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value  # the next access is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "AzureAIProject",
    "AzureOpenAIModelConfiguration",
    "BertScoreEvaluator",
    "BleuScoreEvaluator",
    "ChrfScoreEvaluator",
    "CoherenceEvaluator",
    "ConfigurationError",
    "ContentSafetyEvaluator",
    "Conversation",
    "DocumentRetrievalEvaluator",
    "EmbeddingSimilarityEvaluator",
    "ErrorBlame",
    "ErrorCategory",
    "ErrorTarget",
    "EvaluationException",
    "EvaluationFailedError",
    "EvaluationResult",
    "Evaluator",
    "EvaluatorConfig",
    "ExactMatchEvaluator",
    "F1ScoreEvaluator",
    "FluencyEvaluator",
    "FunctionEvaluator",
    "FunctionMetric",
    "GleuScoreEvaluator",
    "GroundednessEvaluator",
    "GroundednessProEvaluator",
    "HateUnfairnessEvaluator",
    "IndirectAttackEvaluator",
    "InputSpec",
    "InputValidationError",
    "IntentResolutionEvaluator",
    "Message",
    "MeteorScoreEvaluator",
    "OpenAIModelConfiguration",
    "PerplexityEvaluator",
    "Problem",
    "ProtectedMaterialEvaluator",
    "QAEvaluator",
    "RankingEvaluator",
    "RelevanceEvaluator",
    "ResponseCompletenessEvaluator",
    "RetrievalEvaluator",
    "RetrievalScoreEvaluator",
    "RougeScoreEvaluator",
    "RougeType",
    "RubricEvaluator",
    "RunAbortedError",
    "RunStore",
    "SelfHarmEvaluator",
    "SexualEvaluator",
    "SimilarityEvaluator",
    "TaskAdherenceEvaluator",
    "ToolCallAccuracyEvaluator",
    "UnknownMetricError",
    "ViolenceEvaluator",
    "__version__",
    "available_metrics",
    "compare_jailbreak",
    "compare_runs",
    "evaluate",
    "function_metric",
    "metrics_from_file",
]
