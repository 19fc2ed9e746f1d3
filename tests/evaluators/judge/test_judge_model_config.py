"""A judge evaluator checks its model configuration dict when it is built, as the SDK does."""

from __future__ import annotations

from typing import Any

import pytest

from touchstone import EvaluationException
from touchstone._exceptions import ErrorCategory
from touchstone.evaluators.judge import check_model_config
from touchstone.evaluators.quality import RelevanceEvaluator

KEY = "sk-test-not-a-real-key-0000"
URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({}, "needs 'model'"),
        ({"type": "openai", "api_key": KEY}, "needs 'model'"),
        ({"type": "azure", "model": "m"}, "unknown model configuration type"),
        ({"model": "m", "temperature": 0}, "unknown keys"),
        ({"model": 4}, "'model' must be a string"),
        ({"model": "m", "extra_headers": "x"}, "extra_headers"),
        ({"azure_endpoint": "https://x.openai.azure.com"}, "'azure_deployment'"),
    ],
)
def test_malformed_configurations_fail_when_built(
    config: dict[str, Any], fragment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AZURE_OPENAI_DEPLOYMENT", raising=False)
    with pytest.raises(EvaluationException, match=fragment) as info:
        RelevanceEvaluator(config)
    assert info.value.category is ErrorCategory.MISSING_FIELD


def test_what_touchstone_completes_later_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    check_model_config({"model": "m", "base_url": URL})  # a local server needs no key
    check_model_config({"model": "m", "api_key": KEY, "is_reasoning_model": True})  # touchstone's key
    check_model_config({"provider_name": "anthropic", "model": "claude"})
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://x.openai.azure.com")
    check_model_config({"azure_deployment": "d", "api_key": KEY})
    check_model_config("not a dict")  # left to the first use


def test_a_secret_never_reaches_the_message() -> None:
    with pytest.raises(EvaluationException) as info:
        RelevanceEvaluator({"model": "m", "api_key": KEY, "bogus": 1})
    assert KEY not in str(info.value)
