"""Judge model configurations and judge settings.

``OpenAIModelConfiguration`` and ``AzureOpenAIModelConfiguration`` carry the compatible SDK's names
and fields (``azure-ai-evaluation``'s typed dicts) and, as there, are plain dicts: ``isinstance(cfg,
dict)``, ``json.dumps(cfg)``, ``cfg["api_version"] = ...`` and extra keys all work, and every function
that takes a configuration accepts a dict of the same shape. Nothing is checked when one is built (a
dict can be completed afterwards). A judge evaluator checks its shape when it is built, as the SDK's
do (``touchstone.evaluators.judge.check_model_config``: unknown keys or type, missing model or
Azure endpoint/deployment); :func:`as_model_config` reads it into a resolved configuration
(:class:`OpenAIConfig`, :class:`AzureOpenAIConfig`, :class:`ProviderModelConfiguration`) when a judge
is first used, and raises a :class:`~touchstone.errors.ConfigurationError` (an
``EvaluationException`` of category ``MISSING_FIELD`` or ``INVALID_VALUE``) then.

Secrets are resolved as late as possible (at client creation, from the configuration or the
environment) and never appear in ``repr``, ``public()``, the cache, the run store or messages.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypedDict, Union
from urllib.parse import urlsplit

from touchstone._exceptions import ErrorCategory, ErrorTarget
from touchstone._redact import redact_url
from touchstone.errors import ConfigurationError

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
AZURE_DEFAULT_API_VERSION = "2024-10-21"
_SECRET_FIELDS = frozenset({"api_key", "azure_ad_token_provider", "credential", "extra_headers"})


def _config_error(message: str, category: ErrorCategory = ErrorCategory.MISSING_FIELD) -> ConfigurationError:
    return ConfigurationError(message, category=category, target=ErrorTarget.MODELS)


# ---------------------------------------------------------------------------- the SDK's dicts
# TypedDicts, as in the SDK: calling one builds a plain ``dict`` (``type(cfg) is dict``), so a
# configuration can be completed, copied, merged and serialised like any dict. Which provider a dict
# means is read from its ``type`` key, else from its keys (see :func:`as_model_config`).
class OpenAIModelConfiguration(TypedDict, total=False):
    """A model behind the OpenAI API or any OpenAI-compatible server (vLLM, Ollama, llama.cpp, TGI,
    LM Studio...) reached through ``base_url``.

    ``model`` (required when a judge is used), ``api_key`` (default ``$OPENAI_API_KEY``; a local
    server that needs none gets a placeholder), ``base_url`` (default ``$OPENAI_BASE_URL``, else the
    OpenAI API), ``organization``, ``extra_headers``, ``type`` (``"openai"``), and touchstone's
    ``is_reasoning_model`` (no temperature or top_p; ``max_completion_tokens``).
    """

    type: str
    model: str
    api_key: str
    base_url: str
    organization: str
    extra_headers: dict[str, str]
    is_reasoning_model: bool


class AzureOpenAIModelConfiguration(TypedDict, total=False):
    """A deployment of Azure OpenAI.

    ``azure_endpoint`` (default ``$AZURE_OPENAI_ENDPOINT``), ``azure_deployment`` (default
    ``$AZURE_OPENAI_DEPLOYMENT``), ``api_key`` (default ``$AZURE_OPENAI_API_KEY``), ``api_version``
    (default ``$AZURE_OPENAI_API_VERSION``, else a recent GA version), ``credential`` (an object with
    ``get_token(scope)``, as the SDK takes), ``type`` (``"azure_openai"``; needed only when neither
    endpoint nor deployment is given, everything coming from the environment), and touchstone's
    ``azure_ad_token_provider`` (a callable returning a bearer token, e.g. from
    ``azure.identity.get_bearer_token_provider``), ``extra_headers`` and ``is_reasoning_model``.
    """

    type: str
    azure_endpoint: str
    azure_deployment: str
    api_key: str
    api_version: str
    credential: Any
    azure_ad_token_provider: Callable[[], Any]
    extra_headers: dict[str, str]
    is_reasoning_model: bool


_URL_FIELDS = frozenset({"base_url", "azure_endpoint", "endpoint"})


def public_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A configuration dict without secrets (keys dropped, credentials out of URLs): safe to store,
    log and show."""
    return {
        k: redact_url(v) if k in _URL_FIELDS else v
        for k, v in config.items()
        if k not in _SECRET_FIELDS and v is not None
    }


