"""``--memeval=halumem`` end to end on a hand-written file in HaluMem's user-record shape: bm25
and a tiny conftest system implementing the optional ``dump`` hook, without xdist and with
``-n 2`` (the same numbers); every question collected, the question types as markers; what each
system stored reported per question (or UNSCORED with the reason for a system without ``dump``);
and judged under ``--memeval-protocol=halumem`` through the loopback server, the requests compared
with those the upstream-shaped ``evaluation_for_question`` (tests/fixtures/protocols/halumem)
builds for the same records."""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import XDIST_MODES, marked_ids, read_json
from halumem_upstream import load_judging, pooled_figures, upstream_user
from llm_server import OPENAI_PATH, LLMServer

from pytest_memeval.benchmarks.halumem import build
from pytest_memeval.systems import BM25System

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
            "--memeval-accept-unpinned",  # a small file at the release's path
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
    ids = marked_ids(pytester, "halumem", DATA, marker)
    assert len(ids) == count, ids


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


#: replies each judge reads its own key from (chosen per prompt, the same on both sides)
REPLIES = (
    '```json\n{"score": "2", "accuracy_score": "2", "is_included_in_golden_memories": "true", '
    '"evaluation_result": "Correct"}\n```',
    '```json {"score": 1, "accuracy_score": "1", "is_included_in_golden_memories": "True", '
    '"evaluation_result": "Hallucination"} ```',
    '```json {"score": "0", "accuracy_score": "0", "evaluation_result": "Omission"} ```',
    '```json {"score": "2|1|0", "accuracy_score": "x", "evaluation_result": "Correct"} ```',
    '```json {"score": 2, "accuracy_score": 2, "is_included_in_golden_memories": "false", '
    '"evaluation_result": "Correct"} ```',
)


def _reply(prompt: str) -> str:
    # the salt picks a mix on which upstream's aggregate divides by no zero (checked below)
    return REPLIES[hashlib.sha256(f"0:{prompt}".encode()).digest()[0] % len(REPLIES)]


def _judged_run(pytester: pytest.Pytester, mode: str, *extra: str) -> tuple[Any, dict[str, Any]]:
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=halumem",
        f"--memeval-data={DATA}",
        "--memeval-accept-unpinned",  # a small file at the release's path
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=halumem",
        f"--memeval-protocol-source={PROTOCOL}",
        "--memeval-judge=openai:gpt-4o",
        f"--memeval-json={out}",
        *extra,
        *XDIST_MODES[mode],
    )
    assert result.ret in (0, 1), result.stdout.str()
    return result, read_json(out)


def _upstream_storage(
    report: dict[str, Any], tools: bytes
) -> tuple[list[dict[str, Any]], Any] | None:
    """What upstream's pinned ``process_user`` sends and figures for the same users, the memories
    bm25 stored per session (its dump, by turn id) and our answers: (request bodies as the
    OpenAI SDK sends them, figures); None without a snapshot."""
    loaded = load_judging(tools, _reply)
    if loaded is None:
        return None
    ns, requests = loaded
    text = (DATA / "halumem" / "HaluMem-Medium.jsonl").read_text("utf-8")
    users = [json.loads(line) for line in text.splitlines()]
    conversations, _ = build("medium", users)
    answers = {q["question"]: q["prediction"] for run in report["runs"] for q in run["questions"]}
    results = []
    for user, conv in zip(users, conversations, strict=True):
        system = BM25System()
        system.ingest(conv)
        sessions = {t.id: i for i, s in enumerate(conv.sessions) for t in s.turns}
        extracted: dict[int, list[str]] = {}
        for memory in system.dump(conv.id):
            extracted.setdefault(sessions[memory.source_ids[0]], []).append(memory.text)
        results.append(ns["process_user"](1, upstream_user(user, extracted, answers), 1))
    bodies = [{k: v for k, v in r.items() if k != "timeout"} for r in requests]
    return bodies, pooled_figures(ns, results)


