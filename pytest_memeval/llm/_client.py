"""The LLM client: cache, then retries around one provider call under a per-process concurrency
bound, with token accounting. :func:`make_client` is the one entry point the plugin uses."""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol, TypeVar, cast

from ..errors import JudgeError
from ._accounting import TokenAccounting
from ._base import Completion, LLMClient, Request
from ._batch import BATCH_ROLES, BatchDeferred, BatchQueue, QueuedRequest
from ._cache import LLMCache, cache_key
from ._providers import Provider, ProviderConfig, build_provider, resolve_config
from ._ratelimit import Limiter, LimiterUnavailable, estimate_tokens
from ._redact import redact
from ._retry import (
    CircuitBreaker,
    PermanentError,
    RetriesExhausted,
    RetryPolicy,
    TransientError,
    call_with_retry,
)

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_TIMEOUT",
    "ProviderClient",
    "SemaphoreLike",
    "make_client",
    "make_semaphore",
    "run_parallel",
]

log = logging.getLogger("pytest_memeval.llm")

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT = 60.0


class SemaphoreLike(Protocol):
    """What the concurrency bound must offer (``threading.BoundedSemaphore`` does)."""

    def acquire(self) -> bool: ...

    def release(self) -> None: ...


def make_semaphore(n: int = DEFAULT_CONCURRENCY) -> threading.BoundedSemaphore:
    """The per-process bound on LLM calls in flight, shared by the answerer and every judge.
    Under xdist each worker has its own, so ``-n W`` allows ``W * n`` calls at once."""
    if n < 1:
        raise ValueError("concurrency must be >= 1")
    return threading.BoundedSemaphore(n)


class CircuitOpenError(JudgeError):
    """No request sent: the process's circuit breaker is open (the endpoint is down)."""