def _host(parts: Any) -> str:
    """``host[:port]`` of a split URL, lower case, without the ``user:password@`` part."""
    return str(parts.netloc).rpartition("@")[2].lower()


# ---------------------------------------------------------------------------- resolved configurations
class ModelConfigBase(Mapping[str, Any]):
    """What the judge machinery reads: a configuration read and checked by :func:`as_model_config`
    (provider, endpoint, model, secrets resolved from the environment on demand)."""

    provider: str = ""

    # Mapping protocol over the dataclass fields that are set
    def __getitem__(self, key: str) -> Any:
        names = {f.name for f in fields(self)}  # type: ignore[arg-type]
        if key not in names:
            raise KeyError(key)
        value = getattr(self, key)
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return (f.name for f in fields(self) if getattr(self, f.name) is not None)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.public().items() if k != "type")
        return f"{type(self).__name__}({shown})"

    # ------------------------------------------------------------------ identity and provenance
    def public(self) -> dict[str, Any]:
        """The configuration without secrets: safe to store, log and show."""
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name in _SECRET_FIELDS or value is None or value is False:
                continue
            out[f.name] = redact_url(value) if f.name in _URL_FIELDS else value
        return out

    @property
    def model_name(self) -> str:
        """The model (OpenAI) or deployment (Azure) requests are sent to."""
        raise NotImplementedError

    def endpoint(self) -> str:
        """The base URL requests go to, resolved from the object or the environment."""
        raise NotImplementedError

    def cache_identity(self) -> str:
        """Provider, endpoint and a digest of the credential as they enter the cache key: a reply got
        with one key is not served to another (a wrong key must fail, not hit the cache)."""
        parts = urlsplit(self.endpoint())
        return f"{self.provider}:{_host(parts)}{parts.path.rstrip('/')}|{self.credential_digest()}"

    def credential_digest(self) -> str:
        """A salted hash of who the requests authenticate as (API key, URL user and password), never the
        secret itself."""
        parts = urlsplit(self.endpoint())
        identity = "\0".join((self.resolved_api_key() or "", parts.username or "", parts.password or ""))
        return "cred:" + hashlib.sha256(b"touchstone-credential\0" + identity.encode()).hexdigest()[:16]

    def session_key(self) -> str:
        """Distinguishes configurations that need different HTTP clients (held in memory only)."""
        secret = self.resolved_api_key() or ""
        digest = hashlib.sha256(secret.encode()).hexdigest()[:16]
        extra = sorted((getattr(self, "extra_headers", None) or {}).items())
        token = id(getattr(self, "azure_ad_token_provider", None) or getattr(self, "credential", None))
        return f"{self.cache_identity()}|{self.model_name}|{digest}|{extra}|{token}"

    def resolved_api_key(self) -> str | None:
        raise NotImplementedError

    @property
    def reasoning(self) -> bool:
        return bool(getattr(self, "is_reasoning_model", False))


@dataclass(repr=False, eq=True)
class OpenAIConfig(ModelConfigBase):
    """An OpenAI(-compatible) model, resolved from an :class:`OpenAIModelConfiguration`."""

    model: str
    api_key: str | None = None
    base_url: str | None = None
    organization: str | None = None
    extra_headers: dict[str, str] | None = None
    is_reasoning_model: bool = False
    type: str = "openai"

    provider = "openai"

    @property
    def model_name(self) -> str:
        return self.model

    def endpoint(self) -> str:
        return (self.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL).rstrip("/")

    def resolved_api_key(self) -> str | None:
        return self.api_key or os.environ.get("OPENAI_API_KEY")


