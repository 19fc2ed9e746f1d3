"""touchstone: evaluate and monitor generative-AI applications.

The public surface mirrors ``azure-ai-evaluation``'s local evaluators and ``evaluate()``, so a user
of that SDK can switch by changing an import.
"""

from touchstone._exceptions import ErrorBlame, ErrorCategory, ErrorTarget, EvaluationException
from touchstone._model_configurations import AzureAIProject, Conversation, EvaluatorConfig, Message
from touchstone._version import __version__
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
from touchstone.evaluators.custom import FunctionMetric, RubricEvaluator, function_metric, metrics_from_file
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
