"""``--memeval-estimate``: the run's LLM calls counted, none sent; measured against the real run on
the loopback server (call count exact, input tokens within 15 %).

CI time: in the ``-n 2`` variants the estimates under test run with ``-n 2``; the demo test's real
run too (an estimate under ``-n 2`` against a real run under ``-n 2``), while the LoCoMo test's real
run, the partly-warm test's smaller and full runs (references: what the estimate must match) and
the demo test's estimate on the warm cache (an estimate under ``-n 2`` subtracting cached requests
is the partly-warm test's) run without xdist: each ``-n 2`` run pays for starting two workers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import OPENAI_PATH, LLMServer, judge_reply

from pytest_memeval.llm import ChatMessage, counter_for, resolve_config

pytestmark = pytest.mark.usefixtures("memeval_env")

MODES = pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["no-n", "n2"])
MODEL = "openai:gpt-4o-mini"
LLM_ARGS = [
    "--memsys=bm25",
    f"--memeval-answerer={MODEL}",
    f"--memeval-judge={MODEL}",
]
FIRST = re.compile(
    r"^estimate: (\d+) LLM calls, (\d+) input tokens, ~\d+ output tokens, .+, wall ~.+$"
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer(reply=judge_reply, latency=0.0) as srv:
        for key, value in srv.env("sk-estimate-test").items():
            monkeypatch.setenv(key, value)
        yield srv


KEY_ENV = "OPENAI_API_KEY"


def _estimate(
    pytester: pytest.Pytester, server: LLMServer, *args: str, keyless: bool = False
) -> tuple[int, int, str]:
    """The estimate's calls, input tokens and output; ``keyless``: with the provider's key
    variable unset (nothing is sent, so nothing needs it)."""
    before = server.request_count
    with pytest.MonkeyPatch.context() as mp:
        if keyless:
            mp.delenv(KEY_ENV)
        result = pytester.runpytest(*args, "--memeval-estimate")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert server.request_count == before, "the estimate sent an LLM request"
    lines = out.splitlines()
    head = lines.index(next(line for line in lines if "memeval estimate" in line))
    match = FIRST.match(lines[head + 1])
    assert match is not None, lines[head + 1]
    return int(match.group(1)), int(match.group(2)), out


def _real_input_tokens(server: LLMServer) -> int:
    """The real requests' text, counted with the tokenizer the estimate used for the model."""
    counter = counter_for(resolve_config(MODEL))
    total = 0
    for request in server.requests:
        if request.path == OPENAI_PATH:
            messages = [ChatMessage(m["role"], m["content"]) for m in request.body["messages"]]
            total += counter.messages(messages)
    return total


