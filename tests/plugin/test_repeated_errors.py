"""Issue 34.5: errors that repeat are said once. The first failure of a memory system shows its
traceback; a later one with the same type and message (the question's id aside) is one line
naming the first; after ``--memeval-max-repeated-errors=N`` identical failures in a row the
system's remaining questions are ERROR without running, with one summary line; the JSON report
keeps every question's error; other systems of the run are unaffected. Each test runs without
xdist and with ``-n 2`` (each worker counts its own questions)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import read_json

pytestmark = pytest.mark.usefixtures("memeval_env")

SYSTEMS = """
import pytest

class Broken:
    def ingest(self, conversation):
        pass
    def search(self, question, k):
        raise ConnectionError("memory service at 127.0.0.1:9 refused the connection")

class WrongType:
    def ingest(self, conversation):
        pass
    def search(self, question, k):
        return 42

@pytest.fixture(scope="session")
def broken():
    return Broken()

@pytest.fixture(scope="session")
def wrongtype():
    return WrongType()
"""

#: questions of the demo benchmark (two conversations: 8 and 7 questions)
DEMO = 15
STOPPED = "not run (repeated error)"
STOP_LINE = re.compile(
    r"^memeval: (\S+) failed with the same error (\d+) times in a row \((.+)\), the first at "
    r"(\S+): its (\d+) other question\(s\) there were not run and are reported as ERROR "
    r"\(--memeval-max-repeated-errors=(\d+); 0 never stops\)$"
)


#: a progress line: ``memeval/demo/demo-1/broken EEE... [ 53%]`` (no path under xdist)
PROGRESS = re.compile(r"^(?:memeval/\S+ )?([.ECWU]+) +\[ *\d+%\]$", re.MULTILINE)

#: a one-line repeated error in the ERRORS section. Anchored at the line's start: pytest's short
#: summary ("ERROR <node id> - <message>") repeats the message, cut at the terminal's width unless
#: the CI (or BUILD_NUMBER) environment variable is set, when it is whole and would match too
SAME_REFUSED = re.compile(
    r"^ConnectionError: .* refused the connection \(same error as (\S+)\)$", re.MULTILINE
)
SAME_INT = re.compile(r"^AdapterError: .* got int \(same error as (\S+)\)$", re.MULTILINE)


def _outcomes(out: str) -> dict[str, int]:
    """pytest's outcome line (its last line), ``not run (repeated error)`` included."""
    last = out.strip().splitlines()[-1]
    found = re.findall(r"(\d+) (not run \(repeated error\)|[a-z]+)", last)
    return {("error" if word == "errors" else word): int(n) for n, word in found}


def _run(
    pytester: pytest.Pytester, mode: list[str], *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytester.makeconftest(SYSTEMS)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo", f"--memeval-json={out}", "-p", "no:cacheprovider", *args, *mode
    )
    return result, read_json(out)


def _questions(report: dict[str, Any], system: str) -> list[dict[str, Any]]:
    return next(r["questions"] for r in report["runs"] if r["system"] == system)


def _stops(out: str) -> list[re.Match[str]]:
    return [m for line in out.splitlines() if (m := STOP_LINE.match(line)) is not None]


def test_a_broken_search_is_said_once_and_stopped(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    result, report = _run(
        pytester, run_mode, "--memsys=broken,bm25", "--memeval-max-repeated-errors=3"
    )
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    counts = _outcomes(out)
    stops = _stops(out)
    # one stop per process that ran broken's questions (under -n 2 each worker counts its own)
    assert 1 <= len(stops) <= (2 if run_mode else 1), out
    errors, stopped = counts["error"], counts[STOPPED]
    assert (errors, errors + stopped) == (3 * len(stops), DEMO), counts
    assert sum(int(m[5]) for m in stops) == stopped
    firsts = {m[4] for m in stops}
    for m in stops:
        assert (m[1], m[2], m[6]) == ("broken", "3", "3")
        assert m[3] == "ConnectionError: memory service at 127.0.0.1:9 refused the connection"
    # the first failure of each process keeps its traceback; the others are one line each
    assert out.count('raise ConnectionError("memory service') == len(stops), out
    assert out.count("ERROR at setup of") == errors
    same = SAME_REFUSED.findall(out)
    assert len(same) == errors - len(stops) and set(same) == firsts, out
    # the progress lines show every question of broken as E (stopped ones too)
    assert sum(m[1].count("E") for m in PROGRESS.finditer(out)) == DEMO, out
    # the JSON report keeps every question, each with its error
    questions = _questions(report, "broken")
    assert len(questions) == DEMO and {q["status"] for q in questions} == {"ERROR"}
    assert all(
        q["error"].startswith(
            "ConnectionError: memory service at 127.0.0.1:9 refused the connection"
        )
        for q in questions
    )
    not_run = [
        q for q in questions if "(not run: broken failed with this error 3 times" in q["error"]
    ]
    assert len(not_run) == stopped
    # bm25, run beside it, is unaffected: the same statuses and scores as alone
    alone, alone_report = _run(pytester, run_mode, "--memsys=bm25")
    assert alone.ret == 0, alone.stdout.str()

    def scored(rep: dict[str, Any]) -> dict[str, Any]:
        return {q["id"]: (q["status"], q["scores"]) for q in _questions(rep, "bm25")}

    assert scored(report) == scored(alone_report)
    assert len(scored(report)) == DEMO


def test_a_wrong_return_type_is_bounded_the_same_way(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    """The adapter-contract error names its question, so no two messages are equal: the
    question's id aside, they are the same error."""
    result, report = _run(
        pytester, run_mode, "--memsys=wrongtype", "--memeval-max-repeated-errors=4"
    )
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    counts = _outcomes(out)
    stops = _stops(out)
    assert 1 <= len(stops) <= (2 if run_mode else 1), out
    assert (counts["error"], counts["error"] + counts[STOPPED]) == (4 * len(stops), DEMO), counts
    for m in stops:
        assert m[3].startswith("AdapterError: memory system 'wrongtype', question ")
        assert m[3].endswith("search() must return a list of Memory objects or strings, got int")
    same = SAME_INT.findall(out)
    assert len(same) == counts["error"] - len(stops)
    questions = _questions(report, "wrongtype")
    assert len(questions) == DEMO
    assert all("search() must return a list of Memory objects" in q["error"] for q in questions)


def test_zero_never_stops(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    result, report = _run(pytester, run_mode, "--memsys=broken", "--memeval-max-repeated-errors=0")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert _outcomes(out) == {"error": DEMO}, out
    assert not _stops(out)
    tracebacks = out.count('raise ConnectionError("memory service')
    assert 1 <= tracebacks <= (2 if run_mode else 1)  # one per process that ran broken
    same = SAME_REFUSED.findall(out)
    assert len(same) == DEMO - tracebacks
    assert all("not run" not in q["error"] for q in _questions(report, "broken"))


def test_a_bad_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", "--memeval-max-repeated-errors=-1"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memeval-max-repeated-errors='-1': must be >= 0*"])
