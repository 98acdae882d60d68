"""A throwaway Redis server for the shared rate limiter's tests (``--memeval-llm-limiter``): Debian's
``redis-server`` on a free loopback port, nothing saved to disk. Tests that need one skip, naming
``redis-server``, where it is not installed (``.ci/run`` installs it); the redis package (the
``[redis]`` extra, in ``dev``) must be importable too.

    with RedisServer() as srv:
        url = srv.url            # redis://127.0.0.1:PORT/0
        srv.stop(); srv.start()  # the same port again, empty (as a restarted server)
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

__all__ = ["RedisServer", "needs_redis", "redis_server_missing"]

REDIS_SERVER = "redis-server"


def redis_server_missing() -> str | None:
    """Why the Redis tests cannot run here (the skip reason), or None."""
    if shutil.which(REDIS_SERVER) is None:
        return (
            f"{REDIS_SERVER} is not installed (apt-get install -y redis-server; .ci/run does): "
            "the shared Redis rate limiter is tested against a real server"
        )
    if importlib.util.find_spec("redis") is None:
        return "the redis package is not installed (pip install -e '.[dev]' or '.[redis]')"
    return None


#: marks a test that starts a Redis server
needs_redis = pytest.mark.skipif(
    redis_server_missing() is not None, reason=redis_server_missing() or ""
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """``redis-server --save '' --appendonly no`` on 127.0.0.1 (a free port). Context manager."""

    def __init__(self, folder: Path | None = None) -> None:
        self.port = _free_port()
        self.folder = folder
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        if self._proc is not None:
            return self
        self._proc = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder or Path.cwd()),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not _pong(self.port):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{REDIS_SERVER} did not start on port {self.port}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