def _block(out: str) -> list[str]:
    """The estimate block: its first line and the indented lines under it."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("estimate: "))
    end = next((i for i in range(at + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[at:end]


def _compare(
    pytester: pytest.Pytester,
    server: LLMServer,
    args: list[str],
    mode: list[str],
    real_mode: list[str],
    *,
    warm: bool = True,
    keyless: bool = False,
) -> None:
    """The estimate in ``mode`` against the real run in ``real_mode``; ``warm``: then an estimate
    without xdist finds nothing left to pay for."""
    calls, tokens, out = _estimate(pytester, server, *args, *mode, keyless=keyless)
    assert calls > 0
    assert f"tokenizer {MODEL}: " in out
    server.reset()
    real = pytester.runpytest(*args, *real_mode)
    assert real.ret in (0, 1), real.stdout.str()  # WRONG answers may fail items
    assert calls == server.count(OPENAI_PATH)
    sent = _real_input_tokens(server)
    assert abs(tokens - sent) <= 0.15 * sent, (tokens, sent)
    if not warm:
        return
    # the real run filled the cache: nothing is left to pay for (an estimate without xdist: one
    # under -n 2 subtracting cached requests is the partly-warm test's)
    warm_calls, warm_tokens, _ = _estimate(pytester, server, *args)
    assert (warm_calls, warm_tokens) == (0, 0)


@MODES
def test_estimate_matches_the_real_run_on_demo(
    pytester: pytest.Pytester, server: LLMServer, mode: list[str]
) -> None:
    cache = pytester.path / "cache"
    args = ["--memeval=demo", *LLM_ARGS, f"--memeval-cache-dir={cache}"]
    # the estimate without the key (nothing is sent) against the real run with it, both in mode
    _compare(pytester, server, args, mode, mode, keyless=True)
    assert len(list(cache.glob("runs/*"))) == 1  # the real run's; the estimates left none


@MODES
def test_estimate_matches_the_real_run_on_locomo(
    pytester: pytest.Pytester,
    server: LLMServer,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: list[str],
) -> None:
    """The estimate in mode; the real run, the reference, without xdist (the demo test compares
    an estimate and a real run both under -n 2)."""
    monkeypatch.setenv("MEMEVAL_DATA_DIR", str(data_dir))
    cache = pytester.path / "cache"
    args = ["--memeval=locomo", "--memeval-limit=1", *LLM_ARGS, f"--memeval-cache-dir={cache}"]
    _compare(pytester, server, args, mode, [], warm=False)  # a warm cache: the demo test


def test_estimate_writes_no_run_folder_and_no_cache_entry(
    pytester: pytest.Pytester, server: LLMServer
) -> None:
    cache = pytester.path / "cache"
    args = ["--memeval=demo", *LLM_ARGS, f"--memeval-cache-dir={cache}"]
    first, _, with_key = _estimate(pytester, server, *args)
    second, _, without_key = _estimate(pytester, server, *args, keyless=True)
    assert first == second == 15 + 13  # 15 answers, 13 judged (category 5 is not)
    # the same estimate with the key variable unset: the same requests and cache keys
    assert _block(with_key) == _block(without_key) and len(_block(with_key)) > 2
    assert not list(cache.glob("runs/*"))


def test_estimate_prices_and_rate_limits(pytester: pytest.Pytester, server: LLMServer) -> None:
    prices = pytester.path / "prices.json"
    prices.write_text('{"gpt-4o-mini": {"input": 1000000, "output": 0}}', encoding="utf-8")
    args = [
        "--memeval=demo",
        *LLM_ARGS,
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        f"--memeval-prices={prices}",
        "--memeval-llm-rpm=28",
    ]
    calls, tokens, out = _estimate(pytester, server, *args)
    head = next(line for line in out.splitlines() if line.startswith("estimate: "))
    assert f"${tokens:.4f}" in head  # 1 $ per input token
    assert calls == 28 and "wall ~60 s" in head and "--memeval-llm-rpm=28" in out


@MODES
def test_a_partly_warm_cache_is_subtracted_request_by_request(
    pytester: pytest.Pytester, server: LLMServer, mode: list[str]
) -> None:
    """Answers and verdicts a smaller run cached are not counted; the rest is exactly what the
    full run then sends (the estimate looked up the real cache keys). The estimate, under test,
    in mode; the smaller and the full run, its references, without xdist."""
    cache = pytester.path / "cache"
    args = ["--memeval=demo", *LLM_ARGS, f"--memeval-cache-dir={cache}"]
    small = pytester.runpytest(*args, "--memeval-limit=1")
    assert small.ret in (0, 1), small.stdout.str()
    cached = server.count(OPENAI_PATH)
    assert cached > 0
    calls, _, out = _estimate(pytester, server, *args, *mode)
    assert f"{cached} served from the LLM cache" in out
    server.reset()
    full = pytester.runpytest(*args)
    assert full.ret in (0, 1), full.stdout.str()
    assert calls == server.count(OPENAI_PATH) == 15 + 13 - cached


#: two memory systems that retrieve the same memories: every answer request of one repeats the
#: other's (the same prompt), and so does every judge request (the same placeholder answer)
TWINS = """
import pytest
from pytest_memeval import Memory

class Same:
    def ingest(self, conversation):
        self.turns = [t for s in conversation.sessions_by_date() for t in s.turns]
    def search(self, question, k):
        return [Memory(text=t.text, id=t.id) for t in self.turns[:k]]

@pytest.fixture(scope="session")
def twin_a():
    return Same()

@pytest.fixture(scope="session")
def twin_b():
    return Same()