class ProviderClient(LLMClient):
    """An :class:`~.base.LLMClient` for one provider + model + base URL. Thread-safe.

    ``send`` (and ``complete``, built on it) looks in the cache first (a hit makes no request), otherwise sends the request
    under the shared semaphore (held only while a request is in flight, not during backoff),
    retried per the policy; the result is stored in the cache and counted per role. A request
    identical to one in flight in this process waits for that one and reads its reply from the
    cache (single flight): a window of N pays for the same calls as a window of 1."""

    def __init__(
        self,
        config: ProviderConfig,
        provider: Provider,
        *,
        cache: LLMCache | None = None,
        concurrency: SemaphoreLike | None = None,
        retry: RetryPolicy | None = None,
        accounting: TokenAccounting | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.breaker = breaker
        self.config = config
        self.provider = provider
        self.cache = cache
        self.concurrency: SemaphoreLike = (
            concurrency if concurrency is not None else make_semaphore()
        )
        self.retry = retry if retry is not None else RetryPolicy()
        self.accounting = accounting if accounting is not None else TokenAccounting()
        self._lock = threading.Lock()
        self.requests = 0  # HTTP requests sent, retries included
        self.retries = 0
        #: cache keys being sent by a thread of this process, and the event set when it is done
        self._inflight: dict[str, threading.Event] = {}
        #: --memeval-llm-rpm / --memeval-llm-tpm, shared by every process of the machine (or, with
        #: --memeval-llm-limiter=redis://..., of every host)
        self.limiter: Limiter | None = None
        #: --memeval-llm-batch: where a judge call that misses the cache is queued (not sent)
        self.batch: BatchQueue | None = None

    @property
    def label(self) -> str:
        return self.config.label

    def __repr__(self) -> str:
        return f"ProviderClient({self.label!r}, base_url={self.config.base_url!r})"

    def _redact(self, text: str) -> str:
        return redact(text, (self.config.key_env,))

    def _clean(self, completion: Completion) -> Completion:
        """A reply with any API key it echoes removed (answers, judge replies and reasoning are
        stored, printed and cached from this text)."""
        text = self._redact(completion.text)
        return completion if text == completion.text else dataclasses.replace(completion, text=text)

    def _post(self, request: Request) -> Completion:
        sdk = getattr(self.provider, "sdk", None) if self.limiter is not None else None
        if sdk is not None:
            sdk.get()  # build the SDK client (its import) before a rate slot is taken
        self.concurrency.acquire()
        try:
            if self.limiter is not None:  # the slot is taken right before the request is sent
                self.limiter.acquire(estimate_tokens(request))
            with self._lock:
                self.requests += 1
            return self.provider.send(request)
        finally:
            self.concurrency.release()

    def send(self, request: Request, *, role: str = "judge") -> Completion:
        key: str | None = None
        if self.cache is not None:
            key = cache_key(
                provider=self.config.provider,
                model=self.config.model,
                base_url=self.config.base_url,
                request=request,
            )
            hit, flight = self._claim(key)
            if hit is not None:
                self.accounting.record(role, self.label, cache_hits=1)
                self.cache.note_import(role, hit)
                return self._clean(hit)
            try:
                return self._miss(request, key, role)
            finally:
                self._land(key, flight)
        return self._miss(request, None, role)

    def _claim(self, key: str) -> tuple[Completion | None, threading.Event]:
        """The cached reply for ``key`` (and a landed marker), or ``None`` and the in-flight
        marker this call now owns: it sends the request, then lands the marker (:meth:`_land`). While
        an identical request is in flight, wait for it and look again (its reply is cached; if it
        failed, one of the waiters sends it)."""
        assert self.cache is not None
        while True:
            with self._lock:
                other = self._inflight.get(key)
                if other is None:
                    mine = threading.Event()
                    self._inflight[key] = mine
            if other is not None:
                other.wait()
                continue
            hit = self.cache.get(key)
            if hit is not None:
                self._land(key, mine)
            return hit, mine

    def _land(self, key: str, flight: threading.Event) -> None:
        with self._lock:
            if self._inflight.get(key) is flight:
                del self._inflight[key]
        flight.set()

    def _miss(self, request: Request, key: str | None, role: str) -> Completion:
        """A request the cache does not hold: queued for a batch, or sent (retried, counted,
        cached)."""
        if self.cache is not None and key is not None:
            self.accounting.record(role, self.label, cache_misses=1)
            if self.batch is not None and role in BATCH_ROLES:
                self.batch.add(
                    QueuedRequest(
                        key,
                        self.config.provider,
                        self.config.model,
                        self.config.base_url,
                        self.config.key_env,
                        request,
                        role,
                    )
                )
                raise BatchDeferred(self.label, key)

        if self.breaker is not None and self.breaker.open:
            self.accounting.record(role, self.label, failures=1)
            raise CircuitOpenError(self._redact(f"{self.label}: {self.breaker.message()}"))

        def on_retry(number: int, delay: float, exc: TransientError) -> None:
            with self._lock:
                self.retries += 1
            self.accounting.record(role, self.label, retries=1)
            if self.limiter is not None and exc.status == 429:
                self.limiter.pause(delay)  # every process waits, not only this call
            log.info(
                "%s",
                self._redact(
                    f"{self.label}: {exc}; retry {number}/{self.retry.max_retries} in {delay:.2f}s"
                ),
            )

        try:
            completion = call_with_retry(
                lambda: self._post(request),
                self.retry,
                on_retry=on_retry,
            )
        except LimiterUnavailable:
            self.accounting.record(role, self.label, failures=1)  # nothing was sent
            raise
        except PermanentError as exc:
            self.accounting.record(role, self.label, failures=1)
            if self.breaker is not None:
                self.breaker.success()  # the endpoint answered
            raise JudgeError(self._redact(f"{self.label}: {exc}")) from None
        except RetriesExhausted as exc:
            self.accounting.record(role, self.label, failures=1)
            if self.breaker is not None:
                if exc.last.connection:
                    self.breaker.failure(f"{self.config.base_url or self.config.provider}")
                else:
                    self.breaker.success()
            raise JudgeError(
                self._redact(
                    f"{self.label}: {exc.last} (gave up after {exc.attempts} attempts; "
                    f"base URL {self.config.base_url})"
                )
            ) from None
        if self.breaker is not None:
            self.breaker.success()
        completion = self._clean(completion)
        self.accounting.record(
            role,
            self.label,
            calls=1,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
        )
        if self.cache is not None and key is not None:
            self.cache.put(key, completion)
        return completion

    def close(self) -> None:
        self.provider.close()

    def __enter__(self) -> ProviderClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_client(
    spec: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    cache: LLMCache | None = None,
    concurrency: SemaphoreLike | None = None,
    retry: RetryPolicy | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    accounting: TokenAccounting | None = None,
    breaker: CircuitBreaker | None = None,
) -> ProviderClient:
    """A ready client for ``PROVIDER:MODEL``. Raises :class:`JudgeError` for a bad spec, a missing
    base URL (openai-compatible) or a missing key (naming the variable, never showing a value).
    Pass the same ``concurrency``, ``cache`` and ``accounting`` objects to every client of a
    process so the bound and the counters are shared."""
    config = resolve_config(spec, base_url=base_url, api_key_env=api_key_env)
    provider = build_provider(config, timeout=timeout)
    return ProviderClient(
        config,
        provider,
        cache=cache,
        concurrency=concurrency,
        retry=retry,
        accounting=accounting,
        breaker=breaker,
    )


def run_parallel(fn: Callable[[T], R], items: Sequence[T], max_workers: int) -> list[R]:
    """``[fn(x) for x in items]`` on a thread pool of ``max_workers``, results in item order.
    The first exception (in item order) is re-raised after cancelling the calls not yet
    started. One item or one worker runs inline.

    Calls queued for the batch (:class:`~.batch.BatchDeferred`, ``--memeval-llm-batch``) do not
    stop the others: every item runs, so all the cache misses of a multi-call judge (graded runs,
    BEAM rubric items) are queued at once, and one ``BatchDeferred`` naming all their keys is
    raised at the end (another exception still wins)."""
    if max_workers < 1:
        raise ValueError("max_workers must be >= 1")
    deferred: list[BatchDeferred] = []

    def settled(get: Callable[[], R]) -> R | None:
        try:
            return get()
        except BatchDeferred as exc:
            deferred.append(exc)
            return None

    results: list[R | None]
    if len(items) <= 1 or max_workers == 1:
        results = [settled(functools.partial(fn, x)) for x in items]
    else:
        pool = ThreadPoolExecutor(
            max_workers=min(max_workers, len(items)), thread_name_prefix="memeval-llm"
        )
        futures: list[Future[R]] = []
        try:
            futures = [pool.submit(fn, x) for x in items]
            results = [settled(f.result) for f in futures]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    if deferred:
        raise BatchDeferred(deferred[0].label, *(k for exc in deferred for k in exc.keys))
    return cast(list[R], results)  # no item was deferred: every one is an R
