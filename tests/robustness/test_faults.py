"""Fault injection (``-m faults``): a flaky, down or hanging LLM endpoint, memory systems that raise,
hang or return the wrong type, and many processes writing the LLM cache and the results store at
once. Each run completes, loses no question and counts what went wrong.

    python -m pytest -m faults tests/robustness/test_faults.py
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.pool
import random
import socket
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import read_json
from llm_server import OPENAI_PATH, LLMServer

from pytest_memeval.llm import Completion, LLMCache
from pytest_memeval.records import QuestionResult
from pytest_memeval.run._store import RESULTS_FILE, RunStore, read_results

pytestmark = [pytest.mark.faults, pytest.mark.usefixtures("memeval_env")]

KEY = "sk-faults-0a1b2c3d4e5f"
#: the demo question whose judge reply is prose instead of JSON (1 of the 13 judged questions)
GARBAGE_QUESTION = "What instrument does Tom play?"
JUDGE = "--memeval-judge=openai:gpt-4o-mini"


def judge_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    text = "\n".join(m["content"] for m in messages)
    if GARBAGE_QUESTION in text:
        return "Well, it depends on how you look at it."  # no JSON, no label
    verdict = "CORRECT" if "beagle" in text.lower() else "WRONG"
    return json.dumps({"reasoning": "compared with the reference", "label": verdict})


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--memeval=demo", f"--memeval-cache-dir={pytester.path / 'cache'}", *args
    )


def _env(monkeypatch: pytest.MonkeyPatch, server: LLMServer) -> None:
    for key, value in server.env(KEY).items():
        monkeypatch.setenv(key, value)


def _fault_script(n: int, seed: int) -> list[int | str]:
    """``n`` actions: 20% HTTP 429/500, 5% a 200 whose body is not JSON, the rest answered."""
    rng = random.Random(seed)
    out: list[int | str] = []
    for _ in range(n):
        x = rng.random()
        out.append(rng.choice((429, 500)) if x < 0.20 else "garbage" if x < 0.25 else "ok")
    return out


# --------------------------------------------------------------------------- LLM endpoint


def test_flaky_endpoint_loses_no_question(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _fault_script(60, seed=7)
    injected = Counter(a for a in script if a != "ok")
    assert injected[429] and injected[500] and injected["garbage"]
    # after the script: 20% 429/500 at random; retry-after 0 keeps 429 retries instant
    with LLMServer(reply=judge_reply, failure_rate=0.2, retry_after=0, seed=3) as srv:
        srv.push(*script)
        _env(monkeypatch, srv)
        out = pytester.path / "r.json"
        start = time.monotonic()
        result = _run(
            pytester,
            "--memsys=bm25",
            JUDGE,
            "--memeval-llm-retries=10",
            "--memeval-llm-backoff=0.01",
            f"--memeval-json={out}",
            "-n",
            "2",
        )
        elapsed = time.monotonic() - start
        requests = srv.requests
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    (run,) = report["runs"]
    questions = run["questions"]
    assert len(questions) == 15 and len({q["id"] for q in questions}) == 15  # none lost
    statuses = Counter(q["status"] for q in questions)
    assert statuses["ERROR"] == 0
    assert statuses["UNSCORED"] == 1  # the garbage judge reply, counted, not guessed
    assert run["summary"]["overall_all"]["statuses"]["UNSCORED"] == 1
    assert report["extra"]["judge_unscored"] == 1
    for q in questions:
        if q["category"] == "adversarial":
            continue
        if q["question"] == GARBAGE_QUESTION:
            assert q["status"] == "UNSCORED" and q["scores"].get("judge_mem0") is None
        else:
            assert q["scores"]["judge_mem0"] in (0.0, 1.0)
    # every request the server failed was retried until one succeeded: 13 answered requests, one
    # per judged question, however many faults came first
    actions = Counter(r.action for r in requests if r.path == OPENAI_PATH)
    faults = sum(n for a, n in actions.items() if a != "ok")
    assert actions["ok"] == 13
    assert actions["429"] and actions["500"] and actions["garbage"]  # all three kinds happened
    assert faults == len(requests) - 13
    tokens = report["extra"]["tokens"]["judge"]
    retries = sum(int(v.get("retries", 0)) for v in tokens.values())
    assert retries == faults  # each fault cost exactly one retry, within the cap of 10
    # a run of seconds at idle; the bound (a pytester -n 2 start takes ~40 s at load 14) catches
    # backoff that ignores --memeval-llm-backoff=0.01 across the ~15 faults
    assert elapsed < 180


def test_endpoint_down_errors_each_item_in_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    out = pytester.path / "r.json"
    start = time.monotonic()
    result = _run(
        pytester,
        "--memsys=bm25",
        JUDGE,
        "--memeval-llm-retries=0",
        "--memeval-llm-timeout=2",
        "--memeval-llm-circuit-breaker=0",  # every item tries (the breaker: test_robustness_llm)
        f"--memeval-json={out}",
    )
    assert time.monotonic() - start < 180  # no retries, no waits: seconds at idle
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors") == 13 and _answered(outcomes) == 2  # category 5 is not judged
    report = read_json(out)
    statuses = report["runs"][0]["summary"]["overall_all"]["statuses"]
    assert statuses["ERROR"] == 13
    errors = result.stdout.str().split("= ERRORS =")[1].split("memeval summary")[0]
    lines = [ln for ln in errors.splitlines() if ln.startswith("JudgeError: ")]
    assert len(lines) == 13  # one message line per item
    for line in lines:
        assert "JudgeError" in line and "connection failed" in line
        assert f"base URL http://127.0.0.1:{port}/v1" in line  # names where it tried
    assert KEY not in result.stdout.str() + result.stderr.str()


def _answered(outcomes: dict[str, int]) -> int:
    """Items that ran to a verdict (CORRECT and WRONG are both passing outcomes)."""
    return sum(outcomes.get(k, 0) for k in ("passed", "correct", "wrong"))


def test_hanging_endpoint_times_out(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LLMServer(reply=judge_reply, hang_seconds=300) as srv:  # far past the timeout
        srv.push(*["hang"] * 3)
        _env(monkeypatch, srv)
        start = time.monotonic()
        result = _run(
            pytester,
            "--memsys=bm25",
            JUDGE,
            "--memeval-llm-timeout=1",
            "--memeval-llm-retries=0",
            "-k",
            "demo-1-q1 or demo-1-q2 or demo-1-q3",
        )
        elapsed = time.monotonic() - start
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors") == 3, result.stdout.str()
    assert elapsed < 120  # three 1-second timeouts, not three 300-second hangs
    result.stdout.fnmatch_lines(["*timed out after 1s*"])


# --------------------------------------------------------------------------- memory systems

FAULTY_CONFTEST = """
import threading

