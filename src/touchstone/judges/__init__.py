"""Judge models: configurations, the shared judge client (concurrency, retries, cache, cost) and
structured-output parsing. See SPEC section 4."""

from touchstone.errors import RunAbortedError
from touchstone.judges.client import (
    ChatReply,
    EmbeddingClient,
    JudgeClient,
    SessionJudgeClient,
    TokenLogprob,
    Usage,
    get_judge_client,
)
from touchstone.judges.config import (
    AzureOpenAIModelConfiguration,
    JudgeSettings,
    ModelConfigLike,
    ModelConfiguration,
    OpenAIModelConfiguration,
    ProviderModelConfiguration,
    as_model_config,
    default_cache_path,
    model_config_from_env,
)
from touchstone.judges.errors import (
    FatalProviderError,
    JudgeCallError,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    RowRejected,
    TransientError,
    UnsupportedParameter,
    redact,
)
from touchstone.judges.parsing import extract_json
from touchstone.judges.pricing import cost_usd, price_for
from touchstone.judges.providers.registry import provider_names, register_provider
from touchstone.judges.session import JudgeSession, current_session, judge_session

__all__ = [
    "AzureOpenAIModelConfiguration",
    "ChatReply",
    "EmbeddingClient",
    "FatalProviderError",
    "JudgeCallError",
    "JudgeClient",
    "JudgeSession",
    "JudgeSettings",
    "ModelConfigLike",
    "ModelConfiguration",
    "OpenAIModelConfiguration",
    "ProviderError",
    "ProviderModelConfiguration",
    "QuotaExhausted",
    "RateLimited",
    "RowRejected",
    "RunAbortedError",
    "SessionJudgeClient",
    "TokenLogprob",
    "TransientError",
    "UnsupportedParameter",
    "Usage",
    "as_model_config",
    "cost_usd",
    "current_session",
    "default_cache_path",
    "extract_json",
    "get_judge_client",
    "judge_session",
    "model_config_from_env",
    "price_for",
    "provider_names",
    "redact",
    "register_provider",
]