@dataclass(repr=False, eq=True)
class AzureOpenAIConfig(ModelConfigBase):
    """An Azure OpenAI deployment, resolved from an :class:`AzureOpenAIModelConfiguration`."""

    azure_endpoint: str | None = None
    azure_deployment: str | None = None
    api_version: str | None = None
    api_key: str | None = None
    azure_ad_token_provider: Callable[[], Any] | None = None
    credential: Any = None
    extra_headers: dict[str, str] | None = None
    is_reasoning_model: bool = False
    type: str = "azure_openai"

    provider = "azure_openai"

    @property
    def model_name(self) -> str:
        deployment = self.azure_deployment or os.environ.get("AZURE_OPENAI_DEPLOYMENT")
        if not deployment:
            raise _config_error(
                "AzureOpenAIModelConfiguration needs azure_deployment (or $AZURE_OPENAI_DEPLOYMENT)"
            )
        return deployment

    def endpoint(self) -> str:
        endpoint = self.azure_endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT")
        if not endpoint:
            raise _config_error(
                "AzureOpenAIModelConfiguration needs azure_endpoint (or $AZURE_OPENAI_ENDPOINT)"
            )
        return endpoint.rstrip("/")

    def resolved_api_version(self) -> str:
        return self.api_version or os.environ.get("AZURE_OPENAI_API_VERSION") or AZURE_DEFAULT_API_VERSION

    def resolved_api_key(self) -> str | None:
        return self.api_key or os.environ.get("AZURE_OPENAI_API_KEY")

    def cache_identity(self) -> str:
        parts = urlsplit(self.endpoint())
        return f"{self.provider}:{_host(parts)}|{self.resolved_api_version()}|{self.credential_digest()}"


@dataclass(repr=False, eq=True)
class ProviderModelConfiguration(ModelConfigBase):
    """A model of another provider (Anthropic, Gemini, Bedrock...) served by the provider registered
    as ``provider_name`` (:func:`touchstone.judges.providers.registry.register_provider`); a provider
    whose SDK is missing gives an install hint. ``options``: settings for a user-registered provider
    (it reads ``config.options``); the built-in Anthropic provider takes none."""

    provider_name: str
    model: str
    api_key: str | None = None
    base_url: str | None = None
    options: dict[str, Any] | None = None
    is_reasoning_model: bool = False
    type: str = "provider"

    @property
    def provider(self) -> str:  # type: ignore[override]
        return self.provider_name

    @property
    def model_name(self) -> str:
        return self.model

    def endpoint(self) -> str:
        return self.base_url or f"adapter://{self.provider_name}"

    def resolved_api_key(self) -> str | None:
        return self.api_key or os.environ.get(f"{self.provider_name.upper()}_API_KEY")


ModelConfiguration = Union[  # noqa: UP007 - a runtime alias, must work on Python 3.10
    OpenAIConfig, AzureOpenAIConfig, ProviderModelConfiguration
]
"""A resolved configuration (what the judge machinery reads)."""
ModelConfigLike = Union[ModelConfiguration, Mapping[str, Any]]  # noqa: UP007
"""Anything a configuration may be given as: an SDK-style dict or a resolved configuration."""


def _config_class(value: Mapping[str, Any], kind: str) -> type[ModelConfigBase]:
    """Which configuration a dict describes: its ``type``, else its keys."""
    azure_keys = "azure_endpoint" in value or "azure_deployment" in value
    if kind == "azure_openai" or (kind != "openai" and azure_keys):
        return AzureOpenAIConfig
    if kind == "provider" or "provider_name" in value:
        return ProviderModelConfiguration
    if kind not in ("", "openai"):
        raise _config_error(
            f"unknown model configuration type {kind!r} (expected 'openai' or 'azure_openai')",
            ErrorCategory.INVALID_VALUE,
        )
    return OpenAIConfig


