"""``--memsys=http:URL``: a memory system behind a JSON-over-HTTP service (standard library only).

The protocol (docs/services.md#memory-systems-as-services; records as in :mod:`._wire`)::

    GET  /ready?conversation_id=ID  -> {"ready": bool, "answer": bool, "dump": bool}
    POST /ingest  {"conversation": Conversation}                  -> {}
    POST /search  {"question": Question, "k": int}                -> {"memories": [Memory | str]}
    POST /answer  {"question": Question}                          -> {"answer": str}  (optional)
    POST /reset   {"conversation_id": ID}                         -> {}
    POST /dump    {"conversation_id": ID}                         -> {"memories": [Memory | str]}
                                                                     (optional)

The service keys its state by conversation id (one conversation per id; an ``ingest`` replaces
that conversation's memory), so several pytest-xdist workers can share one service. ``answer``
is used when ``GET /ready`` says ``"answer": true``, and ``dump`` (what the service stored, for
suites that score storage: docs/scoring.md#halumem) when it says ``"dump": true``. After ``ingest`` the adapter polls
``GET /ready`` until ``"ready": true`` (the ``ready`` latency, apart from ``ingest``).

Robustness: every request has a timeout (connect, and the whole reply), 5xx / 429 / connection
errors / timeouts are retried a bounded number of times with exponential backoff (a
``Retry-After`` of at most 10 s is honoured), a reply larger than ``max_bytes`` is refused, and
every failure is an :class:`AdapterError` naming the system, the endpoint and the fix: that
question errors, the run goes on.

Settings ride in the URL's fragment (never sent to the service)::

    --memsys=http:http://127.0.0.1:8000#timeout=30&retries=3&backoff=0.5&max_bytes=16777216&name=mymem
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import AdapterError, terminal_safe
from ..records import Conversation, Memory, Question
from ._wire import (
    MAX_REPLY_BYTES,
    conversation_to_dict,
    memory_from_wire,
    question_to_dict,
    spec_number,
    spec_settings,
)

__all__ = ["HTTP_PREFIX", "HttpMemorySystem", "HttpSettings", "http_factories", "parse_http_spec"]

HTTP_PREFIX = "http:"
_MAX_RETRY_AFTER = 10.0


@dataclass(frozen=True)
class HttpSettings:
    url: str
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    max_bytes: int = MAX_REPLY_BYTES
    poll: float = 0.1


def parse_http_spec(spec: str) -> tuple[str, HttpSettings]:
    """``http:URL[#key=value&...]`` -> (system name, settings). The name is ``name=`` or the
    value without its fragment."""
    body = spec[len(HTTP_PREFIX) :] if spec.startswith(HTTP_PREFIX) else spec
    url, _, fragment = body.partition("#")
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise AdapterError(
            f"--memsys={spec}: expected http:URL with an http:// or https:// URL, e.g. "
            "--memsys=http:http://127.0.0.1:8000"
        )
    options = spec_settings(
        spec, fragment, {"timeout", "retries", "backoff", "max_bytes", "poll", "name"}
    )
    kwargs: dict[str, Any] = {}
    for key in ("timeout", "backoff", "poll"):
        if key in options:
            kwargs[key] = spec_number(options[key], key, spec)
    for key in ("retries", "max_bytes"):
        if key in options:
            kwargs[key] = int(spec_number(options[key], key, spec, integer=True))
    name = options.get("name") or f"{HTTP_PREFIX}{url}"
    return name, HttpSettings(url=url.rstrip("/"), **kwargs)


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class HttpClient:
    """JSON requests with timeouts, bounded retries and a reply size limit."""

    def __init__(self, settings: HttpSettings, name: str) -> None:
        self.settings = settings
        self.name = name
        self.requests = 0

    def call(self, method: str, path: str, payload: Mapping[str, Any] | None = None) -> Any:
        s = self.settings
        url = s.url + path
        body = None if payload is None else json.dumps(payload, allow_nan=False).encode()
        last = ""
        for attempt in range(s.retries + 1):
            if attempt:
                time.sleep(min(s.backoff * 2 ** (attempt - 1), _MAX_RETRY_AFTER))
            try:
                return self._once(method, url, body)
            except _Retryable as exc:
                last = str(exc)
                if exc.retry_after is not None and attempt < s.retries:
                    time.sleep(min(exc.retry_after, _MAX_RETRY_AFTER))
        raise AdapterError(
            f"{self.name}: {method} {url}: {last} (after {s.retries + 1} attempt(s); raise "
            "#retries= or #timeout= in --memsys, or check the service)"
        )

    def _once(self, method: str, url: str, body: bytes | None) -> Any:
        s = self.settings
        request = urllib.request.Request(url, data=body, method=method)
        request.add_header("Accept", "application/json")
        if body is not None:
            request.add_header("Content-Type", "application/json")
        deadline = time.monotonic() + s.timeout
        self.requests += 1
        # the whole exchange (connect, headers, body, error body) is bounded by #timeout whatever
        # the pacing: a watchdog shuts the socket down at the deadline (a reply trickled one byte
        # at a time never trips the per-read socket timeout)
        watch = _Watchdog()
        timer = threading.Timer(s.timeout, watch.fire)
        timer.daemon = True
        timer.start()
        try:
            raw = self._exchange(_opener(s.url, watch, self.name), request, deadline, url)
        except AdapterError:
            raise
        except Exception as exc:
            if watch.fired:  # whatever the shut-down socket made the read raise
                raise _Retryable(f"no reply within #timeout={s.timeout:g}s") from None
            if isinstance(exc, _Retryable):
                raise
            raise _Retryable(f"connection failed ({_exc_line(exc)})") from None
        finally:
            timer.cancel()
        if watch.fired:  # the socket was shut down under a read that then saw "end of reply"
            raise _Retryable(f"no reply within #timeout={s.timeout:g}s")
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise AdapterError(
                f"{self.name}: {method} {url}: the reply is not JSON: {_snippet(raw)}"
            ) from None

    def _exchange(
        self, opener: urllib.request.OpenerDirector, request: Any, deadline: float, url: str
    ) -> bytes:
        s = self.settings
        method = request.get_method()
        try:
            with opener.open(request, timeout=s.timeout) as reply:
                return self._read(reply, deadline, url)
        except urllib.error.HTTPError as exc:
            status = exc.code
            text = _snippet(exc.fp.read(2048) if exc.fp is not None else b"")
            exc.close()
            if status == 429 or status >= 500:
                retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
                raise _Retryable(f"HTTP {status} {text}", retry_after) from None
            raise AdapterError(
                f"{self.name}: {method} {url}: HTTP {status} {text} (not retried: the request "
                "itself was refused; see the wire format in docs/services.md)"
            ) from None
        except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, AdapterError):
                raise reason from None
            if isinstance(reason, TimeoutError) or isinstance(exc, TimeoutError):
                raise _Retryable(f"no reply within #timeout={s.timeout:g}s") from None
            raise _Retryable(f"connection failed ({_exc_line(reason)})") from None

    def _read(self, reply: Any, deadline: float, url: str) -> bytes:
        limit = self.settings.max_bytes
        length = reply.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise AdapterError(
                f"{self.name}: {url}: the reply is {int(length)} bytes, more than "
                f"#max_bytes={limit}; raise it in --memsys or return fewer memories"
            )
        chunks: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError
            chunk = reply.read(min(65536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise AdapterError(
                    f"{self.name}: {url}: the reply is larger than #max_bytes={limit}; raise it "
                    "in --memsys or return fewer memories"
                )
        return b"".join(chunks)


def _snippet(raw: bytes) -> str:
    """The start of a service's reply as one safe line (control characters escaped)."""
    return terminal_safe(" ".join(raw[:200].decode("utf-8", "replace").split()))


def _exc_line(exc: object) -> str:
    return terminal_safe(" ".join(str(exc).split()), 300) or type(exc).__name__


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


class _Watchdog:
    """The sockets of one request; :meth:`fire` (the deadline) shuts them down."""

    def __init__(self) -> None:
        self.fired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            late = self.fired
        if late:
            _shutdown(sock)

    def fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _watched(cls: type[http.client.HTTPConnection], watch: _Watchdog) -> Any:
    class Watched(cls):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            watch.add(self.sock)

    return Watched


class _WatchedHttp(urllib.request.HTTPHandler):
    def __init__(self, watch: _Watchdog) -> None:
        super().__init__()
        self.watch = watch

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_watched(http_class, self.watch), req, **kwargs)


