"""Rate limits (``--memeval-llm-rpm`` / ``--memeval-llm-tpm``) shared by every process of the
machine, or with ``--memeval-llm-limiter=redis://HOST:PORT/DB`` by every process of every host.

Both limiters keep the same three times per provider + base URL + key (named by a hash: the key
itself is never stored): the next free send time for requests (``next_request``), for tokens
(``next_tokens``) and the end of a provider's back-off (``paused_until``). Every request (retries
included) takes the next slot atomically, then sleeps until its slot: requests are paced at exactly
``rpm`` a minute and tokens (the request's input estimated at 4 characters a token, plus its
``max_tokens``) at ``tpm`` a minute, whatever the number of processes. A 429 or a rate-limit header
telling the client to wait pushes the next slot of every process back by that long, so a 429 storm
slows the whole run down instead of each worker retrying into it.

- :class:`RateLimiter` (the default): one JSON state file under the cache directory, updated under
  an exclusive ``fcntl`` lock on a companion ``.lock`` file that also holds a copy of the state.
  The times only ever grow, so a state file rewritten with garbage or deleted during a run is
  rebuilt from that copy and from what this process last saw (the largest of each time): pacing
  goes on as before, and the limiter says so once.
- :class:`RedisRateLimiter`: the same arithmetic in one Lua script run atomically by Redis on its
  own clock (``TIME``), so hosts whose clocks differ still share one budget. While Redis cannot be
  reached no request is sent: each waits and retries, and the limiter says so (and when it is
  back); a key lost with a Redis restart is rebuilt from what each process last saw.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import json
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from ..errors import JudgeError
from ._base import Request

__all__ = [
    "FIELDS",
    "REDIS_SCHEMES",
    "Limiter",
    "LimiterUnavailable",
    "RateLimiter",
    "RedisRateLimiter",
    "connect_redis",
    "estimate_tokens",
    "limiter_ident",
    "limiter_path",
    "merge_state",
    "parse_state",
    "push_pause",
    "redis_label",
    "take_slot",
]

#: the times a limiter keeps (seconds since the epoch; each only ever grows)
FIELDS = ("next_request", "next_tokens", "paused_until")
#: the URL schemes ``--memeval-llm-limiter`` takes for a shared Redis limiter
REDIS_SCHEMES = ("redis", "rediss", "unix")

Say = Callable[[str], None]


class Limiter(Protocol):
    """What the LLM client needs of a rate limiter."""

    def acquire(self, tokens: int = 0) -> float: ...

    def pause(self, seconds: float) -> None: ...


def limiter_ident(provider: str, base_url: str | None, key: str | None) -> str:
    """A hash naming one provider + base URL + key (the key cannot be read back from it)."""
    ident = "\0".join((provider, (base_url or "").rstrip("/"), key or ""))
    return hashlib.sha256(ident.encode()).hexdigest()[:20]


def limiter_path(folder: Path, provider: str, base_url: str | None, key: str | None) -> Path:
    """The state file of one provider + base URL + key (only a hash of them is in the name)."""
    return folder / f"ratelimit-{limiter_ident(provider, base_url, key)}.json"


def estimate_tokens(request: Request) -> int:
    """The tokens a request may count against a TPM limit: input (4 characters a token) plus the
    reply's ``max_tokens``."""
    chars = sum(len(m.content) for m in request.messages)
    return chars // 4 + 1 + (request.max_tokens or 0)


# -- the arithmetic (pure) ----------------------------------------------------------------------
def take_slot(
    state: dict[str, float], now: float, rpm: int | None, tpm: int | None, tokens: int
) -> float:
    """Take the next send slot in ``state`` (updated in place): the seconds from ``now`` to it."""
    slot = max(now, state.get("paused_until", 0.0))
    if rpm is not None:
        slot = max(slot, state.get("next_request", 0.0))
        state["next_request"] = slot + 60.0 / rpm
    if tpm is not None:
        slot = max(slot, state.get("next_tokens", 0.0))
        state["next_tokens"] = slot + 60.0 * min(tokens, tpm) / tpm
    return slot - now