def as_model_config(value: ModelConfigLike) -> ModelConfiguration:
    """The resolved configuration of a model configuration dict (the SDK's shape) or of an already
    resolved one, checked: a :class:`~touchstone.errors.ConfigurationError` names what is missing.

    A dict with ``type: "azure_openai"`` or with ``azure_endpoint``/``azure_deployment`` is Azure
    OpenAI; one with ``provider_name`` an adapter;
    otherwise it is OpenAI(-compatible) and needs ``model``. Keys the configuration does not use are
    ignored, as the SDK ignores them."""
    if isinstance(value, (OpenAIConfig, AzureOpenAIConfig, ProviderModelConfiguration)):
        return value
    if not isinstance(value, Mapping):
        raise _config_error(
            f"a model configuration must be a dict or configuration object, not {type(value).__name__}",
            ErrorCategory.INVALID_VALUE,
        )
    data = {k: v for k, v in value.items() if v is not None}
    cls = _config_class(value, str(data.pop("type", "") or ""))
    if cls is OpenAIConfig and "model" not in data:
        raise _config_error("an OpenAI model configuration needs 'model' (e.g. 'gpt-4o-mini')")
    if cls is ProviderModelConfiguration and "model" not in data:
        raise _config_error("a provider model configuration needs 'model'")
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    resolved = cls(**{k: v for k, v in data.items() if k in names})
    return resolved  # type: ignore[return-value]


def model_config_from_env(
    model: str | None = None,
    *,
    base_url: str | None = None,
    azure_endpoint: str | None = None,
    azure_deployment: str | None = None,
    api_version: str | None = None,
    is_reasoning_model: bool = False,
    provider: str | None = None,
) -> OpenAIModelConfiguration | AzureOpenAIModelConfiguration | dict[str, Any]:
    """A judge configuration from explicit values (CLI options) with the environment as fallback.

    ``provider`` (``--judge-provider``) names the provider that serves the model: ``openai``,
    ``azure_openai``, or any registered one (then the configuration is a
    :class:`ProviderModelConfiguration` dict with ``model`` and ``base_url``). Without it: Azure
    OpenAI when an Azure endpoint is given or ``$AZURE_OPENAI_ENDPOINT`` is set and no ``base_url``
    is given; otherwise OpenAI(-compatible) with ``model`` (else ``$TOUCHSTONE_JUDGE_MODEL``, else
    ``gpt-4o-mini``) at ``base_url`` (else ``$OPENAI_BASE_URL``, else the OpenAI API). Keys the
    environment supplies at call time (API keys) are not copied in."""
    if provider not in (None, "openai", "azure_openai"):
        chosen_model = model or os.environ.get("TOUCHSTONE_JUDGE_MODEL")
        named: dict[str, Any] = {"type": "provider", "provider_name": provider, "model": chosen_model}
        if base_url:
            named["base_url"] = base_url
        if is_reasoning_model:
            named["is_reasoning_model"] = True
        return named
    from_env = None if base_url or provider == "openai" else os.environ.get("AZURE_OPENAI_ENDPOINT")
    endpoint = azure_endpoint or from_env
    if endpoint or azure_deployment or provider == "azure_openai":
        azure = AzureOpenAIModelConfiguration()
        deployment = azure_deployment or model or os.environ.get("AZURE_OPENAI_DEPLOYMENT")
        if endpoint:
            azure["azure_endpoint"] = endpoint
        if deployment:
            azure["azure_deployment"] = deployment
        if api_version:
            azure["api_version"] = api_version
        if is_reasoning_model:
            azure["is_reasoning_model"] = True
        return azure
    chosen = model or os.environ.get("TOUCHSTONE_JUDGE_MODEL") or "gpt-4o-mini"
    openai = OpenAIModelConfiguration(model=chosen)
    if base_url:
        openai["base_url"] = base_url
    if is_reasoning_model:
        openai["is_reasoning_model"] = True
    return openai


def default_cache_path() -> Path:
    """``$TOUCHSTONE_CACHE`` if set, else ``~/.touchstone/cache.db`` (next to the run store).

    Without any home directory the path is returned unexpanded (``~/...``) rather than raising:
    :class:`~touchstone.judges.cache.JudgeCache` then falls back to memory with a warning."""
    env = os.environ.get("TOUCHSTONE_CACHE")
    if env:
        return Path(env).expanduser()
    try:
        return Path.home() / ".touchstone" / "cache.db"
    except RuntimeError:
        return Path("~") / ".touchstone" / "cache.db"


