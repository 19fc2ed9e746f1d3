"""The judge's model configuration as a judge metric sees it: checked when the metric is built (as
the compatible SDK checks it), described without secrets for provenance, read from the command
line's flags and the environment, and the error that says how to configure one when none is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from touchstone._exceptions import ErrorCategory
from touchstone.errors import ConfigurationError


def no_judge_error(metric: str) -> ConfigurationError:
    """The error raised when a judge metric is chosen and no judge model is configured."""
    return ConfigurationError(
        f"metric {metric} needs a judge model, and none is configured: pass --judge-model MODEL "
        "(with --judge-base-url URL for an OpenAI-compatible server), or set OPENAI_API_KEY "
        "(and OPENAI_BASE_URL / TOUCHSTONE_JUDGE_MODEL), or AZURE_OPENAI_ENDPOINT with "
        "AZURE_OPENAI_API_KEY and AZURE_OPENAI_DEPLOYMENT; in Python pass model_config=..."
    )


_CONFIG_TEXT_KEYS = ("type", "model", "api_key", "base_url", "organization", "azure_endpoint",
                     "azure_deployment", "api_version", "provider_name")


def _config_shape_problem(config: Mapping[str, Any]) -> str | None:
    """What the compatible SDK rejects in a model configuration dict when a judge evaluator is
    built, less what touchstone completes later (an API key from the environment or none for a
    local server, touchstone's own keys): an unknown ``type`` or key, a non-text value where text
    is expected, ``extra_headers`` that is not a dict of texts, an OpenAI configuration without
    ``model``, an Azure one without endpoint or deployment (in it or in the environment)."""
    import os
    from dataclasses import fields as dataclass_fields

    from touchstone.judges.config import AzureOpenAIConfig, OpenAIConfig, ProviderModelConfiguration

    kind = config.get("type")
    if kind is not None and kind not in ("openai", "azure_openai", "provider"):
        return f"unknown model configuration type {kind!r} (expected 'openai' or 'azure_openai')"
    known = {f.name for c in (OpenAIConfig, AzureOpenAIConfig, ProviderModelConfiguration)
             for f in dataclass_fields(c)}
    unknown = sorted(str(k) for k in config if k not in known)
    if unknown:
        return f"the model configuration has unknown keys: {unknown}"
    for key in _CONFIG_TEXT_KEYS:
        if config.get(key) is not None and not isinstance(config[key], str):
            return f"the model configuration's {key!r} must be a string, not {type(config[key]).__name__}"
    headers = config.get("extra_headers")
    if headers is not None and not (
        isinstance(headers, Mapping) and all(isinstance(v, str) for v in headers.values())
    ):
        return "the model configuration's 'extra_headers' must be a dict of strings to strings"
    azure_keys = "azure_endpoint" in config or "azure_deployment" in config
    if kind == "azure_openai" or (kind is None and azure_keys):
        for key, env in (
            ("azure_endpoint", "AZURE_OPENAI_ENDPOINT"),
            ("azure_deployment", "AZURE_OPENAI_DEPLOYMENT"),
        ):
            if not config.get(key) and not os.environ.get(env):
                return f"an Azure OpenAI model configuration needs {key!r} (or ${env})"
    elif kind != "provider" and "provider_name" not in config and not config.get("model"):
        return "an OpenAI model configuration needs 'model' (e.g. 'gpt-4o-mini')"
    return None


def check_model_config(config: Any) -> None:
    """Raise a :class:`~touchstone.errors.ConfigurationError` (category ``MISSING_FIELD``, as the SDK
    classifies every malformed configuration) when a model configuration dict cannot work, so that a
    judge evaluator fails when it is built, as the SDK's does. Resolved configurations and anything
    that is not a dict are left to :func:`touchstone.judges.config.as_model_config` at first use."""
    if not isinstance(config, dict):
        return
    problem = _config_shape_problem(config)
    if problem is not None:
        from touchstone._exceptions import ErrorTarget

        raise ConfigurationError(f"Model config validation failed: {problem}.",
                                 category=ErrorCategory.MISSING_FIELD, target=ErrorTarget.MODELS)


def describe_judge(model_config: Any) -> dict[str, Any]:
    """The judge configuration without secrets (for provenance)."""
    try:
        from touchstone.judges.config import as_model_config

        cfg = as_model_config(model_config)
        return {
            "model": cfg.model_name,
            **{
                k: v
                for k, v in cfg.public().items()
                if k in ("type", "base_url", "azure_endpoint", "api_version")
            },
        }
    except Exception:  # provenance only: an odd configuration is reported when the judge is called
        return {"model": str(getattr(model_config, "get", lambda *_: None)("model") or "?")}


_JUDGE_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TOUCHSTONE_JUDGE_MODEL", "AZURE_OPENAI_ENDPOINT")


def configured_judge(model: str | None = None, base_url: str | None = None) -> Any:
    """The judge configuration the command line uses: from ``--judge-model``/``--judge-base-url``
    with the environment as fallback, or None when neither names a judge (so that a judge metric can
    say how to configure one before anything runs)."""
    import os

    if not (model or base_url or any(os.environ.get(name) for name in _JUDGE_ENV)):
        return None
    from touchstone.judges.config import model_config_from_env

    return model_config_from_env(model, base_url=base_url)
