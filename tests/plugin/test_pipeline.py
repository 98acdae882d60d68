"""The pipelined LLM stage (``run.pipeline``): the same requests and results at any window, calls
overlapped across questions, and nothing paid twice on ``--memeval-resume`` after a kill."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import INNER_ADDOPTS, read_json, shared_pytester
from llm_server import OPENAI_PATH, LLMServer, judge_reply

pytestmark = pytest.mark.usefixtures("memeval_env")

MODES = pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["no-n", "n2"])
PIPELINE_KEY = "sk-pipeline-test"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer(reply=judge_reply, latency=0.05) as srv:
        for key, value in srv.env(PIPELINE_KEY).items():
            monkeypatch.setenv(key, value)
        yield srv


LLM_ARGS = [
    "--memeval=demo",
    "--memsys=bm25",
    "--memeval-answerer=openai:gpt-4o-mini",
    "--memeval-judge=openai:gpt-4o-mini",
]


def _rows(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each question's result row without its timings (the only thing a window may change)."""
    return {
        q["id"]: {k: v for k, v in q.items() if k != "latency"}
        for run in report["runs"]
        for q in run["questions"]
    }


def _stored(cache: Path) -> bool:
    return any(p.stat().st_size for p in cache.glob("runs/*/results.jsonl"))


def _bodies(server: LLMServer) -> Counter[str]:
    return Counter(json.dumps(r.body, sort_keys=True) for r in server.requests)


RPM = 600
N2 = ["-n", "2"]
REACH_SYSTEMS = ["--memsys=bm25,full-context"]
FLAGS = ("--memeval-rejudge", "--memeval-reanswer")


