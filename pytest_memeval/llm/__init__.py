"""LLM access for the answerer and the judges: providers on the official SDKs, an on-disk cache,
retries, a per-process concurrency bound and token accounting."""

from __future__ import annotations

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

__all__ = [
    "CACHE_FILENAME",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_KEY_ENVS",
    "DEFAULT_TIMEOUT",
    "KNOWN_KEY_ENVS",
    "PROVIDERS",
    "ChatMessage",
    "Completion",
    "LLMCache",
    "LLMClient",
    "PriceTable",
    "ProviderClient",
    "ProviderConfig",
    "Request",
    "RetryPolicy",
    "SemaphoreLike",
    "TokenAccounting",
    "Usage",
    "cache_key",
    "canonical_request",
    "check_credentials",
    "make_client",
    "make_semaphore",
    "parse_model_spec",
    "parse_retry_after",
    "redact",
    "resolve_config",
    "run_parallel",
]
