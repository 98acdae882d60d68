"""``--memeval=memoryagentbench`` end to end on hand-written split files in the Hugging Face
records' shape: bm25 without xdist and with ``-n 2`` (the same numbers), every question collected,
the splits as markers; and judged under ``--memeval-protocol=memoryagentbench`` through the
loopback server, the requests compared with those the upstream-shaped judge code
(tests/fixtures/protocols/memoryagentbench) builds for the same records."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import XDIST_MODES, marked_ids, read_json, status_scores
from llm_server import OPENAI_PATH, LLMServer

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "memoryagentbench" / "data"

pytestmark = pytest.mark.usefixtures("memeval_env")


def test_bm25_same_numbers_without_and_with_xdist(pytester: pytest.Pytester) -> None:
    reports = []
    for mode in XDIST_MODES.values():
        out = pytester.path / f"r{len(reports)}.json"
        result = pytester.runpytest(
            "--memeval=memoryagentbench",
            f"--memeval-data={DATA}",
            "--memeval-accept-unpinned",  # a small file at the release's path
            "--memsys=bm25",
            f"--memeval-json={out}",
            *mode,
        )
        assert result.ret in (0, 1), result.stdout.str()
        reports.append(read_json(out))
    first, second = reports
    assert status_scores(first) == status_scores(second)
    (run,) = first["runs"]
    assert run["summary"]["overall"]["count"] == 8  # every question of the three files
    scored = [q for q in run["questions"] if q["scores"].get("mab_score") is not None]
    versions = first["provenance"]["versions"]
    assert len(scored) == (8 if versions.get("editdistance") else 6)  # recsys: the extra
    ds = first["provenance"]["datasets"]["memoryagentbench"]
    assert ds["questions_total"] == 8
    assert "memoryagentbench/entity2id.json" in ds["sha256"]
    if versions.get("rouge-score"):  # the [memoryagentbench] extra
        rouge = [q["scores"].get("rougeLsum_f1") for q in run["questions"]]
        assert len([v for v in rouge if isinstance(v, float)]) == 6  # all but recsys
        assert any(v for v in rouge)


_NO_ROUGE = """
import sys

sys.modules["rouge_score"] = None  # as if rouge-score were not installed (workers too)
from pytest_memeval.benchmarks.memoryagentbench._scorer import shared_rouge_scorer