"""


@MODES
def test_an_estimate_reads_as_an_estimate(pytester: pytest.Pytester, mode: list[str]) -> None:
    """Issue 34.4: nothing was judged, so no item is CORRECT or WRONG (a neutral progress letter,
    pytest's outcome line counts "estimated", --memeval-strict fails nothing), and on an empty
    cache nothing was served from it: a request repeated within the run is a repeat, not a hit.
    The estimate's first line is unchanged."""
    pytester.makeconftest(TWINS)
    cache = pytester.path / "cache"
    args = [
        "--memeval=demo",
        "--memsys=twin_a,twin_b",
        f"--memeval-answerer={MODEL}",
        f"--memeval-judge={MODEL}",
        f"--memeval-cache-dir={cache}",
        "--memeval-estimate",
        "-p",
        "no:cacheprovider",
    ]
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(KEY_ENV, raising=False)
        result = pytester.runpytest(*args, "--memeval-strict", *mode)
    out = result.stdout.str()
    assert result.ret == 0, out
    assert result.parseoutcomes() == {"estimated": 30}, out
    progress = [line for line in out.splitlines() if line.startswith(("memeval/", "."))]
    assert progress and not any(c in line for line in progress for c in "CWU"), progress
    assert not re.search(r"\b(correct|wrong)\b", out, re.IGNORECASE), out
    block = _block(out)
    assert FIRST.match(block[0]), block[0]
    by_role = re.search(
        r"calls by role: answerer (\d+), judge (\d+); 0 served from the LLM cache \(not counted\)"
        r"(?:; (\d+) repeats of a request of this run \(not counted again\))?$",
        block[1],
    )
    assert by_role is not None, block[1]
    calls, repeats = int(by_role[1]) + int(by_role[2]), int(by_role[3] or 0)
    assert calls == int(FIRST.match(block[0])[1])  # type: ignore[index]
    # 2 systems x (15 answers + 13 verdicts): each request is sent by one twin and repeated by the
    # other in one process; under -n 2 a pair split over the workers is counted by each
    assert calls + repeats == 2 * (15 + 13)
    if not mode:
        assert (calls, repeats) == (15 + 13, 15 + 13)
    assert not list(cache.glob("runs/*"))


@MODES
def test_repeated_requests_are_counted_as_the_real_run_pays_them(
    pytester: pytest.Pytester, server: LLMServer, mode: list[str]
) -> None:
    """Two systems with the same retrievals: the real run pays each answer and verdict once (the
    repeat is served from the cache it just wrote); so does the estimate, whose repeated answer
    is the first one's placeholder (the judge request built from it repeats too)."""
    pytester.makeconftest(TWINS)
    cache = pytester.path / "cache"
    args = [
        "--memeval=demo",
        "--memsys=twin_a,twin_b",
        f"--memeval-answerer={MODEL}",
        f"--memeval-judge={MODEL}",
        f"--memeval-cache-dir={cache}",
    ]
    _compare(pytester, server, args, mode, mode, warm=False)


@MODES
def test_the_wall_line_counts_the_window_each_process_can_fill(
    pytester: pytest.Pytester, server: LLMServer, mode: list[str]
) -> None:
    """demo: 15 questions in 2 conversations (28 calls: an answer each, 13 verdicts). With
    --memeval-ingest-ahead=0 a window of 16 holds one conversation's questions (7 of 15 / 2); each
    question's verdict follows its answer, so the last two calls run in a row. Under -n 2 each
    worker fills its own window of the same size."""
    calls, _, out = _estimate(
        pytester,
        server,
        "--memeval=demo",
        *LLM_ARGS,
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-llm-concurrency=16",
        "--memeval-ingest-ahead=0",
        *mode,
    )
    assert calls == 28
    block = _block(out)
    if mode:
        expected = "14 calls in flight (2 processes x a window of 7)"
        wall = "wall ~3 s"  # 28 / 14 + 1
    else:
        expected = "7 calls in flight (a window of 7)"
        wall = "wall ~5 s"  # 28 / 7 + 1
    assert block[0].endswith(wall), block
    assert (
        f"  wall time bound by {expected} x 1 s a call + the last question's 2 calls in a row"
        in block
    ), block
