"""A question that kills its xdist worker (os._exit, a segfault) loses that question, not the run."""

from __future__ import annotations

import pytest
from conftest import read_json

CRASHING = """
import os
import pytest
from pytest_memeval.systems._builtin import BUILTIN_SYSTEMS

Base = BUILTIN_SYSTEMS["bm25"]

class CrashOnSearch(Base):
    def search(self, question, k):
        if question.id == "demo-1-q3":
            os._exit(13)
        return super().search(question, k)

class CrashOnIngest(Base):
    def ingest(self, conversation):
        if conversation.id == "demo-2":
            os._exit(13)
        return super().ingest(conversation)

class CrashAlways(Base):
    def search(self, question, k):
        os._exit(13)

@pytest.fixture(scope="session")
def crash_search():
    return CrashOnSearch

@pytest.fixture(scope="session")
def crash_ingest():
    return CrashOnIngest

@pytest.fixture(scope="session")
def crash_always():
    return CrashAlways
"""


def _run(pytester: pytest.Pytester, system: str, *extra: str) -> tuple[pytest.RunResult, dict]:  # type: ignore[type-arg]
    pytester.makeconftest(CRASHING)
    out = pytester.path / "out.json"
    result = pytester.runpytest(
        "--memeval=demo", f"--memsys={system}", "-n", "2", f"--memeval-json={out}", *extra
    )
    assert out.is_file(), result.stdout.str()
    return result, read_json(out)


def _statuses(report: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {q["id"]: q["status"] for run in report["runs"] for q in run["questions"]}


def test_crashing_question_is_an_error_and_the_rest_runs(pytester: pytest.Pytester) -> None:
    result, report = _run(pytester, "crash_search")
    statuses = _statuses(report)
    assert len(statuses) == 15
    assert statuses["demo-1-q3"] == "ERROR"
    assert all(s != "ERROR" for q, s in statuses.items() if q != "demo-1-q3"), statuses
    crashed = next(q for q in report["runs"][0]["questions"] if q["id"] == "demo-1-q3")
    assert "crashed" in crashed["error"] and "not run again" in crashed["error"]
    lost = report["provenance"]["lost"]
    assert [x["nodeid"] for x in lost] == ["memeval/demo/demo-1/crash_search::demo-1-q3"]
    assert lost[0]["crashed"] is True
    result.stdout.fnmatch_lines(["*1 question(s) produced no result of their own*crashed*"])
    assert "INTERNALERROR" not in result.stdout.str()
    # the crash itself is pytest-xdist's failed report: the run does not pass silently
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_conversation_that_crashes_twice_is_given_up(pytester: pytest.Pytester) -> None:
    """An ingestion that always crashes: the first question crashes a worker, the rest is tried
    once more on a new worker (the second crash), then given up; the other conversation runs."""
    result, report = _run(pytester, "crash_ingest")
    statuses = _statuses(report)
    assert len(statuses) == 15
    demo2 = {q: s for q, s in statuses.items() if q.startswith("demo-2-")}
    assert set(demo2.values()) == {"ERROR"} and len(demo2) == 7
    assert all(s != "ERROR" for q, s in statuses.items() if q.startswith("demo-1-"))
    lost = report["provenance"]["lost"]
    assert sum(1 for x in lost if x["crashed"]) == 2
    given_up = [x for x in lost if not x["crashed"]]
    assert len(given_up) == 5
    assert all("crashed 2 workers" in x["reason"] for x in given_up)
    assert "INTERNALERROR" not in result.stdout.str()


def test_restart_limit_ends_the_run_with_a_complete_report(pytester: pytest.Pytester) -> None:
    result, report = _run(pytester, "crash_always", "--max-worker-restart=1")
    statuses = _statuses(report)
    assert len(statuses) == 15  # every question accounted for
    assert set(statuses.values()) == {"ERROR"}
    reasons = [x["reason"] for x in report["provenance"]["lost"]]
    assert any("not run: the run stopped" in r for r in reasons)
    result.stdout.fnmatch_lines(["*maximum crashed workers reached*"])
    assert "INTERNALERROR" not in result.stdout.str()