shared_rouge_scorer.cache_clear()
"""


@pytest.mark.parametrize("mode", XDIST_MODES.values(), ids=XDIST_MODES.keys())
def test_without_rouge_score_rouge_is_unscored_and_the_extra_named(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    import sys

    from pytest_memeval.benchmarks.memoryagentbench import shared_rouge_scorer

    monkeypatch.setitem(sys.modules, "rouge_score", None)  # restored after the in-process run
    pytester.makeconftest(_NO_ROUGE)
    out = pytester.path / "r.json"
    try:
        result = pytester.runpytest(
            "--memeval=memoryagentbench",
            f"--memeval-data={DATA}",
            "--memeval-accept-unpinned",  # a small file at the release's path
            "--memsys=bm25",
            "--memeval-limit=1",
            f"--memeval-json={out}",
            *mode,
        )
    finally:
        shared_rouge_scorer.cache_clear()
    assert result.ret in (0, 1), result.stdout.str()
    (run,) = read_json(out)["runs"]
    assert run["questions"]
    for q in run["questions"]:
        if "recsys_recall@5" in q["scores"]:
            continue  # recommendation: no ROUGE upstream
        assert q["scores"]["mab_score"] is not None
        assert all(q["scores"][m] is None for m in ("rougeL_f1", "rougeLsum_recall"))
    note = (
        "UNSCORED rougeL_f1, rougeL_recall, rougeLsum_f1, rougeLsum_recall: rouge-score is not "
        "installed: pip install 'pytest-memeval[memoryagentbench]'"
    )
    assert any(n.startswith(note) for n in run["summary"]["notes"]), run["summary"]["notes"]
    assert any(line.startswith(f"  note: {note}") for line in result.outlines)


@pytest.mark.parametrize(
    ("marker", "count"),
    [("Accurate_Retrieval", 3), ("Conflict_Resolution", 2), ("Test_Time_Learning", 3)],
)
def test_splits_are_markers(pytester: pytest.Pytester, marker: str, count: int) -> None:
    ids = marked_ids(pytester, "memoryagentbench", DATA, marker)
    assert len(ids) == count, ids


# --------------------------------------------------------------------------- official judge

PROTOCOL = Path(__file__).resolve().parent.parent / "fixtures" / "protocols" / "memoryagentbench"
KEY = "sk-loopback-mab"
_CONTEXT = "I moved to Lisbon in 2019. Later I adopted a cat named Miso. My brother lives in Oslo. "
_RECORDS = [
    {
        "context": _CONTEXT * 3,
        "questions": ["Where did I move?", "What is my dog's name?"],
        "answers": [["Lisbon"], "You never mentioned a dog."],
        "metadata": {
            "source": "longmemeval_s_-1_500",
            "question_ids": ["e47becba", "e47becba_abs"],
            "question_types": ["single-session-user", "single-session-user"],
        },
    },
    {
        "context": _CONTEXT * 2,
        "questions": ["Where does my brother live?", "Which city first?"],
        "answers": [["Oslo"], ["Lisbon"]],
        "metadata": {"source": "eventqa_full"},
    },
    {  # one question: upstream's judge sends answers[0] ("Oslo", not "['Oslo']")
        "context": _CONTEXT,
        "questions": ["Where does my brother live?"],
        "answers": ["Oslo"],
        "metadata": {
            "source": "longmemeval_s_-1_500",
            "question_ids": ["f00d"],
            "question_types": ["single-session-user"],
        },
    },
    {  # two questions, one answer: upstream's judge script skips the record
        "context": _CONTEXT,
        "questions": ["Where did I move?", "Where does my brother live?"],
        "answers": ["Lisbon"],
        "metadata": {
            "source": "longmemeval_s_-1_500",
            "question_ids": ["beef", "cafe"],
            "question_types": ["single-session-user", "single-session-user"],
        },
    },
]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer(reply=lambda messages, model, params: "Yes") as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        yield srv


def _anscheck() -> Any:
    """The upstream-shaped file's ``get_anscheck_prompt``, run from its source (test only)."""
    path = PROTOCOL / "llm_based_eval" / "longmem_qa_evaluate.py"
    tree = ast.parse(path.read_text("utf-8"))
    ns: dict[str, Any] = {}
    exec(compile(tree, str(path), "exec"), ns)
    return ns["get_anscheck_prompt"]


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_longmemeval_items_judged_as_upstream(
    pytester: pytest.Pytester, server: LLMServer, mode: str
) -> None:
    folder = pytester.path / "data" / "memoryagentbench"
    folder.mkdir(parents=True)
    lines = [json.dumps(r) for r in _RECORDS]
    (folder / "Accurate_Retrieval.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=memoryagentbench",
        f"--memeval-data={pytester.path / 'data'}",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=memoryagentbench",
        f"--memeval-protocol-source={PROTOCOL}",
        "--memeval-judge=openai:gpt-4o",
        f"--memeval-json={out}",
        *XDIST_MODES[mode],
    )
    assert result.ret in (0, 1), result.stdout.str()
    report = read_json(out)
    questions = {q["id"]: q for run in report["runs"] for q in run["questions"]}
    assert len(questions) == 5  # the record whose counts differ is skipped
    bodies = [r.body for r in server.requests if r.path == OPENAI_PATH]
    assert len(bodies) == 3  # only the LongMemEval source is judged
    upstream = _anscheck()
    want = sorted(
        upstream(
            "single-session-user",
            rec_q,
            answer,  # upstream's reference: answers[i] (one question: answers[0])
            questions[f"Accurate_Retrieval-{row}-q{j + 1}"]["prediction"],
            abstention="_abs" in qid,
        )
        for row in (0, 2)
        for j, (rec_q, answer, qid) in enumerate(
            zip(
                _RECORDS[row]["questions"],  # type: ignore[arg-type]
                _RECORDS[row]["answers"],  # type: ignore[arg-type]
                _RECORDS[row]["metadata"]["question_ids"],  # type: ignore[index]
                strict=True,
            )
        )
    )
    assert sorted(b["messages"][0]["content"] for b in bodies) == want
    assert not any("['Oslo']" in b["messages"][0]["content"] for b in bodies)
    (run,) = report["runs"]
    skipped = [n for n in run["summary"]["notes"] if "skipped 1 record(s)" in n]
    assert len(skipped) == 1 and "Accurate_Retrieval.jsonl" in skipped[0], run["summary"]["notes"]
    assert "[3] 2 questions, 1 answers, 2 question_ids, 2 question_types" in skipped[0]
    said = [line for line in result.outlines if "skipped 1 record(s)" in line]
    assert len(said) == 1 and said[0].startswith("  note: memoryagentbench: skipped")
    ds = report["provenance"]["datasets"]["memoryagentbench"]
    assert ds["notes"] == skipped and ds["questions_total"] == 5
    for body in bodies:
        assert body["model"] == "gpt-4o" and body["temperature"] == 0
        assert body["max_tokens"] == 10 and body["n"] == 1
        assert [m["role"] for m in body["messages"]] == ["user"]
    assert questions["Accurate_Retrieval-0-q1"]["scores"]["judge_mab_official"] == 1.0
    assert questions["Accurate_Retrieval-0-q2"]["scores"]["judge_mab_official"] == 1.0
    assert "judge_mab_official" not in questions["Accurate_Retrieval-1-q1"]["scores"]
    assert report["provenance"]["protocol"]["name"] == "memoryagentbench"


