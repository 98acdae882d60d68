"""Issue 17, round two: ordinary adapter values (numpy scalars, ``None`` fields, a single id
string, generators) never abort the session; values with no plain form error their question only;
``--memeval-top-k`` is enforced; lazy search results are consumed inside ``--memeval-timeout``."""

from __future__ import annotations

import time
from datetime import date, datetime

import numpy as np
import pytest
from conftest import read_json

from pytest_memeval.errors import AdapterError
from pytest_memeval.records import Memory
from pytest_memeval.systems._contract import (
    materialise,
    normalise_answer,
    normalise_memories,
    normalise_memory,
)

pytestmark = pytest.mark.usefixtures("memeval_env")

MODES = pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["n0", "n2"])

ODD_CONFTEST = """
import numpy as np
import pytest
from pytest_memeval.records import Memory
from pytest_memeval.systems._builtin import BM25System

class Odd(BM25System):
    def search(self, question, k):
        found = super().search(question, k)
        q = question.id
        if q == "demo-1-q1":  # numpy scalars everywhere
            return [Memory(np.str_(m.text), id=np.int64(i), score=np.float32(0.5),
                           source_ids=[np.str_(s) for s in m.source_ids])
                    for i, m in enumerate(found)]
        if q == "demo-1-q2":
            return [Memory(m.text, source_ids=None) for m in found]
        if q == "demo-1-q3":
            return [Memory(m.text, score="0.9") for m in found]
        if q == "demo-1-q4":
            return [Memory(m.text, score=10**400) for m in found]
        if q == "demo-1-q5":
            return [Memory("Tom adopted a beagle", source_ids="D1:6")]
        if q == "demo-2-q1":
            return {"a": Memory("x")}
        if q == "demo-2-q2":
            return [Memory(123)]
        if q == "demo-2-q3":
            return (m for m in found)  # a generator
        return found

class NumpyAnswer(BM25System):
    def answer(self, question):
        return np.str_("a beagle")

@pytest.fixture(scope="session")
def odd():
    return Odd()

@pytest.fixture(scope="session")
def npanswer():
    return NumpyAnswer()
"""

BAD = {
    "demo-1-q3": "field 'score': expected a number or None, got str: '0.9'",
    "demo-1-q4": "field 'score': expected a number within float range",
    "demo-2-q1": "search() must return a list of Memory objects or strings, got dict",
    "demo-2-q2": "field 'text': expected a string (Memory(text=...)), got int: 123",
}


@MODES
def test_numpy_and_none_values_run_and_bad_values_error_one_question(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    pytester.makeconftest(ODD_CONFTEST)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=odd,npanswer",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        f"--memeval-json={out}",
        *mode,
    )
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text  # the four errors, nothing worse
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors") == len(BAD), text
    report = read_json(out)
    runs = {r["system"]: r for r in report["runs"]}
    questions = {q["id"]: q for q in runs["odd"]["questions"]}
    assert len(questions) == 15
    errored = sorted(q for q, v in questions.items() if v["status"] == "ERROR")
    assert errored == sorted(BAD)
    for qid, message in BAD.items():
        line = f"AdapterError: memory system 'odd', question {qid}: "
        assert any(ln.startswith(line) and message in ln for ln in text.splitlines()), (qid, text)
    first = questions["demo-1-q1"]
    assert first["memories"] and all(m["score"] == 0.5 for m in first["memories"])
    assert [m["id"] for m in first["memories"]][:3] == ["0", "1", "2"]
    assert "evidence_recall" in first["scores"]
    assert all(m["source_ids"] == [] for m in questions["demo-1-q2"]["memories"])
    single = questions["demo-1-q5"]
    assert single["memories"][0]["source_ids"] == ["D1:6"]
    assert single["scores"]["evidence_recall"] == 0.5  # D1:6 of its D1:6 + D2:1, not "D", "1"
    assert questions["demo-2-q3"]["status"] != "ERROR" and questions["demo-2-q3"]["memories"]
    answered = runs["npanswer"]["questions"]
    assert len(answered) == 15 and {q["prediction"] for q in answered} == {"a beagle"}
    assert all(q["status"] != "ERROR" for q in answered)


TOPK_CONFTEST = """
import pytest
from pytest_memeval.records import Memory

class Greedy:
    def ingest(self, conversation):
        pass
    def search(self, question, k):
        # the evidence of demo-1-q1 (D1:6) comes second: top-1 must not see it
        return [Memory("Tom walks in the park", source_ids=("D9:9",)),
                Memory("Tom adopted a beagle", source_ids=("D1:6",)),
                Memory("Tom likes tea", source_ids=("D9:8",))]

@pytest.fixture(scope="session")
def greedy():
    return Greedy()
"""


