"""The public names an SDK user imports: the typed dicts, the exception path, the enums."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import touchstone
from touchstone import AzureAIProject, Conversation, EvaluatorConfig, Message


def test_sdk_typed_dicts_build_plain_dicts() -> None:
    message = Message(role="user", content="hello")
    conversation = Conversation(messages=[message], context="ctx")
    config = EvaluatorConfig(column_mapping={"response": "${data.answer}"})
    project = AzureAIProject(subscription_id="s", resource_group_name="g", project_name="p")
    for value in (message, conversation, config, project):
        assert type(value) is dict
    expected = {"messages": [{"role": "user", "content": "hello"}], "context": "ctx"}
    assert json.loads(json.dumps(conversation)) == expected


def test_private_sdk_paths_exist() -> None:
    from touchstone._exceptions import ErrorBlame, ErrorCategory, ErrorTarget, EvaluationException
    from touchstone._model_configurations import (
        AzureOpenAIModelConfiguration,
        OpenAIModelConfiguration,
    )

    assert touchstone.EvaluationException is EvaluationException
    assert {ErrorBlame, ErrorCategory, ErrorTarget} <= {getattr(touchstone, n) for n in touchstone.__all__}
    assert touchstone.OpenAIModelConfiguration is OpenAIModelConfiguration
    assert touchstone.AzureOpenAIModelConfiguration is AzureOpenAIModelConfiguration


def test_every_exported_name_exists_and_the_sdk_names_are_there() -> None:
    assert all(hasattr(touchstone, name) for name in touchstone.__all__)
    sdk_names = {
        "evaluate", "CoherenceEvaluator", "F1ScoreEvaluator", "FluencyEvaluator", "GroundednessEvaluator",
        "ResponseCompletenessEvaluator", "TaskAdherenceEvaluator", "IntentResolutionEvaluator",
        "RelevanceEvaluator", "SimilarityEvaluator", "QAEvaluator", "BleuScoreEvaluator",
        "GleuScoreEvaluator", "MeteorScoreEvaluator", "RetrievalEvaluator", "RougeScoreEvaluator",
        "RougeType", "AzureAIProject", "AzureOpenAIModelConfiguration", "OpenAIModelConfiguration",
        "EvaluatorConfig", "Conversation", "Message", "EvaluationResult", "ToolCallAccuracyEvaluator",
        "DocumentRetrievalEvaluator",
    }  # fmt: skip
    assert sdk_names <= set(touchstone.__all__)


def test_import_and_help_load_no_evaluator_until_a_name_is_used() -> None:
    """``import touchstone`` and ``touchstone --help`` import no evaluator module and leave the metric
    registry unread; the first public name used brings in what it needs."""
    code = (
        "import sys\n"
        "import touchstone\n"
        "from touchstone.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('BEFORE', sorted(m for m in sys.modules if m.startswith('touchstone.evaluators')))\n"
        "from touchstone import F1ScoreEvaluator\n"
        "print('AFTER', F1ScoreEvaluator.__module__ in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    marked = [line for line in done.stdout.splitlines() if line.startswith(("BEFORE", "AFTER"))]
    lines = dict(line.split(" ", 1) for line in marked)
    assert lines == {"BEFORE": "[]", "AFTER": "True"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchEvaluator'"):
        touchstone.NoSuchEvaluator  # noqa: B018
    assert set(touchstone.__all__) <= set(dir(touchstone))