def _body(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True)


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_questions_and_storage_judged_as_upstream(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """QA, extraction and update judgments through the loopback server and the real OpenAI SDK:
    the request bodies are those upstream's pinned ``process_user`` (its ``llm_request_for_json``
    with a fake client) builds for the same users, stored memories and answers; the figures
    are upstream's ``aggregate_eval_results`` on its own readings of the same replies (so the
    same without xdist and with ``-n 2``); a rerun from the cache sends nothing and reports the
    same figures."""
    with LLMServer(reply=lambda messages, model, params: _reply(messages[0]["content"])) as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        result, report = _judged_run(pytester, mode, "--memsys=bm25")
        bodies = [r.body for r in srv.requests if r.path == OPENAI_PATH]
        if mode == "no-xdist":  # a rerun from the cache (once: the -n 2 run is the slow one)
            _, again = _judged_run(pytester, mode, "--memsys=bm25")
            assert srv.count(OPENAI_PATH) == len(bodies)  # all from the cache
            assert (
                again["runs"][0]["summary"]["halumem_official"]
                == (report["runs"][0]["summary"]["halumem_official"])
            )
    questions = {q["id"]: q for run in report["runs"] for q in run["questions"]}
    assert len(questions) == 4
    official = report["runs"][0]["summary"]["halumem_official"]
    assert official["conversations"] == official["conversations_total"] == 2
    assert official["granularity"] == {"session": 2}
    assert official["storage_unscored"] is None
    assert "HaluMem official" in result.stdout.str()
    # upstream's memory_type_accuracy: one row per type, from memory_type_accuracy's figures
    types = official["figures"]["memory_type_accuracy"]
    assert set(types) == {"Event Memory", "Persona Memory", "Relationship Memory"}
    for kind in types:
        label = f"{kind.split()[0].lower()} memory accuracy"
        (line,) = [x for x in result.outlines if x.lstrip("| ").startswith(label)]
        assert "memory_type_accuracy." + kind + ".memory_acc" in line
    # the QA prompts as the upstream-shaped evaluation_for_question builds them
    text = (DATA / "halumem" / "HaluMem-Medium.jsonl").read_text("utf-8")
    upstream_qa = _evaluation_for_question()
    want_qa = []
    for user in (json.loads(line) for line in text.splitlines()):
        n = 0
        for session in user["sessions"]:
            for qa in session.get("questions", []):
                n += 1
                got = questions[f"medium-{user['uuid']}-q{n}"]
                want_qa.append(
                    upstream_qa(
                        qa["question"],
                        qa["answer"],
                        "\n".join(e["memory_content"] for e in qa["evidence"]),
                        got["prediction"],
                    )
                )
    prompts = [b["messages"][0]["content"] for b in bodies]
    assert set(want_qa) <= set(prompts)
    for body in bodies:
        assert body["model"] == "gpt-4o" and body["temperature"] == 0.0
        assert body["max_tokens"] == 16384
        assert [m["role"] for m in body["messages"]] == ["user"]
    for q in questions.values():
        label = q["details"]["judge_halumem_official"]["details"]["label"]
        assert q["scores"]["judge_halumem_official"] == float(label == "Correct")
    assert report["provenance"]["protocol"]["name"] == "halumem"
    upstream = _upstream_storage(report, (PROTOCOL / "eval" / "eval_tools.py").read_bytes())
    if upstream is None:
        pytest.skip("no upstream HaluMem snapshot here: the storage requests were not compared")
    want_bodies, want_figures = upstream
    assert sorted(map(_body, bodies)) == sorted(map(_body, want_bodies))
    assert "error" not in want_figures
    assert official["figures"] == want_figures


def test_system_without_dump_has_storage_unscored(
    pytester: pytest.Pytester, server: LLMServer
) -> None:
    """A system without ``dump``: its extraction / update figures are UNSCORED with the reason
    (absent from the figures, never 0); QA is still judged, and no storage call is sent."""
    pytester.makeconftest(CONFTEST)
    result, report = _judged_run(pytester, "no-xdist", "--memsys=forgetful", "--memeval-limit=1")
    official = report["runs"][0]["summary"]["halumem_official"]
    assert "no dump(conversation_id)" in official["storage_unscored"]
    assert set(official["figures"]) == {"question_answering"}
    assert official["conversations"] == 0
    assert server.count(OPENAI_PATH) == 2  # the two questions' QA calls only
    out = result.stdout.str()
    assert "extraction recall" in out and "UNSCORED" in out


# --------------------------------------------------------------------------- a failing dump

BROKEN_DUMPS = (
    CONFTEST
    + """
import time

class DictDump(Keeper):
    def dump(self, conversation_id):
        return {"memories": list(self.stored)}

class NoneDump(Keeper):
    def dump(self, conversation_id):
        return None

class RaisingDump(Keeper):
    def dump(self, conversation_id):
        raise RuntimeError("storage backend\\nunreachable")

class SlowDump(Keeper):
    def dump(self, conversation_id):
        time.sleep(30)
        return list(self.stored)

@pytest.fixture
def dictdump():
    return DictDump

@pytest.fixture
def nonedump():
    return NoneDump

@pytest.fixture
def raising():
    return RaisingDump

@pytest.fixture
def slowdump():
    return SlowDump
"""
)

#: what each broken system's UNSCORED reason says
DUMP_FAILURES = {
    "dictdump": "returned dict",
    "nonedump": "returned NoneType",
    "raising": "raised RuntimeError: storage backend unreachable",
    "slowdump": "did not return within --memeval-timeout=2s",
}


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_failing_dump_leaves_qa_results_standing(pytester: pytest.Pytester, mode: str) -> None:
    """``dump`` feeds only the storage metrics: one returning a dict or None, raising, or running
    past --memeval-timeout leaves every question scored as with a working ``dump`` (keeper, the
    same search), the storage metrics UNSCORED with what went wrong, and no traceback."""
    pytester.makeconftest(BROKEN_DUMPS)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=halumem",
        f"--memeval-data={DATA}",
        f"--memsys=keeper,{','.join(DUMP_FAILURES)}",
        "--memeval-accept-unpinned",  # a small file at the release's path
        "--memeval-timeout=2",
        f"--memeval-json={out}",
        *XDIST_MODES[mode],
    )
    text = result.stdout.str()
    assert result.ret in (0, 1), text
    assert "Traceback" not in text and "run/_ingest.py" not in text, text
    rows = _rows(read_json(out))
    assert len(rows) == 4 * (1 + len(DUMP_FAILURES)), sorted(rows)
    for (system, qid), row in rows.items():
        assert row["status"] != "error", (system, qid, row)
        want = rows[("keeper", qid)]
        assert row["token_f1"] == want["token_f1"], (system, qid)
        if system == "keeper":
            assert row["stored"] is not None and row["unscored"] is None
            continue
        assert row["stored"] is None, (system, qid)
        assert DUMP_FAILURES[system] in row["unscored"], row["unscored"]
        assert "cannot be scored" in row["unscored"]