def push_pause(state: dict[str, float], now: float, seconds: float) -> None:
    """No slot before ``now + seconds`` (``state`` updated in place)."""
    state["paused_until"] = max(state.get("paused_until", 0.0), now + seconds)


def parse_state(raw: bytes) -> dict[str, float] | None:
    """The times in a state file's bytes, or None when they are not a JSON object of finite
    numbers (garbage, a foreign or truncated file)."""
    try:
        loaded = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(loaded, dict):
        return None
    state: dict[str, float] = {}
    for key, value in loaded.items():
        if key not in FIELDS:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if not math.isfinite(value):
            return None
        state[key] = float(value)
    return state


def merge_state(*states: dict[str, float] | None) -> dict[str, float]:
    """The largest of each time over ``states``: as every time only grows, the latest state any
    of them saw (None and missing times are skipped)."""
    out: dict[str, float] = {}
    for state in states:
        for key, value in (state or {}).items():
            out[key] = max(out.get(key, value), value)
    return out


# -- the machine-local file limiter ---------------------------------------------------------------
def _read(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = b""
    while chunk := os.read(fd, 65536):
        raw += chunk
    return raw


def _rewrite(fd: int, data: bytes) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    os.write(fd, data)


@dataclass
class RateLimiter:
    """The machine-local limiter: ``path`` is the state file (:func:`limiter_path`)."""

    path: Path
    rpm: int | None = None
    tpm: int | None = None
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    #: told once (per limiter) when a damaged or missing state file was rebuilt
    say: Say | None = None
    #: this process's latest view of the state (what it last read or wrote)
    _seen: dict[str, float] = field(default_factory=dict, init=False, repr=False)
    _said: bool = field(default=False, init=False, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def lock_path(self) -> Path:
        """The file locked around every update; it holds a copy of the state."""
        return self.path.with_suffix(".lock")

    def _locked(self) -> int:
        """An open descriptor of the lock file, exclusively locked. A lock file deleted or
        replaced while we waited is opened again (a lock on a deleted file locks nothing)."""
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                held, current = os.fstat(fd), os.stat(self.lock_path)
                if (held.st_ino, held.st_dev) == (current.st_ino, current.st_dev):
                    return fd
            except FileNotFoundError:
                pass
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    def _update(self, change: Callable[[dict[str, float], float], float]) -> float:
        """Apply ``change(state, now)`` under the file lock; returns what it returns."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = self._locked()
        try:
            copy = parse_state(_read(fd))
            try:
                main: dict[str, float] | None = parse_state(self.path.read_bytes())
                missing = False
            except FileNotFoundError:
                main, missing = None, True
            with self._guard:
                seen = dict(self._seen)
            known = merge_state(copy, seen)
            # a first run has no file and nothing known: nothing was lost
            rebuilt = main is None and (not missing or bool(known))
            state = merge_state(main, known)
            out = change(state, self.clock())
            data = json.dumps(state).encode()
            staged = self.path.with_suffix(".tmp")
            out_fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(out_fd, data)
            finally:
                os.close(out_fd)
            os.replace(staged, self.path)  # never a torn state file, even if we die here
            _rewrite(fd, data)
            with self._guard:
                self._seen = merge_state(self._seen, state)
                say, self._said = (not self._said and rebuilt), self._said or rebuilt
        finally:
            os.close(fd)  # releases the lock
        if say and self.say is not None:
            self.say(
                f"the rate limiter's state file {self.path} was damaged or missing during the "
                "run; it was rebuilt from its copy and this process's last view, and pacing went "
                "on unchanged"
            )
        return out

    def acquire(self, tokens: int = 0) -> float:
        """Take the next send slot (shared by every process) and sleep until it: the seconds
        waited."""
        if self.rpm is None and self.tpm is None:
            return 0.0
        rpm, tpm = self.rpm, self.tpm
        wait = self._update(lambda state, now: take_slot(state, now, rpm, tpm, tokens))
        if wait > 0:
            self.sleep(wait)
        return max(wait, 0.0)

    def pause(self, seconds: float) -> None:
        """The provider said to wait (429, ``retry-after``, ``x-ratelimit-*``): no process sends
        before ``seconds`` from now."""
        if seconds <= 0:
            return

        def push(state: dict[str, float], now: float) -> float:
            push_pause(state, now, seconds)
            return 0.0

        self._update(push)


# -- the shared Redis limiter -------------------------------------------------------------------
#: KEYS[1]: the state hash. ARGV: "take" or "pause", rpm (0: none), tpm (0: none), tokens,
#: pause seconds, then the caller's last view of next_request, next_tokens, paused_until.
#: Returns the wait from Redis's clock to the slot, the three times after the change, and 1 when
#: the key was gone although the caller had seen it (Redis restarted or was flushed).
_LUA = """
local mode = ARGV[1]
local rpm = tonumber(ARGV[2])
local tpm = tonumber(ARGV[3])
local tokens = tonumber(ARGV[4])
local seconds = tonumber(ARGV[5])
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local lost = 0
if redis.call('EXISTS', KEYS[1]) == 0 and (tonumber(ARGV[6]) > 0 or tonumber(ARGV[7]) > 0 or tonumber(ARGV[8]) > 0) then
  lost = 1
end
local function known(name, seen)
  local value = tonumber(redis.call('HGET', KEYS[1], name))
  if value == nil then value = 0 end
  return math.max(value, tonumber(seen))
end
local nr = known('next_request', ARGV[6])
local nt = known('next_tokens', ARGV[7])
local pu = known('paused_until', ARGV[8])
local slot = now
if mode == 'take' then
  slot = math.max(now, pu)
  if rpm > 0 then
    slot = math.max(slot, nr)
    nr = slot + 60 / rpm
  end
  if tpm > 0 then
    slot = math.max(slot, nt)
    nt = slot + 60 * math.min(tokens, tpm) / tpm
  end
else
  pu = math.max(pu, now + seconds)
end
local f = '%.6f'
redis.call('HSET', KEYS[1], 'next_request', string.format(f, nr), 'next_tokens',
  string.format(f, nt), 'paused_until', string.format(f, pu))
redis.call('PEXPIRE', KEYS[1], math.ceil((math.max(nr, nt, pu, now) - now + 3600) * 1000))
return {string.format(f, slot - now), string.format(f, nr), string.format(f, nt),
  string.format(f, pu), lost}
"""

#: the longest wait between two tries while Redis cannot be reached
_MAX_RETRY_DELAY = 5.0


def redis_label(url: str) -> str:
    """``url`` without its user name and password (safe to print)."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _redis() -> Any:
    """The redis package (the ``[redis]`` extra), imported on first use; typed loosely so that
    the package type-checks without the extra installed."""
    return importlib.import_module("redis")


def _unreachable_errors() -> tuple[type[BaseException], ...]:
    # RedisError: refused, reset, timed out, authentication, a server loading its data or out of
    # memory, a read-only replica, a database number out of range: no slot is handed out
    return (_redis().RedisError, OSError)


def connect_redis(url: str, timeout: float = 5.0) -> Any:
    """A ``redis.Redis`` client for ``url`` (not connected yet: connections are made on use)."""
    return _redis().Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


class LimiterUnavailable(JudgeError):
    """No request sent: the shared rate limiter (Redis) has not answered for longer than the
    limiter's ``max_outage`` (``--memeval-llm-limiter-wait``)."""


@dataclass
class RedisRateLimiter:
    """The limiter shared by every process that uses the same Redis database: ``client`` is a
    ``redis.Redis`` (:func:`connect_redis`), ``key`` the hash that holds the state."""

    client: Any
    key: str
    label: str
    rpm: int | None = None
    tpm: int | None = None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    #: told when Redis cannot be reached (once an outage, and when it is back) and when the state
    #: was rebuilt after a Redis restart
    say: Say | None = None
    retry_delay: float = 0.5
    #: seconds a call waits for an unreachable Redis before it fails with
    #: :class:`LimiterUnavailable` (None: it waits until Redis answers); once an outage has lasted
    #: that long, later calls fail after one try, until Redis answers again
    max_outage: float | None = None
    _seen: dict[str, float] = field(default_factory=dict, init=False, repr=False)
    _down_since: float | None = field(default=None, init=False, repr=False)
    _said_lost: bool = field(default=False, init=False, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _script: Any = field(default=None, init=False, repr=False)

    def _tell(self, line: str) -> None:
        if self.say is not None:
            self.say(line)

    def _run(self, mode: str, tokens: int, seconds: float) -> float:
        """Run the script until Redis answers: the wait it returns."""
        errors = _unreachable_errors()
        delay = self.retry_delay
        while True:
            with self._guard:
                if self._script is None:
                    self._script = self.client.register_script(_LUA)
                script = self._script
                seen = [self._seen.get(name, 0.0) for name in FIELDS]
            args = [mode, self.rpm or 0, self.tpm or 0, tokens, seconds]
            try:
                reply = script(keys=[self.key], args=[*args, *(f"{v:.6f}" for v in seen)])
            except errors as exc:
                with self._guard:
                    first = self._down_since is None
                    if first:
                        self._down_since = self.clock()
                    since = self._down_since
                    assert since is not None
                if first:
                    waits = (
                        "until it answers"
                        if self.max_outage is None
                        else f"up to {self.max_outage:g} s (--memeval-llm-limiter-wait)"
                    )
                    self._tell(
                        f"the LLM rate limiter {self.label} cannot be reached "
                        f"({type(exc).__name__}: {str(exc)[:160]}); LLM requests wait and retry "
                        f"{waits} (none is sent without a slot)"
                    )
                down = self.clock() - since
                if self.max_outage is not None and down >= self.max_outage:
                    raise LimiterUnavailable(
                        f"no LLM request sent: the LLM rate limiter {self.label} has not answered "
                        f"for {down:.0f} s (--memeval-llm-limiter-wait={self.max_outage:g}; "
                        f"{type(exc).__name__}: {str(exc)[:160]}); start Redis, then "
                        "--memeval-rejudge asks an unscored verdict again, --memeval-resume a "
                        "question that errored"
                    ) from None
                self.sleep(delay)
                delay = min(delay * 2, _MAX_RETRY_DELAY)
                continue
            wait, *times = (float(x) for x in reply[:4])
            lost = int(reply[4]) == 1
            with self._guard:
                self._seen = merge_state(self._seen, dict(zip(FIELDS, times, strict=True)))
                since, self._down_since = self._down_since, None
                tell_lost, self._said_lost = lost and not self._said_lost, self._said_lost or lost
            if since is not None:
                self._tell(
                    f"the LLM rate limiter {self.label} answers again after "
                    f"{self.clock() - since:.0f} s of waiting; LLM requests go on"
                )
            if tell_lost:
                self._tell(
                    f"the LLM rate limiter's state at {self.label} was gone during the run "
                    "(Redis restarted or flushed?); it was rebuilt from this process's last view"
                )
            return wait

    def check(self) -> str | None:
        """Why Redis cannot be used now (one line), or None."""
        try:
            self.client.ping()
        except _unreachable_errors() as exc:
            return (
                f"--memeval-llm-limiter={self.label}: cannot use Redis "
                f"({type(exc).__name__}: {str(exc)[:160]}): start it or fix the URL "
                "(redis://HOST:PORT/DB)"
            )
        return None

    def acquire(self, tokens: int = 0) -> float:
        """Take the next send slot of every process on every host and sleep until it."""
        if self.rpm is None and self.tpm is None:
            return 0.0
        wait = self._run("take", tokens, 0.0)
        if wait > 0:
            self.sleep(wait)
        return max(wait, 0.0)

    def pause(self, seconds: float) -> None:
        """The provider said to wait: no process on any host sends before ``seconds`` from now."""
        if seconds > 0:
            self._run("pause", 0, seconds)
