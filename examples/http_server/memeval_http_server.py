"""Reference server of the pytest-memeval HTTP memory protocol, wrapping any Python MemorySystem.

    python examples/http_server/memeval_http_server.py --system bm25 --port 8000
    pytest --memeval=demo --memsys=http:http://127.0.0.1:8000

``--system`` takes what ``--memsys`` takes for in-process systems (a built-in such as ``bm25``, an
entry point or ``package.module:factory``). One instance per conversation id, made by the
system's factory, so several pytest-xdist workers can share the server. ``--ready-delay=S``
makes ``GET /ready`` answer false for S seconds after each ingest (an asynchronously indexing
service). Standard library only (``http.server``); it listens on 127.0.0.1 unless told otherwise
and prints ``listening on http://HOST:PORT`` once it accepts connections.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pytest_memeval.systems import (
    conversation_from_dict,
    ensure_memory_system,
    question_from_dict,
    resolve_system,
)

MAX_REQUEST = 64 << 20


class MemoryService:
    """The protocol's state: one memory system per conversation id."""

    def __init__(self, factory: Callable[[], object], ready_delay: float = 0.0) -> None:
        self.factory = factory
        self.ready_delay = ready_delay
        self.systems: dict[str, Any] = {}
        self.ready_at: dict[str, float] = {}
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def _count(self, what: str) -> None:
        with self.lock:
            self.calls[what] = self.calls.get(what, 0) + 1

    def answers(self) -> bool:
        probe = ensure_memory_system(self.factory(), "server")
        return callable(getattr(probe, "answer", None))

    def ready(self, conversation_id: str) -> dict[str, Any]:
        self._count("ready")
        at = self.ready_at.get(conversation_id, 0.0)
        return {"ready": time.monotonic() >= at, "answer": self._answers}

    def ingest(self, body: dict[str, Any]) -> dict[str, Any]:
        self._count("ingest")
        conv = conversation_from_dict(body["conversation"])
        system = ensure_memory_system(self.factory(), "server")
        system.ingest(conv)
        with self.lock:
            self.systems[conv.id] = system
            self.ready_at[conv.id] = time.monotonic() + self.ready_delay
        return {}

    def _system(self, conversation_id: str) -> Any:
        with self.lock:
            system = self.systems.get(conversation_id)
        if system is None:
            raise LookupError(f"conversation {conversation_id!r} was not ingested")
        return system

    def search(self, body: dict[str, Any]) -> dict[str, Any]:
        self._count("search")
        question = question_from_dict(body["question"])
        found = self._system(question.conversation_id).search(question, int(body["k"]))
        memories = []
        for m in found:
            if isinstance(m, str):
                memories.append(m)
            else:
                memories.append(m.to_dict())
        return {"memories": memories}

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        self._count("answer")
        question = question_from_dict(body["question"])
        return {"answer": str(self._system(question.conversation_id).answer(question))}

    def reset(self, body: dict[str, Any]) -> dict[str, Any]:
        self._count("reset")
        with self.lock:
            conv = body.get("conversation_id")
            if conv is None:
                self.systems.clear()
            else:
                self.systems.pop(str(conv), None)
        return {}

    @property
    def _answers(self) -> bool:
        if not hasattr(self, "_answer_flag"):
            self._answer_flag = self.answers()
        return self._answer_flag


def make_handler(service: MemoryService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path != "/ready":
                self._send(404, {"error": f"no such endpoint {url.path}"})
                return
            conv = parse_qs(url.query).get("conversation_id", [""])[0]
            self._send(200, service.ready(conv))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_REQUEST:
                self._send(413, {"error": "request too large"})
                return
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"error": "the body is not JSON"})
                return
            route = {
                "/ingest": service.ingest,
                "/search": service.search,
                "/answer": service.answer,
                "/reset": service.reset,
            }.get(urlsplit(self.path).path)
            if route is None:
                self._send(404, {"error": f"no such endpoint {self.path}"})
                return
            try:
                self._send(200, route(body))
            except (KeyError, TypeError, ValueError, LookupError) as exc:
                self._send(400, {"error": f"{type(exc).__name__}: {exc}"})
            except Exception as exc:  # the wrapped system failed: a server error
                self._send(500, {"error": f"{type(exc).__name__}: {exc}"})

    return Handler


def serve(
    system: str, host: str = "127.0.0.1", port: int = 0, ready_delay: float = 0.0
) -> tuple[ThreadingHTTPServer, MemoryService]:
    """Start serving in a daemon thread; returns the server (``server.server_address``)."""
    ((_, factory),) = resolve_system(system)[:1]
    service = MemoryService(factory, ready_delay)
    server = ThreadingHTTPServer((host, port), make_handler(service))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="memeval-http", daemon=True).start()
    return server, service


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", required=True, help="bm25, an entry point, or module:factory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--ready-delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    server, _ = serve(args.system, args.host, args.port, args.ready_delay)
    host, port = server.server_address[:2]
    print(f"listening on http://{host!s}:{port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
