"""pytest_memeval.llm: real HTTP through the real openai/anthropic SDKs, loopback server."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import multiprocessing
import multiprocessing.pool
import os
import sqlite3
import threading
import time
import traceback
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from llm_server import ANTHROPIC_PATH, OPENAI_PATH, LLMServer

from pytest_memeval.errors import JudgeError
from pytest_memeval.llm import (
    ChatMessage,
    Completion,
    LLMCache,
    LLMClient,
    Request,
    RetryPolicy,
    TokenAccounting,
    cache_key,
    canonical_request,
    check_credentials,
    make_client,
    make_semaphore,
    parse_model_spec,
    parse_retry_after,
    redact,
    run_parallel,
)
from pytest_memeval.llm._client import ProviderClient

KEY = "sk-test-loopback-key-0001"
CANARY = "sk-CANARY-7f3a9c2e5b1d4e6f"
KEY_ENVS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "MY_LOCAL_KEY")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A clean, known key environment."""
    for name in (*KEY_ENVS, "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    return monkeypatch


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as srv:
        yield srv


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def policy(sleeps: Sleeps | None = None, **kw: Any) -> RetryPolicy:
    return RetryPolicy(sleep=sleeps if sleeps is not None else (lambda s: None), **kw)


SPECS = {
    "openai": ("openai:gpt-4o-mini", OPENAI_PATH),
    "anthropic": ("anthropic:claude-sonnet-4-6", ANTHROPIC_PATH),
    "openai-compatible": ("openai-compatible:llama3.1:8b", OPENAI_PATH),
}


def client_for(provider: str, srv: LLMServer, **kw: Any) -> ProviderClient:
    spec, _ = SPECS[provider]
    base = srv.anthropic_base_url if provider == "anthropic" else srv.openai_base_url
    kw.setdefault("retry", policy())
    return make_client(spec, base_url=base, **kw)


MSGS = (ChatMessage("system", "Answer in a few words."), ChatMessage("user", "Where did Ann go?"))


# -- model specs and credentials --------------------------------------------------------------


def test_parse_model_spec() -> None:
    assert parse_model_spec("openai:gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert parse_model_spec("anthropic:claude-sonnet-4-6") == ("anthropic", "claude-sonnet-4-6")
    assert parse_model_spec("openai-compatible:llama3.1:8b") == ("openai-compatible", "llama3.1:8b")
    with pytest.raises(JudgeError, match=r"expected PROVIDER:MODEL"):
        parse_model_spec("gpt-4o-mini")
    with pytest.raises(JudgeError, match=r"unknown provider 'gemini'.*openai, anthropic"):
        parse_model_spec("gemini:pro")
    with pytest.raises(JudgeError, match=r"model name after 'openai:' is empty"):
        parse_model_spec("openai:")


def test_missing_key_names_the_variable(env: pytest.MonkeyPatch) -> None:
    env.delenv("OPENAI_API_KEY")
    env.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(JudgeError) as exc:
        check_credentials("openai:gpt-4o-mini")
    assert str(exc.value) == (
        "openai:gpt-4o-mini: no API key: set the environment variable OPENAI_API_KEY"
    )
    with pytest.raises(JudgeError, match="ANTHROPIC_API_KEY"):
        make_client("anthropic:claude-sonnet-4-6")
    with pytest.raises(JudgeError, match=r"MY_LOCAL_KEY \(any non-empty value"):
        check_credentials(
            "openai-compatible:m", base_url="http://127.0.0.1:1/v1", api_key_env="MY_LOCAL_KEY"
        )
    with pytest.raises(JudgeError, match="needs --memeval-base-url"):
        check_credentials("openai-compatible:m")
    env.setenv("MY_LOCAL_KEY", "x")
    cfg = check_credentials(
        "openai-compatible:m", base_url="http://127.0.0.1:1/v1/", api_key_env="MY_LOCAL_KEY"
    )
    assert (cfg.provider, cfg.model, cfg.base_url, cfg.key_env) == (
        "openai-compatible",
        "m",
        "http://127.0.0.1:1/v1",
        "MY_LOCAL_KEY",
    )


# -- providers through the real SDKs ----------------------------------------------------------


@pytest.mark.parametrize("provider", list(SPECS))
def test_round_trip(provider: str, env: pytest.MonkeyPatch, server: LLMServer) -> None:
    acc = TokenAccounting()
    with client_for(provider, server, accounting=acc) as client:
        as_protocol: LLMClient = client  # statically checked by mypy
        out = as_protocol.complete(MSGS, temperature=0.5, max_tokens=77, role="answerer")
    spec, path = SPECS[provider]
    model = spec.split(":", 1)[1]
    assert client.label == spec
    assert out == Completion(
        text=f"{model} heard: Where did Ann go?",
        input_tokens=9,  # "Answer in a few words." + "Where did Ann go?"
        output_tokens=6,
        cached=False,
        model=model,
    )
    assert server.counts == {path: 1}
    (req,) = server.requests
    assert req.api_key == KEY
    body = req.body
    assert body["model"] == model
    assert body["temperature"] == 0.5
    if provider == "anthropic":
        assert body["system"] == "Answer in a few words."
        assert body["messages"] == [{"role": "user", "content": "Where did Ann go?"}]
        assert body["max_tokens"] == 77
    else:
        assert body["messages"][0] == {"role": "system", "content": "Answer in a few words."}
        limit_field = "max_completion_tokens" if provider == "openai" else "max_tokens"
        assert body[limit_field] == 77
    assert acc.to_dict() == {
        "answerer": {
            spec: {
                "input_tokens": 9,
                "output_tokens": 6,
                "calls": 1,
                "cache_hits": 0,
                "cache_misses": 0,
                "retries": 0,
                "failures": 0,
            }
        }
    }


@pytest.mark.parametrize("provider", list(SPECS))
def test_protocol_request_options(
    provider: str, env: pytest.MonkeyPatch, server: LLMServer
) -> None:
    """``n`` and ``max_tokens_field`` go out as an official protocol's request has them (OpenAI's own
    API gets ``max_tokens`` when the protocol says so); Anthropic's API has neither."""
    with client_for(provider, server) as client:
        client.complete(MSGS, max_tokens=10, n=1, max_tokens_field="max_tokens")
        client.complete(MSGS, max_tokens=11, max_tokens_field="max_completion_tokens")
        client.complete(MSGS, max_tokens=None, n=1, stream=False)
    first, second, third = (r.body for r in server.requests)
    if provider == "anthropic":
        assert (first["max_tokens"], second["max_tokens"]) == (10, 11)
        assert all("n" not in b and "max_completion_tokens" not in b for b in (first, second))
        assert "stream" not in third or third["stream"] is False
        return
    assert first["max_tokens"] == 10 and first["n"] == 1
    assert "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == 11
    assert "max_tokens" not in second and "n" not in second
    assert third["n"] == 1 and third["stream"] is False
    assert "stream" not in first and "stream" not in second
    assert "max_tokens" not in third and "max_completion_tokens" not in third


def test_request_options_are_checked(env: pytest.MonkeyPatch, server: LLMServer) -> None:
    with client_for("openai", server) as client:
        with pytest.raises(ValueError, match="n must be 1"):
            client.complete(MSGS, n=2)
        with pytest.raises(ValueError, match="max_tokens_field='limit'"):
            client.complete(MSGS, max_tokens_field="limit")
        with pytest.raises(ValueError, match="stream must be false"):
            client.complete(MSGS, stream=True)
    assert server.requests == []


def test_sdk_environment_variables_are_honoured(env: pytest.MonkeyPatch, server: LLMServer) -> None:
    env.setenv("OPENAI_BASE_URL", server.openai_base_url)
    env.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    with make_client("openai:gpt-4o-mini", retry=policy()) as o:
        o.complete([ChatMessage("user", "hi")])
    with make_client("anthropic:claude-haiku-4-5", retry=policy()) as a:
        a.complete([ChatMessage("user", "hi")])
    assert server.counts == {OPENAI_PATH: 1, ANTHROPIC_PATH: 1}
    assert o.config.base_url == server.openai_base_url


# -- cache ------------------------------------------------------------------------------------


def test_cache_key_covers_exactly_the_output_inputs() -> None:
    where: dict[str, Any] = dict(provider="openai", model="m", base_url="http://h/v1")
    request = Request((ChatMessage("user", "q"),), temperature=0.0, max_tokens=256, run_index=0)
    assert json.loads(canonical_request(**where, request=request)) == {
        "provider": "openai",
        "model": "m",
        "base_url": "http://h/v1",
        "messages": [["user", "q"]],
        "temperature": 0.0,
        "max_tokens": 256,
        "run_index": 0,
    }
    k0 = cache_key(**where, request=request)
    same = [
        ({"base_url": "http://h/v1/"}, {"temperature": 0}),
        ({}, {"n": 1}),  # only n=1 can be sent: the same output
        ({}, {"max_tokens_field": "max_tokens"}),  # the same limit under another name
    ]
    for w, r in same:
        key = cache_key(**{**where, **w}, request=dataclasses.replace(request, **r))
        assert key == k0 and len(key) == 64
    changes: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"provider": "openai-compatible"}, {}),
        ({"model": "m2"}, {}),
        ({"base_url": "http://other/v1"}, {}),
        ({}, {"messages": (ChatMessage("user", "q2"),)}),
        ({}, {"messages": (ChatMessage("system", "q"),)}),
        ({}, {"temperature": 0.5}),
        ({}, {"max_tokens": 10}),
        ({}, {"run_index": 1}),
        ({}, {"json_mode": True}),
    ]
    keys = {
        cache_key(**{**where, **w}, request=dataclasses.replace(request, **r)) for w, r in changes
    }
    assert len(keys) == len(changes) and k0 not in keys


