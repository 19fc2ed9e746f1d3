"""The exception hierarchy: every error touchstone raises to a user is the compatible SDK's
``EvaluationException`` (category, blame, target) and keeps its built-in base."""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path

import pytest

from touchstone import (
    CoherenceEvaluator,
    F1ScoreEvaluator,
    GroundednessEvaluator,
    RelevanceEvaluator,
    evaluate,
)
from touchstone._exceptions import ErrorBlame, ErrorCategory, ErrorTarget, EvaluationException
from touchstone.errors import (
    ConfigurationError,
    EvaluatorFailedError,
    InputValidationError,
    Problem,
    RunAbortedError,
    UnknownMetricError,
    UnknownOptionError,
    missing_input_classification,
)
from touchstone.judges.errors import FatalProviderError, JudgeCallError, RateLimited, TransientError

JUDGE = {"type": "openai", "model": "gpt-4o", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-unused-123"}


def test_sdk_enum_members_and_values() -> None:
    assert ErrorCategory.INVALID_VALUE.value == "INVALID VALUE"
    assert ErrorCategory.FAILED_EXECUTION.value == "FAILED_EXECUTION"
    assert ErrorCategory.MISSING_FIELD.value == "MISSING FIELD"
    assert ErrorBlame.USER_ERROR.value == "UserError" and ErrorBlame.SYSTEM_ERROR.value == "SystemError"
    assert ErrorTarget.EVALUATE.value == "Evaluate" and ErrorTarget.F1_EVALUATOR.value == "F1Evaluator"
    assert len(ErrorCategory) == 13 and len(ErrorBlame) == 3


def test_evaluation_exception_fields_and_str() -> None:
    exc = EvaluationException(
        "bad input", internal_message="bad", category=ErrorCategory.INVALID_VALUE, blame=ErrorBlame.USER_ERROR
    )
    assert (exc.message, exc.internal_message) == ("bad input", "bad")
    assert exc.target is ErrorTarget.UNKNOWN and exc.tsg_link is None and exc.properties is None
    assert str(exc) == "(UserError) bad input"
    assert str(EvaluationException("boom")) == "(InternalError) boom"  # defaults: UNKNOWN category, blame
    linked = EvaluationException("x", blame=ErrorBlame.USER_ERROR, tsg_link="https://example.org/tsg")
    assert str(linked) == "(UserError) x\nVisit https://example.org/tsg to troubleshoot this issue."
    inner = ValueError("root")
    assert EvaluationException("wrapped", error=inner).inner_exception is inner


@pytest.mark.parametrize(
    ("exc", "builtin", "category", "blame"),
    [
        (InputValidationError("x"), ValueError, ErrorCategory.INVALID_VALUE, ErrorBlame.USER_ERROR),
        (UnknownMetricError("x"), ValueError, ErrorCategory.INVALID_VALUE, ErrorBlame.USER_ERROR),
        (ConfigurationError("x"), ValueError, ErrorCategory.INVALID_VALUE, ErrorBlame.USER_ERROR),
        (UnknownOptionError("x"), TypeError, ErrorCategory.UNKNOWN_FIELD, ErrorBlame.USER_ERROR),
        (RunAbortedError("x"), RuntimeError, ErrorCategory.FAILED_EXECUTION, ErrorBlame.UNKNOWN),
        (EvaluatorFailedError("x"), RuntimeError, ErrorCategory.FAILED_EXECUTION, ErrorBlame.UNKNOWN),
        (JudgeCallError("x"), RuntimeError, ErrorCategory.FAILED_EXECUTION, ErrorBlame.UNKNOWN),
        (FatalProviderError("x"), Exception, ErrorCategory.FAILED_EXECUTION, ErrorBlame.UNKNOWN),
        (RateLimited("x"), Exception, ErrorCategory.SERVICE_UNAVAILABLE, ErrorBlame.UNKNOWN),
        (TransientError("x"), Exception, ErrorCategory.SERVICE_UNAVAILABLE, ErrorBlame.UNKNOWN),
    ],
)
def test_touchstone_errors_are_evaluation_exceptions(
    exc: EvaluationException, builtin: type, category: ErrorCategory, blame: ErrorBlame
) -> None:
    assert isinstance(exc, EvaluationException) and isinstance(exc, builtin)
    assert (exc.category, exc.blame) == (category, blame)
    assert not str(exc).startswith("(")  # touchstone's messages stay bare (rows, CLI)
    again = pickle.loads(pickle.dumps(exc))  # errors cross process pools
    assert (type(again), again.category, again.blame, str(again)) == (type(exc), category, blame, str(exc))


def test_raiser_may_refine_the_classification() -> None:
    exc = InputValidationError(
        [Problem("data.jsonl", 3, "query", "missing")], category=ErrorCategory.MISSING_FIELD
    )
    assert exc.category is ErrorCategory.MISSING_FIELD and exc.blame is ErrorBlame.USER_ERROR
    assert exc.message == str(exc) == 'data.jsonl, line 3, field "query": missing'


def test_redacting_the_message_leaves_no_copy() -> None:
    exc = FatalProviderError("key sk-secret-abcdef rejected", 401)
    exc.message = "key *** rejected"
    assert str(exc) == exc.message == exc.args[0] == "key *** rejected"
    assert "sk-secret" not in repr(exc)


def test_missing_input_classification_follows_the_sdk() -> None:
    assert missing_input_classification(CoherenceEvaluator) == (
        ErrorCategory.MISSING_FIELD,
        ErrorTarget.COHERENCE_EVALUATOR,
    )
    assert missing_input_classification(F1ScoreEvaluator) == (
        ErrorCategory.INVALID_VALUE,
        ErrorTarget.CONVERSATION,
    )

    class MyCoherence(CoherenceEvaluator):
        pass

    assert missing_input_classification(MyCoherence)[0] is ErrorCategory.MISSING_FIELD


def _caught(call: object) -> EvaluationException:
    with pytest.raises(EvaluationException) as info:
        call()  # type: ignore[operator]
    return info.value


def test_evaluator_input_errors_carry_the_sdks_category() -> None:
    f1 = _caught(lambda: F1ScoreEvaluator()(response="hello"))
    assert (f1.category, f1.blame) == (ErrorCategory.INVALID_VALUE, ErrorBlame.USER_ERROR)
    grounded = _caught(lambda: GroundednessEvaluator(JUDGE)())
    assert grounded.category is ErrorCategory.MISSING_FIELD
    assert grounded.target is ErrorTarget.GROUNDEDNESS_EVALUATOR
    empty = _caught(lambda: RelevanceEvaluator(JUDGE)(conversation={"messages": []}))
    assert empty.category is ErrorCategory.MISSING_FIELD and "non-empty" in str(empty)
    wrong_type = _caught(lambda: F1ScoreEvaluator()(response=3, ground_truth="x"))
    assert wrong_type.category is ErrorCategory.INVALID_VALUE
    unknown = _caught(lambda: F1ScoreEvaluator(no_such_option=1))  # type: ignore[call-arg]
    assert isinstance(unknown, TypeError) and unknown.category is ErrorCategory.UNKNOWN_FIELD


def test_evaluate_errors_are_evaluation_exceptions(tmp_path: Path) -> None:
    f1 = {"f1": F1ScoreEvaluator()}
    missing = _caught(lambda: evaluate(data=str(tmp_path / "nope.jsonl"), evaluators=f1))
    assert (missing.category, missing.blame) == (ErrorCategory.INVALID_VALUE, ErrorBlame.USER_ERROR)
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"response": "only"}) + "\n")
    column = _caught(lambda: evaluate(data=str(data), evaluators=f1, store=":memory:"))
    assert isinstance(column, InputValidationError) and column.category is ErrorCategory.MISSING_FIELD
    assert column.target is ErrorTarget.EVALUATE


def test_azure_ai_project_warns_once_that_nothing_is_uploaded(tmp_path: Path) -> None:
    import touchstone.errors as errors

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"response": "hello", "ground_truth": "hello"}) + "\n")
    store = str(tmp_path / "runs.db")
    project = {"subscription_id": "s", "resource_group_name": "g", "project_name": "p"}
    errors._warned_upload = False
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(2):
            result = evaluate(
                data=str(data), evaluators={"f1": F1ScoreEvaluator()}, azure_ai_project=project, store=store
            )
    uploads = [w for w in seen if "uploads nothing" in str(w.message)]
    assert len(uploads) == 1 and result["rows"][0]["outputs.f1.f1_score"] == 1.0