@MODES
def test_top_k_is_enforced_in_rank_order(pytester: pytest.Pytester, mode: list[str]) -> None:
    pytester.makeconftest(TOPK_CONFTEST)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=greedy",
        "--memeval-top-k=1",
        "--memeval-limit=1",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        f"--memeval-json={out}",
        *mode,
    )
    assert result.ret == 0, result.stdout.str()
    questions = {q["id"]: q for q in read_json(out)["runs"][0]["questions"]}
    q1 = questions["demo-1-q1"]
    assert [m["text"] for m in q1["memories"]] == ["Tom walks in the park"]
    assert q1["details"]["memories_returned"] == 3
    assert q1["details"]["truncated"] is True
    assert q1["scores"]["evidence_recall"] == 0.0  # the 2nd memory does not count at k=1


SLOW_GENERATOR_CONFTEST = """
import threading

import bm25s  # imported here, not by the first ingest: the timeout bounds milliseconds of work
import pytest
from pytest_memeval.systems._builtin import BM25System

class Lazy(BM25System):
    def search(self, question, k):
        found = super().search(question, k)
        def slow():
            if question.id == "demo-1-q1":
                threading.Event().wait()  # a certain hang: nothing ever sets it
            yield from found
        return slow()

@pytest.fixture(scope="session")
def lazy():
    return Lazy()
"""


@MODES
def test_timeout_covers_a_lazy_search_result(pytester: pytest.Pytester, mode: list[str]) -> None:
    pytester.makeconftest(SLOW_GENERATOR_CONFTEST)
    out = pytester.path / "r.json"
    start = time.monotonic()
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=lazy",
        # bounds ingest and the healthy searches too: with bm25s imported by the conftest, a demo
        # conversation's ingest takes 7 ms and a search 0.3 ms, so 3 s is hundreds of times them
        # even at load 10; the hang is certain (an event nothing sets)
        "--memeval-timeout=3",
        "--memeval-limit=2",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        f"--memeval-json={out}",
        *mode,
    )
    # the hung search is abandoned after 3 s (were it not, the run would never end); the bound
    # leaves room for a pytester -n 2 start at high load
    assert time.monotonic() - start < 300
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes().get("errors") == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*search() did not return within --memeval-timeout=3s*"])
    questions = {q["id"]: q for q in read_json(out)["runs"][0]["questions"]}
    assert questions["demo-1-q1"]["status"] == "ERROR"
    assert all(q["status"] != "ERROR" for i, q in questions.items() if i != "demo-1-q1")


# --------------------------------------------------------------------------- the pure boundary


def _memory(**fields: object) -> Memory:
    return normalise_memory(Memory(**fields), system="s", question_id="q1")  # type: ignore[arg-type]


def test_normalise_memory_plain_types() -> None:
    m = _memory(
        text=np.str_("t"),
        id=np.int32(7),
        score=np.float64(0.25),
        source_ids=np.array(["D1:1", "D1:2"]),
        date=date(2024, 5, 1),
    )
    assert type(m.text) is str and m.id == "7" and type(m.score) is float and m.score == 0.25
    assert m.source_ids == ("D1:1", "D1:2") and all(type(s) is str for s in m.source_ids)
    assert m.date == datetime(2024, 5, 1)
    assert _memory(text="t", source_ids=None).source_ids == ()
    assert _memory(text="t", source_ids="D1:3").source_ids == ("D1:3",)
    assert _memory(text="t", source_ids=3).source_ids == ("3",)
    assert _memory(text="t", score=float("nan")).score is None
    assert _memory(text="t", score=3).score == 3.0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"text": None}, "field 'text'"),
        ({"text": "t", "score": "0.9"}, "field 'score'"),
        ({"text": "t", "score": True}, "field 'score'"),
        ({"text": "t", "score": 10**400}, "field 'score': expected a number within float range"),
        ({"text": "t", "id": 1.5}, "field 'id'"),
        ({"text": "t", "source_ids": {"D1:1": 1}}, "field 'source_ids'"),
        ({"text": "t", "source_ids": [None]}, "field 'source_ids'"),
        ({"text": "t", "date": 20240501}, "field 'date'"),
    ],
)
def test_normalise_memory_refuses_with_the_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(AdapterError, match="memory system 's', question q1: search") as info:
        _memory(**fields)
    assert message in str(info.value)


def test_search_results_and_answers() -> None:
    assert materialise(iter(["a"])) == ["a"]
    assert materialise(x for x in "ab") == ["a", "b"]
    found = {"a": 1}
    assert materialise(found) is found  # refused later, never iterated as keys
    with pytest.raises(AdapterError, match="got dict"):
        normalise_memories(found, system="s", question_id="q1")
    with pytest.raises(AdapterError, match="got str"):
        normalise_memories("text", system="s", question_id="q1")
    assert normalise_memories(["a", Memory("b")], system="s", question_id="q1")[0] == Memory("a")
    answer = normalise_answer(np.str_("x"), system="s", question_id="q1")
    assert type(answer) is str and answer == "x"
    with pytest.raises(AdapterError, match="question q1: answer"):
        normalise_answer(b"x", system="s", question_id="q1")