def _system_rows(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(system, question id) -> the question's result row without its timings."""
    return {
        (run["system"], q["id"]): {k: v for k, v in q.items() if k != "latency"}
        for run in report["runs"]
        for q in run["questions"]
    }


class Runs:
    """One mode's runs at some windows: their reports, the request bodies the server had from
    each, its most requests in flight during each and the requests of each (in order)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.reports: dict[int, dict[str, Any]] = {}
        self.bodies: dict[int, Counter[str]] = {}
        self.in_flight: dict[int, int] = {}
        self.requests: dict[int, list[Any]] = {}

    def cache(self, window: int) -> Path:
        return self.path / f"cache{window}"


class SharedRuns:
    """The window, reach and rejudge runs of this file, made once each (on first use) against one
    loopback server for the module, and read by several tests.

    Window 1 is the reference of both modes (as in
    :func:`test_a_thread_safe_system_is_searched_concurrently_with_the_results_of_window_1`):
    without xdist each test runs window 1 and window 32; with ``-n 2`` it runs window 32 and
    compares it with that window-1 run, not with a window-1 run of its own (which repeated it:
    no pipeline at window 1, the same results under xdist or not).

    - :meth:`window`: ``LLM_ARGS`` at windows 1 and 32 (``-n 2``: 32), each on a cache of its own.
      The ``-n 2`` run is also the run :func:`test_rpm_limit_is_shared_by_two_workers` reads (a
      run of its own before, the same ``LLM_ARGS`` at the default window):
      ``--memeval-llm-rpm=600``, its workers recording the limiter's send slots
      (:data:`SLOT_RECORDER`).
    - :meth:`reach`: the same with ``bm25,full-context``, every reply 0.3 s late.
    - :meth:`rejudged`: ``--memeval-rejudge`` then ``--memeval-reanswer`` on the cache of a window
      run of the mode (without xdist the window-1 run, at windows 1 and 32; with ``-n 2`` the
      window-32 run, at window 32); each test made a run of its own first, the same
      ``LLM_ARGS`` at the default window."""

    def __init__(
        self, request: pytest.FixtureRequest, factory: pytest.TempPathFactory, server: LLMServer
    ) -> None:
        self._request = request
        self._factory = factory
        self.server = server
        self._made: dict[tuple[str, tuple[str, ...]], Any] = {}

    def _tester(self) -> contextlib.AbstractContextManager[pytest.Pytester]:
        return shared_pytester(self._request, self._factory, self.server.env(PIPELINE_KEY))

    def _memo(self, kind: str, mode: list[str], make: Callable[[], Any]) -> Any:
        key = (kind, tuple(mode))
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    def window(self, mode: list[str]) -> Runs:
        return self._memo("window", mode, lambda: self._windows(mode, [], reach=False))

    def reach(self, mode: list[str]) -> Runs:
        return self._memo("reach", mode, lambda: self._windows(mode, REACH_SYSTEMS, reach=True))

    def _windows(self, mode: list[str], systems: list[str], *, reach: bool) -> Runs:
        server = self.server
        with self._tester() as tester:
            runs = Runs(tester.path)
            limited = mode == N2 and not reach
            if limited:
                tester.makeconftest(SLOT_RECORDER)
            for window in (32,) if mode else (1, 32):
                server.reset()
                if reach:
                    # at window 32 every judge call of demo-1 waits for its answer's reply; window
                    # 1 is the reference results only, which no latency changes (0.3 s there made
                    # the run 15 s long)
                    server.latency = 0.3 if window == 32 else 0.05
                else:
                    # at window 32 each call stays 0.5 s in the server, so that several
                    # questions' calls are in flight at once however slow the scheduler is (at
                    # 0.05 s that raced high load)
                    server.latency = 0.5 if window == 32 else 0.05
                out = tester.path / f"r{window}.json"
                rpm = [f"--memeval-llm-rpm={RPM}"] if limited else []
                with pytest.MonkeyPatch.context() as mp:
                    mp.setenv("MEMEVAL_TEST_SLOTS", str(tester.path / "slots.jsonl"))
                    result = tester.runpytest(
                        *LLM_ARGS,
                        *systems,
                        f"--memeval-cache-dir={runs.cache(window)}",
                        f"--memeval-llm-concurrency={window}",
                        f"--memeval-json={out}",
                        *rpm,
                        *mode,
                    )
                assert result.ret == 0, result.stdout.str()
                runs.reports[window] = read_json(out)
                runs.bodies[window] = _bodies(server)
                runs.in_flight[window] = server.max_in_flight
                runs.requests[window] = sorted(server.requests, key=lambda r: r.time)
            server.latency = 0.05
        return runs

    def rejudged(self, mode: list[str]) -> dict[tuple[str, int], dict[str, Any]]:
        """(flag, window) -> the rows of that run, without timings and details."""
        return self._memo("rejudged", mode, lambda: self._rejudge(mode))

    def _rejudge(self, mode: list[str]) -> dict[tuple[str, int], dict[str, Any]]:
        windows = (32,) if mode else (1, 32)
        cache = self.window(mode).cache(windows[0])  # a run of LLM_ARGS in this mode
        rows = {}
        with self._tester() as tester:
            for flag in FLAGS:
                for window in windows:
                    out = tester.path / f"{flag[2:]}{window}.json"
                    result = tester.runpytest(
                        *LLM_ARGS,
                        f"--memeval-cache-dir={cache}",
                        f"--memeval-llm-concurrency={window}",
                        flag,
                        f"--memeval-json={out}",
                        *mode,
                    )
                    assert result.ret == 0, result.stdout.str()
                    rows[flag, window] = {
                        k: {f: v for f, v in r.items() if f != "details"}
                        for k, r in _rows(read_json(out)).items()
                    }
        return rows


@pytest.fixture(scope="module")
def shared_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedRuns]:
    with LLMServer(reply=judge_reply, latency=0.05) as srv:
        yield SharedRuns(request, tmp_path_factory, srv)


@MODES
def test_window_1_and_32_send_the_same_requests_and_record_the_same_results(
    shared_runs: SharedRuns, mode: list[str]
) -> None:
    reference = shared_runs.window([])  # window 1 (and 32) without xdist
    runs = shared_runs.window(mode)
    reports = {1: reference.reports[1], 32: runs.reports[32]}
    bodies = {1: reference.bodies[1], 32: runs.bodies[32]}
    if not mode:
        # one process: only the pipeline can have several questions' calls in flight
        assert runs.in_flight[32] > 1
        assert runs.in_flight[1] == 1
    rows1, rows32 = _rows(reports[1]), _rows(reports[32])
    assert len(rows1) == 15 and rows1 == rows32
    assert sum(1 for r in rows1.values() if r["prediction"] == "beagle") > 5
    # the same requests (so the same cache keys), each sent once
    assert bodies[1] == bodies[32] and max(bodies[32].values()) == 1
    assert sum(bodies[32].values()) == 15 + 13  # 15 answers, 13 judged (category 5 is not)


@MODES
def test_rejudge_and_reanswer_through_the_window_match_window_1(
    shared_runs: SharedRuns, mode: list[str]
) -> None:
    reference = shared_runs.rejudged([])  # window 1 (and 32) without xdist
    rows = shared_runs.rejudged(mode)
    for flag in FLAGS:
        assert len(reference[flag, 1]) == 15 and reference[flag, 1] == rows[flag, 32], flag


def _conversation_of(body: Any, questions: dict[str, str]) -> str | None:
    text = json.dumps(body)
    found = {conv for question, conv in questions.items() if json.dumps(question)[1:-1] in text}
    return found.pop() if len(found) == 1 else None


@MODES
def test_window_reaches_into_the_next_conversation_in_one_process(
    shared_runs: SharedRuns, mode: list[str]
) -> None:
    """At -n 0 the window does not run dry at a conversation's start: the next conversation is
    ingested early (bm25 is a factory: a fresh instance) and its first calls are sent while the
    first conversation's are in flight; each conversation still ingested once per system, and the
    results those of window 1. Under xdist each worker gets one of the two conversations (the
    scheduler gives every worker one before any gets a second): the same results."""
    reference = shared_runs.reach([])  # window 1 (and 32) without xdist
    runs = shared_runs.reach(mode)
    reports = {1: reference.reports[1], 32: runs.reports[32]}
    for report in runs.reports.values():
        assert report["provenance"]["ingests"] == {"bm25": 2, "full-context": 2}
    rows1, rows32 = _system_rows(reports[1]), _system_rows(reports[32])
    assert len(rows1) == 30 and rows1 == rows32
    questions = {r["question"]: r["conversation"] for r in rows32.values()}
    order = [_conversation_of(r.body, questions) for r in runs.requests[32]]
    assert None not in order and set(order) == {"demo-1", "demo-2"}
    if not mode:
        # demo-2's first call went out before demo-1's last one (its judge calls wait 0.3 s)
        assert order.index("demo-2") < len(order) - 1 - order[::-1].index("demo-1")


# Two conftest systems that search alike (0.1 s each, so searches running at once overlap), one
# declaring itself thread-safe; each records the most searches its class had running at once in
# the process (one line per search, for the test to read).
SEARCH_SYSTEMS = """
import os
import threading
import time

import pytest


class _Recording:
    def ingest(self, conversation):
        self.turns = [t.text for s in conversation.sessions_by_date() for t in s.turns]

    def search(self, question, k):
        cls = type(self)
        with cls.lock:
            cls.running += 1
            cls.peak = max(cls.peak, cls.running)
        time.sleep(0.1)
        words = set(question.question.lower().split())
        found = [t for t in self.turns if words & set(t.lower().split())][: k - 1]
        found = [cls.__name__, *found]  # the two systems' answer requests always differ
        with cls.lock:
            cls.running -= 1
            with open(os.environ["MEMEVAL_TEST_PEAKS"], "a") as log:
                log.write(f"{cls.__name__} {os.getpid()} {cls.peak}\\n")
        return found


class SafeSystem(_Recording):
    thread_safe = True
    lock = threading.Lock()
    running = peak = 0


class SequentialSystem(_Recording):
    lock = threading.Lock()
    running = peak = 0


@pytest.fixture
def safe_sys():
    return SafeSystem


@pytest.fixture
def seq_sys():
    return SequentialSystem
"""


def test_a_thread_safe_system_is_searched_concurrently_with_the_results_of_window_1(
    pytester: pytest.Pytester, server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``thread_safe = True``: up to the window's questions searched at once, on the window's
    threads; without it, one search at a time. The same requests and results as window 1, without
    xdist and with ``-n 2`` (three runs, not four: window 1 is the reference of both)."""
    peaks_log = pytester.path / "peaks.txt"
    monkeypatch.setenv("MEMEVAL_TEST_PEAKS", str(peaks_log))
    pytester.makeconftest(SEARCH_SYSTEMS)
    rows: dict[str, dict[Any, Any]] = {}
    bodies = {}
    peaks: dict[str, dict[str, int]] = {}
    for name, window, mode in (("w1", 1, []), ("w8", 8, []), ("w8-n2", 8, ["-n", "2"])):
        server.reset()
        peaks_log.write_text("", encoding="utf-8")
        out = pytester.path / f"{name}.json"
        result = pytester.runpytest(
            "--memeval=demo",
            "--memsys=safe_sys,seq_sys",
            "--memeval-answerer=openai:gpt-4o-mini",
            "--memeval-limit=4",
            f"--memeval-cache-dir={pytester.path / f'cache-{name}'}",
            f"--memeval-llm-concurrency={window}",
            f"--memeval-json={out}",
            *mode,
        )
        assert result.ret in (0, 1), result.stdout.str()  # WRONG answers fail their items
        report = read_json(out)
        rows[name] = {
            (run["system"], q["id"]): {k: v for k, v in q.items() if k != "latency"}
            for run in report["runs"]
            for q in run["questions"]
        }
        bodies[name] = _bodies(server)
        peaks[name] = {}
        for line in peaks_log.read_text(encoding="utf-8").splitlines():
            system, _, peak = line.split()
            peaks[name][system] = max(peaks[name].get(system, 0), int(peak))
    assert peaks["w1"] == {"SafeSystem": 1, "SequentialSystem": 1}
    for name in ("w8", "w8-n2"):
        assert peaks[name]["SequentialSystem"] == 1, name
        assert peaks[name]["SafeSystem"] > 1, name
        assert rows[name] == rows["w1"], name
        assert bodies[name] == bodies["w1"], name
    assert len(rows["w1"]) == 16
    assert {r["status"] for r in rows["w1"].values()} <= {"CORRECT", "WRONG"}  # no error
    assert any(r["memories"] for r in rows["w1"].values())
    assert sum(bodies["w1"].values()) == 16 == len(bodies["w1"])  # each request sent once


KILLED_KEY = "sk-pipeline-killed"
RESUMED_KEY = "sk-pipeline-resumed"


def test_resume_after_sigkill_mid_window_pays_no_reply_twice(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    latency = 0.3
    with LLMServer(reply=judge_reply, latency=latency) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
        env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
        # each run sends its own key (not part of a cache key nor of the run), so a request of the
        # killed run that the server records late, after the kill, is still counted as the
        # killed run's: never as one the resumed run sent
        killed_env = {**env, **srv.env(KILLED_KEY)}
        cache = pytester.path / "cache"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            *LLM_ARGS,
            f"--memeval-cache-dir={cache}",
            "--memeval-llm-concurrency=4",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
        ]
        proc = subprocess.Popen(
            cmd,
            cwd=pytester.path,
            env=killed_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.time() + 120
        # a few results stored, more questions' calls in flight (a window of 4 sends its 8
        # staged questions' answers, then their verdicts: the first results are stored at the
        # third round, with 16 of the 28 calls still to send)
        while time.time() < deadline and (srv.count(OPENAI_PATH) < 12 or not _stored(cache)):
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)
        killed_at = time.time()
        proc.wait()
        out = pytester.path / "r.json"
        # the resumed run needs no process of its own (only the killed one did): in this one
        for key, value in srv.env(RESUMED_KEY).items():
            monkeypatch.setenv(key, value)
        done = pytester.runpytest(*cmd[3:], "--memeval-resume", f"--memeval-json={out}")
        assert done.ret == 0, done.stdout.str() + done.stderr.str()
    # read once the server is stopped: every request of the killed run has long been recorded
    requests = srv.requests
    # a request cut short by the kill reached the server without its body: never answered
    before = [r for r in requests if r.api_key == KILLED_KEY and r.body is not None]
    after = [r for r in requests if r.api_key == RESUMED_KEY]
    assert {r.api_key for r in requests} == {KILLED_KEY, RESUMED_KEY}
    assert all(r.body is not None for r in after)
    assert 12 <= len(before) < 28  # killed mid-run, calls in flight
    report = read_json(out)
    assert len(_rows(report)) == 15
    first = {json.dumps(r.body, sort_keys=True): r.time for r in before}
    again = [json.dumps(r.body, sort_keys=True) for r in after]
    repeated = [body for body in again if body in first]
    # only requests still waiting for their reply at the kill are sent again (at most the window)
    assert len(repeated) <= 4
    for body in repeated:
        assert first[body] > killed_at - latency - 1.0
    # none twice after the resume, and together every request of the run
    assert len(again) == len(set(again))
    assert len(set(first) | set(again)) == 28


# In the inner run's xdist workers (never in this process: the patch is undone at their end),
# records every send slot the rate limiter hands out, in its lock (so in order), its behaviour
# untouched: the server's receive times carry each process's scheduling delay after its slot (a
# late first request shortens the measured span), the slots are exactly what the limiter promises.
SLOT_RECORDER = """
import json
import os

from pytest_memeval.llm import _ratelimit as ratelimit

_update = ratelimit.RateLimiter._update


def _recording_update(self, change):
    def recorded(state, now):
        before = state.get("next_request")
        out = change(state, now)
        if self.rpm is not None and state.get("next_request") != before:
            slot = state["next_request"] - 60.0 / self.rpm
            with open(os.environ["MEMEVAL_TEST_SLOTS"], "a") as log:
                log.write(json.dumps([os.getpid(), slot]) + "\\n")
        return out

    return _update(self, recorded)


def pytest_configure(config):
    if hasattr(config, "workerinput"):  # a worker process: never the test's own process
        ratelimit.RateLimiter._update = _recording_update


def pytest_unconfigure(config):
    ratelimit.RateLimiter._update = _update
"""


def test_rpm_limit_is_shared_by_two_workers(shared_runs: SharedRuns) -> None:
    """600 a minute (10 a second) for the whole machine, not for each of the 2 workers."""
    rpm = RPM
    runs = shared_runs.window(N2)  # its window-32 run: LLM_ARGS, --memeval-llm-rpm=600, -n 2
    times = [r.time for r in runs.requests[32]]
    assert len(times) == 28
    taken = [json.loads(line) for line in (runs.path / "slots.jsonl").read_text().splitlines()]
    assert len(taken) == len(times)  # every request took a slot
    assert len({pid for pid, _ in taken}) == 2  # from one limiter shared by both workers
    slots = [slot for _, slot in taken]
    assert slots == sorted(slots)
    # never more than 10 % over the limit between any two of the run's requests: the slots are
    # the limiter's exact send times (each request waits for its own)
    gaps = [b - a for a, b in itertools.pairwise(slots)]
    assert min(gaps) >= 60.0 / rpm - 1e-6  # exactly the spacing of the limit
    assert (len(slots) - 1) / (slots[-1] - slots[0]) <= rpm / 60.0 * 1.1
    span = times[-1] - times[0]
    minimum = (len(times) - 1) * 60.0 / rpm  # 2.7 s at exactly the limit
    assert span < minimum * 4 + 10  # and not absurdly slow


def write_one_question_conversations(path: Path, count: int) -> Path:
    """A LongMemEval-shaped file (the official record fields) of ``count`` questions, each with a
    haystack of its own: ``count`` conversations of one question each."""
    records = []
    for i in range(count):
        pet = ("beagle", "poodle", "collie", "husky")[i % 4]
        sessions = [
            [
                {"role": "user", "content": f"I adopted a {pet} named Rex{i} last week."},
                {"role": "assistant", "content": "Congratulations on the new dog!"},
            ],
            [
                {"role": "user", "content": f"My sister lives in city number {i}."},
                {"role": "assistant", "content": "That sounds lovely."},
            ],
        ]
        records.append(
            {
                "question_id": f"{i:08x}",
                "question_type": "single-session-user",
                "question": f"What breed is Rex{i}?",
                "answer": pet,
                "question_date": "2023/05/30 (Tue) 23:40",
                "haystack_session_ids": [f"s{i}a", f"answer_s{i}b"],
                "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/21 (Sun) 11:00"],
                "haystack_sessions": sessions,
                "answer_session_ids": [f"answer_s{i}b"],
            }
        )
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


