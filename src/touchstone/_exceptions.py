"""The compatible SDK's exception base and its classification enums.

Users of ``azure-ai-evaluation`` catch ``EvaluationException`` imported from
``azure.ai.evaluation._exceptions`` and read its ``category`` and ``blame``; this module is the same
path under touchstone. Every error touchstone raises to a user derives from
:class:`EvaluationException` (see :mod:`touchstone.errors`), so ``except EvaluationException`` code
keeps working after the import is changed. The enums carry the SDK's member names and values, so
code that compares ``exc.category == ErrorCategory.INVALID_VALUE`` or logs ``exc.blame.value`` sees
what it saw before.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar

__all__ = [
    "ErrorBlame",
    "ErrorCategory",
    "ErrorMessage",
    "ErrorTarget",
    "EvaluationException",
]


class ErrorMessage(Enum):
    """Fixed messages shared by several raising places."""

    MALFORMED_CONVERSATION_HISTORY = (
        "Malformed Conversation History: Query parameter representing conversation history should "
        "have exactly one more user query than agent responses"
    )


class ErrorCategory(Enum):
    """What kind of problem an :class:`EvaluationException` reports."""

    INVALID_VALUE = "INVALID VALUE"
    UNKNOWN_FIELD = "UNKNOWN FIELD"
    MISSING_FIELD = "MISSING FIELD"
    FILE_OR_FOLDER_NOT_FOUND = "FILE OR FOLDER NOT FOUND"
    RESOURCE_NOT_FOUND = "RESOURCE NOT FOUND"
    FAILED_EXECUTION = "FAILED_EXECUTION"
    SERVICE_UNAVAILABLE = "SERVICE UNAVAILABLE"
    MISSING_PACKAGE = "MISSING PACKAGE"
    FAILED_REMOTE_TRACKING = "FAILED REMOTE TRACKING"
    PROJECT_ACCESS_ERROR = "PROJECT ACCESS ERROR"
    UNKNOWN = "UNKNOWN"
    UPLOAD_ERROR = "UPLOAD ERROR"
    NOT_APPLICABLE = "NOT APPLICABLE"


class ErrorBlame(Enum):
    """Whether the caller (``USER_ERROR``) or the system (``SYSTEM_ERROR``) caused the problem."""

    USER_ERROR = "UserError"
    SYSTEM_ERROR = "SystemError"
    UNKNOWN = "Unknown"


class ErrorTarget(Enum):
    """The part of the library that raised (an evaluator, ``evaluate()``, the model clients...)."""

    EVAL_RUN = "EvalRun"
    CODE_CLIENT = "CodeClient"
    RAI_CLIENT = "RAIClient"
    COHERENCE_EVALUATOR = "CoherenceEvaluator"
    COMPLETENESS_EVALUATOR = "CompletenessEvaluator"
    CONTENT_SAFETY_CHAT_EVALUATOR = "ContentSafetyEvaluator"
    ECI_EVALUATOR = "ECIEvaluator"
    F1_EVALUATOR = "F1Evaluator"
    GROUNDEDNESS_EVALUATOR = "GroundednessEvaluator"
    TASK_NAVIGATION_EFFICIENCY_EVALUATOR = "_TaskNavigationEfficiencyEvaluator"
    PROTECTED_MATERIAL_EVALUATOR = "ProtectedMaterialEvaluator"
    INTENT_RESOLUTION_EVALUATOR = "IntentResolutionEvaluator"
    RELEVANCE_EVALUATOR = "RelevanceEvaluator"
    SIMILARITY_EVALUATOR = "SimilarityEvaluator"
    FLUENCY_EVALUATOR = "FluencyEvaluator"
    RETRIEVAL_EVALUATOR = "RetrievalEvaluator"
    TOOL_CALL_SUCCESS_EVALUATOR = "_ToolCallSuccessEvaluator"
    TASK_ADHERENCE_EVALUATOR = "TaskAdherenceEvaluator"
    TASK_COMPLETION_EVALUATOR = "_TaskCompletionEvaluator"
    INDIRECT_ATTACK_EVALUATOR = "IndirectAttackEvaluator"
    INDIRECT_ATTACK_SIMULATOR = "IndirectAttackSimulator"
    ADVERSARIAL_SIMULATOR = "AdversarialSimulator"
    DIRECT_ATTACK_SIMULATOR = "DirectAttackSimulator"
    EVALUATE = "Evaluate"
    CALLBACK_CONVERSATION_BOT = "CallbackConversationBot"
    MODELS = "Models"
    UNKNOWN = "Unknown"
    CONVERSATION = "Conversation"
    TOOL_CALL_ACCURACY_EVALUATOR = "ToolCallAccuracyEvaluator"
    TOOL_SELECTION_EVALUATOR = "_ToolSelectionEvaluator"
    TOOL_INPUT_ACCURACY_EVALUATOR = "_ToolInputAccuracyEvaluator"
    RED_TEAM = "RedTeam"
    AOAI_GRADER = "AoaiGrader"
    CONVERSATION_HISTORY_PARSING = "_get_conversation_history"
    TOOL_OUTPUT_UTILIZATION_EVALUATOR = "ToolOutputUtilizationEvaluator"
    QA_EVALUATOR = "QAEvaluator"
    ROUGE_EVALUATOR = "RougeScoreEvaluator"
    DOCUMENT_RETRIEVAL_EVALUATOR = "DocumentRetrievalEvaluator"
    QUALITY_GRADER_EVALUATOR = "QualityGraderEvaluator"
    CUSTOMER_SATISFACTION_EVALUATOR = "CustomerSatisfactionEvaluator"
    DEFLECTION_RATE_EVALUATOR = "DeflectionRateEvaluator"
    REGEX_MATCH_EVALUATOR = "RegexMatchEvaluator"


class EvaluationException(Exception):
    """Base of every error touchstone raises to its caller (the compatible SDK's name and fields).

    ``message`` is what the user sees; ``internal_message`` a version without personal data (for
    telemetry in the SDK; kept here for code that reads it); ``target``, ``category`` and ``blame``
    classify the error (:class:`ErrorTarget`, :class:`ErrorCategory`, :class:`ErrorBlame`);
    ``tsg_link`` an optional troubleshooting link appended to ``str()``; ``properties`` optional
    metadata. ``error=`` (keyword) records the underlying exception as ``inner_exception``.

    ``str()`` of an exception raised as this class reads ``(UserError) <message>`` or
    ``(InternalError) <message>``, as the SDK's does. touchstone's own subclasses
    (:mod:`touchstone.errors`) show the bare message, which is already written for a person (and
    ends up in ``<metric>_error`` and on the command line).
    """

    show_blame: ClassVar[bool] = True
    """Whether ``str()`` starts with ``(UserError)``/``(InternalError)`` (the SDK's format)."""

    def __init__(
        self,
        message: str,
        *args: Any,
        internal_message: str | None = None,
        target: ErrorTarget = ErrorTarget.UNKNOWN,
        category: ErrorCategory = ErrorCategory.UNKNOWN,
        blame: ErrorBlame = ErrorBlame.UNKNOWN,
        tsg_link: str | None = None,
        properties: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.category = category
        self.target = target
        self.blame = blame
        self.internal_message = internal_message
        self.tsg_link = tsg_link
        self.properties = properties
        self.inner_exception: BaseException | None = kwargs.get("error")
        self.continuation_token: str | None = kwargs.get("continuation_token")
        super().__init__(str(message), *args)

    # The message lives in ``args`` only, so code that rewrites ``args`` (secret redaction) changes
    # what ``str()`` shows and leaves no other copy behind.
    @property
    def message(self) -> str:
        """The message the user sees (the SDK's ``message`` attribute)."""
        return str(self.args[0]) if self.args else ""

    @message.setter
    def message(self, value: str) -> None:
        self.args = (value, *self.args[1:])

    def __str__(self) -> str:
        text = self.message
        if self.show_blame:
            who = "UserError" if self.blame == ErrorBlame.USER_ERROR else "InternalError"
            text = f"({who}) {text}"
        if self.tsg_link:
            text += f"\nVisit {self.tsg_link} to troubleshoot this issue."
        return text
