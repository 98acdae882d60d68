"""Issue 17, round two, item 8: an endpoint echoing the key in a 200 reply, a dead endpoint
(circuit breaker), retry-after caps, terminal escapes, absurd option values and unknown names."""

from __future__ import annotations

import json
import socket
from collections import Counter
from typing import Any

import pytest
from conftest import read_json
from llm_server import LLMServer

from pytest_memeval.llm._retry import CircuitBreaker, RetryPolicy
from pytest_memeval.records import QuestionResult
from pytest_memeval.report._terminal import escape_controls, render_wrong

pytestmark = pytest.mark.usefixtures("memeval_env")

KEY = "sk-echo-9f8e7d6c5b4a"


def _echo(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    """A 200 reply that quotes the Authorization header back (a misconfigured proxy)."""
    text = "\n".join(m["content"] for m in messages)
    if "ANSWER:" in text or ("Answer" in text and "label" not in text):
        return f"Authorization: Bearer {KEY}\nANSWER: beagle {KEY}"
    return json.dumps({"reasoning": f"saw header Bearer {KEY}", "label": "CORRECT"})


def test_key_echoed_in_a_200_reply_is_never_stored_or_printed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LLMServer(reply=_echo) as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        out = pytester.path / "out"
        out.mkdir()
        result = pytester.runpytest(
            "--memeval=demo",
            "--memsys=bm25",
            "--memeval-limit=2",
            "--memeval-answerer=openai:gpt-4o-mini",
            "--memeval-judge=openai:gpt-4o-mini",
            "--memeval-llm-retries=0",
            f"--memeval-cache-dir={out / 'cache'}",
            f"--memeval-json={out / 'r.json'}",
            f"--memeval-html={out / 'r.html'}",
            "-v",
        )
        assert srv.requests  # the endpoint was really called
    assert result.ret == 0, result.stdout.str()
    texts = {str(p): p.read_bytes().decode("latin-1") for p in out.rglob("*") if p.is_file()}
    texts["stdout"] = result.stdout.str() + result.stderr.str()
    assert [name for name, text in texts.items() if KEY in text] == []
    report = read_json(out / "r.json")
    questions = report["runs"][0]["questions"]
    assert any("[REDACTED]" in (q["prediction"] or "") for q in questions)
    assert any("[REDACTED]" in json.dumps(q["details"]) for q in questions)


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_circuit_breaker_stops_calling_a_dead_endpoint(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _dead_port()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-judge=openai:gpt-4o-mini",
        "--memeval-llm-retries=0",
        "--memeval-llm-circuit-breaker=2",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        f"--memeval-json={out}",
        "--memeval-llm-concurrency=1",  # one call at a time: the exact count
    )
    questions = read_json(out)["runs"][0]["questions"]
    statuses = Counter(q["status"] for q in questions)
    # two real connection failures, then no more calls: 11 judged questions UNSCORED
    assert statuses["ERROR"] == 2 and statuses["UNSCORED"] == 11, (statuses, result.stdout.str())
    # pipelined (a window of 4): the calls already in flight when it opens fail too, no more
    windowed = pytester.path / "w.json"
    pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-judge=openai:gpt-4o-mini",
        "--memeval-llm-retries=0",
        "--memeval-llm-circuit-breaker=2",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        f"--memeval-json={windowed}",
        "--memeval-llm-concurrency=4",
    )
    counts = Counter(q["status"] for q in read_json(windowed)["runs"][0]["questions"])
    # at most the breaker's 2 plus the 3 other calls in flight when it opens (a thread whose call
    # failed takes the next staged question at once, so one thread may make both of the 2)
    assert 2 <= counts["ERROR"] <= 2 + 4 - 1 and counts["ERROR"] + counts["UNSCORED"] == 13, counts
    unscored = [q for q in questions if q["status"] == "UNSCORED"]
    for q in unscored:
        error = q["details"]["judge_mem0"]["error"]
        assert "circuit breaker open: 2 calls in a row could not connect to" in error
        assert f"http://127.0.0.1:{port}/v1" in error
        assert "--memeval-llm-circuit-breaker=0" in error


def test_circuit_breaker_unit() -> None:
    breaker = CircuitBreaker(2)
    breaker.failure("http://x")
    assert not breaker.open
    breaker.success()
    breaker.failure("http://x")
    assert not breaker.open  # the success in between reset the count
    breaker.failure("http://x")
    assert breaker.open and "http://x" in breaker.message()
    never = CircuitBreaker(0)
    for _ in range(100):
        never.failure("http://x")
    assert not never.open


def test_retry_after_is_capped() -> None:
    assert RetryPolicy().delay(0, retry_after=3600.0) == 30.0
    assert RetryPolicy().delay(0, retry_after=2.0) == 2.0


# --------------------------------------------------------------------------- terminal escapes


