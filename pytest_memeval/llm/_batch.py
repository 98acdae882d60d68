"""Batch judging (``--memeval-llm-batch``), pytest-free: judge calls queued during the run and sent
at its end through OpenAI's Batch API or Anthropic's Message Batches (half price).

Flow, all state in the run folder's ``batch/`` directory:

1. While items run, a judge call that misses the LLM cache is not sent: :class:`BatchQueue` appends
   the request (its cache key, the provider config and the request fields) to
   ``requests-<process>.jsonl`` (one ``os.write`` on an ``O_APPEND`` descriptor per line, like the
   results store) and the client raises :class:`BatchDeferred`; the item reports UNSCORED with
   the call in its ``QuestionResult.pending`` (a :class:`~pytest_memeval.records.Pending`).
2. At the session's end (the controller, after every worker finished) :func:`settle` reads every
   queued request, drops those already cached, picks up each batch recorded in a ``batch-*.json``
   state file that has not ended (a run killed while polling), polls it with backoff and stores
   its replies in the LLM cache under the requests' own cache keys (the ``custom_id`` of each
   request *is* its cache key). What is left is submitted as one batch per provider, model and
   base URL; the state file (batch id and custom ids) is written atomically before the first poll,
   so ``--memeval-resume`` after a kill polls that batch instead of paying for it again.
3. Errored and expired requests are retried once synchronously (through the normal client: cache,
   retries); what still fails is returned per cache key with a one-line reason. The results are
   read as a stream, line by line, within :data:`MAX_RESULT_LINE` a line and
   :data:`MAX_RESULT_BYTES` a batch: a line that cannot be read is named, counted and skipped
   (its request, when its ``custom_id`` is readable, is sent again), a ``custom_id`` that comes
   back twice is refused (sent again), and every good reply is stored. A batch still not ended
   ``PollPolicy.deadline`` seconds after it was submitted (``--memeval-llm-batch-wait``) is
   cancelled and its requests are sent synchronously, with a line.
4. The controller then judges the stored predictions again from the cache (as
   ``--memeval-rejudge`` does; ``run.batch``): every verdict is a cache hit, so no judge request
   is sent twice.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import JudgeError, terminal_safe
from ._base import ChatMessage, Completion, Request
from ._cache import LLMCache
from ._providers import ProviderConfig, anthropic_body, openai_body
from ._redact import redact

__all__ = [
    "BATCH_DIR",
    "BATCH_WAIT",
    "MAX_RESULT_BYTES",
    "MAX_RESULT_LINE",
    "BatchBackend",
    "BatchDeferred",
    "BatchOutcome",
    "BatchQueue",
    "BatchResults",
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
#: one line of a batch's results at most (a reply is a few KB: a longer line is named and skipped)
MAX_RESULT_LINE = 4 << 20
#: a batch's results read at most (output and error files together): past it the rest is not
#: read, and the requests without a reply are sent synchronously
MAX_RESULT_BYTES = 1 << 30
#: problem lines printed per batch (the rest are counted)
MAX_PROBLEM_LINES = 10
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

    def results(self, batch_id: str) -> BatchResults:
        """custom_id -> the reply, or a one-line reason it failed (errored, expired, ...), and
        the lines of the results that could not be read."""
        ...

    def cancel(self, batch_id: str) -> None:
        """Ask the provider to stop the batch (it waited past ``--memeval-llm-batch-wait``)."""
        ...


class _BadLine(ValueError):
    """A line of a batch's results that cannot be read; ``custom_id`` when it names one."""

    def __init__(self, reason: str, custom_id: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.custom_id = custom_id


class _TooLarge(Exception):
    """A batch's results ran past :data:`MAX_RESULT_BYTES`."""


#: one parsed line of a batch's results: (custom_id, the reply or why the request failed)
LineParser = Callable[[object], tuple[str, "Completion | str"]]


@dataclass
class BatchResults:
    """What a batch returned, each line read on its own: ``replies`` by custom_id (a reply, or a
    one-line reason the request failed: it is then sent again synchronously), ``problems`` (the
    first :data:`MAX_PROBLEM_LINES` lines that could not be read, named by file and line),
    ``bad_lines`` (all of them, counted), ``duplicates`` (custom_ids that came back more than once:
    refused) and ``whole`` (why the whole batch ended without results, or None)."""

    replies: dict[str, Completion | str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    bad_lines: int = 0
    duplicates: int = 0
    whole: str | None = None
    _seen: dict[str, int] = field(default_factory=dict, repr=False)
    _more: int = field(default=0, repr=False)

    def problem(self, line: str) -> None:
        if len(self.problems) < MAX_PROBLEM_LINES:
            self.problems.append(terminal_safe(_one_line(line, 300)))  # ids came from outside
        else:
            self._more += 1

    def closing_problems(self) -> list[str]:
        """``problems``, and how many more there were."""
        more = [f"... and {self._more} more"] if self._more else []
        return [*self.problems, *more]

    def read(self, where: str, number: int, line: bytes | None, parse: LineParser) -> None:
        """Line ``number`` of ``where`` (None: longer than :data:`MAX_RESULT_LINE`): its reply
        kept under its custom_id, or the line named, counted and skipped."""
        try:
            if line is None:
                raise _BadLine(f"longer than {MAX_RESULT_LINE} bytes")
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):
                raise _BadLine("not JSON") from None
            custom_id, got = parse(row)
        except _BadLine as bad:
            self.bad_lines += 1
            again = f"; request {bad.custom_id[:12]} is sent again" if bad.custom_id else ""
            self.problem(f"{where} line {number}: {bad.reason}; skipped{again}")
            if bad.custom_id is not None:
                self._put(bad.custom_id, f"unreadable reply in the batch ({bad.reason})", where)
            return
        self._put(custom_id, got, where)

    def _put(self, custom_id: str, got: Completion | str, where: str) -> None:
        count = self._seen.get(custom_id, 0) + 1
        self._seen[custom_id] = count
        if count == 1:
            self.replies[custom_id] = got
            return
        if count == 2:
            self.duplicates += 1
            self.problem(
                f"{where}: custom_id {custom_id[:12]} comes back more than once; its replies are "
                "refused and the request is sent again"
            )
        self.replies[custom_id] = (
            f"its custom_id came back {count} times in the batch's results; refused"
        )


def _result_lines(chunks: Iterable[bytes], budget: list[int]) -> Iterator[tuple[int, bytes | None]]:
    """The non-blank lines of a streamed file, numbered from 1: a line longer than
    :data:`MAX_RESULT_LINE` comes as None (never held whole); ``budget[0]`` bytes may be read in
    all (shared by a batch's files), then :class:`_TooLarge`."""
    limit = MAX_RESULT_LINE
    buf = bytearray()
    over = False
    number = 0
    for chunk in chunks:
        budget[0] -= len(chunk)
        if budget[0] < 0:
            raise _TooLarge
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not over:
                buf += piece
                if len(buf) > limit:
                    over = True
                    buf.clear()
            if end < 0:
                break
            number += 1
            if over:
                yield number, None
            elif buf.strip():
                yield number, bytes(buf)
            buf.clear()
            over = False
            start = end + 1
    if over:
        yield number + 1, None
    elif buf.strip():
        yield number + 1, bytes(buf)


def _stream(
    out: BatchResults,
    where: str,
    chunks: Iterable[bytes],
    budget: list[int],
    parse: LineParser,
) -> None:
    try:
        for number, line in _result_lines(chunks, budget):
            out.read(where, number, line, parse)
    except _TooLarge:
        out.problem(
            f"{where}: the batch's results are larger than {MAX_RESULT_BYTES} bytes; the rest is "
            "not read (the requests without a reply are sent again)"
        )


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

    def results(self, batch_id: str) -> BatchResults:
        batch = self.sdk.batches.retrieve(batch_id)
        out = BatchResults()
        budget = [MAX_RESULT_BYTES]
        for kind, file_id in (("output", batch.output_file_id), ("error", batch.error_file_id)):
            if not file_id:
                continue
            with self.sdk.files.with_streaming_response.content(file_id) as response:
                where = f"{kind} file {file_id}"
                _stream(out, where, response.iter_bytes(1 << 16), budget, self._line)
        if batch.status in ("expired", "cancelled", "failed"):
            out.whole = f"batch {batch.status}"
        return out

    def cancel(self, batch_id: str) -> None:
        self.sdk.batches.cancel(batch_id)

    def _line(self, row: object) -> tuple[str, Completion | str]:
        """One line of the output or error file: ``{custom_id, response, error}``."""
        custom_id = _custom_id(row)
        assert isinstance(row, dict)
        response, error = row.get("response"), row.get("error")
        if not isinstance(response, dict | None) or not isinstance(error, dict | None):
            raise _BadLine("'response' or 'error' is not an object", custom_id)
        status = (response or {}).get("status_code")
        if error is None and status == 200:
            assert response is not None
            body = response.get("body")
            if not isinstance(body, dict):
                raise _BadLine("'response.body' is not an object", custom_id)
            try:
                return custom_id, _openai_dict_completion(body, self.config)
            except ValueError as exc:
                raise _BadLine(str(exc), custom_id) from None
        message = (error or {}).get("message")
        code = status or (error or {}).get("code", "?")
        return custom_id, _one_line(f"errored ({code}): {message or ''}")


def _custom_id(row: object) -> str:
    """The ``custom_id`` of a results line (a _BadLine without one)."""
    if not isinstance(row, dict):
        raise _BadLine(f"a JSON {type(row).__name__}, not an object")
    custom_id = row.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        raise _BadLine("no custom_id")
    return custom_id


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

    def results(self, batch_id: str) -> BatchResults:
        out = BatchResults()
        with self.sdk.messages.batches.with_streaming_response.results(batch_id) as response:
            where = f"results of {batch_id}"
            _stream(out, where, response.iter_bytes(1 << 16), [MAX_RESULT_BYTES], self._line)
        return out

    def cancel(self, batch_id: str) -> None:
        self.sdk.messages.batches.cancel(batch_id)

    def _line(self, row: object) -> tuple[str, Completion | str]:
        """One line of the results: ``{custom_id, result: {type, message | error}}``."""
        custom_id = _custom_id(row)
        assert isinstance(row, dict)
        result = row.get("result")
        if not isinstance(result, dict):
            raise _BadLine("'result' is not an object", custom_id)
        kind = result.get("type")
        if kind == "succeeded":
            message = result.get("message")
            if not isinstance(message, dict):
                raise _BadLine("'result.message' is not an object", custom_id)
            try:
                return custom_id, _anthropic_dict_completion(message, self.config)
            except ValueError as exc:
                raise _BadLine(str(exc), custom_id) from None
        if kind == "errored":
            outer = result.get("error")
            inner = outer.get("error") if isinstance(outer, dict) else None
            text = inner.get("message") if isinstance(inner, dict) else None
            return custom_id, _one_line(f"errored: {text if isinstance(text, str) else ''}")
        if kind in ("expired", "canceled"):
            return custom_id, str(kind)
        raise _BadLine(f"unknown result type {str(kind)[:40]!r}", custom_id)


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _count(usage: object, name: str) -> int:
    value = usage.get(name, 0) if isinstance(usage, dict) else 0
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _openai_dict_completion(body: Mapping[str, Any], config: ProviderConfig) -> Completion:
    """A chat completion of a batch's output file (a dict) as a :class:`Completion`; ValueError
    naming what is missing for a reply that is not one."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError("reply without choices")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise ValueError("reply without a message")
    text = message.get("content")
    if not isinstance(text, str | None):
        raise ValueError("reply whose content is not text")
    model = body.get("model")
    return Completion(
        text=text or "",
        input_tokens=_count(body.get("usage"), "prompt_tokens"),
        output_tokens=_count(body.get("usage"), "completion_tokens"),
        cached=False,
        model=model if isinstance(model, str) and model else config.model,
    )


def _anthropic_dict_completion(message: Mapping[str, Any], config: ProviderConfig) -> Completion:
    """A message of a batch's results (a dict) as a :class:`Completion`, as
    :func:`~.providers.anthropic_completion` reads the SDK's object; ValueError for a reply
    that is not one."""
    content = message.get("content")
    if not isinstance(content, list):
        raise ValueError("reply without content")
    parts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise ValueError("a text block whose text is not text")
            parts.append(text)
    model = message.get("model")
    return Completion(
        text="".join(parts),
        input_tokens=_count(message.get("usage"), "input_tokens"),
        output_tokens=_count(message.get("usage"), "output_tokens"),
        cached=False,
        model=model if isinstance(model, str) and model else config.model,
    )


def backend_for(config: ProviderConfig, sdk: Any) -> BatchBackend:
    """The batch API of ``config``'s provider over its SDK client (``provider.sdk.get()``)."""
    if config.provider == "anthropic":
        return AnthropicBatch(sdk, config)
    return OpenAIBatch(sdk, config)


# -- settle: poll, submit, store ---------------------------------------------------------------


#: how long a batch may take, from its submission, before its requests go synchronously
#: (``--memeval-llm-batch-wait``): the providers' completion window, 24 h
BATCH_WAIT = 24 * 3600.0


@dataclass(frozen=True)
class PollPolicy:
    """Poll with exponential backoff (jittered), ``first`` seconds doubling up to ``cap``; a
    batch not ended ``deadline`` seconds after it was submitted (``--memeval-llm-batch-wait``;
    a picked-up batch counts from its recorded submission) is cancelled and its requests are
    sent synchronously."""

    first: float = 2.0
    cap: float = 60.0
    deadline: float = BATCH_WAIT


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
    #: lines of the batches' results that could not be read (named in ``lines``)
    bad_lines: int = 0
    #: custom_ids that came back more than once (refused, sent again)
    duplicates: int = 0
    #: batches past ``PollPolicy.deadline``, whose requests were sent synchronously
    abandoned: list[str] = field(default_factory=list)

    def counts(self) -> str:
        """The one-line account of a round (docs/batch.md)."""
        line = (
            f"{len(self.submitted)} submitted, {len(self.resumed)} picked up, {self.stored} "
            f"replies stored, {self.retried} retried, {len(self.failed)} failed"
        )
        if self.bad_lines:
            line += f", {self.bad_lines} unreadable result line{'s' * (self.bad_lines != 1)}"
        if self.duplicates:
            line += f", {self.duplicates} repeated custom_id{'s' * (self.duplicates != 1)}"
        if self.abandoned:
            line += f", {len(self.abandoned)} past --memeval-llm-batch-wait"
        return line


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
        submitted = state.get("submitted_at")
        now = time.time()
        started = now  # a state file without a usable submission time: from now
        if isinstance(submitted, int | float) and not isinstance(submitted, bool):
            started = float(submitted) if 0 < submitted <= now else now
        custom_ids = [str(c) for c in state.get("custom_ids", ())]
        while True:
            polled = backend.poll(batch_id)
            log(f"batch {batch_id}: {polled.status}")
            if polled.ended:
                break
            if time.time() - started > policy.deadline:
                abandon(backend, batch_id, path, state, polled, custom_ids)
                return
            sleep(delay * (0.8 + 0.4 * random.random()))
            delay = min(policy.cap, delay * 2)
        results = backend.results(batch_id)
        outcome.bad_lines += results.bad_lines
        outcome.duplicates += results.duplicates
        outcome.lines += [f"batch {batch_id}: {p}" for p in results.closing_problems()]
        stray = len(set(results.replies) - set(custom_ids))
        if stray:
            outcome.lines.append(
                f"batch {batch_id}: {stray} result line(s) for requests it was not sent; ignored"
            )
        for custom_id in custom_ids:
            got = results.replies.get(custom_id)
            if isinstance(got, Completion):
                cache.put(custom_id, got)
                outcome.stored += 1
                if custom_id in queued:
                    paid(queued[custom_id], got)
                missing.pop(custom_id, None)
            else:
                errors[custom_id] = (got if isinstance(got, str) else "") or (
                    results.whole or "no result"
                )
        _write_state(path, state | {"status": "ended"})

    def abandon(
        backend: BatchBackend,
        batch_id: str,
        path: Path,
        state: dict[str, Any],
        polled: Polled,
        custom_ids: list[str],
    ) -> None:
        """Past the wait: cancel the batch (so it is not paid for as well) and send its
        requests synchronously (step 3)."""
        reason = f"batch {batch_id} still {polled.status} after {policy.deadline:g}s"
        try:
            backend.cancel(batch_id)
            cancelled = "cancelled"
        except Exception as exc:  # an SDK error: the requests go synchronously all the same
            cancelled = _one_line(f"cancelling it failed ({type(exc).__name__}: {exc})")
        outcome.abandoned.append(batch_id)
        outcome.lines.append(
            redact(
                f"{reason} (--memeval-llm-batch-wait): {cancelled}; its {len(custom_ids)} "
                "requests are sent synchronously"
            )
        )
        for custom_id in custom_ids:
            if cache.get(custom_id) is None:
                errors[custom_id] = reason
        _write_state(path, state | {"status": "abandoned"})

    # 1. batches of an earlier (killed) session of this run: poll them, never submit again
    for path, state in _read_states(folder):
        if state.get("status") in ("ended", "abandoned"):
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