@pytest.mark.parametrize("provider", list(SPECS))
def test_warm_rerun_makes_zero_requests(
    provider: str, env: pytest.MonkeyPatch, server: LLMServer, tmp_path: Path
) -> None:
    acc = TokenAccounting()
    questions = [[ChatMessage("user", f"question {i}")] for i in range(5)]
    with (
        LLMCache(tmp_path) as cache,
        client_for(provider, server, cache=cache, accounting=acc) as c,
    ):
        cold = [c.complete(q, run_index=r) for q in questions for r in (0, 1)]
    assert server.count() == 10
    assert not any(x.cached for x in cold)
    # a second cache object on the same file, a new client, another key and timeout: all hits
    env.setenv("OPENAI_API_KEY", "sk-another-key-123")
    env.setenv("ANTHROPIC_API_KEY", "sk-another-key-123")
    env.setenv("OPENROUTER_API_KEY", "sk-another-key-123")
    with (
        LLMCache(tmp_path) as cache2,
        client_for(provider, server, cache=cache2, accounting=acc, timeout=5.0) as c2,
    ):
        warm = [c2.complete(q, run_index=r) for q in questions for r in (0, 1)]
        assert cache2.stats() == {"hits": 10, "misses": 0, "writes": 0}
        assert len(cache2) == 10
    assert server.count() == 10  # zero new requests
    assert [w.text for w in warm] == [x.text for x in cold]
    assert all(w.cached for w in warm)
    assert [(w.input_tokens, w.output_tokens) for w in warm] == [
        (x.input_tokens, x.output_tokens) for x in cold
    ]
    usage = acc.by_role()["judge"]
    assert (usage.calls, usage.cache_hits, usage.cache_misses) == (10, 10, 10)
    assert usage.input_tokens == sum(x.input_tokens for x in cold)  # hits cost nothing


