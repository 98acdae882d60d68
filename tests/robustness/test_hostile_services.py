"""Hostile memory services (issue 26, breaks 4, 5, 9 and 11): redirects elsewhere, a slowloris
reply, escape codes in an error body, a ``/ready`` reply of the wrong type. Every server listens
on 127.0.0.1 only; every wait is bounded, and no verdict depends on the machine's speed (the
budgets are many times what they bound, or the hang is certain: an event that never fires)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pytest_memeval.errors import AdapterError, terminal_safe
from pytest_memeval.records import Conversation, Question, Session, Turn
from pytest_memeval.systems._http import http_factories

CONV = Conversation("c1", (Session("s1", None, (Turn("D1:1", "Ann", "hi"),)),))
Q = Question("q1", "c1", "single-hop", "What pet?", "beagle")
MEMORIES = b'{"memories": ["Ann: I adopted a beagle"]}'

Reply = Callable[[BaseHTTPRequestHandler, "Server"], None]


class Server:
    """A loopback HTTP service whose ``/search`` reply is ``search(handler, server)``."""

    def __init__(self, search: Reply, ready: bytes = b'{"ready": true, "answer": false}') -> None:
        self.requests: list[str] = []
        self.stop = threading.Event()  # set only at close: a wait on it is a certain hang
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.requests.append("GET " + self.path)
                if self.path.startswith("/search"):
                    search(self, owner)
                    return
                reply(self, 200, ready if "conversation_id" in self.path else b'{"answer": false}')

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests.append("POST " + self.path)
                if self.path == "/search":
                    search(self, owner)
                else:
                    reply(self, 200, b"{}")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def reply(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for key, value in headers.items():
        handler.send_header(key.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def make(search: Reply, **kwargs: Any) -> Server:
        servers.append(Server(search, **kwargs))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def _system(url: str, settings: str = "retries=0") -> Any:
    ((_, factory),) = http_factories(f"http:{url}#{settings}")
    system = factory()
    system.ingest(CONV)
    return system


# ---- break 4: redirects ----------------------------------------------------------------------


def _redirect_to(location: Callable[[Server], str], code: int = 302) -> Reply:
    def search(handler: BaseHTTPRequestHandler, server: Server) -> None:
        reply(handler, code, b"", Location=location(server))

    return search


def test_a_redirect_to_another_host_is_refused_never_followed(
    serve: Callable[..., Server],
) -> None:
    """Another origin's memories are never scored: the POST is not re-sent there as a GET."""
    other = serve(lambda h, s: reply(h, 200, MEMORIES))
    # same host, another port: another origin
    system = _system(serve(_redirect_to(lambda s: other.url + "/search")).url)
    with pytest.raises(AdapterError) as info:
        system.search(Q, 5)
    message = str(info.value)
    assert "redirect to " + other.url in message and "another origin" in message
    assert "\n" not in message
    assert other.requests == []  # never connected to


@pytest.mark.parametrize("target", ["ftp://127.0.0.1:9/x", "file:///etc/passwd"])
def test_a_redirect_to_a_non_http_scheme_is_refused(
    serve: Callable[..., Server], target: str
) -> None:
    system = _system(serve(_redirect_to(lambda s: target, 301)).url)
    with pytest.raises(AdapterError, match="not an http\\(s\\) URL; refused, never connected"):
        system.search(Q, 5)


def test_a_same_origin_redirect_of_a_post_is_refused(serve: Callable[..., Server]) -> None:
    server = serve(_redirect_to(lambda s: s.url + "/search2", 303))
    with pytest.raises(AdapterError, match="would turn the POST into a GET"):
        _system(server.url).search(Q, 5)
    assert "GET /search2" not in server.requests


# ---- break 5: slowloris -----------------------------------------------------------------------