class _WatchedHttps(urllib.request.HTTPSHandler):
    def __init__(self, watch: _Watchdog) -> None:
        super().__init__()
        self.watch = watch

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_watched(http_class, self.watch), req, **kwargs)


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to the service's own origin (scheme, host, port) and only for a
    GET: a redirect elsewhere would score another host's memories, a non-http(s) target is never
    connected to, and a redirected POST would silently become a GET."""

    def __init__(self, base: str, name: str) -> None:
        super().__init__()
        self.base = base
        self.name = name

    def http_error_302(self, req: Any, fp: Any, code: int, msg: str, headers: Any) -> Any:
        location = headers.get("location") or headers.get("uri")
        if location:
            self._check(req, fp, code, urllib.parse.urljoin(req.full_url, location))
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

    def _check(self, req: Any, fp: Any, code: int, newurl: str) -> None:
        method = req.get_method()
        target = urllib.parse.urlsplit(newurl).scheme.lower()
        if target not in ("http", "https"):
            problem = "not an http(s) URL; refused, never connected to"
        elif _origin(newurl) != _origin(self.base):
            problem = "another origin than --memsys names; refused"
        elif method != "GET":
            problem = f"refused: following it would turn the {method} into a GET"
        else:
            return
        if fp is not None:
            fp.close()
        raise AdapterError(
            f"{self.name}: {method} {terminal_safe(req.full_url, 200)}: HTTP {code} redirect to "
            f"{terminal_safe(newurl, 200)}: {problem} (point --memsys=http:URL at the service "
            "itself)"
        )


def _opener(base: str, watch: _Watchdog, name: str) -> urllib.request.OpenerDirector:
    """http(s) only (no ftp:, file:, data: handlers), same-origin redirects, watched sockets."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.UnknownHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        _SameOrigin(base, name),
        urllib.request.HTTPErrorProcessor(),
        _WatchedHttp(watch),
        _WatchedHttps(watch),
    ):
        opener.add_handler(handler)
    return opener


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


