"""The machine-wide rate limiter (``llm.ratelimit``) and the rate-limit headers, pure parts."""

from __future__ import annotations

from pathlib import Path

from pytest_memeval.llm.base import ChatMessage, Request
from pytest_memeval.llm.ratelimit import RateLimiter, estimate_tokens, limiter_path
from pytest_memeval.llm.retry import parse_retry_after


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