import bm25s  # imported here, not by the first ingest: the timeout bounds milliseconds of work
import pytest
from pytest_memeval.systems._builtin import BM25System

class Faulty(BM25System):
    def search(self, question, k):
        if question.id == "demo-1-q1":
            raise RuntimeError("index corrupted for demo-1-q1")
        if question.id == "demo-1-q2":
            threading.Event().wait()  # a certain hang: nothing ever sets it
        if question.id == "demo-2-q1":
            return 42
        return super().search(question, k)

class NoneAnswer(BM25System):
    def answer(self, question):
        return None if question.id == "demo-2-q2" else "beagle"

@pytest.fixture(scope="session")
def faulty():
    return Faulty()

@pytest.fixture(scope="session")
def noneanswer():
    return NoneAnswer()
"""


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_faulty_memory_systems(pytester: pytest.Pytester, mode: list[str]) -> None:
    pytester.makeconftest(FAULTY_CONFTEST)
    out = pytester.path / "r.json"
    start = time.monotonic()
    result = _run(
        pytester,
        "--memsys=faulty,noneanswer",
        # bounds ingest and the healthy searches too: with bm25s imported by the conftest, a demo
        # conversation's ingest takes 7 ms and a search 0.3 ms, so 3 s is hundreds of times them
        # even at load 10; the hang is certain (an event nothing sets)
        "--memeval-timeout=3",
        f"--memeval-json={out}",
        *mode,
    )
    # the hung search() is abandoned after 3 s (were it not, the run would never end); the bound
    # leaves room for a pytester -n 2 start at high load
    assert time.monotonic() - start < 300
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors") == 4 and _answered(outcomes) == 26, result.stdout.str()
    report = read_json(out)
    runs = {r["system"]: r for r in report["runs"]}
    assert sorted(runs) == ["faulty", "noneanswer"]
    errored = {
        (name, q["id"]): q
        for name, r in runs.items()
        for q in r["questions"]
        if q["status"] == "ERROR"
    }
    assert sorted(errored) == [
        ("faulty", "demo-1-q1"),
        ("faulty", "demo-1-q2"),
        ("faulty", "demo-2-q1"),
        ("noneanswer", "demo-2-q2"),
    ]
    for name, r in runs.items():
        assert len(r["questions"]) == 15  # the others ran
        assert r["summary"]["overall_all"]["statuses"]["ERROR"] == (3 if name == "faulty" else 1)
    text = result.stdout.str()
    assert "index corrupted for demo-1-q1" in text
    assert "did not return within --memeval-timeout=3s" in text
    assert "search() must return a list of Memory objects or strings, got int" in text
    assert "answer() must return a string, got NoneType" in text


# --------------------------------------------------------------------------- cache and store


@contextmanager
def process_pool(n: int) -> Iterator[multiprocessing.pool.Pool]:
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads (3.12+)
        pool = ctx.Pool(n)
    with pool:
        yield pool


def _writer(args: tuple[str, int, int]) -> tuple[int, int]:
    """One 'xdist worker': its own LLMCache object on the shared file (half of its keys shared with
    every other worker, same value) and its own RunStore descriptor appending ~2 KB result lines to
    the same results.jsonl."""
    directory, worker, n = args
    cache = LLMCache(Path(directory) / "llm")
    store = RunStore(Path(directory) / "runs" / "r1")
    for i in range(n):
        cache.put(f"w{worker}-{i:05d}", Completion(f"text {worker}/{i}", i, worker))
        if i % 2 == 0:
            cache.put(f"shared-{i:05d}", Completion(f"shared {i}", i, 0))
        store.append(_result(worker, i))
    store.close()
    cache.close()
    return (1 if cache.enabled else 0), n


def _result(worker: int, i: int) -> QuestionResult:
    return QuestionResult(
        benchmark="demo",
        system=f"sys{worker}",
        question_id=f"q{i:05d}",
        conversation_id="c",
        cluster="c",  # stored results carry their cluster id explicitly
        category="single-hop",
        category_id=4,
        question="q" * 1000,
        gold="beagle",
        prediction=f"p {worker}/{i} " + "x" * 1000,
        status="CORRECT",
        scores={"f1": 1.0},
        nodeid=f"memeval/demo/c::q{i:05d}[sys{worker}]",
    )


def test_many_processes_write_cache_and_results(tmp_path: Path) -> None:
    workers, n = 4, 1500
    with process_pool(workers) as pool:
        results = pool.map(_writer, [(str(tmp_path), w, n) for w in range(workers)])
    assert results == [(1, n)] * workers  # no worker lost its cache to a lock error
    with LLMCache(tmp_path / "llm") as cache:
        assert cache.integrity_check() == "ok"
        assert len(cache) == workers * n + (n + 1) // 2  # no lost entry
        for w in range(workers):
            for i in range(0, n, 7):
                assert cache.get(f"w{w}-{i:05d}") == Completion(f"text {w}/{i}", i, w, True)
        assert cache.get("shared-00010") == Completion("shared 10", 10, 0, True)
    raw = (tmp_path / "runs" / "r1" / RESULTS_FILE).read_bytes()
    assert raw.count(b"\n") == workers * n  # every line whole: no interleaved appends
    stored = {r.nodeid: r for r in read_results(tmp_path / "runs" / "r1")}
    assert len(stored) == workers * n
    for w in range(workers):
        for i in range(0, n, 7):
            assert stored[f"memeval/demo/c::q{i:05d}[sys{w}]"] == _result(w, i)


# --------------------------------------------------------------------------- known defects
# Formerly strict xfails: fixed in pipeline.clean_text, MemevalItem._repr_failure_py and judging.


def test_lone_surrogate_answer_is_reported(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
import pytest
from pytest_memeval.systems._builtin import BM25System

class Odd(BM25System):
    def answer(self, question):
        return "bea\\ud800gle"

@pytest.fixture(scope="session")
def odd():
    return Odd()
""")
    out = pytester.path / "r.json"
    result = _run(pytester, "--memsys=odd", "-k", "demo-1-q1", f"--memeval-json={out}")
    assert result.ret == 0
    assert len(read_json(out)["runs"][0]["questions"]) == 1


def test_plugin_errors_are_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    result = _run(pytester, "--memsys=bm25", JUDGE, "--memeval-llm-retries=0", "-k", "demo-1-q1")
    text = result.stdout.str()
    assert "openai:gpt-4o-mini: openai:gpt-4o-mini" not in text
    section = text.split("= ERRORS =")[1].split("memeval summary")[0]
    assert "judging.py" not in section and "def judge(" not in section
