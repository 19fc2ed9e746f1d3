"""touchstone: evaluate and monitor generative-AI applications.

The public surface mirrors ``azure-ai-evaluation``'s local evaluators and ``evaluate()``, so a user
of that SDK can switch by changing an import.
"""

from touchstone._version import __version__
from touchstone.engine.result import EvaluationResult
from touchstone.engine.runner import EvaluationFailedError, evaluate
from touchstone.errors import (
    ConfigurationError,
    InputValidationError,
    Problem,
    RunAbortedError,
    UnknownMetricError,
)
from touchstone.evaluators.base import Evaluator, FunctionEvaluator, InputSpec
from touchstone.evaluators.registry import available as available_metrics
from touchstone.evaluators.text import ExactMatchEvaluator, F1ScoreEvaluator
from touchstone.judges.config import AzureOpenAIModelConfiguration, OpenAIModelConfiguration
from touchstone.store.sqlite import RunStore

__all__ = [
    "AzureOpenAIModelConfiguration",
    "ConfigurationError",
    "EvaluationFailedError",
    "EvaluationResult",
    "Evaluator",
    "ExactMatchEvaluator",
    "F1ScoreEvaluator",
    "FunctionEvaluator",
    "InputSpec",
    "InputValidationError",
    "OpenAIModelConfiguration",
    "Problem",
    "RunAbortedError",
    "RunStore",
    "UnknownMetricError",
    "__version__",
    "available_metrics",
    "evaluate",
]