HTTP_TRANSPORTS = ("auto", "aiohttp", "httpx")


@dataclass
class JudgeSettings:
    """How judge calls are made; one set per run (from ``evaluate(**options)`` or the CLI).

    ``concurrency`` is the most requests in flight (the adaptive limit halves on 429 and climbs back
    up to it); ``timeout`` is per request in seconds; ``max_retries`` bounds the retries of a call
    after a transient error (429s of a rate limit have their own, larger bound
    ``max_rate_limit_retries``); ``rpm``/``tpm`` optionally cap requests and tokens per minute.
    ``cache`` turns the SQLite response cache on (default) at ``cache_path``. ``prices`` overrides
    or extends the price table (USD per million tokens: ``{"model": (input, output)}``).
    ``http_transport`` is the HTTP stack under the ``openai`` client: ``"aiohttp"`` (the package's
    ``openai[aiohttp]`` transport, less CPU per request), ``"httpx"`` (its default), or
    ``"auto"`` (aiohttp when installed, else httpx). ``hedge``: a request far slower than the
    server's recent replies is sent once more beside it and the first reply wins (at most 10% of
    the calls + 4); on a paid API each hedge is one more billed request, so ``False`` turns it off
    (a hung request then holds its row until ``timeout``)."""

    concurrency: int = 32
    timeout: float = 60.0
    max_retries: int = 6
    max_rate_limit_retries: int = 30
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_wait: float = 120.0
    rpm: float | None = None
    tpm: float | None = None
    cache: bool = True
    cache_path: str | os.PathLike[str] | None = None
    adaptive: bool = True
    seed: int | None = None
    embed_batch_size: int = 256
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    dry_run: bool = False
    http_transport: str = "auto"
    hedge: bool = True

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> JudgeSettings:
        """Settings from ``evaluate()``'s extra options: a ``judge_settings`` object or dict, and/or
        the individual names (``concurrency``, ``cache``, ``timeout``, ``max_retries``, ``rpm``,
        ``tpm``, ``cache_path``...). Unknown options are ignored (they belong to other hooks)."""
        base = options.get("judge_settings")
        if isinstance(base, JudgeSettings):
            settings = JudgeSettings(**{f.name: getattr(base, f.name) for f in fields(cls)})
        elif isinstance(base, Mapping):
            settings = cls(**{k: v for k, v in base.items() if k in _SETTING_NAMES})
        else:
            settings = cls()
        for name in _SETTING_NAMES:
            if name in options and options[name] is not None:
                setattr(settings, name, options[name])
        settings.validate()
        return settings

    def validate(self) -> None:
        if int(self.concurrency) < 1:
            raise ConfigurationError(f"concurrency must be at least 1, got {self.concurrency}")
        if not 0 < float(self.timeout) < float("inf"):  # also refuses nan, which compares false
            raise ConfigurationError(f"timeout must be a positive number of seconds, got {self.timeout}")
        if int(self.max_retries) < 0:
            raise ConfigurationError(f"max_retries must be 0 or more, got {self.max_retries}")
        if self.http_transport not in HTTP_TRANSPORTS:
            raise ConfigurationError(
                f"http_transport must be one of {', '.join(HTTP_TRANSPORTS)}, got {self.http_transport!r}"
            )
        self.concurrency = int(self.concurrency)
        self.max_retries = int(self.max_retries)
        self.timeout = float(self.timeout)

    def resolved_cache_path(self) -> Path:
        return Path(self.cache_path).expanduser() if self.cache_path else default_cache_path()

    def public(self) -> dict[str, Any]:
        """Settings as stored with a run."""
        return {
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "rpm": self.rpm,
            "tpm": self.tpm,
            "cache": self.cache,
            "adaptive": self.adaptive,
            "seed": self.seed,
            "http_transport": self.http_transport,
            "hedge": self.hedge,
        }


_SETTING_NAMES = tuple(f.name for f in fields(JudgeSettings))
