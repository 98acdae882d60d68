"""A loopback HTTP server that speaks enough of the OpenAI chat-completions and Anthropic messages
APIs for the official SDKs, with scripted faults. For tests and ``perf/``; no third-party deps.

    from llm_server import LLMServer

    with LLMServer(latency=0.0, reply=lambda messages, model, params: "CORRECT") as srv:
        os.environ.update(srv.env(api_key="sk-test"))   # or pass srv.openai_base_url explicitly
        ...
        assert srv.count("/v1/chat/completions") == 3

Endpoints: ``POST /v1/chat/completions`` (OpenAI; base URL ``srv.openai_base_url``),
``POST /v1/embeddings`` (OpenAI embeddings, same base URL) and ``POST /v1/messages`` (Anthropic;
base URL ``srv.anthropic_base_url``). Anything else is a 404.

Faults, applied per request in this order:

1. ``srv.script``: a queue of actions consumed one per request (``srv.push(429, 500, "ok")``):
   an int HTTP status (an error body in the API's shape; 429 carries ``retry-after`` /
   ``retry-after-ms`` when ``retry_after`` / ``retry_after_ms`` are set), ``"garbage"`` (a 200
   whose body is not JSON), ``"hang"`` (no answer for ``hang_seconds``, then the connection is
   closed), ``"drop"`` (connection closed without a reply) or ``"ok"``.
2. ``failure_rate``: with that probability (seeded RNG) answer a status drawn from
   ``failure_statuses``.
3. ``api_key``: when set, a request carrying another key gets a 401 whose body echoes the key it
   received (as some real APIs do), to test that clients never repeat it.

``latency`` seconds are slept before every answer. ``reply(messages, model, params) -> str``
scripts the assistant text; ``messages`` are ``{"role", "content"}`` dicts (for Anthropic the
``system`` parameter comes first as a system message), ``params`` the other body fields plus
``"api"`` (``"openai"`` / ``"anthropic"``). Token usage is the whitespace word count of the input
messages and of the reply. Every request is counted (total and per path) and logged with its
headers and JSON body (``srv.requests``); ``srv.max_in_flight`` is the most requests handled at
once.

Embeddings: ``embed(text, model, params) -> list[float]`` scripts one vector per input string
(default :func:`default_embed`: a seeded hashed bag of words, L2-normalised, ``params["dimensions"]``
long or 64); ``encoding_format="base64"`` is answered as little-endian float32, as the SDK expects.
Faults apply to this endpoint exactly as to chat completions.
"""

from __future__ import annotations

import argparse
import base64
import collections
import hashlib
import http
import json
import math
import random
import re
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Action",
    "Embed",
    "LLMServer",
    "RecordedRequest",
    "Reply",
    "chat_payload",
    "default_embed",
    "default_reply",
]

Reply = Callable[[list[dict[str, str]], str, dict[str, Any]], str]
Embed = Callable[[str, str, dict[str, Any]], list[float]]
Action = int | str  # HTTP status, or "ok" / "garbage" / "hang" / "drop"

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
EMBEDDINGS_PATH = "/v1/embeddings"
DEFAULT_EMBEDDING_DIM = 64
_ACTIONS = frozenset({"ok", "garbage", "hang", "drop"})


def default_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    """Deterministic: the model name and the last user message."""
    last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    return f"{model} heard: {last}"


def default_embed(text: str, model: str, params: dict[str, Any]) -> list[float]:
    """Deterministic: each lower-case word adds +-1 to one hashed coordinate; L2-normalised (an
    all-zero vector for a text without words). Texts sharing words have a positive cosine."""
    dim = params.get("dimensions")
    size = dim if isinstance(dim, int) and dim > 0 else DEFAULT_EMBEDDING_DIM
    vec = [0.0] * size
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        vec[value % size] += 1.0 if (value >> 63) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    return [v / norm for v in vec] if norm else vec


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    action: str
    time: float = field(default_factory=time.time)

    @property
    def api_key(self) -> str | None:
        """The key the client sent (``Authorization: Bearer`` or ``x-api-key``)."""
        lowered = {k.lower(): v for k, v in self.headers.items()}
        if "x-api-key" in lowered:
            return lowered["x-api-key"]
        auth = lowered.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:  # e.g. Anthropic's 529 "overloaded"
        return "Overloaded" if status == 529 else "Error"


def _words(text: str) -> int:
    return len(text.split())