def test_a_trickled_reply_cannot_outlast_the_timeout(serve: Callable[..., Server]) -> None:
    """One byte every 0.2 s never trips a per-read socket timeout; the deadline covers the whole
    reply. The server would trickle forever (until the test closes it); the verdict is the
    timeout message, and the bound is 20 times the #timeout."""

    def trickle(handler: BaseHTTPRequestHandler, server: Server) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "1000000")
        handler.end_headers()
        try:
            while not server.stop.wait(0.2):
                handler.wfile.write(b" ")
                handler.wfile.flush()
        except OSError:
            pass

    # 3 s also bounds the healthy ingest: a thousand times a loopback request, even at load 10
    system = _system(serve(trickle).url, "timeout=3&retries=0")
    start = time.monotonic()
    with pytest.raises(AdapterError, match="no reply within #timeout=3s"):
        system.search(Q, 5)
    assert time.monotonic() - start < 60


def test_trickled_headers_cannot_outlast_the_timeout(serve: Callable[..., Server]) -> None:
    def trickle(handler: BaseHTTPRequestHandler, server: Server) -> None:
        try:
            for ch in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"x" * 10**6:
                if server.stop.wait(0.2):
                    return
                handler.wfile.write(bytes([ch]))
                handler.wfile.flush()
        except OSError:
            pass

    # 3 s also bounds the healthy ingest: a thousand times a loopback request, even at load 10
    system = _system(serve(trickle).url, "timeout=3&retries=0")
    start = time.monotonic()
    with pytest.raises(AdapterError, match="no reply within #timeout=3s"):
        system.search(Q, 5)
    assert time.monotonic() - start < 60


# ---- break 9: terminal injection ----------------------------------------------------------------


def test_a_service_error_body_reaches_messages_with_its_escape_codes_escaped(
    serve: Callable[..., Server],
) -> None:
    body = b"\x1b]0;pwned\x07\x1b[2J\x1b[31mboom\r\nline2\x9b"
    system = _system(serve(lambda h, s: reply(h, 400, body)).url)
    with pytest.raises(AdapterError) as info:
        system.search(Q, 5)
    message = str(info.value)
    assert "\x1b" not in message and "\x07" not in message and "\r" not in message
    assert "\n" not in message
    assert "\\x1b[31mboom" in message


def test_terminal_safe_escapes_control_characters_only() -> None:
    assert terminal_safe("plain text, é ü 日本") == "plain text, é ü 日本"
    assert terminal_safe("a\tb\nc") == "a\tb\nc"
    assert terminal_safe("\x1b[1m\x00\x7f\x85\u202e") == "\\x1b[1m\\x00\\x7f\\x85\\u202e"
    assert terminal_safe("abcdef", 3) == "abc"


# ---- break 11: /ready of the wrong type -------------------------------------------------------


@pytest.mark.parametrize("body", [b'["ready"]', b'{"ready": "yes"}', b"{}", b'"true"'])
def test_a_ready_reply_of_the_wrong_type_fails_at_once(
    serve: Callable[..., Server], body: bytes
) -> None:
    server = serve(lambda h, s: reply(h, 200, MEMORIES), ready=body)
    system = _system(server.url)
    start = time.monotonic()
    with pytest.raises(AdapterError, match='GET /ready: expected \\{"ready": true\\|false\\}'):
        system.wait_ready(600.0)
    assert time.monotonic() - start < 300  # polled until 600 s before
    assert sum(r.startswith("GET /ready?") for r in server.requests) == 1


def test_ready_false_then_true_still_polls(serve: Callable[..., Server]) -> None:
    answers = iter([b'{"ready": false}', b'{"ready": false}'])

    server = serve(lambda h, s: reply(h, 200, MEMORIES))
    system = _system(server.url, "retries=0&poll=0.01")
    calls: list[str] = []
    original = system.client.call

    def call(method: str, path: str, payload: Any = None) -> Any:
        calls.append(path)
        if path.startswith("/ready?"):
            nxt = next(answers, None)
            if nxt is not None:
                return json.loads(nxt)
        return original(method, path, payload)

    system.client.call = call
    assert system.wait_ready(600.0) is True
    assert sum(p.startswith("/ready?") for p in calls) == 3