def test_control_characters_are_printed_escaped() -> None:
    hostile = "\x1b]0;pwned\x07\x1b[2J\x9b31m"
    assert escape_controls(hostile) == "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m"
    assert escape_controls("tab\tnew\nline é") == "tab\tnew\nline é"
    result = QuestionResult(
        benchmark="demo",
        system="s",
        question_id="q\x1b[1m",
        conversation_id="c",
        category="single-hop",
        category_id=4,
        question=f"question {hostile}",
        gold=f"gold {hostile}",
        prediction=f"prediction {hostile}",
        status="WRONG",
    )
    lines = render_wrong([result], None)
    assert lines and not any(ch in "".join(lines) for ch in "\x1b\x07\x9b")
    assert any("\\x1b[2J" in line for line in lines)


HOSTILE_SYSTEM = """
import pytest
from pytest_memeval.records import Memory

class Hostile:
    def ingest(self, conversation):
        pass
    def search(self, question, k):
        return [Memory("memory \\x1b[2J\\x1b]0;title\\x07 text")]
    def answer(self, question):
        return "answer \\x1b[31mred\\x9b2J"

@pytest.fixture(scope="session")
def hostile():
    return Hostile()
"""


def test_terminal_summary_escapes_predictions(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(HOSTILE_SYSTEM)
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=hostile",
        "--memeval-limit=1",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
    )
    text = result.stdout.str()
    summary = text.split("memeval summary", 1)[1]
    assert "answer \\x1b[31mred\\x9b2J" in summary
    assert "\x1b" not in summary and "\x9b" not in summary


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--memeval-timeout=1e308"], ["--memeval-timeout='1e308'", "more than a week"]),
        (["--memeval-llm-timeout=1e300"], ["--memeval-llm-timeout='1e300'", "more than a week"]),
        (
            ["--memeval-baselines=mem0-f1-mem0,nope"],
            ["--memeval-baselines=mem0-f1-mem0,nope: unknown baseline 'nope';", "names from:"],
        ),
        (
            ["--memeval-variant=s"],
            ["--memeval-variant=s: demo has no variants", "longmemeval (oracle, s, m"],
        ),
        (["--memeval-llm-circuit-breaker=-1"], ["--memeval-llm-circuit-breaker", ">= 0"]),
    ],
    ids=["timeout", "llm-timeout", "baselines", "variant", "breaker"],
)
def test_absurd_or_unknown_option_values(
    pytester: pytest.Pytester, args: list[str], fragments: list[str]
) -> None:
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", f"--memeval-cache-dir={pytester.path / 'c'}", *args
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    for fragment in fragments:
        assert fragment in err, err


def test_known_baseline_names_are_accepted(pytester: pytest.Pytester) -> None:
    from pytest_memeval.analysis._baselines import BASELINES

    name = next(b.name for b in BASELINES if b.benchmark == "locomo")
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-limit=1",
        f"--memeval-baselines={name}",
        f"--memeval-cache-dir={pytester.path / 'c'}",
    )
    assert result.ret == 0, result.stderr.str()


def _judged(pytester: pytest.Pytester, cache: Any, *extra: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-limit=1",
        "--memeval-judge=openai:gpt-4o-mini",
        "--memeval-llm-retries=0",
        f"--memeval-cache-dir={cache}",
        *extra,
    )


def test_corrupt_llm_cache_is_a_usage_error_before_any_call(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache file that is not a database used to turn the cache off silently: every judge call
    paid again. Now the run stops before the first call, naming the file and the fix."""
    cache = pytester.path / "cache"
    (cache / "llm").mkdir(parents=True)
    db = cache / "llm" / "llm-cache.sqlite3"
    db.write_bytes(b"this is not an SQLite database" * 100)
    with LLMServer(reply=lambda m, model, p: '{"label": "CORRECT"}') as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        result = _judged(pytester, cache)
        assert srv.requests == []
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        err = result.stderr.str()
        assert str(db) in err and "--memeval-no-cache" in err and "delete the file" in err
        assert "Traceback" not in err
        # the way out the message names works, and leaves the file as it was
        ok = _judged(pytester, cache, "--memeval-no-cache")
        assert ok.ret == 0, ok.stdout.str()
        assert srv.requests
    assert db.read_bytes().startswith(b"this is not an SQLite database")


def test_cache_turned_off_mid_run_is_said_in_the_summary() -> None:
    from pytest_memeval.run._outputs import merge_outputs

    merged = merge_outputs(
        [
            {"cache": {"hits": 1}, "cache_off": ["/c/llm-cache.sqlite3: write failed: disk full"]},
            {"cache": {"hits": 2}, "cache_off": ["/c/llm-cache.sqlite3: write failed: disk full"]},
            {"cache": {"misses": 3}},
        ]
    )
    assert merged["cache"] == {"hits": 3, "misses": 3}
    assert merged["cache_off"] == ["/c/llm-cache.sqlite3: write failed: disk full"]
