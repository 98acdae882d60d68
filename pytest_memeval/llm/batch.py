"""Batch judging (``--memeval-llm-batch``), pytest-free: judge calls queued during the run and sent
at its end through OpenAI's Batch API or Anthropic's Message Batches (half price).

Flow, all state in the run folder's ``batch/`` directory:

1. While items run, a judge call that misses the LLM cache is not sent: :class:`BatchQueue` appends
   the request (its cache key, the provider config and the request fields) to
   ``requests-<process>.jsonl`` (one ``os.write`` on an ``O_APPEND`` descriptor per line, like the
   results store) and the client raises :class:`BatchDeferred`; the item reports UNSCORED with
   ``batch_pending``.
2. At the session's end (the controller, after every worker finished) :func:`settle` reads every
   queued request, drops those already cached, picks up each batch recorded in a ``batch-*.json``
   state file that has not ended (a run killed while polling), polls it with backoff and stores
   its replies in the LLM cache under the requests' own cache keys (the ``custom_id`` of each
   request *is* its cache key). What is left is submitted as one batch per provider, model and
   base URL; the state file (batch id and custom ids) is written atomically before the first poll,
   so ``--memeval-resume`` after a kill polls that batch instead of paying for it again.
3. Errored and expired requests are retried once synchronously (through the normal client: cache,
   retries); what still fails is returned per cache key with a one-line reason.
4. The controller then judges the stored predictions again from the cache (as
   ``--memeval-rejudge`` does): every verdict is a cache hit, so no judge request is sent twice.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import JudgeError
from .base import ChatMessage, Completion, Request
from .cache import LLMCache
from .providers import (
    ProviderConfig,
    anthropic_body,
    anthropic_completion,
    openai_body,
)
from .redact import redact

__all__ = [
    "BATCH_DIR",
    "BatchBackend",
    "BatchDeferred",
    "BatchOutcome",
    "BatchQueue",
    "PollPolicy",
    "Polled",
    "QueuedRequest",
    "backend_for",
    "read_queue",
    "settle",
]

BATCH_DIR = "batch"
#: requests per batch (OpenAI allows 50,000 a file, Anthropic 100,000 a batch; both cap the size)
MAX_BATCH = 10_000
#: the roles whose cache misses a client with a queue sends to the batch: the judges' always,
#: the answerer's only under ``--memeval-reanswer`` (its client gets a queue only then: a first
#: run's answers are sent at once)
BATCH_ROLES = frozenset({"judge", "answerer"})


class BatchDeferred(JudgeError):
    """No request sent: the call is queued for the end-of-run batch (``--memeval-llm-batch``)."""

    def __init__(self, label: str, *keys: str) -> None:
        more = f" and {len(keys) - 1} more" if len(keys) > 1 else ""
        super().__init__(f"{label}: queued for the batch (request {keys[0][:12]}{more})")
        self.label = label
        #: the cache keys of every queued call (a judge's parallel calls are all queued)
        self.keys = keys


@dataclass(frozen=True)
class QueuedRequest:
    """One judge call waiting for the batch: its cache key and what to send."""

    key: str
    provider: str
    model: str
    base_url: str
    key_env: str
    request: Request
    #: the accounting role of the call ("judge", or "answerer" under --memeval-reanswer)
    role: str = "judge"

    @property
    def group(self) -> tuple[str, str, str]:
        """One batch per provider, model and base URL."""
        return (self.provider, self.model, self.base_url)

    def config(self) -> ProviderConfig:
        return ProviderConfig(self.provider, self.model, self.base_url, self.key_env)

    def to_dict(self) -> dict[str, Any]:
        r = self.request
        request: dict[str, Any] = {
            "messages": [[m.role, m.content] for m in r.messages],
            "temperature": r.temperature,
            "max_tokens": r.max_tokens,
            "run_index": r.run_index,
            "json_mode": r.json_mode,
            "max_tokens_field": r.max_tokens_field,
        }
        if r.reasoning_effort is not None:  # only when sent: earlier queue lines stay the same
            request["reasoning_effort"] = r.reasoning_effort
        if r.extra:  # only when sent, likewise
            request["extra"] = [list(kv) for kv in r.extra]
        return {
            "key": self.key,
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "key_env": self.key_env,
            "role": self.role,
            "request": request,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueuedRequest:
        """Raises ValueError/KeyError/TypeError for a malformed line."""
        r = data["request"]
        messages = tuple(ChatMessage(str(role), str(content)) for role, content in r["messages"])
        max_tokens = r.get("max_tokens")
        temperature = r.get("temperature", 0.0)
        request = Request(
            messages,
            None if temperature is None else float(temperature),
            None if max_tokens is None else int(max_tokens),
            int(r.get("run_index", 0)),
            bool(r.get("json_mode", False)),
            None,
            r.get("max_tokens_field"),
            None,
            r.get("reasoning_effort"),
            tuple((str(name), value) for name, value in r.get("extra", ())),
        )
        fields = ("key", "provider", "model", "base_url", "key_env")
        if not all(isinstance(data.get(f), str) for f in fields):
            raise ValueError("a field is missing")
        role = data.get("role", "judge")
        return cls(
            data["key"],
            data["provider"],
            data["model"],
            data["base_url"],
            data["key_env"],
            request,
            role if role in BATCH_ROLES else "judge",
        )


class BatchQueue:
    """This process's queue file in ``<run>/batch/``. Thread-safe (one ``os.write`` per line)."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.path = folder / f"requests-{name}.jsonl"
        self._fd: int | None = None
        self._lock = threading.Lock()  # the pipeline's threads judge concurrently
        self.queued = 0

    def add(self, item: QueuedRequest) -> None:
        line = (json.dumps(item.to_dict(), ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                self.folder.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(self._fd, line)
            self.queued += 1

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def read_queue(folder: Path) -> tuple[dict[str, QueuedRequest], list[str]]:
    """Every queued request of the run, by cache key (first wins), and the problems of unreadable
    lines (a torn last line of a killed process is skipped silently)."""
    found: dict[str, QueuedRequest] = {}
    problems: list[str] = []
    for path in sorted(folder.glob("requests-*.jsonl")):
        raw = path.read_bytes()
        lines = raw.split(b"\n")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                item = QueuedRequest.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError):
                if number == len(lines):  # torn tail: the process died mid-write
                    continue
                problems.append(f"{path}: line {number} is not a queued request; skipped")
                continue
            found.setdefault(item.key, item)
    return found, problems


# -- backends ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Polled:
    """A batch's state: ended or not, and a one-line status for the log."""

    ended: bool
    status: str


class BatchBackend(Protocol):
    """One provider's batch API, on its official SDK."""

    def submit(self, requests: list[QueuedRequest]) -> str:
        """Create the batch; its id."""
        ...

    def poll(self, batch_id: str) -> Polled: ...

    def results(self, batch_id: str) -> dict[str, Completion | str]:
        """custom_id -> the reply, or a one-line reason it failed (errored, expired, ...)."""
        ...


@dataclass
class OpenAIBatch:
    """OpenAI's Batch API: a JSONL file of chat-completion bodies, ``/v1/chat/completions``."""

    sdk: Any
    config: ProviderConfig

    def submit(self, requests: list[QueuedRequest]) -> str:
        lines = [
            json.dumps(
                {
                    "custom_id": q.key,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": openai_body(self.config, q.request),
                },
                ensure_ascii=False,
            )
            for q in requests
        ]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        upload = self.sdk.files.create(file=("memeval-batch.jsonl", data), purpose="batch")
        batch = self.sdk.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        return str(batch.id)

    def poll(self, batch_id: str) -> Polled:
        batch = self.sdk.batches.retrieve(batch_id)
        counts = getattr(batch, "request_counts", None)
        done = f" {counts.completed + counts.failed}/{counts.total}" if counts is not None else ""
        ended = batch.status in ("completed", "failed", "expired", "cancelled")
        return Polled(ended, f"{batch.status}{done}")

    def results(self, batch_id: str) -> dict[str, Completion | str]:
        batch = self.sdk.batches.retrieve(batch_id)
        out: dict[str, Completion | str] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            text = self.sdk.files.content(file_id).text
            for line in text.splitlines():
                if not line.strip():
                    continue
                row = json.loads(line)
                custom_id = str(row.get("custom_id"))
                response = row.get("response") or {}
                error = row.get("error")
                status = response.get("status_code")
                if error is None and status == 200:
                    out[custom_id] = _openai_dict_completion(
                        response.get("body") or {}, self.config
                    )
                else:
                    message = (error or {}).get("message") if isinstance(error, dict) else None
                    out[custom_id] = _one_line(
                        f"errored ({status or (error or {}).get('code', '?')}): {message or ''}"
                    )
        if batch.status in ("expired", "cancelled", "failed"):
            out.setdefault("*", f"batch {batch.status}")
        return out


@dataclass
class AnthropicBatch:
    """Anthropic's Message Batches: ``{custom_id, params}`` requests, results as JSONL."""

    sdk: Any
    config: ProviderConfig

    def submit(self, requests: list[QueuedRequest]) -> str:
        batch = self.sdk.messages.batches.create(
            requests=[
                {"custom_id": q.key, "params": anthropic_body(self.config, q.request)}
                for q in requests
            ]
        )
        return str(batch.id)

    def poll(self, batch_id: str) -> Polled:
        batch = self.sdk.messages.batches.retrieve(batch_id)
        c = batch.request_counts
        counts = f" succeeded {c.succeeded}, errored {c.errored}, expired {c.expired}"
        return Polled(batch.processing_status == "ended", f"{batch.processing_status}{counts}")

    def results(self, batch_id: str) -> dict[str, Completion | str]:
        out: dict[str, Completion | str] = {}
        for entry in self.sdk.messages.batches.results(batch_id):
            result = entry.result
            if result.type == "succeeded":
                out[entry.custom_id] = anthropic_completion(result.message, self.config)
            elif result.type == "errored":
                inner = getattr(getattr(result, "error", None), "error", None)
                message = getattr(inner, "message", "") or ""
                out[entry.custom_id] = _one_line(f"errored: {message}")
            else:
                out[entry.custom_id] = str(result.type)  # expired, canceled
        return out


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _openai_dict_completion(body: Mapping[str, Any], config: ProviderConfig) -> Completion:
    choices = body.get("choices") or []
    if not choices:
        raise ValueError("reply without choices")
    text = (choices[0].get("message") or {}).get("content") or ""
    usage = body.get("usage") or {}

    def count(name: str) -> int:
        value = usage.get(name, 0)
        return value if isinstance(value, int) and value >= 0 else 0

    return Completion(
        text=str(text),
        input_tokens=count("prompt_tokens"),
        output_tokens=count("completion_tokens"),
        cached=False,
        model=str(body.get("model") or config.model),
    )


def backend_for(config: ProviderConfig, sdk: Any) -> BatchBackend:
    """The batch API of ``config``'s provider over its SDK client (``provider.sdk.get()``)."""
    if config.provider == "anthropic":
        return AnthropicBatch(sdk, config)
    return OpenAIBatch(sdk, config)


# -- settle: poll, submit, store ---------------------------------------------------------------


@dataclass(frozen=True)
class PollPolicy:
    """Poll with exponential backoff (jittered), ``first`` seconds doubling up to ``cap``; give
    up after ``deadline`` seconds (the batch stays recorded: ``--memeval-resume`` picks it up)."""

    first: float = 2.0
    cap: float = 60.0
    deadline: float = 24 * 3600.0


@dataclass
class BatchOutcome:
    """What :func:`settle` did: batches created and picked up, replies stored, the requests that
    failed (cache key -> one-line reason) and log lines."""

    submitted: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    stored: int = 0
    retried: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)