def test_identical_requests_in_flight_are_sent_once(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Single flight: eight threads asking the same thing while it is in the server make one
    request; the seven others read its reply from the cache, as a window of 1 would."""
    release = threading.Event()

    def reply(messages: Any, model: str, params: dict[str, Any]) -> str:
        release.wait(60)  # held until every thread has asked (whatever the load)
        return "Paris"

    acc = TokenAccounting()
    with LLMServer(reply=reply) as srv, LLMCache(tmp_path) as cache:
        with client_for("openai", srv, cache=cache, accounting=acc) as c:
            asked = threading.Barrier(9)

            def call(i: int) -> str:
                asked.wait(60)
                return c.complete(MSGS).text

            with ThreadPoolExecutor(8) as pool:
                futures = [pool.submit(call, i) for i in range(8)]
                asked.wait(60)
                time.sleep(0.5)  # the threads are in complete(); the verdict does not race it
                release.set()
                texts = [f.result(60) for f in futures]
        assert srv.count() == 1
    assert texts == ["Paris"] * 8
    usage = acc.by_role()["judge"]
    assert (usage.calls, usage.cache_misses, usage.cache_hits) == (1, 1, 7)


def test_corrupt_entry_is_a_miss(
    env: pytest.MonkeyPatch, server: LLMServer, tmp_path: Path
) -> None:
    msgs = [ChatMessage("user", "hello")]
    with LLMCache(tmp_path) as cache, client_for("openai", server, cache=cache) as c:
        first = c.complete(msgs)
        key = cache_key(
            provider="openai",
            model="gpt-4o-mini",
            base_url=server.openai_base_url,
            request=Request(tuple(msgs)),
        )
        assert cache.get(key) == Completion(first.text, 1, 3, cached=True, model="gpt-4o-mini")
        raw = sqlite3.connect(cache.path)
        for bad in ("{not json", '{"v": 1, "text": 5}', '{"v": 99, "text": "x"}', "null"):
            with raw:
                raw.execute("UPDATE completions SET value = ? WHERE key = ?", (bad, key))
            assert cache.get(key) is None
        raw.close()
        before = server.count()
        again = c.complete(msgs)
        assert server.count() == before + 1  # the bad entry was ignored, not fatal
        assert again.text == first.text and not again.cached
        assert c.complete(msgs).cached  # and it was repaired
        assert cache.enabled


def test_unreadable_cache_file_degrades_to_no_cache(
    env: pytest.MonkeyPatch, server: LLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache_file = tmp_path / "llm-cache.sqlite3"
    cache_file.write_bytes(b"this is not a database" * 200)
    caplog.set_level(logging.DEBUG)
    with LLMCache(tmp_path) as cache, client_for("openai", server, cache=cache) as c:
        a = c.complete([ChatMessage("user", "a")])
        b = c.complete([ChatMessage("user", "a")])
        assert not cache.enabled
    assert a.text == b.text == "gpt-4o-mini heard: a"
    assert server.count() == 2
    lines = [r for r in caplog.records if r.name == "pytest_memeval.llm" and "cache" in r.message]
    assert len(lines) == 1
    assert "off for this process" in lines[0].getMessage()
    assert lines[0].levelno == logging.WARNING


@contextlib.contextmanager
def process_pool(n: int) -> Iterator[multiprocessing.pool.Pool]:
    """A pool of ``n`` processes. ``fork`` where available: spawned children would re-import the
    SDKs (seconds each on a small machine). Every child still opens its own SQLite connection,
    as xdist workers do (the cache object is pickled without its connection)."""
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with warnings.catch_warnings():
        # Python >= 3.12 warns about fork() in a process with threads (the loopback server's);
        # the children only use objects they create themselves.
        warnings.simplefilter("ignore", DeprecationWarning)
        pool = ctx.Pool(n)
    with pool:
        yield pool


def _hammer(args: tuple[str, int, int]) -> int:
    """Worker: write ``n`` entries through its own LLMCache object."""
    directory, worker, n = args
    cache = LLMCache(directory)
    for i in range(n):
        cache.put(f"w{worker}-{i:05d}", Completion(f"text {worker}/{i}", i, worker))
    ok = sum(cache.get(f"w{worker}-{i:05d}") is not None for i in range(0, n, 50))
    cache.close()
    return ok if cache.enabled else -1


def test_many_processes_write_at_once(tmp_path: Path) -> None:
    workers, n = 4, 1500
    with process_pool(workers) as pool:
        results = pool.map(_hammer, [(str(tmp_path), w, n) for w in range(workers)])
    assert results == [n // 50] * workers
    with LLMCache(tmp_path) as cache:
        assert cache.integrity_check() == "ok"
        assert len(cache) == workers * n  # no lost entry
        for w in range(workers):
            for i in (0, 777, n - 1):
                assert cache.get(f"w{w}-{i:05d}") == Completion(f"text {w}/{i}", i, w, True)
    mode = sqlite3.connect(tmp_path / "llm-cache.sqlite3")
    assert mode.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    mode.close()


def _client_worker(args: tuple[str, str, int]) -> tuple[int, int]:
    directory, base_url, worker = args
    os.environ["OPENAI_API_KEY"] = KEY
    cache = LLMCache(directory)
    with make_client("openai:m", base_url=base_url, cache=cache, retry=policy()) as c:
        texts = [c.complete([ChatMessage("user", f"q{i}")]).text for i in range(worker, 60, 4)]
    cache.close()
    return len(texts), cache.hits


def test_processes_share_one_cache_through_clients(server: LLMServer, tmp_path: Path) -> None:
    args = [(str(tmp_path), server.openai_base_url, w) for w in range(4)]
    with process_pool(4) as pool:
        assert pool.map(_client_worker, args) == [(15, 0)] * 4
    assert server.count() == 60
    with process_pool(4) as pool:
        assert pool.map(_client_worker, args) == [(15, 15)] * 4
    assert server.count() == 60  # warm rerun across processes: zero requests


# -- retries ----------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", list(SPECS))
def test_retry_on_429_and_500_then_success(
    provider: str, env: pytest.MonkeyPatch, server: LLMServer
) -> None:
    sleeps = Sleeps()
    acc = TokenAccounting()
    server.push(429, 500, 529, "ok")
    with client_for(
        provider, server, retry=policy(sleeps, base_delay=1.0, max_backoff=3.0), accounting=acc
    ) as c:
        out = c.complete(MSGS)
        assert c.retries == 3 and c.requests == 4
    assert out.text.endswith("heard: Where did Ann go?")
    assert server.count() == 4
    assert len(sleeps.calls) == 3
    assert all(0 <= s <= cap for s, cap in zip(sleeps.calls, (1.0, 2.0, 3.0), strict=True))
    usage = acc.by_role()["judge"]
    assert (usage.retries, usage.calls, usage.failures) == (3, 1, 0)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_retry_after_is_honoured(provider: str, env: pytest.MonkeyPatch, server: LLMServer) -> None:
    sleeps = Sleeps()
    server.retry_after = 7
    server.push(429, "ok")
    with client_for(provider, server, retry=policy(sleeps)) as c:
        c.complete(MSGS)
    assert sleeps.calls == [7.0]
    server.retry_after_ms = 1500  # the millisecond header wins
    server.push(429, "ok")
    with client_for(provider, server, retry=policy(sleeps)) as c:
        c.complete([ChatMessage("user", "other")])
    assert sleeps.calls == [7.0, 1.5]
    server.retry_after, server.retry_after_ms = 500, None  # capped by max_retry_after
    server.push(429, "ok")
    with client_for(provider, server, retry=policy(sleeps, max_retry_after=60.0)) as c:
        c.complete([ChatMessage("user", "third")])
    assert sleeps.calls == [7.0, 1.5, 60.0]


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "2", "retry-after-ms": "250"}) == 0.25
    assert (
        parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0)
        == 10.0
    )
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_is_exponential_with_full_jitter() -> None:
    top = RetryPolicy(base_delay=0.5, max_backoff=10.0, random=lambda: 0.999999)
    assert [round(top.delay(n), 3) for n in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert RetryPolicy(random=lambda: 0.0).delay(5) == 0.0
    assert RetryPolicy().delay(3, retry_after=2.5) == 2.5


def test_timeouts_drops_and_garbage_are_retried(env: pytest.MonkeyPatch, server: LLMServer) -> None:
    server.hang_seconds = 300.0  # far past the timeout (the server's close ends it)
    server.push("hang", "drop", "garbage", "ok")
    sleeps = Sleeps()
    t0 = time.monotonic()
    # 3 s also bounds the healthy last request: a thousand times a loopback reply, even at load 10
    with client_for("openai", server, retry=policy(sleeps), timeout=3.0) as c:
        out = c.complete(MSGS)
    assert time.monotonic() - t0 < 60  # one 3-s timeout, not a 300-s hang
    assert out.text == "gpt-4o-mini heard: Where did Ann go?"
    assert server.count() == 4 and len(sleeps.calls) == 3


def test_gives_up_after_max_retries(env: pytest.MonkeyPatch, server: LLMServer) -> None:
    server.push(500, 500, 500, "ok")
    acc = TokenAccounting()
    with (
        client_for("openai", server, retry=policy(max_retries=2), accounting=acc) as c,
        pytest.raises(JudgeError) as exc,
    ):
        c.complete(MSGS)
    assert str(exc.value) == (
        "openai:gpt-4o-mini: 500 Internal Server Error (gave up after 3 attempts; "
        f"base URL {server.openai_base_url})"
    )
    assert server.count() == 3
    assert acc.by_role()["judge"].failures == 1


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "openai:gpt-4o-mini: 401 Unauthorized — check OPENAI_API_KEY"),
        (
            403,
            "openai:gpt-4o-mini: 403 Forbidden — the key in OPENAI_API_KEY "
            "may not use model 'gpt-4o-mini'",
        ),
        (400, "openai:gpt-4o-mini: 400 Bad Request — injected 400"),
        (
            404,
            "openai:gpt-4o-mini: 404 Not Found — check the model name 'gpt-4o-mini' "
            "and the base URL {url}",
        ),
    ],
)
def test_client_errors_fail_at_once(
    status: int, message: str, env: pytest.MonkeyPatch, server: LLMServer
) -> None:
    sleeps = Sleeps()
    server.push(status, "ok")
    with client_for("openai", server, retry=policy(sleeps)) as c, pytest.raises(JudgeError) as exc:
        c.complete(MSGS)
    assert str(exc.value) == message.format(url=server.openai_base_url)
    assert server.count() == 1 and sleeps.calls == []


def test_anthropic_401_names_its_variable(env: pytest.MonkeyPatch, server: LLMServer) -> None:
    server.api_key = "sk-the-right-one"
    with client_for("anthropic", server) as c, pytest.raises(JudgeError) as exc:
        c.complete(MSGS)
    assert str(exc.value) == (
        "anthropic:claude-sonnet-4-6: 401 Unauthorized — check ANTHROPIC_API_KEY"
    )
    assert server.count() == 1


# -- key redaction ----------------------------------------------------------------------------


def test_redact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-aaaa1111")
    monkeypatch.setenv("MY_LOCAL_KEY", "local-secret-9")
    monkeypatch.setenv("TOGETHER_API_KEY", "tg-secret-42")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")  # too short to be a secret: left alone
    text = "a sk-aaaa1111 b local-secret-9 c tg-secret-42 x"
    assert redact(text) == "a [REDACTED] b local-secret-9 c [REDACTED] x"
    assert redact(text, ["MY_LOCAL_KEY"]) == "a [REDACTED] b [REDACTED] c [REDACTED] x"


def test_canary_key_appears_nowhere(
    env: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        env.setenv(name, CANARY)
    texts: list[str] = []
    with LLMServer(reply=lambda m, model, p: f"CORRECT ({model})") as srv:
        with LLMCache(tmp_path / "cache") as cache:
            for provider in SPECS:
                with client_for(provider, srv, cache=cache) as c:
                    assert c.complete(MSGS).text.startswith("CORRECT")
                    assert c.complete(MSGS).cached
                    assert CANARY not in repr(c)
            srv.api_key = "sk-something-else"  # now every request is a 401 echoing the key sent
            for provider in SPECS:
                with client_for(provider, srv, cache=cache) as c:
                    with pytest.raises(JudgeError) as exc:
                        c.complete([ChatMessage("user", "uncached")])
                    texts.append(str(exc.value))
                    texts.append("".join(traceback.format_exception(exc.value)))
            srv.api_key = None
            srv.push(500, 500, 500)
            with client_for("openai", srv, cache=cache, retry=policy(max_retries=2)) as c:
                with pytest.raises(JudgeError) as exc:
                    c.complete([ChatMessage("user", "five hundred")])
                texts.append("".join(traceback.format_exception(exc.value)))
        sent = {r.api_key for r in srv.requests}
    assert sent == {CANARY}  # the key did reach the server ...
    assert len(texts) == 7
    for text in texts:  # ... and nowhere else
        assert CANARY not in text
        assert "CANARY" not in text
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert files
    for f in files:
        assert CANARY.encode() not in f.read_bytes()
    assert caplog.records
    for record in caplog.records:
        assert CANARY not in record.getMessage()


# -- concurrency ------------------------------------------------------------------------------


def test_concurrency_bound_is_shared_by_clients(env: pytest.MonkeyPatch) -> None:
    # each call stays in the server 0.5 s: time for three threads to be in flight at once even
    # when the scheduler is slow at high load (0.05 s raced it)
    with LLMServer(latency=0.5) as srv:
        sem = make_semaphore(3)
        answerer = client_for("openai", srv, concurrency=sem)
        judge = client_for("anthropic", srv, concurrency=sem)

        def call(i: int) -> str:
            c = answerer if i % 2 else judge
            return c.complete([ChatMessage("user", f"q{i}")]).text

        t0 = time.monotonic()
        texts = run_parallel(call, list(range(12)), max_workers=12)
        elapsed = time.monotonic() - t0
        answerer.close()
        judge.close()
        assert srv.max_in_flight == 3
    assert texts[1] == "gpt-4o-mini heard: q1" and texts[2] == "claude-sonnet-4-6 heard: q2"
    assert elapsed >= 4 * 0.5  # 12 calls / 3 at a time


def test_graded_runs_go_out_in_parallel(env: pytest.MonkeyPatch) -> None:
    # 2 s in the server: all ten threads get there first, however slow the scheduler (0.2 s raced)
    with LLMServer(latency=2.0, reply=lambda m, model, p: f"{p['temperature']}") as srv:
        with client_for("openai", srv, concurrency=make_semaphore(16)) as c:
            runs = run_parallel(
                lambda r: c.complete(MSGS, temperature=0.5, run_index=r).text, range(10), 10
            )
        assert srv.max_in_flight == 10  # all ten runs were in the server at once
    assert runs == ["0.5"] * 10


def test_run_parallel_order_and_errors() -> None:
    assert run_parallel(lambda x: x * x, list(range(50)), 8) == [x * x for x in range(50)]
    assert run_parallel(lambda x: x + 1, [1], 4) == [2]

    def boom(x: int) -> int:
        if x == 3:
            raise ValueError("three")
        return x

    with pytest.raises(ValueError, match="three"):
        run_parallel(boom, list(range(10)), 4)
    active = threading.active_count()
    run_parallel(lambda x: x, list(range(20)), 4)
    assert threading.active_count() == active  # the pool is shut down


# -- accounting -------------------------------------------------------------------------------


def test_accounting_merge_and_cost() -> None:
    a = TokenAccounting()
    a.record("answerer", "openai:gpt-4o-mini", input_tokens=1_000_000, output_tokens=100, calls=2)
    a.record("judge", "anthropic:claude-sonnet-4-6", input_tokens=2000, output_tokens=500, calls=1)
    a.record("judge", "openai:gpt-4o-mini", cache_hits=3, cache_misses=1, retries=2)
    b = TokenAccounting()
    b.record("judge", "openai:gpt-4o-mini", input_tokens=10, output_tokens=5, calls=1, cache_hits=1)
    merged = TokenAccounting()
    merged.merge(a.to_dict())
    merged.merge(json.loads(json.dumps(b.to_dict())))  # survives the JSON wire
    judge = merged.to_dict()["judge"]["openai:gpt-4o-mini"]
    assert judge == {
        "input_tokens": 10,
        "output_tokens": 5,
        "calls": 1,
        "cache_hits": 4,
        "cache_misses": 1,
        "retries": 2,
        "failures": 0,
    }
    roles = merged.by_role()
    assert roles["judge"].input_tokens == 2010 and roles["answerer"].calls == 2
    assert merged.total().calls == 4
    prices = {
        "gpt-4o-mini": {"input": 0.15, "output": 0.60},
        "anthropic:claude-sonnet-4-6": {"input": 3.0, "output": 15.0},
    }
    costs = merged.cost_by_role(prices)
    assert costs["answerer"] == pytest.approx(0.15 + 100 * 0.60 / 1e6)
    assert costs["judge"] == pytest.approx((2000 * 3 + 500 * 15 + 10 * 0.15 + 5 * 0.60) / 1e6)
    assert merged.cost(prices) == pytest.approx(costs["answerer"] + costs["judge"])  # type: ignore[operator]
    assert merged.cost({"gpt-4o-mini": {"input": 1, "output": 1}}) is None  # claude unpriced


# -- one primitive: send(request), complete(**kw) built on it -----------------------------------


def test_complete_is_written_once_on_the_protocol() -> None:
    """The 12-keyword ``complete`` exists once (``LLMClient.complete``); the client writes
    ``send`` and inherits it."""
    assert ProviderClient.complete is LLMClient.complete
    assert "complete" not in vars(ProviderClient)
    assert "send" in vars(ProviderClient)


def test_complete_sends_the_request_its_keywords_make() -> None:
    """A client that writes only ``send`` gets ``complete``: every keyword lands in the
    :class:`Request` (and ``role`` beside it), so the cache key is the one of that request."""

    @dataclasses.dataclass
    class Recording(LLMClient):
        sent: list[tuple[Request, str]] = dataclasses.field(default_factory=list)

        @property
        def label(self) -> str:
            return "fake:recording"

        def send(self, request: Request, *, role: str = "judge") -> Completion:
            self.sent.append((request, role))
            return Completion(text=f"{len(request.messages)} messages")

    client = Recording()
    extra = (("top_p", 0.9), ("seed", 7))
    out = client.complete(
        list(MSGS),
        temperature=None,
        max_tokens=None,
        run_index=3,
        role="answerer",
        json_mode=True,
        n=1,
        max_tokens_field="max_completion_tokens",
        stream=False,
        reasoning_effort="low",
        extra=extra,
    )
    assert out.text == "2 messages"
    expected = Request(MSGS, None, None, 3, True, 1, "max_completion_tokens", False, "low", extra)
    assert client.sent == [(expected, "answerer")]
    client.complete(MSGS)
    assert client.sent[1] == (Request(MSGS), "judge")  # the defaults of complete are Request's


@pytest.mark.parametrize("provider", list(SPECS))
def test_send_and_complete_share_cache_and_accounting(
    provider: str, env: pytest.MonkeyPatch, server: LLMServer, tmp_path: Path
) -> None:
    """``send(Request(...))`` and ``complete(...)`` of the same request are one cache entry under
    the same key (a hit the second time, no second HTTP request), counted for the given role."""
    acc = TokenAccounting()
    request = Request(MSGS, 0.0, 64, 2)
    with (
        LLMCache(tmp_path) as cache,
        client_for(provider, server, cache=cache, accounting=acc) as c,
    ):
        sent = c.send(request, role="answerer")
        completed = c.complete(MSGS, max_tokens=64, run_index=2, role="answerer")
        key = cache_key(
            provider=c.config.provider,
            model=c.config.model,
            base_url=c.config.base_url,
            request=request,
        )
        assert cache.get(key) is not None
    assert server.count() == 1
    assert not sent.cached and completed.cached and completed.text == sent.text
    usage = acc.by_role()["answerer"]
    assert (usage.calls, usage.cache_hits, usage.cache_misses) == (1, 1, 1)