# --------------------------------------------------------------------------- answer request


def _get_template() -> Any:
    """The upstream-shaped utils/templates.py's ``get_template``, run from its source."""
    path = PROTOCOL / "utils" / "templates.py"
    ns: dict[str, Any] = {}
    exec(compile(ast.parse(path.read_text("utf-8")), str(path), "exec"), ns)
    return ns["get_template"]


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_answer_requests_use_upstream_query_templates(
    pytester: pytest.Pytester, server: LLMServer, mode: str
) -> None:
    """Under the protocol the LLM answerer sends upstream's RAG-agent request: SYSTEM_MESSAGE,
    then the retrieved chunks as ``Memory i:`` blocks and the source's query template; the
    whole reply is the prediction; max_tokens is the dataset config's generation_max_length."""
    folder = pytester.path / "data" / "memoryagentbench"
    folder.mkdir(parents=True)
    lines = [json.dumps(r) for r in _RECORDS[:2]]  # one LongMemEval, one EventQA record
    (folder / "Accurate_Retrieval.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=memoryagentbench",
        f"--memeval-data={pytester.path / 'data'}",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=memoryagentbench",
        f"--memeval-protocol-source={PROTOCOL}",
        "--memeval-answerer=openai:gpt-4o-mini",
        f"--memeval-json={out}",
        *XDIST_MODES[mode],
    )
    assert result.ret in (0, 1), result.stdout.str()
    questions = {q["id"]: q for run in read_json(out)["runs"] for q in run["questions"]}
    bodies = [r.body for r in server.requests if r.path == OPENAI_PATH]
    assert len(bodies) == 4 and all(b["model"] == "gpt-4o-mini" for b in bodies)
    get_template = _get_template()
    want = []
    for n, rec in enumerate(_RECORDS[:2]):
        source = rec["metadata"]["source"]  # type: ignore[index]
        for j, text in enumerate(rec["questions"]):  # type: ignore[arg-type]
            q = questions[f"Accurate_Retrieval-{n}-q{j + 1}"]
            assert q["prediction"] == "Yes"  # the whole reply
            memories = "\n".join(
                f"Memory {i + 1}:\n{m['text']}\n" for i, m in enumerate(q["memories"])
            )
            query = get_template(source, "query", "Simple_rag_bm25").format(question=text)
            system = get_template(source, "system", "Simple_rag_bm25")
            tokens = 50 if "longmemeval" in source else 40  # generation_max_length
            want.append((system, memories + "\n" + query, tokens))
    got = [
        (b["messages"][0]["content"], b["messages"][1]["content"], b["max_tokens"]) for b in bodies
    ]
    assert sorted(got) == sorted(want)
    assert all([m["role"] for m in b["messages"]] == ["system", "user"] for b in bodies)


