"""The rate limiters (``llm.ratelimit``): the machine-wide file limiter on a fake clock, the shared
Redis limiter against a real ``redis-server``, and the rate-limit headers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from redis_server import RedisServer, needs_redis

from pytest_memeval.errors import JudgeError
from pytest_memeval.llm._base import ChatMessage, Request
from pytest_memeval.llm._ratelimit import (
    LimiterUnavailable,
    RateLimiter,
    RedisRateLimiter,
    connect_redis,
    estimate_tokens,
    limiter_path,
    parse_state,
)
from pytest_memeval.llm._retry import parse_retry_after


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))


def limiter(path: Path, clock: Clock, rpm: int | None, tpm: int | None = None) -> RateLimiter:
    return RateLimiter(path, rpm, tpm, clock=clock.time, sleep=clock.sleep)


def test_requests_are_paced_at_the_rpm_across_limiters_sharing_the_file(tmp_path: Path) -> None:
    clock = Clock()
    path = limiter_path(tmp_path, "openai", "http://x/v1", "sk-secret")
    a, b = limiter(path, clock, rpm=120), limiter(path, clock, rpm=120)  # two "workers"
    waits = [a.acquire(), b.acquire(), a.acquire(), b.acquire()]
    assert waits == [0.0, 0.5, 1.0, 1.5]
    assert clock.slept == [0.5, 1.0, 1.5]
    clock.now += 10  # idle: no burst is banked, the next request goes at once
    assert a.acquire() == 0.0 and b.acquire() == 0.5


def test_the_key_is_never_in_the_file_name_or_content(tmp_path: Path) -> None:
    path = limiter_path(tmp_path, "openai", None, "sk-secret-123")
    limiter(path, Clock(), rpm=10).acquire()
    assert "sk-secret" not in path.name and "sk-secret" not in path.read_text()
    assert path != limiter_path(tmp_path, "openai", None, "sk-other")


def test_tokens_are_paced_at_the_tpm(tmp_path: Path) -> None:
    clock = Clock()
    lim = limiter(tmp_path / "t.json", clock, rpm=None, tpm=600)  # 10 tokens a second
    assert lim.acquire(20) == 0.0
    assert lim.acquire(5) == 2.0  # the first request's 20 tokens take 2 s of the budget
    assert lim.acquire(1) == 2.5
    request = Request((ChatMessage("user", "x" * 400),), max_tokens=50)
    assert estimate_tokens(request) == 151


def test_a_429_pauses_every_process(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "p.json"
    a, b = limiter(path, clock, rpm=6000), limiter(path, clock, rpm=6000)
    a.pause(3.0)
    assert b.acquire() == 3.0


def test_rate_limit_reset_headers_when_there_is_no_retry_after() -> None:
    assert parse_retry_after({"x-ratelimit-reset-requests": "6m0s"}) == 360.0
    assert (
        parse_retry_after(
            {"x-ratelimit-reset-requests": "20ms", "x-ratelimit-reset-tokens": "1.5s"}
        )
        == 1.5
    )
    assert parse_retry_after({"x-ratelimit-reset-requests": "soon"}) is None
    assert (
        parse_retry_after(
            {"anthropic-ratelimit-requests-reset": "2015-10-21T07:28:10Z"}, now=1445412480.0
        )
        == 10.0
    )
    assert parse_retry_after({"retry-after": "2", "x-ratelimit-reset-requests": "9s"}) == 2.0


@pytest.mark.parametrize("damage", ["garbage", "deleted", "foreign"])
def test_a_damaged_or_missing_state_file_is_rebuilt_and_pacing_goes_on(
    tmp_path: Path, damage: str
) -> None:
    """Two "workers" at 120 a minute; the state file is damaged between their requests: the next
    slots are those of an intact file (no burst), and the limiter that finds it says so once."""
    clock = Clock()
    path = limiter_path(tmp_path, "openai", "http://x/v1", "sk-secret")
    said: list[str] = []
    a = RateLimiter(path, 120, clock=clock.time, sleep=clock.sleep, say=said.append)
    b = RateLimiter(path, 120, clock=clock.time, sleep=clock.sleep, say=said.append)
    assert [a.acquire(), b.acquire(), a.acquire()] == [0.0, 0.5, 1.0]
    assert said == []  # the first run's missing file is no damage
    for first in (1.5, 2.5):  # damaged twice
        if damage == "garbage":
            path.write_bytes(b"\x00garbage{{")
        elif damage == "foreign":
            path.write_text('{"next_request": "soon"}')
        else:
            path.unlink()
            if damage == "both deleted":  # the copy too: this process's last view is left
                a.lock_path.unlink()
        assert b.acquire() == first
        assert a.acquire() == first + 0.5
    assert len(said) == 1  # b found it damaged twice and said so once; a never saw the damage
    assert f"{path} was damaged or missing" in said[0]
    assert parse_state(path.read_bytes()) == {"next_request": 1000.0 + 3.5}


def test_every_process_rebuilds_from_what_it_last_saw(tmp_path: Path) -> None:
    """The state file and its copy both gone: the process that comes back first knows only its own
    last view, the other one's slots come back with its next request (the largest of each time)."""
    clock = Clock()
    path = tmp_path / "r.json"
    a, b = limiter(path, clock, rpm=60), limiter(path, clock, rpm=60)
    assert [a.acquire(), b.acquire(), b.acquire()] == [0.0, 1.0, 2.0]
    path.unlink()
    a.lock_path.unlink()
    assert b.acquire() == 3.0  # b saw every slot
    assert a.acquire() == 4.0  # and wrote them back


