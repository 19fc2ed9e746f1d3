"""Judge model configurations and judge settings.

The configuration classes carry the compatible SDK's names and fields
(``azure-ai-evaluation``'s ``OpenAIModelConfiguration`` and ``AzureOpenAIModelConfiguration``);
like the SDK's typed dicts they can be read as mappings (``cfg["model"]``), and every function that
takes a configuration accepts a plain dict as well (see :func:`as_model_config`).

Secrets are resolved as late as possible (at client creation, from the object or the environment)
and never appear in ``repr``, :meth:`ModelConfigBase.public`, the cache, the run store or messages.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Union
from urllib.parse import urlsplit

from touchstone.errors import ConfigurationError

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
AZURE_DEFAULT_API_VERSION = "2024-10-21"
_SECRET_FIELDS = frozenset({"api_key", "azure_ad_token_provider", "credential", "extra_headers"})


class ModelConfigBase(Mapping[str, Any]):
    """Mapping behaviour shared by the configuration classes (the SDK's configurations are dicts)."""

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
            out[f.name] = value
        return out

    @property
    def model_name(self) -> str:
        """The model (OpenAI) or deployment (Azure) requests are sent to."""
        raise NotImplementedError

    def endpoint(self) -> str:
        """The base URL requests go to, resolved from the object or the environment."""
        raise NotImplementedError

    def cache_identity(self) -> str:
        """Provider and endpoint as they enter the cache key (no secrets)."""
        parts = urlsplit(self.endpoint())
        return f"{self.provider}:{parts.netloc.lower()}{parts.path.rstrip('/')}"

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
class OpenAIModelConfiguration(ModelConfigBase):
    """A model behind the OpenAI API or any OpenAI-compatible server (vLLM, Ollama, llama.cpp, TGI,
    LM Studio...) reached through ``base_url``.

    ``api_key`` defaults to ``$OPENAI_API_KEY`` and ``base_url`` to ``$OPENAI_BASE_URL`` (else the
    OpenAI API). A local server that needs no key gets a placeholder key. ``is_reasoning_model=True``
    sends no temperature or top_p and ``max_completion_tokens`` instead of ``max_tokens``.
    """

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
class AzureOpenAIModelConfiguration(ModelConfigBase):
    """A deployment of Azure OpenAI.

    ``azure_endpoint`` defaults to ``$AZURE_OPENAI_ENDPOINT``, ``api_key`` to
    ``$AZURE_OPENAI_API_KEY``, ``api_version`` to ``$AZURE_OPENAI_API_VERSION`` (else a recent GA
    version), ``azure_deployment`` to ``$AZURE_OPENAI_DEPLOYMENT``. For Entra ID pass
    ``azure_ad_token_provider`` (a callable returning a bearer token, e.g. from
    ``azure.identity.get_bearer_token_provider``) or ``credential`` (an object with
    ``get_token(scope)``, as the compatible SDK takes).
    """

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
            raise ConfigurationError(
                "AzureOpenAIModelConfiguration needs azure_deployment (or $AZURE_OPENAI_DEPLOYMENT)"
            )
        return deployment

    def endpoint(self) -> str:
        endpoint = self.azure_endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT")
        if not endpoint:
            raise ConfigurationError(
                "AzureOpenAIModelConfiguration needs azure_endpoint (or $AZURE_OPENAI_ENDPOINT)"
            )
        return endpoint.rstrip("/")

    def resolved_api_version(self) -> str:
        return self.api_version or os.environ.get("AZURE_OPENAI_API_VERSION") or AZURE_DEFAULT_API_VERSION

    def resolved_api_key(self) -> str | None:
        return self.api_key or os.environ.get("AZURE_OPENAI_API_KEY")

    def cache_identity(self) -> str:
        parts = urlsplit(self.endpoint())
        return f"{self.provider}:{parts.netloc.lower()}|{self.resolved_api_version()}"


@dataclass(repr=False, eq=True)
class ProviderModelConfiguration(ModelConfigBase):
    """A model of another provider (Anthropic, Gemini, Bedrock...) through an adapter registered with
    :func:`touchstone.judges.adapters.register_adapter`; adapters whose SDK is missing give an install
    hint. ``options``: settings for a user-registered adapter (it reads ``config.options``); the
    built-in Anthropic adapter takes none."""

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
    OpenAIModelConfiguration, AzureOpenAIModelConfiguration, ProviderModelConfiguration
]
ModelConfigLike = Union[ModelConfiguration, Mapping[str, Any]]  # noqa: UP007


def as_model_config(value: ModelConfigLike) -> ModelConfiguration:
    """A configuration object from a configuration object or a plain dict (the SDK's shape).

    A dict with ``azure_endpoint``/``azure_deployment`` or ``type: "azure_openai"`` is Azure OpenAI;
    one with ``provider_name`` an adapter; otherwise it is OpenAI(-compatible) and needs ``model``."""
    if isinstance(
        value, (OpenAIModelConfiguration, AzureOpenAIModelConfiguration, ProviderModelConfiguration)
    ):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"a model configuration must be a dict or configuration object, not {type(value).__name__}"
        )
    data = {k: v for k, v in value.items() if v is not None}
    kind = str(data.pop("type", "") or "")
    cls: type[ModelConfigBase]
    if kind == "azure_openai" or "azure_endpoint" in data or "azure_deployment" in data:
        cls = AzureOpenAIModelConfiguration
    elif kind == "provider" or "provider_name" in data:
        cls = ProviderModelConfiguration
    else:
        cls = OpenAIModelConfiguration
        if "model" not in data and "azure_deployment" not in data:
            raise ConfigurationError("an OpenAI model configuration needs 'model' (e.g. 'gpt-4o-mini')")
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigurationError(
            f"unknown model configuration field(s) {', '.join(unknown)} for {cls.__name__}"
        )
    return cls(**data)


def model_config_from_env(
    model: str | None = None,
    *,
    base_url: str | None = None,
    azure_endpoint: str | None = None,
    azure_deployment: str | None = None,
    api_version: str | None = None,
    is_reasoning_model: bool = False,
) -> ModelConfiguration:
    """A judge configuration from explicit values (CLI options) with the environment as fallback.

    Azure OpenAI when an Azure endpoint is given or ``$AZURE_OPENAI_ENDPOINT`` is set and no
    ``base_url`` is given; otherwise OpenAI(-compatible) with ``model`` (else ``$TOUCHSTONE_JUDGE_MODEL``,
    else ``gpt-4o-mini``) at ``base_url`` (else ``$OPENAI_BASE_URL``, else the OpenAI API)."""
    endpoint = azure_endpoint or (None if base_url else os.environ.get("AZURE_OPENAI_ENDPOINT"))
    if endpoint or azure_deployment:
        return AzureOpenAIModelConfiguration(
            azure_endpoint=endpoint,
            azure_deployment=azure_deployment or model or os.environ.get("AZURE_OPENAI_DEPLOYMENT"),
            api_version=api_version,
            is_reasoning_model=is_reasoning_model,
        )
    return OpenAIModelConfiguration(
        model=model or os.environ.get("TOUCHSTONE_JUDGE_MODEL") or "gpt-4o-mini",
        base_url=base_url,
        is_reasoning_model=is_reasoning_model,
    )


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
    ``"auto"`` (aiohttp when installed, else httpx)."""

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
        if float(self.timeout) <= 0:
            raise ConfigurationError(f"timeout must be positive, got {self.timeout}")
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
        }


_SETTING_NAMES = tuple(f.name for f in fields(JudgeSettings))