def test_failing_dump_storage_figures_unscored_with_the_reason(
    pytester: pytest.Pytester, server: LLMServer
) -> None:
    """Judged under the official protocol, a ``dump`` that raised leaves the extraction / update
    figures UNSCORED with what went wrong (not the "no dump method" reason) and QA judged."""
    pytester.makeconftest(BROKEN_DUMPS)
    result, report = _judged_run(pytester, "no-xdist", "--memsys=raising", "--memeval-limit=1")
    official = report["runs"][0]["summary"]["halumem_official"]
    assert DUMP_FAILURES["raising"] in official["storage_unscored"]
    assert set(official["figures"]) == {"question_answering"}
    assert server.count(OPENAI_PATH) == 2  # the two questions' QA calls only
    assert "UNSCORED: raising: dump(" in result.stdout.str()


# --------------------------------------------------------------------------- repeated users


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_repeated_uuids_are_refused(pytester: pytest.Pytester, mode: str) -> None:
    """A file whose users repeat (duplicate uuids) loaded with 8 items collected and 4 counted:
    it is a usage error naming the file, the record and the field, as LongMemEval-V2's
    duplicate ids are."""
    folder = pytester.path / "data" / "halumem"
    folder.mkdir(parents=True)
    lines = (DATA / "halumem" / "HaluMem-Medium.jsonl").read_text("utf-8").splitlines()
    path = folder / "HaluMem-Medium.jsonl"
    path.write_text("\n".join([*lines, *lines]) + "\n", "utf-8")
    result = pytester.runpytest(
        "--memeval=halumem",
        f"--memeval-data={folder.parent}",
        "--memsys=bm25",
        *XDIST_MODES[mode],
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    (line,) = [ln for ln in result.stderr.str().splitlines() if ln.startswith("ERROR:")]
    assert f"{path}, record user[{len(lines)}], field 'uuid': duplicate uuid 'u-alpha'" in line
    assert "(first used by user[0])" in line, line