def _state_path(folder: Path, batch_id: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in batch_id)
    return folder / f"batch-{safe}.json"


def _write_state(path: Path, state: Mapping[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _read_states(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for path in sorted(folder.glob("batch-*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            out.append((path, data))
    return out


#: (provider, model, base_url) -> (the batch API, the synchronous retry: request -> Completion)
Route = tuple[BatchBackend, Callable[[QueuedRequest], Completion]]


def settle(
    folder: Path,
    cache: LLMCache,
    route: Callable[[tuple[str, str, str]], Route | None],
    *,
    policy: PollPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    log: Callable[[str], None] = lambda line: None,
    paid: Callable[[QueuedRequest, Completion], None] = lambda q, c: None,
    exclude: Collection[str] = (),
) -> BatchOutcome:
    """Bring every queued request of the run folder's ``batch/`` into ``cache`` (see the module
    docstring). ``route`` gives a group's batch backend and synchronous client (None: this
    session has no client for it, its requests are reported failed); ``paid`` is told of every
    reply the batch returned (token accounting). Requests in ``exclude`` (an earlier round's
    failures, already reported) are not sent again."""
    policy = policy or PollPolicy()
    outcome = BatchOutcome()
    queued, problems = read_queue(folder)
    outcome.lines += problems
    missing = {k: q for k, q in queued.items() if k not in exclude and cache.get(k) is None}
    errors: dict[str, str] = {}

    def collect(backend: BatchBackend, batch_id: str, path: Path, state: dict[str, Any]) -> None:
        delay = policy.first
        started = time.monotonic()
        while True:
            polled = backend.poll(batch_id)
            log(f"batch {batch_id}: {polled.status}")
            if polled.ended:
                break
            if time.monotonic() - started > policy.deadline:
                raise JudgeError(
                    f"batch {batch_id} has not ended after {policy.deadline:g}s; rerun with "
                    "--memeval-resume to pick it up again"
                )
            sleep(delay * (0.8 + 0.4 * random.random()))
            delay = min(policy.cap, delay * 2)
        results = backend.results(batch_id)
        whole_batch = results.pop("*", None)
        whole = whole_batch if isinstance(whole_batch, str) else None
        for custom_id in state.get("custom_ids", ()):
            got = results.get(custom_id)
            if isinstance(got, Completion):
                cache.put(custom_id, got)
                outcome.stored += 1
                if custom_id in queued:
                    paid(queued[custom_id], got)
                missing.pop(custom_id, None)
            else:
                errors[custom_id] = (got if isinstance(got, str) else "") or whole or "no result"
        _write_state(path, state | {"status": "ended"})

    # 1. batches of an earlier (killed) session of this run: poll them, never submit again
    for path, state in _read_states(folder):
        if state.get("status") == "ended":
            continue
        group = (str(state.get("provider")), str(state.get("model")), str(state.get("base_url")))
        routed = route(group)
        if routed is None:
            outcome.lines.append(f"batch {state['id']}: no client for {group[0]}:{group[1]}")
            continue
        outcome.resumed.append(state["id"])
        collect(routed[0], state["id"], path, state)

    # 2. the rest: one batch per provider, model and base URL
    groups: dict[tuple[str, str, str], list[QueuedRequest]] = {}
    for q in missing.values():
        if q.key not in errors:
            groups.setdefault(q.group, []).append(q)
    chunks = [
        (group, items[at : at + MAX_BATCH])
        for group, items in groups.items()
        for at in range(0, len(items), MAX_BATCH)
    ]
    for group, items in chunks:
        routed = route(group)
        if routed is None:
            for q in items:
                outcome.failed[q.key] = f"no client for {group[0]}:{group[1]} in this session"
            continue
        backend = routed[0]
        batch_id = backend.submit(items)
        outcome.submitted.append(batch_id)
        state = {
            "id": batch_id,
            "provider": group[0],
            "model": group[1],
            "base_url": group[2],
            "custom_ids": [q.key for q in items],
            "status": "submitted",
            "submitted_at": time.time(),
        }
        path = _state_path(folder, batch_id)
        _write_state(path, state)  # before the first poll: a kill from here on is resumable
        log(f"batch {batch_id}: {len(items)} requests to {group[0]}:{group[1]}")
        collect(backend, batch_id, path, state)

    # 3. errored / expired requests: once more, synchronously
    for key, reason in errors.items():
        waiting = queued.get(key)
        routed = route(waiting.group) if waiting is not None else None
        if waiting is None or routed is None:
            outcome.failed[key] = reason
            continue
        outcome.retried += 1
        try:
            routed[1](waiting)  # the client stores the reply in the cache
        except JudgeError as exc:
            outcome.failed[key] = redact(_one_line(f"{reason}; retried: {exc}"))
    return outcome


def failed_questions(
    failed: Mapping[str, str], pending: Iterable[tuple[str, list[str]]]
) -> list[str]:
    """One line per question (``name: reason``) whose queued requests failed; ``pending`` is
    (question name, its queued cache keys)."""
    lines = []
    for name, keys in pending:
        reasons = [failed[k] for k in keys if k in failed]
        if reasons:
            lines.append(f"{name}: {reasons[0]}")
    return lines