def chat_payload(
    reply: Reply, api: str, body: Mapping[str, Any], serial: Callable[[], str]
) -> dict[str, Any]:
    """The reply to one chat request ``body`` in ``api``'s shape (``"openai"``: a
    ``chat.completion``; ``"anthropic"``: a ``message``), its text from ``reply`` and its usage the
    word counts; ``serial()`` names it (called once the reply is made). Shared by the synchronous
    endpoints and the batch server's results (``tests/batch_server.py``), so both answer alike."""
    model = str(body.get("model", ""))
    messages: list[dict[str, str]] = []
    if api == "anthropic" and body.get("system"):
        messages.append({"role": "system", "content": _text_of(body["system"])})
    for m in body.get("messages") or []:
        if isinstance(m, Mapping):
            messages.append({"role": str(m.get("role")), "content": _text_of(m.get("content"))})
    params = {k: v for k, v in body.items() if k not in ("messages", "model", "system")}
    params["api"] = api
    text = reply(messages, model, params)
    n = serial()
    tokens_in = sum(_words(m["content"]) for m in messages)
    tokens_out = _words(text)
    if api == "openai":
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            },
        }
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    owner: LLMServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs expect
    # TCP_NODELAY: without it, Nagle's algorithm and the client's delayed ACK add ~40 ms to
    # every reply, which swamps latency measurements.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._respond_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        owner._enter()
        self._counted = True
        try:
            self._post(owner)
        finally:
            self._leave_once()

    def _leave_once(self) -> None:
        """A request stops counting as in flight just before its reply is written: once the
        client holds the reply it may send the next request, which must not overlap it."""
        if getattr(self, "_counted", False):
            self._counted = False
            self.server.owner._leave()

    def _post(self, owner: LLMServer) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        action = owner._next_action()
        owner._record(RecordedRequest("POST", path, dict(self.headers.items()), body, str(action)))
        if owner.latency > 0:
            owner._stopping.wait(owner.latency)
        api = {
            OPENAI_PATH: "openai",
            ANTHROPIC_PATH: "anthropic",
            EMBEDDINGS_PATH: "embeddings",
        }.get(path, "")
        if not api:
            self._respond_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        if action == "drop":
            self.close_connection = True
            return
        if action == "hang":
            owner._stopping.wait(owner.hang_seconds)
            self.close_connection = True
            return
        if action == "garbage":
            self._respond(200, b"<html>this is not JSON {{{", "application/json")
            return
        if owner.api_key is not None:
            sent = RecordedRequest("POST", path, dict(self.headers.items()), None, "").api_key
            if sent != owner.api_key:
                self._error(api, 401, f"Incorrect API key provided: {sent}")
                return
        if isinstance(action, int):
            self._error(api, action, f"injected {action}")
            return
        if not isinstance(body, dict):
            self._error(api, 400, "body is not a JSON object")
            return
        if api == "embeddings":
            self._embeddings(body)
            return
        self._answer(api, body)

    # -- replies ------------------------------------------------------------------------------
    def _answer(self, api: str, body: dict[str, Any]) -> None:
        owner = self.server.owner
        try:
            payload = chat_payload(owner.reply, api, body, lambda: str(owner._serial()))
        except Exception as exc:  # a broken reply function is a 500, visible to the test
            self._error(api, 500, f"reply function failed: {type(exc).__name__}: {exc}")
            return
        self._respond_json(200, payload)

    def _embeddings(self, body: dict[str, Any]) -> None:
        owner = self.server.owner
        model = str(body.get("model", ""))
        raw = body.get("input")
        inputs = [raw] if isinstance(raw, str) else raw
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            self._error("embeddings", 400, "'input' must be a string or a list of strings")
            return
        params = {k: v for k, v in body.items() if k not in ("input", "model")}
        params["api"] = "embeddings"
        try:
            vectors = [owner.embed(text, model, params) for text in inputs]
        except Exception as exc:
            self._error("embeddings", 500, f"embed function failed: {type(exc).__name__}: {exc}")
            return
        b64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": (
                    base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode("ascii")
                    if b64
                    else [float(x) for x in v]
                ),
            }
            for i, v in enumerate(vectors)
        ]
        tokens = sum(_words(t) for t in inputs)
        payload = {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        self._respond_json(200, payload)

    def _error(self, api: str, status: int, message: str) -> None:
        owner = self.server.owner
        headers: dict[str, str] = {}
        if status == 429:
            if owner.retry_after is not None:
                headers["retry-after"] = str(owner.retry_after)
            if owner.retry_after_ms is not None:
                headers["retry-after-ms"] = str(owner.retry_after_ms)
        if api == "anthropic":
            payload: dict[str, Any] = {
                "type": "error",
                "error": {"type": "api_error", "message": message},
            }
        else:
            payload = {"error": {"message": message, "type": "api_error", "code": str(status)}}
        self._respond_json(status, payload, headers)

    def _respond_json(
        self, status: int, payload: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        self._respond(status, json.dumps(payload).encode(), "application/json", headers)

    def _respond(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._leave_once()
        # Status line, headers and body in one write: separate small writes would wait on the
        # client's delayed ACK.
        lines = [
            f"{self.protocol_version} {status} {_phrase(status)}",
            f"Server: memeval-llm-server, {self.version_string()}",
            f"Date: {self.date_time_string()}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(data)}",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        try:
            self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            self.close_connection = True


class LLMServer:
    """Threaded loopback server on 127.0.0.1 (port 0 = any free port). Context manager."""

    #: the request handler (``tests/batch_server.py`` adds the batch APIs in a subclass)
    handler: type[BaseHTTPRequestHandler] = _Handler

    def __init__(
        self,
        *,
        latency: float = 0.0,
        reply: Reply | None = None,
        embed: Embed | None = None,
        api_key: str | None = None,
        failure_rate: float = 0.0,
        failure_statuses: tuple[int, ...] = (429, 500),
        retry_after: float | str | None = None,
        retry_after_ms: float | None = None,
        hang_seconds: float = 30.0,
        seed: int = 0,
        port: int = 0,
    ) -> None:
        self.latency = latency
        self.reply: Reply = reply or default_reply
        self.embed: Embed = embed or default_embed
        self.api_key = api_key
        self.failure_rate = failure_rate
        self.failure_statuses = failure_statuses
        self.retry_after = retry_after
        self.retry_after_ms = retry_after_ms
        self.hang_seconds = hang_seconds
        self.script: collections.deque[Action] = collections.deque()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._counts: collections.Counter[str] = collections.Counter()
        self._n = 0
        self._in_flight = 0
        self.max_in_flight = 0  # most requests being handled at once (concurrency checks)
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> LLMServer:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", self._port), self.handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()  # wakes hanging and sleeping handlers
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses ----------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def env(self, api_key: str = "sk-loopback-test") -> dict[str, str]:
        """Environment variables pointing both SDKs (and openai-compatible) at this server."""
        return {
            "OPENAI_BASE_URL": self.openai_base_url,
            "ANTHROPIC_BASE_URL": self.anthropic_base_url,
            "OPENAI_API_KEY": api_key,
            "ANTHROPIC_API_KEY": api_key,
            "OPENROUTER_API_KEY": api_key,
            "MEMEVAL_TEST_LLM_URL": self.openai_base_url,
        }

    # -- scripting ----------------------------------------------------------------------------
    def push(self, *actions: Action) -> None:
        """Queue actions for the next requests, one each."""
        for a in actions:
            if not isinstance(a, int) and a not in _ACTIONS:
                raise ValueError(f"unknown action {a!r}")
        with self._lock:
            self.script.extend(actions)

    def _next_action(self) -> Action:
        with self._lock:
            if self.script:
                return self.script.popleft()
            if self.failure_rate > 0 and self._rng.random() < self.failure_rate:
                return self._rng.choice(self.failure_statuses)
        return "ok"

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _serial(self) -> int:
        with self._lock:
            self._n += 1
            return self._n

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            self._counts[request.path] += 1

    # -- inspection ---------------------------------------------------------------------------
    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    def count(self, path: str | None = None) -> int:
        """Requests received, in total or on one path (e.g. ``"/v1/messages"``)."""
        with self._lock:
            return len(self._requests) if path is None else self._counts[path]

    @property
    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def __iter__(self) -> Iterator[RecordedRequest]:
        return iter(self.requests)

    def reset(self) -> None:
        """Forget the request log and counters (and any queued actions)."""
        with self._lock:
            self._requests.clear()
            self._counts.clear()
            self.script.clear()
            self.max_in_flight = 0


def main(argv: list[str] | None = None) -> None:
    """``python tests/llm_server.py --port 8765 --latency 0.1``: serve until Ctrl-C."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--failure-rate", type=float, default=0.0)
    args = parser.parse_args(argv)
    with LLMServer(port=args.port, latency=args.latency, failure_rate=args.failure_rate) as srv:
        print(f"OPENAI_BASE_URL={srv.openai_base_url}\nANTHROPIC_BASE_URL={srv.anthropic_base_url}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()


def judge_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    """The end-to-end tests' scripted model: an answer prompt gets "beagle"; a judge prompt gets
    CORRECT when the answer or gold says "beagle" or "2024", else WRONG (Mem0's JSON shape)."""
    text = "\n".join(m["content"] for m in messages)
    if "ANSWER:" in text or "short answer" in text.lower():
        return "The memories say so.\nANSWER: beagle"
    verdict = "CORRECT" if "beagle" in text.lower() or "2024" in text else "WRONG"
    return json.dumps({"reasoning": "compared with the gold answer", "label": verdict})
