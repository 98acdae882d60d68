"""Rate limits shared by every process of the machine (``--memeval-llm-rpm`` / ``--memeval-llm-tpm``).

One small JSON file per provider + base URL + key under the cache directory, named by a hash (the
key itself is never stored), holds the next free send time for requests and for tokens. Every
request (retries included) takes the next slot under an exclusive ``fcntl`` lock on that file, then
sleeps until its slot: requests are paced at exactly ``rpm`` a minute and tokens (the request's
input estimated at 4 characters a token, plus its ``max_tokens``) at ``tpm`` a minute, whatever the
number of xdist workers. A 429 or a rate-limit header telling the client to wait pushes the next
slot of every process back by that long, so a 429 storm slows the whole run down instead of each
worker retrying into it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .base import Request

__all__ = ["RateLimiter", "estimate_tokens", "limiter_path"]


def limiter_path(folder: Path, provider: str, base_url: str | None, key: str | None) -> Path:
    """The state file of one provider + base URL + key (only a hash of them is in the name)."""
    ident = "\0".join((provider, (base_url or "").rstrip("/"), key or ""))
    return folder / f"ratelimit-{hashlib.sha256(ident.encode()).hexdigest()[:20]}.json"


def estimate_tokens(request: Request) -> int:
    """The tokens a request may count against a TPM limit: input (4 characters a token) plus the
    reply's ``max_tokens``."""
    chars = sum(len(m.content) for m in request.messages)
    return chars // 4 + 1 + (request.max_tokens or 0)


@dataclass
class RateLimiter:
    path: Path
    rpm: int | None = None
    tpm: int | None = None
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

    def _update(self, change: Callable[[dict[str, float], float], float]) -> float:
        """Apply ``change(state, now)`` under the file lock; returns what it returns."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = b""
            while chunk := os.read(fd, 65536):
                raw += chunk
            try:
                loaded = json.loads(raw) if raw else {}
                state = {k: float(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
            except (ValueError, TypeError):
                state = {}  # a torn or foreign file: start again
            out = change(state, self.clock())
            data = json.dumps(state).encode()
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, data)
            return out
        finally:
            os.close(fd)  # releases the lock

    def acquire(self, tokens: int = 0) -> float:
        """Take the next send slot (shared by every process) and sleep until it: the seconds
        waited."""
        if self.rpm is None and self.tpm is None:
            return 0.0

        def take(state: dict[str, float], now: float) -> float:
            slot = max(now, state.get("paused_until", 0.0))
            if self.rpm is not None:
                slot = max(slot, state.get("next_request", 0.0))
                state["next_request"] = slot + 60.0 / self.rpm
            if self.tpm is not None:
                slot = max(slot, state.get("next_tokens", 0.0))
                state["next_tokens"] = slot + 60.0 * min(tokens, self.tpm) / self.tpm
            return slot - now

        wait = self._update(take)
        if wait > 0:
            self.sleep(wait)
        return max(wait, 0.0)

    def pause(self, seconds: float) -> None:
        """The provider said to wait (429, ``retry-after``, ``x-ratelimit-*``): no process sends
        before ``seconds`` from now."""
        if seconds <= 0:
            return

        def push(state: dict[str, float], now: float) -> float:
            state["paused_until"] = max(state.get("paused_until", 0.0), now + seconds)
            return 0.0

        self._update(push)