# --------------------------------------------------------------------------- ∞Bench-Sum judge

_SUM_RECORD = {
    "context": "Ana sails the river. Her father hides a secret. A trial ends the journey. " * 3,
    "questions": ["Summarize the book."],
    "answers": [["Ana's family sails down the river; a trial clears her father."]],
    "metadata": {
        "source": "infbench_sum_eng_shots2",
        "qa_pair_ids": ["sum-1"],
        "keypoints": ["Ana sails the river.", "A trial clears the father.", "They go home."],
    },
}


def _sum_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    text = messages[-1]["content"]
    if "fluency" in text:
        return 'Fine. {"fluency": 1}'
    if "key points" in text:
        return 'Two are present.\n```json\n{"recall": 2}\n```'
    return 'Reasoning {not json} then {"precision": 3, "sentence_count": 4}'


def _summarization_module() -> dict[str, Any]:
    path = PROTOCOL / "llm_based_eval" / "summarization_evaluate.py"
    ns: dict[str, Any] = {}
    exec(compile(ast.parse(path.read_text("utf-8")), str(path), "exec"), ns)
    return ns


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_infbench_sum_judged_as_upstream(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """summarization_evaluate.py's three calls per summary: request bodies as its OpenAIModel
    sends them (model, one user message, max_tokens 4096, temperature 0.1, top_p 0.9, stop null,
    seed 42), prompts filled as check_metrics fills them, F1 = fluency x 2PR/(P+R)."""
    folder = pytester.path / "data" / "memoryagentbench"
    folder.mkdir(parents=True)
    (folder / "Long_Range_Understanding.jsonl").write_text(json.dumps(_SUM_RECORD) + "\n")
    out = pytester.path / "r.json"
    with LLMServer(reply=_sum_reply) as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        result = pytester.runpytest(
            "--memeval=memoryagentbench",
            f"--memeval-data={pytester.path / 'data'}",
            "--memsys=bm25",
            f"--memeval-cache-dir={pytester.path / 'cache'}",
            "--memeval-protocol=memoryagentbench",
            f"--memeval-protocol-source={PROTOCOL}",
            "--memeval-judge=openai:gpt-4o-2024-05-13",
            f"--memeval-json={out}",
            *XDIST_MODES[mode],
        )
        bodies = [r.body for r in srv.requests if r.path == OPENAI_PATH]
    assert result.ret in (0, 1), result.stdout.str()
    (q,) = [q for run in read_json(out)["runs"] for q in run["questions"]]
    upstream = _summarization_module()
    output = q["prediction"].strip()
    keypoints = _SUM_RECORD["metadata"]["keypoints"]  # type: ignore[index]
    prompts = [
        upstream["fluency_prompt_book"].format(text=output),
        upstream["recall_prompt_book"].format(
            keypoints="\n".join(f"{i + 1}. {kp}" for i, kp in enumerate(keypoints)),
            summary=output,
        ),
        upstream["precision_prompt_book"].format(
            expert_summary=_SUM_RECORD["answers"][0], summary=output
        ),
    ]
    # model_utils_openai.py OpenAIModel.generate: chat.completions.create(...)
    want = [
        {
            "model": "gpt-4o-2024-05-13",
            "messages": [{"role": "user", "content": p}],
            "max_tokens": 4096,
            "temperature": 0.1,
            "top_p": 0.9,
            "stop": None,
            "seed": 42,
        }
        for p in prompts
    ]
    assert sorted(bodies, key=json.dumps) == sorted(want, key=json.dumps)
    replies = [_sum_reply([{"content": p}], "", {}) for p in prompts]
    f, r, p = (upstream["parse_json"](x) for x in replies)
    rec, prec = r["recall"] / len(keypoints), p["precision"] / p["sentence_count"]
    assert q["scores"]["judge_mab_official"] == pytest.approx(
        f["fluency"] * 2 * (rec * prec) / (rec + prec), abs=0
    )
