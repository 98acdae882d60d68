"""LLM access for the answerer and the judges: providers on the official SDKs, an on-disk cache,
retries, a per-process concurrency bound and token accounting."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from ._accounting import PriceTable, TokenAccounting, Usage
from ._base import ChatMessage, Completion, LLMClient, Request
from ._cache import CACHE_FILENAME, LLMCache, cache_key, canonical_request
from ._client import (
    DEFAULT_CONCURRENCY,
    DEFAULT_TIMEOUT,
    ProviderClient,
    SemaphoreLike,
    make_client,
    make_semaphore,
    run_parallel,
)
from ._providers import (
    DEFAULT_KEY_ENVS,
    PROVIDERS,
    ProviderConfig,
    check_credentials,
    parse_model_spec,
    resolve_config,
)
from ._redact import KNOWN_KEY_ENVS, redact
from ._retry import RetryPolicy, parse_retry_after

if TYPE_CHECKING:
    from ._accounting import BATCH_DISCOUNT
    from ._batch import (
        BATCH_DIR,
        BatchDeferred,
        BatchQueue,
        PollPolicy,
        QueuedRequest,
        Route,
        backend_for,
        settle,
    )
    from ._client import CircuitOpenError
    from ._estimate import EstimateCache, EstimatingProvider, counter_for, estimating_client
    from ._providers import (
        BATCH_PROVIDERS,
        AnthropicProvider,
        LazySDK,
        OpenAIProvider,
        anthropic_body,
        has_batch_api,
        openai_body,
    )
    from ._ratelimit import (
        REDIS_SCHEMES,
        Limiter,
        LimiterUnavailable,
        RateLimiter,
        RedisRateLimiter,
        connect_redis,
        limiter_ident,
        limiter_path,
        redis_label,
    )
    from ._redact import REDACTED
    from ._retry import CircuitBreaker
    from ._tokenizer import CL100K_SHA256, TOKENIZER_NAME, Tokenizer, get_tokenizer, tokenizer_label
    from ._transfer import export_cache, import_cache


__all__ = [
    "BATCH_DIR",
    "BATCH_DISCOUNT",
    "BATCH_PROVIDERS",
    "CACHE_FILENAME",
    "CL100K_SHA256",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_KEY_ENVS",
    "DEFAULT_TIMEOUT",
    "KNOWN_KEY_ENVS",
    "PROVIDERS",
    "REDACTED",
    "REDIS_SCHEMES",
    "TOKENIZER_NAME",
    "AnthropicProvider",
    "BatchDeferred",
    "BatchQueue",
    "ChatMessage",
    "CircuitBreaker",
    "CircuitOpenError",
    "Completion",
    "EstimateCache",
    "EstimatingProvider",
    "LLMCache",
    "LLMClient",
    "LazySDK",
    "Limiter",
    "LimiterUnavailable",
    "OpenAIProvider",
    "PollPolicy",
    "PriceTable",
    "ProviderClient",
    "ProviderConfig",
    "QueuedRequest",
    "RateLimiter",
    "RedisRateLimiter",
    "Request",
    "RetryPolicy",
    "Route",
    "SemaphoreLike",
    "TokenAccounting",
    "Tokenizer",
    "Usage",
    "anthropic_body",
    "backend_for",
    "cache_key",
    "canonical_request",
    "check_credentials",
    "connect_redis",
    "counter_for",
    "estimating_client",
    "export_cache",
    "get_tokenizer",
    "has_batch_api",
    "import_cache",
    "limiter_ident",
    "limiter_path",
    "make_client",
    "make_semaphore",
    "openai_body",
    "parse_model_spec",
    "parse_retry_after",
    "redact",
    "redis_label",
    "resolve_config",
    "run_parallel",
    "settle",
    "tokenizer_label",
]


#: the rest of the package's way in, imported on first use (PEP 562): importing the package
#: loads only what it needs at once
_WHERE: dict[str, str] = {
    "BATCH_DIR": "._batch",
    "BATCH_DISCOUNT": "._accounting",
    "BATCH_PROVIDERS": "._providers",
    "CL100K_SHA256": "._tokenizer",
    "REDACTED": "._redact",
    "REDIS_SCHEMES": "._ratelimit",
    "TOKENIZER_NAME": "._tokenizer",
    "AnthropicProvider": "._providers",
    "BatchDeferred": "._batch",
    "BatchQueue": "._batch",
    "CircuitBreaker": "._retry",
    "CircuitOpenError": "._client",
    "EstimateCache": "._estimate",
    "EstimatingProvider": "._estimate",
    "LazySDK": "._providers",
    "Limiter": "._ratelimit",
    "LimiterUnavailable": "._ratelimit",
    "OpenAIProvider": "._providers",
    "PollPolicy": "._batch",
    "QueuedRequest": "._batch",
    "RateLimiter": "._ratelimit",
    "RedisRateLimiter": "._ratelimit",
    "Route": "._batch",
    "Tokenizer": "._tokenizer",
    "anthropic_body": "._providers",
    "backend_for": "._batch",
    "connect_redis": "._ratelimit",
    "counter_for": "._estimate",
    "estimating_client": "._estimate",
    "export_cache": "._transfer",
    "get_tokenizer": "._tokenizer",
    "has_batch_api": "._providers",
    "import_cache": "._transfer",
    "limiter_ident": "._ratelimit",
    "limiter_path": "._ratelimit",
    "openai_body": "._providers",
    "redis_label": "._ratelimit",
    "settle": "._batch",
    "tokenizer_label": "._tokenizer",
}

if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
