"""One loopback HTTP file server for the download tests (datasets, errata, audit sets, upstream
protocol files, redirects): the routes map a request path to a body or a :class:`Reply`, anything
else is 404, and every request path is counted."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    """``truncate_to``: announce the whole body's length but send only that many bytes, then hang
    up (a connection cut mid-download); ``delay``: seconds to wait before answering."""

    body: bytes = b""
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    truncate_to: int | None = None
    delay: float = 0.0


Route = bytes | Reply | Callable[[], Reply]


@dataclass
class FileServer:
    base: str  # http://127.0.0.1:PORT
    routes: dict[str, Route]  # may be changed while the server runs
    requests: list[str] = field(default_factory=list)  # request paths, in order
    hits: Counter[str] = field(default_factory=Counter)  # request path -> count (live)
    fallback: Callable[[str], Reply] | None = None  # for paths not in ``routes`` (else 404)
    headers: list[dict[str, str]] = field(default_factory=list)  # request headers, in order
    #: answer ``Range: bytes=N-`` with 206 and the rest of the body (else the range is ignored)
    ranges: bool = False

    def url(self, path: str) -> str:
        return self.base + path

    def reply(self, path: str) -> Reply:
        self.requests.append(path)
        self.hits[path] += 1
        route = self.routes.get(path)
        if route is None:
            return self.fallback(path) if self.fallback else Reply(b"not found", 404)
        if isinstance(route, bytes):
            return Reply(route)
        return route if isinstance(route, Reply) else route()


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hangs up on purpose (timeout tests)


@contextmanager
def serve_files(
    routes: Mapping[str, Route] | None = None,
    *,
    fallback: Callable[[str], Reply] | None = None,
) -> Iterator[FileServer]:
    state = FileServer("", dict(routes or {}), fallback=fallback)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            state.headers.append(dict(self.headers.items()))
            reply = state.reply(self.path)
            if reply.delay:
                time.sleep(reply.delay)
            wanted = self.headers.get("Range", "")
            if state.ranges and reply.status == 200 and wanted.startswith("bytes="):
                first = int(wanted[len("bytes=") :].rstrip("-"))
                whole = len(reply.body)
                if first >= whole:
                    reply = Reply(b"", 416)
                else:
                    rng = {"Content-Range": f"bytes {first}-{whole - 1}/{whole}"}
                    cut = None if reply.truncate_to is None else max(0, reply.truncate_to - first)
                    reply = Reply(reply.body[first:], 206, {**reply.headers, **rng}, cut)
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if reply.truncate_to is None:
                self.wfile.write(reply.body)
                return
            self.wfile.write(reply.body[: reply.truncate_to])
            self.wfile.flush()
            self.close_connection = True

    httpd = _Quiet(("127.0.0.1", 0), Handler)
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
