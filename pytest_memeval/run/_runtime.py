"""Run level, pytest-free: the LLM answerer and judges of one process, and the prediction store
used by ``--memeval-rejudge``.

One ``LLMRuntime`` per process owns the shared cache, the concurrency bound and the token
accounting, so answerer and judges draw from the same limits (``-n N`` multiplies the bound: each
worker process has its own).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import JudgeError
from ..judges import Judge, JudgeResult, cohen_kappa, default_style, get_judge
from ..llm import (
    AnthropicProvider,
    BatchDeferred,
    BatchQueue,
    CircuitBreaker,
    CircuitOpenError,
    LazySDK,
    Limiter,
    LimiterUnavailable,
    LLMCache,
    OpenAIProvider,
    ProviderClient,
    ProviderConfig,
    RedisRateLimiter,
    RetryPolicy,
    TokenAccounting,
    check_credentials,
    get_tokenizer,
    make_client,
    make_semaphore,
    redact,
    resolve_config,
)
from ..records import PENDING_VERDICT, Pending, Question
from ._settings import LLMSettings

if TYPE_CHECKING:
    from ..answerers import LLMAnswerer, Mem0Answerer

__all__ = [
    "JudgeSpec",
    "LLMRuntime",
    "LLMSettings",
    "check_judges",
    "check_llm",
    "judge_agreement",
    "score_key",
]

log = logging.getLogger("pytest_memeval.llm")


def check_llm(settings: LLMSettings) -> None:
    """Fail before collection: bad spec, missing key (names the variable). ``--memeval-estimate``
    sends nothing, so it needs no key: only the specs and base URLs are checked."""
    specs = list(settings.judges)
    if settings.answerer != "extractive":
        specs.append(settings.answerer)
    for spec in specs:
        if settings.estimate:
            resolve_config(spec, base_url=settings.base_url, api_key_env=settings.api_key_env)
        else:
            check_credentials(spec, base_url=settings.base_url, api_key_env=settings.api_key_env)


def check_judges(settings: LLMSettings, benchmarks: Sequence[str], protocol: Any = None) -> None:
    """Build each benchmark's judge once, so a bad ``--memeval-judge-prompt`` (or judge
    settings) fails at configuration time, before any answerer call is paid for."""
    if not settings.judges:
        return
    if protocol is not None and protocol.judge() is not None:
        return
    for bench in benchmarks:
        style = settings.judge_style or default_style(bench)
        try:
            get_judge(style, template_path=settings.judge_prompt, runs=settings.judge_runs)
        except JudgeError as exc:
            raise JudgeError(f"--memeval-judge-prompt / {style} judge: {exc}") from None


def score_key(metric: str, first: bool, label: str) -> str:
    """Where a judge's value named ``metric`` (its headline or ``<headline>_<suffix>``) is stored:
    as is for the first judge, ``<metric>@<label>`` for the others."""
    return metric if first else f"{metric}@{label}"


@dataclass
class JudgeSpec:
    label: str  # PROVIDER:MODEL
    first: bool  # the first --memeval-judge: its keys carry no "@<label>"
    client: ProviderClient
    judges: dict[str, Judge] = field(default_factory=dict)  # style -> judge


class LLMRuntime:
    def __init__(self, settings: LLMSettings, cache_dir: Path, *, protocol: Any = None) -> None:
        #: the official protocol (``protocols.LoadedProtocol``) whose judge replaces the styles
        self.protocol = protocol
        self.settings = settings
        self.accounting = TokenAccounting()
        self.cache_dir = cache_dir
        self.semaphore = make_semaphore(settings.concurrency)
        self.cache: LLMCache | None = None
        if not settings.no_cache:
            if settings.estimate:  # read the real cache, write nothing
                from ..llm import EstimateCache

                self.cache = EstimateCache(cache_dir / "llm")
            else:
                self.cache = LLMCache(cache_dir / "llm")
        self._lock = threading.Lock()
        #: the thread building the SDK clients (:meth:`prewarm`), until :meth:`await_prewarm`
        self._prewarm: threading.Thread | None = None
        #: --memeval-llm-limiter=redis://...: one client (connection pool) for every limiter
        self._redis: Any = None
        self._redis_limiters: list[RedisRateLimiter] = []
        #: what the rate limiters had to say (each distinct line once)
        self.limiter_notes: list[str] = []
        self.breaker = CircuitBreaker(settings.circuit_breaker)
        #: one SDK client per resolved model config, shared by the answerer and the judges that
        #: use it (one import, one connection pool, one TLS context per process)
        self._sdks: dict[ProviderConfig, LazySDK] = {}
        self.answerer_client: ProviderClient | None = None
        self.answerer: LLMAnswerer | Mem0Answerer | None = None
        if settings.answerer != "extractive":
            self.answerer_client = self._client(settings.answerer)
            answer_shape = None if protocol is None else protocol.profile.answer
            if answer_shape is not None:  # the protocol's own answer request (Mem0's)
                from ..answerers import Mem0Answerer

                self.answerer = Mem0Answerer(
                    self.answerer_client, protocol.templates["answer"], answer_shape
                )
            else:
                from ..answerers import LLMAnswerer

                # built once: the template is read and checked here (a bad one fails before
                # collection), and the provenance hash is that of the template every answer used
                self.answerer = LLMAnswerer(
                    self.answerer_client, template_path=settings.answer_prompt
                )
                if protocol is not None:  # the suites' own requests (their answerer hooks)
                    for name, hook in protocol.suite_hooks("official_answerer"):
                        suite = hook(protocol)
                        if suite is not None:
                            self.answerer.official[name] = suite
        self.judges: list[JudgeSpec] = []
        for i, spec in enumerate(settings.judges):
            self.judges.append(JudgeSpec(spec, i == 0, self._client(spec)))
        self.warnings: int = 0
        self.unscored: int = 0

    def _client(self, spec: str) -> ProviderClient:
        if self.settings.estimate:  # the real client and cache keys; a provider that sends nothing
            from ..llm import estimating_client

            return estimating_client(
                spec,
                base_url=self.settings.base_url,
                api_key_env=self.settings.api_key_env,
                cache=self.cache,
                concurrency=self.semaphore,
                accounting=self.accounting,
            )
        client = self._make_client(spec)
        provider = client.provider
        if isinstance(provider, OpenAIProvider | AnthropicProvider):
            provider.sdk = self._sdks.setdefault(client.config, provider.sdk)
        if self.settings.rpm is not None or self.settings.tpm is not None:
            client.limiter = self._limiter(client.config)
        return client

    def _limiter(self, config: ProviderConfig) -> Limiter:
        """The rate limiter of one provider + base URL + key: the machine-local state file, or
        the key of that hash in the --memeval-llm-limiter Redis database."""
        from ..llm import (
            RateLimiter,
            RedisRateLimiter,
            connect_redis,
            limiter_ident,
            limiter_path,
            redis_label,
        )

        key = os.environ.get(config.key_env)
        url = self.settings.limiter
        if url is None:
            return RateLimiter(
                limiter_path(self.cache_dir / "llm", config.provider, config.base_url, key),
                self.settings.rpm,
                self.settings.tpm,
                say=self.limiter_note,
            )
        with self._lock:
            if self._redis is None:
                try:
                    self._redis = connect_redis(url)
                except ImportError:
                    raise JudgeError(
                        f"--memeval-llm-limiter={redis_label(url)}: needs the redis package: "
                        "pip install 'pytest-memeval[redis]'"
                    ) from None
            client = self._redis
        limiter = RedisRateLimiter(
            client,
            f"memeval:ratelimit:{limiter_ident(config.provider, config.base_url, key)}",
            redis_label(url),
            self.settings.rpm,
            self.settings.tpm,
            say=self.limiter_note,
            max_outage=self.settings.limiter_wait,
        )
        self._redis_limiters.append(limiter)
        return limiter

    def limiter_note(self, line: str) -> None:
        """A rate limiter's news (a rebuilt state, Redis unreachable or back): logged as it
        happens, and each distinct line once in the run's summary."""
        log.warning("pytest-memeval: %s", line)
        with self._lock:
            if line not in self.limiter_notes:
                self.limiter_notes.append(line)

    def check_limiter(self) -> str | None:
        """Why the --memeval-llm-limiter Redis cannot be used now (one line), or None."""
        for limiter in self._redis_limiters[:1]:
            return limiter.check()
        return None

    def _make_client(self, spec: str) -> ProviderClient:
        return make_client(
            spec,
            base_url=self.settings.base_url,
            api_key_env=self.settings.api_key_env,
            cache=self.cache,
            concurrency=self.semaphore,
            retry=RetryPolicy(
                max_retries=self.settings.max_retries, base_delay=self.settings.backoff
            ),
            timeout=self.settings.timeout,
            accounting=self.accounting,
            breaker=self.breaker,
        )

    def prewarm(self) -> threading.Thread | None:
        """Build the SDK clients (the SDK's import: most of a run's CPU per LLM call, ~0.7 s),
        and the tokenizer that counts an LLM answerer's context, on a daemon thread now, in a process that runs items, when its calls will miss the cache
        anyway (no cache, or an empty one: a first run). The import then overlaps collection and
        ingest instead of holding every pipeline thread at the first call. A run the cache may
        serve (any entry stored), an estimate and a batch run import nothing here. Once built,
        the process's objects are frozen (``gc.freeze``), as the plugin does after collection:
        the SDK lives as long as the process. Returns the thread (None: nothing to build)."""
        if self.settings.estimate or self.settings.batch:
            return None
        if self.cache is not None and not self.cache.empty():
            return None
        sdks = list({id(sdk): sdk for sdk in self._sdks.values()}.values())
        if not sdks:
            return None

        answers = self.answerer_client is not None

        def build() -> None:
            for sdk in sdks:
                # a failure here (an SDK not installed) is met again, reported, at the first call
                with contextlib.suppress(Exception):
                    sdk.get()
            if answers:  # the answerer's context is counted in tokens before its first call:
                # the encoding's build (~0.25 CPU-s) would otherwise hold every first answer
                with contextlib.suppress(Exception):
                    get_tokenizer()
            # the SDK's modules, pydantic models and httpx client live as long as the process:
            # out of the collector's reach (as everything alive after collection is), a full
            # collection no longer walks their ~200,000 objects (openai + anthropic: 0.68 CPU-s
            # for the five collections at pytest's exit, 0.00 s frozen)
            gc.freeze()

        thread = threading.Thread(target=build, name="memeval-sdk-prewarm", daemon=True)
        thread.start()
        self._prewarm = thread
        return thread

    def await_prewarm(self, timeout: float = 60.0) -> None:
        """Wait (once, at most ``timeout`` s) for :meth:`prewarm`'s clients, before the first
        question's LLM half is handed to the window. Searching ahead meanwhile would not be
        faster: under the GIL the main thread's ingest and the SDK's import take turns, so the
        first call would go out only when both are done; with the SDK first, the ingest of the
        questions ahead overlaps the calls in flight instead (a judged LongMemEval-shaped run,
        64 questions at -n 0: first request 2.4 s -> 1.0 s after the first item started,
        ``perf/run.py --only window``). A failed build is met again at the first call."""
        thread, self._prewarm = self._prewarm, None
        if thread is not None:
            thread.join(timeout)

    def judge_for(self, spec: JudgeSpec, benchmark: str) -> Judge:
        protocol = self.protocol
        if protocol is not None and protocol.judge() is not None:
            with self._lock:
                judge = spec.judges.get("protocol")
                if judge is None:
                    judge = spec.judges["protocol"] = protocol.judge()
            return judge
        style = self.settings.judge_style or default_style(benchmark)
        with self._lock:
            judge = spec.judges.get(style)
            if judge is None:
                judge = get_judge(
                    style, template_path=self.settings.judge_prompt, runs=self.settings.judge_runs
                )
                spec.judges[style] = judge
        return judge

    def key_for(self, spec: JudgeSpec, benchmark: str) -> str:
        """The score key of ``spec``'s headline on ``benchmark``: its judge's metric
        (``judge_mem0``, ``nugget_official``, ...), with ``@<label>`` after the first judge."""
        return score_key(self.judge_for(spec, benchmark).metric, spec.first, spec.label)

    def judge_keys(self, benchmark: str) -> list[str]:
        """Every configured judge's headline key on ``benchmark``, the first judge's first."""
        return [self.key_for(spec, benchmark) for spec in self.judges]

    def judge_metrics(self, benchmarks: Sequence[str]) -> dict[str, str]:
        """benchmark -> the first judge's headline metric (what ``judge`` stands for there)."""
        if not self.judges:
            return {}
        return {b: self.key_for(self.judges[0], b) for b in benchmarks}

    def styles(self, benchmarks: Sequence[str]) -> dict[str, str]:
        """benchmark -> the judge style that scores it (the protocol's, when one is active)."""
        if not self.judges:
            return {}
        return {b: self.judge_for(self.judges[0], b).name for b in benchmarks}

    def judge(
        self, benchmark: str, question: Question, prediction: str
    ) -> tuple[dict[str, float | None], dict[str, Any]]:
        """Every configured judge on one prediction -> (scores, details for the report); a judge
        whose call was queued for the batch gets a :class:`~pytest_memeval.records.Pending`."""
        scores: dict[str, float | None] = {}
        details: dict[str, Any] = {}
        for spec in self.judges:
            judge = self.judge_for(spec, benchmark)
            key = score_key(judge.metric, spec.first, spec.label)
            try:
                with self._import_trace() as imported:
                    result: JudgeResult = judge.judge(question, prediction, spec.client)
            except BatchDeferred as exc:  # --memeval-llm-batch: judged at the run's end
                scores[key] = None
                details[key] = Pending(PENDING_VERDICT, spec.label, tuple(exc.keys), key)
                continue
            except (CircuitOpenError, LimiterUnavailable) as exc:  # nothing sent: UNSCORED
                with self._lock:  # judged on the pipeline's threads
                    self.unscored += 1
                scores[key] = None
                details[key] = {"unscored": True, "label": spec.label, "error": str(exc)}
                continue
            except JudgeError as exc:
                message = str(exc)
                if not message.startswith(spec.label):
                    message = f"{spec.label}: {message}"
                raise JudgeError(redact(message)) from None
            if result.skipped:
                details[key] = {"skipped": True, "label": spec.label}
                continue
            with self._lock:
                if result.unscored:
                    self.unscored += 1
                self.warnings += len(result.warnings)
            for name, value in result.scores.items():
                target = score_key(name, spec.first, spec.label)
                if value is not None and isinstance(value, float) and math.isnan(value):
                    value = None
                scores[target] = value
            if result.unscored:
                scores.setdefault(key, None)
            info = result.to_dict()
            info["label"] = spec.label
            info["style"] = judge.name
            if imported:  # served (in part) from a --memeval-cache-import file
                info["imported_from"] = sorted(set(imported))
            details[key] = info
            if spec.first and result.reasoning:
                details["judge_reasoning"] = result.reasoning
        return scores, details

    def queue_judges(self, folder: Path | None, name: str, *, answers: bool = False) -> None:
        """--memeval-llm-batch: queue every judge's cache misses (and the answerer's with
        ``answers``: ``--memeval-reanswer``) in ``folder`` (this process's file
        ``requests-<name>.jsonl``); None sends them again."""
        queue = BatchQueue(folder, name) if folder is not None else None
        clients = [spec.client for spec in self.judges]
        if self.answerer_client is not None:
            clients.append(self.answerer_client)
        closed: set[int] = set()
        for client in clients:
            if client.batch is not None and id(client.batch) not in closed:
                closed.add(id(client.batch))
                client.batch.close()
            client.batch = None
        for spec in self.judges:
            spec.client.batch = queue
        if answers and self.answerer_client is not None:
            self.answerer_client.batch = queue

    def _import_trace(self) -> contextlib.AbstractContextManager[list[str]]:
        if self.cache is None:
            return contextlib.nullcontext([])
        return self.cache.trace()

    def prompt_hashes(self, benchmarks: Sequence[str]) -> dict[str, str]:
        hashes: dict[str, str] = {}
        for spec in self.judges:
            for bench in benchmarks:
                hashes.update(self.judge_for(spec, bench).prompt_hashes)
        if self.answerer is not None:
            hashes.update(self.answerer.prompt_hashes)
        return hashes

    def estimate_answerer(self) -> Any:
        """--memeval-estimate: the answerer whose paid answers are gold-length placeholders."""
        from ..llm import EstimateCache, EstimatingProvider
        from ._estimate_figures import PlaceholderAnswerer

        assert self.answerer is not None and self.answerer_client is not None
        provider = self.answerer_client.provider
        assert isinstance(provider, EstimatingProvider)
        cache = self.cache if isinstance(self.cache, EstimateCache) else None
        return PlaceholderAnswerer(self.answerer, provider, cache)

    def tokenizers(self) -> dict[str, Any]:
        """--memeval-estimate: the token counter of each model, which are approximations, and
        how many requests repeated one this process already counted (not cache hits)."""
        from ..llm import EstimatingProvider

        names: dict[str, str] = {}
        approximate: list[str] = []
        clients = [s.client for s in self.judges]
        if self.answerer_client is not None:
            clients.append(self.answerer_client)
        for client in clients:
            if isinstance(client.provider, EstimatingProvider):
                names[client.label] = client.provider.counter.name
                if client.provider.counter.approximate is not None:
                    approximate.append(client.provider.counter.approximate)
        from ..llm import EstimateCache

        repeats = self.cache.repeats if isinstance(self.cache, EstimateCache) else 0
        return {"tokenizers": names, "approximate": approximate, "repeats": repeats}

    def output(self) -> dict[str, Any]:
        cache = self.cache.stats() if self.cache is not None else {}
        off = self.cache.disabled_reason if self.cache is not None else None
        extra = {"estimate": self.tokenizers()} if self.settings.estimate else {}
        return extra | {
            "tokens": self.accounting.to_dict(),
            "cache": cache,
            "cache_off": [f"{self.cache.path}: {off}"] if self.cache is not None and off else [],
            "limiter": list(self.limiter_notes),
            "judge_warnings": self.warnings,
            "judge_unscored": self.unscored,
            # import label -> role -> hits served from a --memeval-cache-import file
            "imported": (
                {k: dict(v) for k, v in self.cache.import_hits.items()}
                if self.cache is not None
                else {}
            ),
        }


def judge_agreement(
    results: Sequence[Mapping[str, Any]], keys: Sequence[str]
) -> dict[str, float | None]:
    """Cohen's kappa between the first binary judge and each other one, on questions both scored."""
    out: dict[str, float | None] = {}
    if len(keys) < 2:
        return out
    first = keys[0]
    for other in keys[1:]:
        a: list[int] = []
        b: list[int] = []
        for scores in results:
            x, y = scores.get(first), scores.get(other)
            if x in (0.0, 1.0) and y in (0.0, 1.0):
                a.append(int(x))
                b.append(int(y))
        out[f"{first} vs {other}"] = cohen_kappa(a, b) if a else None
    return out
