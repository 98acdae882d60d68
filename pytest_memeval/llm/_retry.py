"""Retry policy: exponential backoff with full jitter, honouring ``retry-after`` headers.

The providers translate SDK exceptions into :class:`TransientError` (429, 408, 409, 5xx,
timeouts, dropped connections, unreadable replies: worth another try) or :class:`PermanentError`
(400, 401, 403, 404, 422 and other 4xx: fail at once). The SDKs' own retries are disabled, so this
policy is the only one. ``sleep`` and ``random`` are injectable so tests run instantly and
deterministically.
"""

from __future__ import annotations

import datetime
import email.utils
import random as _random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

__all__ = [
    "CircuitBreaker",
    "PermanentError",
    "RetriesExhausted",
    "RetryPolicy",
    "TransientError",
    "call_with_retry",
    "parse_retry_after",
]

T = TypeVar("T")


class TransientError(Exception):
    """A failure worth retrying. The message must already be free of secrets."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        connection: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.connection = connection  # the endpoint could not be reached at all


class PermanentError(Exception):
    """A failure that another try cannot fix (bad request, bad key, unknown model)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RetriesExhausted(Exception):
    """Raised by :func:`call_with_retry` when the last allowed try failed too."""

    def __init__(self, last: TransientError, attempts: int) -> None:
        super().__init__(f"gave up after {attempts} attempts: {last}")
        self.last = last
        self.attempts = attempts


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` re-sends after the first try; the n-th re-send (0-based) waits
    ``uniform(0, min(max_backoff, base_delay * 2**n))`` ("full jitter"), or exactly the server's
    ``retry-after`` when given (capped at ``max_retry_after``)."""

    max_retries: int = 6
    base_delay: float = 0.5
    max_backoff: float = 30.0
    max_retry_after: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)
    random: Callable[[], float] = field(default=_random.random, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.base_delay < 0 or self.max_backoff < 0 or self.max_retry_after < 0:
            raise ValueError("delays must be >= 0")

    def delay(self, retry_number: int, retry_after: float | None = None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        cap = min(self.max_backoff, self.base_delay * (2.0 ** min(retry_number, 62)))
        return self.random() * cap


class CircuitBreaker:
    """Shared by the LLM clients of one process: after ``threshold`` calls in a row that could not
    reach their endpoint at all (every retry a connection failure), it opens and no further
    request is sent in this process. ``threshold`` 0 never opens. Thread-safe."""

    def __init__(self, threshold: int = 5) -> None:
        self.threshold = threshold
        self.failures = 0
        self.endpoint: str | None = None
        self._lock = threading.Lock()

    @property
    def open(self) -> bool:
        return self.threshold > 0 and self.failures >= self.threshold

    def message(self) -> str:
        return (
            f"circuit breaker open: {self.failures} calls in a row could not connect to "
            f"{self.endpoint}; no further LLM calls in this process (start the endpoint, or "
            "--memeval-llm-circuit-breaker=0 to keep trying)"
        )

    def success(self) -> None:
        with self._lock:
            self.failures = 0

    def failure(self, endpoint: str) -> None:
        with self._lock:
            self.failures += 1
            self.endpoint = endpoint


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (milliseconds) or ``retry-after`` (seconds or an
    HTTP date); None when absent or unreadable. Header names are matched case-insensitively."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
            if value >= 0:
                return value
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return _ratelimit_reset(lowered, time.time() if now is None else now)
    try:
        value = float(raw)
        return value if value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _ratelimit_reset(lowered: Mapping[str, str], now: float) -> float | None:
    """Without ``retry-after``: the longest wait the rate-limit headers give, OpenAI's
    ``x-ratelimit-reset-requests`` / ``-tokens`` (``1s``, ``6m0s``, ``20ms``) or Anthropic's
    ``anthropic-ratelimit-*-reset`` (an RFC 3339 time)."""
    waits: list[float] = []
    for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"):
        raw = lowered.get(name, "").strip()
        parts = _DURATION.findall(raw)
        if parts and "".join(n + u for n, u in parts) == raw:
            waits.append(sum(float(n) * _UNIT[u] for n, u in parts))
    for name, raw in lowered.items():
        if name.startswith("anthropic-ratelimit-") and name.endswith("-reset"):
            try:
                when = datetime.datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
            except ValueError:
                continue
            if when.tzinfo is not None:
                waits.append(max(0.0, when.timestamp() - now))
    return max(waits) if waits else None


def call_with_retry(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    on_retry: Callable[[int, float, TransientError], None] | None = None,
) -> T:
    """``fn()`` retried on :class:`TransientError` per ``policy``. :class:`PermanentError` and any
    other exception propagate at once; running out of retries raises :class:`RetriesExhausted`.
    ``on_retry(retry_number, delay, error)`` is called before each wait (for counting/logging)."""
    retry_number = 0
    while True:
        try:
            return fn()
        except TransientError as exc:
            if retry_number >= policy.max_retries:
                raise RetriesExhausted(exc, retry_number + 1) from None
            delay = policy.delay(retry_number, exc.retry_after)
            retry_number += 1
            if on_retry is not None:
                on_retry(retry_number, delay, exc)
            policy.sleep(delay)
