"""``--memeval=halumem`` end to end on a hand-written file in HaluMem's user-record shape: bm25
and a tiny conftest system implementing the optional ``dump`` hook, without xdist and with
``-n 2`` (the same numbers); every question collected, the question types as markers; what each
system stored reported per question (or UNSCORED with the reason for a system without ``dump``);
and judged under ``--memeval-protocol=halumem`` through the loopback server, the requests compared
with those the upstream-shaped ``evaluation_for_question`` (tests/fixtures/protocols/halumem)
builds for the same records."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import XDIST_MODES, read_json
from llm_server import OPENAI_PATH, LLMServer

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "halumem" / "data"

pytestmark = pytest.mark.usefixtures("memeval_env")

CONFTEST = """
import pytest
from pytest_memeval import Memory

class Keeper:
    def ingest(self, conversation):
        self.conv = conversation.id
        self.stored = [t.text for s in conversation.sessions for t in s.turns if t.speaker == "user"]
    def search(self, question, k):
        return [Memory(text=t) for t in self.stored[:k]]
    def dump(self, conversation_id):
        return list(self.stored) if conversation_id == self.conv else []

class Forgetful:
    def ingest(self, conversation):
        pass
    def search(self, question, k):
        return []

@pytest.fixture
def keeper():
    return Keeper

@pytest.fixture
def forgetful():
    return Forgetful
"""


def _rows(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (run["system"], q["id"]): {
            "status": q["status"],
            **q["scores"],
            "stored": q["details"].get("stored_memories"),
            "unscored": q["details"].get("stored_unscored"),
        }
        for run in report["runs"]
        for q in run["questions"]
    }


def test_same_numbers_without_and_with_xdist(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    reports = []
    for mode in XDIST_MODES.values():
        out = pytester.path / f"r{len(reports)}.json"
        result = pytester.runpytest(
            "--memeval=halumem",
            f"--memeval-data={DATA}",
            "--memsys=bm25,keeper,forgetful",
            f"--memeval-json={out}",
            *mode,
        )
        assert result.ret in (0, 1), result.stdout.str()
        reports.append(read_json(out))
    first, second = reports
    assert _rows(first) == _rows(second)
    rows = _rows(first)
    assert len(rows) == 12, sorted(rows)  # 4 questions x 3 systems
    assert all("token_f1" in r for r in rows.values())
    # bm25 stores every turn (alpha: 4 turns, beta: 2); keeper the user turns; forgetful no dump
    assert rows[("bm25", "medium-u-alpha-q1")]["stored"] == 4
    assert rows[("bm25", "medium-u-beta-q1")]["stored"] == 2
    assert rows[("keeper", "medium-u-alpha-q3")]["stored"] == 2
    forgetful = rows[("forgetful", "medium-u-beta-q1")]
    assert forgetful["stored"] is None and "no dump(conversation_id)" in forgetful["unscored"]
    assert first["provenance"]["datasets"]["halumem"]["questions_total"] == 4


@pytest.mark.parametrize(("marker", "count"), [("basic_fact_recall", 1), ("dynamic_update", 1)])
def test_question_types_are_markers(pytester: pytest.Pytester, marker: str, count: int) -> None:
    result = pytester.runpytest(
        "--memeval=halumem",
        f"--memeval-data={DATA}",
        "--memsys=bm25",
        "--collect-only",
        "-q",
        "-m",
        marker,
        "-p",
        "no:xdist",
    )
    assert result.ret == 0, result.stdout.str()
    ids = [line for line in result.outlines if "::" in line]
    assert len(ids) == count, result.stdout.str()


# --------------------------------------------------------------------------- official QA judge

PROTOCOL = Path(__file__).resolve().parent.parent / "fixtures" / "protocols" / "halumem"
KEY = "sk-loopback-halumem"
CORRECT = '```json\n{"evaluation_result": "Correct"}\n```'


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer(reply=lambda messages, model, params: CORRECT) as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        yield srv


def _evaluation_for_question() -> Any:
    """The upstream-shaped fixture's ``evaluation_for_question``, run from its source with the
    LLM call returning the prompt (test only)."""
    path = PROTOCOL / "eval" / "eval_tools.py"
    tree = ast.parse(path.read_text("utf-8"))
    keep = [n for n in tree.body if isinstance(n, ast.Assign | ast.FunctionDef)]
    ns: dict[str, Any] = {"llm_request_for_json": lambda prompt: prompt}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(path), "exec"), ns)
    return ns["evaluation_for_question"]


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_questions_judged_as_upstream(
    pytester: pytest.Pytester, server: LLMServer, mode: str
) -> None:
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=halumem",
        f"--memeval-data={DATA}",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=halumem",
        f"--memeval-protocol-source={PROTOCOL}",
        "--memeval-judge=openai:gpt-4o",
        f"--memeval-json={out}",
        *XDIST_MODES[mode],
    )
    assert result.ret in (0, 1), result.stdout.str()
    report = read_json(out)
    questions = {q["id"]: q for run in report["runs"] for q in run["questions"]}
    assert len(questions) == 4
    bodies = [r.body for r in server.requests if r.path == OPENAI_PATH]
    assert len(bodies) == 4
    text = (DATA / "halumem" / "HaluMem-Medium.jsonl").read_text("utf-8")
    records = [json.loads(line) for line in text.splitlines()]
    upstream = _evaluation_for_question()
    want = []
    for user in records:
        n = 0
        for session in user["sessions"]:
            for qa in session.get("questions", []):
                n += 1
                got = questions[f"medium-{user['uuid']}-q{n}"]
                want.append(
                    upstream(
                        qa["question"],
                        qa["answer"],
                        "\n".join(e["memory_content"] for e in qa["evidence"]),
                        got["prediction"],
                    )
                )
    assert sorted(b["messages"][0]["content"] for b in bodies) == sorted(want)
    for body in bodies:
        assert body["model"] == "gpt-4o" and body["temperature"] == 0.0
        assert body["max_tokens"] == 16384
        assert [m["role"] for m in body["messages"]] == ["user"]
    assert all(q["scores"]["judge_halumem_official"] == 1.0 for q in questions.values())
    assert report["provenance"]["protocol"]["name"] == "halumem"