class HttpMemorySystem:
    """One conversation's view of an HTTP memory service."""

    def __init__(self, client: HttpClient) -> None:
        self.client = client
        self.conversation_id: str | None = None

    def ingest(self, conversation: Conversation) -> None:
        self.conversation_id = conversation.id
        self.client.call("POST", "/ingest", {"conversation": conversation_to_dict(conversation)})

    def wait_ready(self, timeout: float) -> bool:
        query = urllib.parse.urlencode({"conversation_id": self.conversation_id or ""})
        deadline = time.monotonic() + timeout
        while True:
            reply = self.client.call("GET", f"/ready?{query}")
            ready = reply.get("ready") if isinstance(reply, Mapping) else None
            if ready is True:
                return True
            if ready is not False:  # a reply of the wrong type is not "not yet": fail at once
                raise AdapterError(
                    f'{self.client.name}: GET /ready: expected {{"ready": true|false}}, got '
                    f"{_shape(reply)}; see the wire format in docs/services.md"
                )
            if time.monotonic() + self.client.settings.poll > deadline:
                return False
            time.sleep(self.client.settings.poll)

    def search(self, question: Question, k: int) -> list[Memory]:
        reply = self.client.call(
            "POST", "/search", {"question": question_to_dict(question), "k": k}
        )
        return _memories(reply, f"{self.client.name}: POST /search")

    def reset(self) -> None:
        if self.conversation_id is not None:
            self.client.call("POST", "/reset", {"conversation_id": self.conversation_id})


class AnsweringHttpSystem(HttpMemorySystem):
    """A service whose ``GET /ready`` says ``"answer": true``: it answers by itself."""

    def answer(self, question: Question) -> str:
        reply = self.client.call("POST", "/answer", {"question": question_to_dict(question)})
        text = reply.get("answer") if isinstance(reply, Mapping) else None
        if not isinstance(text, str):
            raise AdapterError(
                f'{self.client.name}: POST /answer: expected {{"answer": "..."}}, got '
                f"{_shape(reply)}"
            )
        return text


class DumpingHttpSystem(HttpMemorySystem):
    """A service whose ``GET /ready`` says ``"dump": true``: it lists what it stored."""

    def dump(self, conversation_id: str) -> list[Memory]:
        reply = self.client.call("POST", "/dump", {"conversation_id": conversation_id})
        return _memories(reply, f"{self.client.name}: POST /dump")


class DumpingAnsweringHttpSystem(AnsweringHttpSystem, DumpingHttpSystem):
    """A service that answers by itself and lists what it stored."""


def _memories(reply: object, where: str) -> list[Memory]:
    memories = reply.get("memories") if isinstance(reply, Mapping) else None
    if not isinstance(memories, list):
        raise AdapterError(f'{where}: expected {{"memories": [...]}}, got {_shape(reply)}')
    try:
        return [memory_from_wire(m, f"{where}: memory {i}") for i, m in enumerate(memories)]
    except ValueError as exc:
        raise AdapterError(str(exc)) from None


_CLASSES: dict[tuple[bool, bool], type[HttpMemorySystem]] = {
    (False, False): HttpMemorySystem,
    (True, False): AnsweringHttpSystem,
    (False, True): DumpingHttpSystem,
    (True, True): DumpingAnsweringHttpSystem,
}


def _shape(value: object) -> str:
    return terminal_safe(json.dumps(value, ensure_ascii=False)[:120])


def http_factories(spec: str) -> list[tuple[str, Callable[[], object]]]:
    """``[(name, factory)]`` for ``--memsys=http:...``; the factory (one call per conversation)
    asks ``GET /ready`` once per process whether the service answers by itself and whether it
    lists what it stored (``dump``)."""
    name, settings = parse_http_spec(spec)
    lock = threading.Lock()
    caps: list[tuple[bool, bool]] = []

    def factory() -> object:
        client = HttpClient(settings, name)
        with lock:
            if not caps:
                reply = client.call("GET", "/ready")
                ok = isinstance(reply, Mapping)
                caps.append((ok and reply.get("answer") is True, ok and reply.get("dump") is True))
        return _CLASSES[caps[0]](client)

    factory.__qualname__ = factory.__name__ = f"http_factory[{name}]"
    return [(name, factory)]