def test_parse_state_refuses_what_is_not_finite_times() -> None:
    assert parse_state(b'{"next_request": 12.5, "other": "x"}') == {"next_request": 12.5}
    for raw in (b"", b"[]", b"{", b'{"next_request": NaN}', b'{"paused_until": true}'):
        assert parse_state(raw) is None


def _redis_limiter(
    server: RedisServer,
    rpm: int | None,
    tpm: int | None = None,
    *,
    say: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] | None = None,
    retry_delay: float = 0.5,
) -> RedisRateLimiter:
    """A limiter with its own connection, as on a host of its own; unless ``sleep`` is given,
    sleeps are skipped (the tests read the waits Redis hands out)."""
    return RedisRateLimiter(
        connect_redis(server.url, timeout=1.0),
        "memeval:ratelimit:test",
        server.url,
        rpm,
        tpm,
        sleep=sleep or (lambda seconds: None),
        say=say,
        retry_delay=retry_delay,
    )


@needs_redis
def test_redis_limiter_is_one_budget_for_every_host(tmp_path: Path) -> None:
    with RedisServer(tmp_path) as server:
        a, b = _redis_limiter(server, rpm=120), _redis_limiter(server, rpm=120)
        waits = [a.acquire(), b.acquire(), a.acquire(), b.acquire()]
        assert waits == pytest.approx([0.0, 0.5, 1.0, 1.5], abs=0.05)
        b.pause(5.0)  # a 429 seen by one host holds back the other
        assert a.acquire() == pytest.approx(5.0, abs=0.05)
        c = _redis_limiter(server, rpm=None, tpm=600)  # 10 tokens a second, its own key
        c.key = "memeval:ratelimit:tokens"
        assert c.acquire(20) == pytest.approx(0.0, abs=0.05)
        assert c.acquire(5) == pytest.approx(2.0, abs=0.05)


@needs_redis
def test_redis_unreachable_requests_wait_and_retry_saying_so(tmp_path: Path) -> None:
    """Redis goes away: no slot is handed out (the request waits, retrying), one line says so;
    when it is back (empty, as after a restart) the slot is the one the budget allows, from this
    process's last view, and the limiter says it answers again and that it rebuilt the state."""
    said: list[str] = []
    with RedisServer(tmp_path) as server:
        lim = _redis_limiter(server, rpm=60, say=said.append, sleep=time.sleep, retry_delay=0.05)
        assert lim.acquire() == 0.0
        server.stop()
        got: list[float] = []
        waiter = threading.Thread(target=lambda: got.append(lim.acquire()))
        waiter.start()
        time.sleep(0.6)
        assert got == [] and waiter.is_alive()  # waiting, not sending
        assert len(said) == 1 and "cannot be reached" in said[0] and server.url in said[0]
        server.start()  # the same port, no data
        waiter.join(timeout=20)
        assert not waiter.is_alive()
        # the first slot was at t0; the second is t0 + 1 s, which has partly passed already
        assert 0.0 <= got[0] < 1.0
        assert any("answers again" in line for line in said)
        assert any("was gone during the run" in line for line in said)
        assert len(said) == 3


@needs_redis
def test_redis_unreachable_for_longer_than_the_wait_fails_the_call(tmp_path: Path) -> None:
    """--memeval-llm-limiter-wait: a call waits that long for Redis, sending nothing, then fails
    with an error naming the limiter, the wait and the fix; while Redis stays down the next call
    fails after one try; once it is back, calls get slots again."""
    said: list[str] = []
    with RedisServer(tmp_path) as server:
        lim = _redis_limiter(server, rpm=600, say=said.append, sleep=time.sleep, retry_delay=0.05)
        lim.max_outage = 0.5
        assert lim.acquire() == 0.0
        server.stop()
        started = time.monotonic()
        with pytest.raises(LimiterUnavailable) as first:
            lim.acquire()
        assert 0.5 <= time.monotonic() - started < 5.0
        message = str(first.value)
        assert message.startswith(f"no LLM request sent: the LLM rate limiter {server.url} ")
        assert "--memeval-llm-limiter-wait=0.5" in message and "--memeval-rejudge" in message
        assert isinstance(first.value, JudgeError)  # a judge's verdict is UNSCORED, not a crash
        assert len(said) == 1 and "up to 0.5 s (--memeval-llm-limiter-wait)" in said[0]
        started = time.monotonic()
        with pytest.raises(LimiterUnavailable):
            lim.acquire()  # the outage has lasted long enough: one try, no second wait
        assert time.monotonic() - started < 0.5
        server.start()
        assert lim.acquire() >= 0.0
        assert any("answers again" in line for line in said)


@needs_redis
def test_redis_that_cannot_be_used_is_said_before_the_run(tmp_path: Path) -> None:
    with RedisServer(tmp_path) as server:
        assert _redis_limiter(server, rpm=60).check() is None
        wrong_db = server.url.rsplit("/", 1)[0] + "/99"
        lim = RedisRateLimiter(connect_redis(wrong_db), "k", wrong_db, 60)
        assert lim.check() == (
            f"--memeval-llm-limiter={wrong_db}: cannot use Redis (ResponseError: DB index is out "
            "of range): start it or fix the URL (redis://HOST:PORT/DB)"
        )


def test_redis_url_password_is_never_printed() -> None:
    from pytest_memeval.llm._ratelimit import redis_label

    assert redis_label("redis://:s3cret@host:6379/2") == "redis://host:6379/2"
    assert redis_label("rediss://user:pw@h:1/0") == "rediss://h:1/0"
