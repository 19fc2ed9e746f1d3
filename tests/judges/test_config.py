"""Model configurations are the SDK's dicts, read and checked when a judge is first used; secrets
stay out of repr, public() and provenance."""

from __future__ import annotations

import json
from typing import Any

import pytest

from touchstone import (
    AzureOpenAIModelConfiguration,
    CoherenceEvaluator,
    OpenAIModelConfiguration,
)
from touchstone._exceptions import ErrorBlame, ErrorCategory, EvaluationException
from touchstone.errors import ConfigurationError
from touchstone.evaluators.judge import describe_judge
from touchstone.judges.config import (
    AzureOpenAIConfig,
    OpenAIConfig,
    ProviderModelConfiguration,
    as_model_config,
    model_config_from_env,
    public_config,
)

KEY = "sk-config-test-secret-123456"


def test_configurations_are_plain_dicts() -> None:
    azure = AzureOpenAIModelConfiguration(
        azure_endpoint="https://x.openai.azure.com", azure_deployment="gpt-4o", api_key=KEY
    )
    azure["api_version"] = "2024-06-01"
    azure["my_note"] = "extra keys are kept"  # type: ignore[typeddict-unknown-key]
    assert isinstance(azure, dict) and json.loads(json.dumps(azure))["api_key"] == KEY
    assert dict(azure) == azure and azure.get("api_version") == "2024-06-01"
    assert "type" not in azure  # as the SDK's typed dict: only the keys given
    openai = OpenAIModelConfiguration(model="gpt-4o", api_key=KEY)
    assert type(openai) is dict and openai == {"model": "gpt-4o", "api_key": KEY}


def test_public_forms_hide_secrets() -> None:
    cfg = AzureOpenAIModelConfiguration(
        azure_endpoint="https://x.openai.azure.com", azure_deployment="d", api_key=KEY, credential=object()
    )
    expected = {"azure_endpoint": "https://x.openai.azure.com", "azure_deployment": "d"}
    assert public_config(cfg) == expected
    resolved = as_model_config(cfg)
    assert KEY not in repr(resolved) and resolved.public() == {**expected, "type": "azure_openai"}
    described = describe_judge(cfg)
    assert described["model"] == "d" and KEY not in json.dumps(described, default=str)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (OpenAIModelConfiguration(model="m", api_key=KEY, organization="o"), OpenAIConfig),
        ({"model": "m"}, OpenAIConfig),
        ({"type": "openai", "model": "m", "unused": 1}, OpenAIConfig),
        ({"azure_endpoint": "https://x", "azure_deployment": "d"}, AzureOpenAIConfig),
        ({"type": "azure_openai"}, AzureOpenAIConfig),
        (AzureOpenAIModelConfiguration(type="azure_openai"), AzureOpenAIConfig),  # all from the environment
        ({"provider_name": "anthropic", "model": "claude"}, ProviderModelConfiguration),
    ],
)
def test_as_model_config_resolves_by_class_type_then_keys(given: Any, expected: type) -> None:
    resolved = as_model_config(given)
    assert type(resolved) is expected
    assert as_model_config(resolved) is resolved


def test_resolved_values_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://env.openai.azure.com/")
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT", "env-dep")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    azure = as_model_config(AzureOpenAIModelConfiguration(type="azure_openai"))
    assert isinstance(azure, AzureOpenAIConfig)
    assert (azure.endpoint(), azure.model_name, azure.resolved_api_key()) == (
        "https://env.openai.azure.com",
        "env-dep",
        KEY,
    )
    openai = as_model_config({"model": "m", "api_key": KEY, "is_reasoning_model": True})
    assert isinstance(openai, OpenAIConfig) and openai.reasoning and KEY not in repr(openai)


@pytest.mark.parametrize(
    ("given", "category", "words"),
    [
        ({"type": "openai", "api_key": KEY}, ErrorCategory.MISSING_FIELD, "needs 'model'"),
        ({}, ErrorCategory.MISSING_FIELD, "needs 'model'"),
        ({"type": "gemini", "model": "m"}, ErrorCategory.INVALID_VALUE, "unknown model configuration type"),
        ("gpt-4o", ErrorCategory.INVALID_VALUE, "must be a dict"),
    ],
)
def test_invalid_configurations_raise_a_typed_error(given: Any, category: ErrorCategory, words: str) -> None:
    with pytest.raises(ConfigurationError, match=words) as info:
        as_model_config(given)
    assert isinstance(info.value, EvaluationException) and isinstance(info.value, ValueError)
    assert (info.value.category, info.value.blame) == (category, ErrorBlame.USER_ERROR)
    assert KEY not in str(info.value)


def test_azure_without_deployment_fails_when_the_judge_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_DEPLOYMENT", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    config = AzureOpenAIModelConfiguration(type="azure_openai", api_key=KEY)  # a dict: nothing checked
    with pytest.raises(EvaluationException, match="needs 'azure_") as info:
        CoherenceEvaluator(config)  # checked when the evaluator is built, as the SDK checks it
    assert info.value.category is ErrorCategory.MISSING_FIELD and KEY not in str(info.value)
    # completed from the environment: built, resolved when the judge is first used
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://example.openai.azure.com")
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT", "gpt-4o")
    assert CoherenceEvaluator(config).model_config is config


def test_model_config_from_env_builds_sdk_dicts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    monkeypatch.delenv("TOUCHSTONE_JUDGE_MODEL", raising=False)
    cfg = model_config_from_env(base_url="http://127.0.0.1:9/v1")
    assert type(cfg) is dict and cfg == {"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1"}
    azure = model_config_from_env("dep", azure_endpoint="https://x.openai.azure.com", is_reasoning_model=True)
    assert azure == {
        "azure_endpoint": "https://x.openai.azure.com",
        "azure_deployment": "dep",
        "is_reasoning_model": True,
    }
    assert json.dumps(azure)