@MODES
def test_window_stays_full_over_one_question_conversations(
    pytester: pytest.Pytester, server: LLMServer, mode: list[str]
) -> None:
    """Every question its own conversation (LongMemEval's shape): the window of 8 reaches as many
    conversations ahead as it needs (ingesting each early), without xdist and on each ``-n 2``
    worker (the conversations the scheduler has sent it), so several questions' calls are in
    flight at once; the requests and results are window 1's, and each conversation is ingested
    once."""
    data = write_one_question_conversations(pytester.path / "lme_one.json", 12)
    base = [
        "--memeval=longmemeval",
        f"--memeval-variant={data}",
        "--memsys=bm25",
        "--memeval-answerer=openai:gpt-4o-mini",
        "--memeval-judge=openai:gpt-4o-mini",
    ]
    reports, bodies, in_flight = {}, {}, {}
    for window, latency, extra in ((1, 0.05, []), (8, 0.5, mode)):
        server.reset()
        server.latency = latency
        out = pytester.path / f"w{window}.json"
        result = pytester.runpytest(
            *base,
            f"--memeval-cache-dir={pytester.path / f'cache{window}'}",
            f"--memeval-llm-concurrency={window}",
            f"--memeval-json={out}",
            *extra,
        )
        assert result.ret == 0, result.stdout.str()
        reports[window] = read_json(out)
        bodies[window] = _bodies(server)
        in_flight[window] = server.max_in_flight
    rows1, rows8 = _rows(reports[1]), _rows(reports[8])
    assert len(rows1) == 12 and rows1 == rows8
    assert bodies[1] == bodies[8] and max(bodies[8].values()) == 1
    assert sum(bodies[8].values()) == 24  # an answer and a verdict per question
    assert reports[8]["provenance"]["ingests"] == {"bm25": 12}
    assert in_flight[1] == 1
    # a window that stopped at the next conversation (or, on a worker, at its own) held at most
    # two questions (one call each in flight) per process. A worker reads what the scheduler
    # sent it from pytest-xdist's queue, which has the lock it is read under from 3.7 on; with an
    # older xdist the worker's window stays in its current conversation (docs/scale.md)
    import xdist.remote

    if mode and not hasattr(xdist.remote, "TestQueue"):
        assert in_flight[8] >= 2, in_flight
    else:
        assert in_flight[8] >= 5, in_flight
