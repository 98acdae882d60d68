"""Official protocols (``--memeval-protocol``): pinned upstream files, ``ast`` extraction, and
judge requests identical to what the upstream code path sends.

The upstream files are stood in for by upstream-shaped files we wrote (``tests/fixtures/
protocols``: same paths, variable names and call shapes, our own wording). The real files are
checked outside the project. End-to-end runs go through the loopback OpenAI-compatible server
with the real SDK, without xdist and with ``-n 2``; the requests the plugin sends are compared
with the requests the fixture's own (upstream-shaped) code sends for the same inputs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import openai
import pytest
from conftest import read_json
from file_server import Reply, serve_files
from llm_server import OPENAI_PATH, LLMServer

from pytest_memeval.benchmarks import file_sha256
from pytest_memeval.protocols import (
    PROFILES,
    ProtocolSourceError,
    SourceText,
    StringRef,
    UpstreamFile,
    extract,
    load_protocol,
    mem0_official_label,
    read_upstream,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "protocols"
KEY = "sk-loopback-protocols"
XDIST_MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}


@pytest.fixture(params=list(XDIST_MODES), ids=list(XDIST_MODES))
def xdist_mode(request: pytest.FixtureRequest) -> list[str]:
    return list(XDIST_MODES[request.param])


def _module(path: Path, name: str) -> ModuleType:
    """Import one of *our* upstream-shaped fixture files (test code, never the plugin)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _source(text: str, path: str = "x.py") -> SourceText:
    f = UpstreamFile("o/r", "0" * 40, path, "0" * 64)
    return SourceText(f, text, "memory", "0" * 64)


def _chat_bodies(srv: LLMServer) -> list[dict[str, Any]]:
    return [r.body for r in srv.requests if r.path == OPENAI_PATH]


def _request(body: dict[str, Any]) -> str:
    """The request body, canonical (sorted keys)."""
    return json.dumps(body, sort_keys=True, ensure_ascii=False)


# --------------------------------------------------------------------------- unit: extraction


def test_extracts_constants_locals_messages_and_fstrings() -> None:
    text = (
        'A = """one {x}"""\n'
        "def f(k):\n"
        "    if k:\n"
        '        t = "first"\n'
        "    else:\n"
        '        t = "second"\n'
        "    m = {'role': 'user', 'content': f\"p {k} q {k2}\"}\n"
    )
    src = _source(text)
    assert extract(src, StringRef("constant", "A")).text == "one {x}"
    assert extract(src, StringRef("local", "t", "f", 1, expect_count=2)).text == "second"
    t = extract(src, StringRef("message", "m", "f"))
    assert t.fields == ("k", "k2")
    assert t.fill({"k": "1", "k2": "2"}) == "p 1 q 2"
    with pytest.raises(ProtocolSourceError, match="expected 3 assignments, found 2"):
        extract(src, StringRef("local", "t", "f", 0, expect_count=3))
    with pytest.raises(ProtocolSourceError, match="no constant B"):
        extract(src, StringRef("constant", "B"))
    with pytest.raises(ProtocolSourceError, match="cannot parse it as Python"):
        extract(_source("def (:\n"), StringRef("constant", "A"))


def test_extraction_never_executes_the_file(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f'import pathlib\npathlib.Path({str(marker)!r}).write_text("x")\nP = "prompt"\n'
    assert extract(_source(text), StringRef("constant", "P")).text == "prompt"
    assert not marker.exists()


def test_every_profile_pins_full_commits_and_hashes() -> None:
    for profile in PROFILES.values():
        assert len(profile.commit) == 40
        for file in profile.files:
            assert len(file.commit) == 40 and len(file.sha256) == 64
            assert file.url == (
                f"https://raw.githubusercontent.com/{file.repo}/{file.commit}/{file.path}"
            )


def test_local_checkout_is_checked_against_the_pin(tmp_path: Path) -> None:
    path = "evaluation/x.py"
    (tmp_path / "evaluation").mkdir()
    (tmp_path / path).write_text('P = "p"\n')
    pinned = UpstreamFile("o/r", "1" * 40, path, file_sha256(tmp_path / path))
    got = read_upstream(pinned, protocol="mem0", source_dir=tmp_path, cache_dir=tmp_path)
    assert got.matches_pin and got.text == 'P = "p"\n'
    other = UpstreamFile("o/r", "1" * 40, path, "f" * 64)
    assert not read_upstream(
        other, protocol="mem0", source_dir=tmp_path, cache_dir=tmp_path
    ).matches_pin
    with pytest.raises(ProtocolSourceError, match=r"does not exist; give a checkout of o/r"):
        read_upstream(
            UpstreamFile("o/r", "1" * 40, "nope.py", "f" * 64),
            protocol="mem0",
            source_dir=tmp_path,
            cache_dir=tmp_path,
        )


def test_download_is_cached_and_sha_checked(tmp_path: Path) -> None:
    body = b'P = "served"\n'
    with serve_files(fallback=lambda path: Reply(body)) as srv:
        good = UpstreamFile("o/r", "2" * 40, "src/p.py", hashlib.sha256(body).hexdigest(), srv.base)
        got = read_upstream(good, protocol="beam", source_dir=None, cache_dir=tmp_path)
        assert got.text == body.decode() and got.matches_pin
        read_upstream(good, protocol="beam", source_dir=None, cache_dir=tmp_path)
        assert srv.requests == [f"/o/r/{'2' * 40}/src/p.py"]  # the second read is the cached file
        bad = UpstreamFile("o/r", "3" * 40, "src/p.py", "0" * 64, srv.base)
        with pytest.raises(ProtocolSourceError, match="sha256 mismatch"):
            read_upstream(bad, protocol="beam", source_dir=None, cache_dir=tmp_path)


def test_offline_message_names_the_url_and_the_option(tmp_path: Path) -> None:
    file = UpstreamFile("o/r", "4" * 40, "src/p.py", "0" * 64, "http://127.0.0.1:9")
    with pytest.raises(ProtocolSourceError) as info:
        read_upstream(file, protocol="mem0", source_dir=None, cache_dir=tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert file.url in message and "--memeval-protocol-source=DIR" in message
    assert f"commit {'4' * 40}" in message and "DIR/src/p.py" in message


def test_mem0_official_label_reads_like_mem0() -> None:
    assert mem0_official_label('{"label": "CORRECT"}') == 1.0
    assert mem0_official_label('```json\n{"label": "WRONG"}\n```') == 0.0
    assert mem0_official_label('Reason. {"label": "correct"}') == 0.0  # case-sensitive
    assert mem0_official_label("CORRECT") is None  # upstream raises
    assert mem0_official_label('{"verdict": "CORRECT"}') is None


def test_all_fixture_profiles_load() -> None:
    for name in PROFILES:
        # a labelled variant (longmemeval-v2-corrected) reads its base protocol's files
        folder = FIXTURES / name.removesuffix("-corrected")
        loaded = load_protocol(name, source_dir=folder, cache_dir=Path("/nonexistent"))
        assert set(loaded.templates) == set(PROFILES[name].prompts)
        assert all(not s.matches_pin for s in loaded.sources.values())


# --------------------------------------------------------------------------- end to end


def _mem0_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    text = messages[-1]["content"]
    if "Generated answer: " not in text:
        return "ANSWER: beagle"
    generated = text.split("Generated answer: ", 1)[1].split("\n", 1)[0]
    if not generated.strip():
        return "I cannot say"  # not JSON: Mem0's parser would raise; counted 0
    words = set(generated.lower().split())
    return json.dumps({"label": "CORRECT" if len(words) % 2 else "WRONG"})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer(reply=_mem0_reply) as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        yield srv


pytestmark = pytest.mark.usefixtures("memeval_env")


def test_mem0_protocol_requests_match_mem0s_code_path(
    pytester: pytest.Pytester, server: LLMServer, xdist_mode: list[str]
) -> None:
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=mem0",
        f"--memeval-protocol-source={FIXTURES / 'mem0'}",
        "--memeval-judge=openai:gpt-4o-mini",
        f"--memeval-json={out}",
        *xdist_mode,
    )
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    questions = report["runs"][0]["questions"]
    judged = [q for q in questions if q["category"] != "adversarial"]
    assert len(judged) < len(questions)  # the demo has category-5 questions
    for q in questions:
        if q["category"] == "adversarial":
            assert "judge_mem0_official" not in q["scores"]
    plugin_requests = sorted(_request(b) for b in _chat_bodies(server))
    assert len(plugin_requests) == len(judged)  # one call per judged question, none for cat 5

    # what Mem0's (upstream-shaped) evaluate_llm_judge sends for the same inputs
    server.reset()
    module = _module(FIXTURES / "mem0" / "evaluation" / "metrics" / "llm_judge.py", "m0_judge")
    labels = []
    for q in judged:
        try:
            labels.append(module.evaluate_llm_judge(q["question"], q["gold"], q["prediction"]))
        except json.JSONDecodeError:
            labels.append(False)  # Mem0's script would stop here; the plugin counts it 0
    upstream_requests = sorted(_request(b) for b in _chat_bodies(server))
    assert plugin_requests == upstream_requests
    body = _chat_bodies(server)[0]
    assert body["response_format"] == {"type": "json_object"}
    assert body["temperature"] == 0.0 and body["model"] == "gpt-4o-mini"
    assert "max_tokens" not in body and "max_completion_tokens" not in body
    assert [m["role"] for m in body["messages"]] == ["user"]

    # J = fraction of CORRECT labels over the judged questions
    overall = report["runs"][0]["summary"]["overall"]["judge_mem0_official"]
    assert overall == pytest.approx(sum(labels) / len(labels))
    assert {q["id"]: q["scores"]["judge_mem0_official"] for q in judged} == {
        q["id"]: float(label) for q, label in zip(judged, labels, strict=True)
    }

    prov = report["provenance"]
    assert prov["judge_style"] == {"demo": "mem0-official"}
    assert prov["judge_metric"] == {"demo": "judge_mem0_official"}
    protocol = prov["protocol"]
    assert protocol["name"] == "mem0" and protocol["commit"] == PROFILES["mem0"].commit
    files = {f["path"]: f for f in protocol["files"]}
    judge_file = files["evaluation/metrics/llm_judge.py"]
    assert judge_file["sha256"] == PROFILES["mem0"].prompts["judge"][0].sha256
    assert judge_file["file_sha256"] == file_sha256(
        FIXTURES / "mem0" / "evaluation" / "metrics" / "llm_judge.py"
    )
    assert judge_file["matches_pin"] is False
    assert len(protocol["prompt_sha256"]["judge"]) == 64
    assert protocol["judge_models"] == ["openai:gpt-4o-mini"]
    result.stdout.fnmatch_lines(["*demo: judge_mem0_official >= * (mem0-official judge decides*"])
    if "-n" not in xdist_mode:
        result.stdout.fnmatch_lines(["*ProtocolWarning*not the mem0 protocol's pinned*"])


def test_protocol_offline_is_a_usage_error_before_any_call(
    pytester: pytest.Pytester, server: LLMServer
) -> None:
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=mem0",
        f"--memeval-protocol-source={pytester.path}",
        "--memeval-judge=openai:gpt-4o-mini",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*llm_judge.py does not exist; give a checkout of mem0ai/mem0*"])
    assert server.request_count == 0


def test_protocol_for_another_benchmark_and_model_mismatch(
    pytester: pytest.Pytester, server: LLMServer
) -> None:
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-protocol=longmemeval",
        f"--memeval-protocol-source={FIXTURES / 'longmemeval'}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memeval-protocol=longmemeval applies to longmemeval*"])
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=mem0",
        f"--memeval-protocol-source={FIXTURES / 'mem0'}",
        "--memeval-judge=openai:gpt-4.1",
        "-p",
        "no:xdist",
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*judges with gpt-4o-mini; gpt-4.1 gives numbers that are not*"])


def test_bad_judge_prompt_fails_at_configure(pytester: pytest.Pytester, server: LLMServer) -> None:
    bad = pytester.path / "bad.txt"
    bad.write_text("Judge {question} against {nope}")
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-answerer=openai:gpt-4o-mini",
        "--memeval-judge=openai:gpt-4o-mini",
        f"--memeval-judge-prompt={bad}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memeval-judge-prompt*placeholder {nope} is not allowed*"])
    assert server.request_count == 0  # no answerer call was paid for


# --------------------------------------------------------------------------- longmemeval


def _lme_item(qid: str, qtype: str, answer: object) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": f"What about {qid}?",
        "answer": answer,
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s_1", "answer_1"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}],
            [
                {
                    "role": "user",
                    "content": f"the answer for {qid} is {answer}",
                    "has_answer": True,
                },
                {"role": "assistant", "content": "noted"},
            ],
        ],
        "answer_session_ids": ["answer_1"],
    }


LME_ITEMS = [
    _lme_item("a1", "single-session-user", "Paris"),
    _lme_item("a2", "multi-session", 3),
    _lme_item("a3", "temporal-reasoning", "5 days"),
    _lme_item("a4", "knowledge-update", "blue"),
    _lme_item("a5", "single-session-preference", "suggest jazz"),
    _lme_item("a6_abs", "single-session-user", "never mentioned"),
]


def _lme_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    text = messages[-1]["content"]
    # substring rule: "Yes." and "no, not yes" both count yes upstream; "" counts no
    if "TEST STANDARD" in text:
        return "Yes."
    if "TEST TEMPORAL" in text:
        return "no, not yes"
    if "TEST UPDATE" in text:
        return ""
    return "no"


def test_longmemeval_protocol_requests_match_upstream(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist_mode: list[str]
) -> None:
    data = pytester.path / "lme.json"
    data.write_text(json.dumps(LME_ITEMS), encoding="utf-8")
    out = pytester.path / "r.json"
    with LLMServer(reply=_lme_reply) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
        result = pytester.runpytest(
            "--memeval=longmemeval",
            f"--memeval-variant={data}",
            "--memsys=bm25",
            f"--memeval-cache-dir={pytester.path / 'cache'}",
            "--memeval-protocol=longmemeval",
            f"--memeval-protocol-source={FIXTURES / 'longmemeval'}",
            "--memeval-judge=openai-compatible:gpt-4o-2024-08-06",
            f"--memeval-base-url={srv.openai_base_url}",
            f"--memeval-json={out}",
            *xdist_mode,
        )
        assert result.ret == 0, result.stdout.str()
        plugin_requests = sorted(_request(b) for b in _chat_bodies(srv))
        report = read_json(out)
        questions = {q["id"]: q for q in report["runs"][0]["questions"]}
        srv.reset()
        module = _module(
            FIXTURES / "longmemeval" / "src" / "evaluation" / "evaluate_qa.py", "lme_eval"
        )
        client = openai.OpenAI(api_key=KEY, base_url=srv.openai_base_url)
        labels = {}
        for item in LME_ITEMS:
            qid = str(item["question_id"])
            labels[qid] = module.judge_one(
                client,
                "gpt-4o-2024-08-06",
                item["question_type"],
                item["question"],
                item["answer"],
                questions[qid]["prediction"],
                qid,
            )
        upstream_requests = sorted(_request(b) for b in _chat_bodies(srv))
        client.close()
    assert plugin_requests == upstream_requests
    assert len(plugin_requests) == len(LME_ITEMS)
    assert json.loads(plugin_requests[0])["max_tokens"] == 10
    assert json.loads(plugin_requests[0])["n"] == 1
    assert {qid: q["scores"]["judge_lme_official"] for qid, q in questions.items()} == {
        qid: float(v) for qid, v in labels.items()
    }
    assert labels == {
        "a1": True,
        "a2": True,
        "a3": True,  # 'yes' in "no, not yes"
        "a4": False,  # an empty reply is a 0, never left out
        "a5": False,
        "a6_abs": False,
    }
    assert questions["a4"]["scores"]["judge_lme_official_strict"] is None  # a diagnostic
    overall = report["runs"][0]["summary"]["overall"]["judge_lme_official"]
    assert overall == pytest.approx(3 / 6)
    assert report["provenance"]["judge_style"] == {"longmemeval": "longmemeval-official"}
    assert "judges with" not in result.stdout.str()  # the protocol's own model: no warning


# --------------------------------------------------------------------------- beam


def _beam_data(root: Path) -> None:
    conv = root / "beam" / "100K" / "1"
    (conv / "probing_questions").mkdir(parents=True)
    messages = []
    chat = []
    mid = 0
    for b, anchor in enumerate(("March-15-2024", "April-05-2024"), start=1):
        turns = []
        for text in ("I started the garden", "then I planted tomatoes"):
            turns.append(
                [
                    {
                        "role": "user",
                        "id": mid,
                        "content": f"{text} in batch {b}",
                        "question_type": "main_question",
                        "index": f"{b},1",
                        **({"time_anchor": anchor} if not turns else {}),
                    },
                    {"role": "assistant", "id": mid + 1, "content": "nice"},
                ]
            )
            messages.append(text)
            mid += 2
        chat.append({"batch_number": b, "turns": turns, "time_anchor": None})
    (conv / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    gold_fields = {
        "abstention": "ideal_response",
        "contradiction_resolution": "ideal_answer",
        "event_ordering": "answer",
        "information_extraction": "answer",
        "instruction_following": "expected_compliance",
        "knowledge_update": "answer",
        "multi_session_reasoning": "answer",
        "preference_following": "expected_compliance",
        "summarization": "ideal_summary",
        "temporal_reasoning": "answer",
    }
    probing = {
        ability: [
            {
                "question": f"{ability} question {i}?",
                field: f"gold {ability} {i}",
                "difficulty": "easy",
                "rubric": ["started the garden", "planted tomatoes"]
                if ability == "event_ordering"
                else [f"mentions garden {i}", f"mentions tomatoes {i}"],
                "source_chat_ids": [0, 2],
            }
            for i in range(2)
        ]
        for ability, field in gold_fields.items()
    }
    (conv / "probing_questions" / "probing_questions.json").write_text(
        json.dumps(probing), encoding="utf-8"
    )


#: the one rubric item whose judge reply holds no JSON (BEAM's evaluation would abort on it)
UNREADABLE = "mentions weather 1"


def _beam_data_unreadable(root: Path) -> None:
    """One knowledge-update question gets a third rubric item the judge answers without JSON."""
    path = root / "beam" / "100K" / "1" / "probing_questions" / "probing_questions.json"
    probing = json.loads(path.read_text(encoding="utf-8"))
    probing["knowledge_update"][1]["rubric"].append(UNREADABLE)
    path.write_text(json.dumps(probing), encoding="utf-8")


def _beam_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    if messages[0]["role"] == "system":  # event equivalence
        user = messages[-1]["content"]
        a = user.split("Snippet A: ", 1)[1].split(" \n", 1)[0]
        b = user.split("Snippet B: ", 1)[1].strip()
        return "YES" if a.split()[-1] in b else "NO"
    text = messages[-1]["content"]
    if text.startswith("\nTEST FACT SPLITTER."):  # fact extraction: the reply is never used
        return "fact one\nfact two"
    criterion = text.split("- CRITERION: ", 1)[1].split("\n", 1)[0]
    if criterion == UNREADABLE:
        return "I cannot tell."
    if criterion.endswith("0"):  # single quotes: only json_repair reads it
        return "{'score': 0.5, 'reason': 'partly'}"
    if criterion.endswith("1"):  # prose and a trailing comma: only json_repair reads it
        return 'Verdict: {"score": 1, "reason": "covered",}'
    return json.dumps({"score": 1.0, "reason": "r"})


class _RecordingLLM:
    """Stands in for the LangChain model upstream calls ``invoke`` on; sends nothing, records
    the request body LangChain's ChatOpenAI (0.3.19, BEAM's requirements) would send for
    ``invoke``: model, messages, temperature 0.0 and ``stream: false`` (no ``n``, no max
    tokens)."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def invoke(self, prompt: Any) -> Any:
        messages = (
            [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        )
        self.sent.append(
            {"model": "gpt-4.1-mini", "messages": messages, "temperature": 0.0, "stream": False}
        )

        class _Reply:
            content = _beam_reply(messages, "gpt-4.1-mini", {})

        return _Reply()


def test_beam_protocol_requests_match_upstream(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist_mode: list[str]
) -> None:
    _beam_data(pytester.path / "data")
    _beam_data_unreadable(pytester.path / "data")
    out = pytester.path / "r.json"
    with LLMServer(reply=_beam_reply) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
        result = pytester.runpytest(
            "--memeval=beam",
            "--memeval-variant=100K",
            f"--memeval-data={pytester.path / 'data'}",
            "--memsys=full-context",
            f"--memeval-cache-dir={pytester.path / 'cache'}",
            "--memeval-protocol=beam",
            f"--memeval-protocol-source={FIXTURES / 'beam'}",
            "--memeval-judge=openai-compatible:gpt-4.1-mini",
            f"--memeval-base-url={srv.openai_base_url}",
            "--memeval-no-cache",  # upstream repeats identical calls; count every one
            f"--memeval-json={out}",
            *xdist_mode,
        )
        assert result.ret == 0, result.stdout.str()
        bodies = _chat_bodies(srv)
    report = read_json(out)
    questions = report["runs"][0]["questions"]
    assert len(questions) == 20
    # the plugin's bodies are LangChain's without `stream: false` (the API's default)
    plugin_requests = sorted(_request(b) for b in bodies)

    metrics = _module(FIXTURES / "beam" / "src" / "evaluation" / "compute_metrics.py", "b_cm")
    prompts = _module(FIXTURES / "beam" / "src" / "prompts.py", "b_prompts")
    metrics.unified_llm_judge_base_prompt = prompts.unified_llm_judge_base_prompt
    metrics.break_paragraph_to_facts_detailed_prompt = (
        prompts.break_paragraph_to_facts_detailed_prompt
    )
    llm = _RecordingLLM()
    expected: dict[str, float] = {}
    unreadable = ""
    for q in questions:
        rubric = q["details"]["nugget_official"]["details"]["items"]
        items = [r["rubric"] for r in rubric]
        if q["category"] == "event_ordering":
            metrics.evaluate_event_ordering(items, q["prediction"], q["question"], llm)
        elif UNREADABLE in items:  # upstream raises: this question's evaluation aborts
            with pytest.raises((ValueError, TypeError)):  # json_repair 0.64.6 / 0.44.1
                metrics.evaluate_rubric(items, q["prediction"], llm)
            unreadable = q["id"]
        else:
            expected[q["id"]] = metrics.evaluate_rubric(items, q["prediction"], llm)
    upstream_requests = sorted(_request(body) for body in llm.sent)
    assert plugin_requests == upstream_requests
    facts = [r for r in plugin_requests if "TEST FACT SPLITTER" in r]
    assert len(facts) == 2  # one per event-ordering question, with its question filled in
    assert all("Asked: event_ordering question" in r for r in facts)
    # <question> is never filled in the judge prompt, as upstream
    assert all("- QUESTION: <question>" in r for r in plugin_requests if "CRITERION" in r)
    # replies read as BEAM does (json_repair); int() truncation: a 0.5 item counts 0
    by_id = {q["id"]: q for q in questions}
    got = {qid: by_id[qid]["scores"]["nugget_official"] for qid in expected}
    assert got == expected
    assert set(expected.values()) == {0.0, 1.0}  # the 0.5 items of the "...0" rubrics count 0
    # the reply BEAM cannot read counts 0, with a warning: items 1, 1, 0 over 3
    assert by_id[unreadable]["scores"]["nugget_official"] == pytest.approx(2 / 3)
    warnings = by_id[unreadable]["details"]["nugget_official"]["warnings"]
    assert any("rubric item 3" in w and "counted as 0" in w for w in warnings)
    for q in questions:
        if q["category"] == "event_ordering":
            assert q["details"]["nugget_official"]["details"]["alignment_calls"] > 0
            assert q["details"]["nugget_official"]["details"]["fact_extraction_calls"] == 1
            assert "nugget_official_ordering_f1" in q["scores"]
            assert "nugget_official_llm_judge" in q["scores"]
    assert report["provenance"]["judge_style"] == {"beam": "beam-official"}
    # BEAM's official composite: one conversation here, so each category value is the mean of
    # its questions' scores; overall = the mean of the category values
    official = report["runs"][0]["summary"]["beam_official"]
    values = {k: v["value"] for k, v in official["by_category"].items()}
    for category in ("abstention", "summarization", "temporal_reasoning"):
        ids = [q["id"] for q in questions if q["category"] == category]
        assert values[category] == pytest.approx(sum(expected[i] for i in ids) / len(ids))
    assert values["knowledge_update"] == pytest.approx(
        (expected[f"{unreadable[:-1]}0"] + 2 / 3) / 2
    )
    assert official["overall"] == pytest.approx(sum(values.values()) / len(values))
    assert len(values) == 10 and official["metric"] == "nugget_official"
    stdout = result.stdout.str()
    assert "beam · full-context — BEAM official" in stdout
    # beside the published figures, the run's row is the composite
    assert re.search(r"this run +full-context +nugget_official \(BEAM official\)", stdout)
    protocol = report["provenance"]["protocol"]
    assert len(protocol["prompt_sha256"]["fact_extraction"]) == 64
    repair = protocol["json_repair"]
    assert repair["upstream"] == "0.44.1"
    assert repair["matches_upstream"] == (repair["installed"] == "0.44.1")
    assert ("warning" in repair) is (repair["installed"] != "0.44.1")


# --------------------------------------------------------------------------- baselines


def test_baselines_stand_only_beside_like_for_like_numbers() -> None:
    from pytest_memeval.analysis import RunProtocol, baselines_for, mark_comparability

    chosen = baselines_for("locomo", ("mem0-j-mem0", "mem0-f1-mem0", "locomo-human"))
    metrics = frozenset({"f1", "set_f1", "judge_mem0_official"})
    official = RunProtocol(metrics, "mem0", "mem0-official", "gpt-4o-mini")
    marked = {b.name: b.not_comparable for b in mark_comparability(chosen, official)}
    assert marked["mem0-j-mem0"] is None and marked["mem0-f1-mem0"] is None
    assert "published under the locomo protocol" in str(marked["locomo-human"])
    graded_metrics = frozenset({"f1", "set_f1", "judge_graded"})
    graded = RunProtocol(graded_metrics, "mem0", "graded", "claude-sonnet-4-6")
    reason = {b.name: b.not_comparable for b in mark_comparability(chosen, graded)}
    assert reason["mem0-j-mem0"] == (
        "judge_mem0_official was published by the mem0-official judge, this run's is graded"
    )
    other_model = RunProtocol(metrics, "mem0", "mem0-official", "gpt-4.1")
    reason = {b.name: b.not_comparable for b in mark_comparability(chosen, other_model)}
    assert reason["mem0-j-mem0"] == "judged by gpt-4o-mini, this run by gpt-4.1"
    plain = RunProtocol(metrics)
    reason = {b.name: b.not_comparable for b in mark_comparability(chosen, plain)}
    assert "this run used no protocol (run with --memeval-protocol=mem0)" in str(
        reason["mem0-j-mem0"]
    )
    lme = baselines_for("longmemeval", ("lme-gpt-4o-s", "lme-mem0-platform-top50"))
    run = RunProtocol(
        frozenset({"judge_lme_official"}),
        "longmemeval",
        "longmemeval-official",
        "gpt-4o-2024-08-06",
    )
    reason = {b.name: b.not_comparable for b in mark_comparability(lme, run)}
    assert reason["lme-gpt-4o-s"] is None
    assert "mem0-memory-benchmarks" in str(reason["lme-mem0-platform-top50"])


def test_graded_judge_never_judges_locomo_category_5() -> None:
    from pytest_memeval.judges import GradedJudge
    from pytest_memeval.records import Question

    class NoCalls:
        label = "fake:none"

        def complete(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("category 5 must not be sent to the judge")

    q = Question(
        id="q5",
        conversation_id="c",
        category="adversarial",
        question="Mel?",
        gold=None,
        category_id=5,
    )
    result = GradedJudge(runs=3).judge(q, "Mel", NoCalls())
    assert result.skipped and not result.scores


def test_llm_answerer_today_is_the_conversations_last_session() -> None:
    from datetime import datetime

    from pytest_memeval.answerers import LLMAnswerer, format_date, last_session_dates
    from pytest_memeval.benchmarks import LoadRequest, get_benchmark
    from pytest_memeval.records import Memory

    dataset = get_benchmark("demo").load(LoadRequest(None, Path("/nonexistent"), None))
    dates = last_session_dates(dataset.conversations.values())
    conv = dataset.conversations["demo-1"]
    newest = max(s.date for s in conv.sessions if s.date is not None)
    assert dates["demo-1"] == newest

    class NoCalls:
        label = "fake:none"

    answerer = LLMAnswerer(NoCalls(), reference_dates=dates)  # type: ignore[arg-type]
    question = next(q for q in dataset.questions if q.conversation_id == "demo-1")
    early = [Memory("an old memory", date=datetime(2020, 1, 1))]
    # the same "today" whatever was retrieved (was: the newest retrieved memory)
    assert f"{format_date(newest)}" in answerer.render(question, early)
    assert f"{format_date(newest)}" in answerer.render(question, [])


def test_llm_answerer_uses_each_benchmarks_prompt() -> None:
    from pytest_memeval.answerers import LLMAnswerer
    from pytest_memeval.llm import Completion
    from pytest_memeval.records import Question

    class Echo:
        label = "fake:echo"

        def complete(self, messages: Any, **kwargs: Any) -> Completion:
            return Completion("first event\nsecond event\nANSWER: ignored for beam")

    answerer = LLMAnswerer(
        Echo(),  # type: ignore[arg-type]
        benchmark_of={"b1": "beam", "l1": "longmemeval", "c1": "locomo"},
    )

    def q(conv: str) -> Question:
        return Question(id=f"{conv}-q", conversation_id=conv, category="x", question="Q?", gold="g")

    prompts = {conv: answerer.render(q(conv), []) for conv in ("b1", "l1", "c1")}
    assert len(set(prompts.values())) == 3
    assert "ANSWER:" not in prompts["b1"] and "ANSWER:" in prompts["c1"]
    assert set(answerer.prompt_hashes) == {"answer", "answer:longmemeval", "answer:beam"}
    # BEAM keeps the whole reply (an ordered list is several lines); the others the marker's line
    assert answerer.answer(q("b1"), []).text.startswith("first event\nsecond event")
    assert answerer.answer(q("c1"), []).text == "ignored for beam"


# --------------------------------------------------------------------------- mem0 answers

DEMO_FILE = Path(__file__).resolve().parents[2] / "pytest_memeval" / "benchmarks" / "data"
ANSWER_REPLY = "A beagle, I think.\nThe memories say so; no ANSWER: marker is read."


def _answer_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    if messages[0]["role"] == "system":  # the answer call
        return ANSWER_REPLY
    return _mem0_reply(messages, model, params)


def _upstream_answer_requests(
    srv: LLMServer, questions: list[dict[str, Any]], model: str
) -> list[str]:
    """What the (upstream-shaped) MemorySearch.answer_question sends for the memories the plugin
    stored: speakers and timestamps read straight from the demo's LoCoMo-format file."""
    conversations = json.loads((DEMO_FILE / "demo.json").read_text(encoding="utf-8"))
    sys.modules["prompts"] = _module(FIXTURES / "mem0" / "evaluation" / "prompts.py", "prompts")
    module = _module(
        FIXTURES / "mem0" / "evaluation" / "src" / "memzero" / "search.py", "m0_search"
    )
    client = openai.OpenAI(api_key=KEY, base_url=srv.openai_base_url)
    searcher = module.MemorySearch(client, model)
    srv.reset()
    try:
        for idx, item in enumerate(conversations):
            conv = item["conversation"]
            turns: dict[str, tuple[str, str]] = {}  # dia_id -> (speaker, timestamp)
            for key, chats in conv.items():
                if isinstance(chats, list):
                    for chat in chats:
                        turns[chat["dia_id"]] = (chat["speaker"], conv[f"{key}_date_time"])
            for q in questions:
                if q["conversation"] != item["sample_id"]:
                    continue
                per_speaker: dict[str, list[dict[str, str]]] = {
                    conv["speaker_a"]: [],
                    conv["speaker_b"]: [],
                }
                for m in q["memories"]:  # rank order, as returned
                    speaker, timestamp = turns[m["source_ids"][0]]
                    per_speaker[speaker].append({"memory": m["text"], "timestamp": timestamp})
                searcher.answer_question(
                    f"{conv['speaker_a']}_{idx}",
                    f"{conv['speaker_b']}_{idx}",
                    per_speaker[conv["speaker_a"]],
                    per_speaker[conv["speaker_b"]],
                    q["question"],
                )
        return sorted(_request(b) for b in _chat_bodies(srv))
    finally:
        client.close()
        sys.modules.pop("prompts", None)


def test_mem0_protocol_answer_requests_match_mem0s_code_path(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist_mode: list[str]
) -> None:
    out = pytester.path / "r.json"
    with LLMServer(reply=_answer_reply) as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        result = pytester.runpytest(
            "--memeval=demo",
            "--memsys=bm25",
            f"--memeval-cache-dir={pytester.path / 'cache'}",
            "--memeval-protocol=mem0",
            f"--memeval-protocol-source={FIXTURES / 'mem0'}",
            "--memeval-answerer=openai:gpt-4o-mini",
            "--memeval-judge=openai:gpt-4o-mini",
            f"--memeval-json={out}",
            *xdist_mode,
        )
        assert result.ret == 0, result.stdout.str()
        bodies = _chat_bodies(srv)
        answer_bodies = [b for b in bodies if b["messages"][0]["role"] == "system"]
        report = read_json(out)
        questions = report["runs"][0]["questions"]
        assert len(answer_bodies) == len(questions)  # one answer call per question
        plugin_requests = sorted(_request(b) for b in answer_bodies)
        upstream_requests = _upstream_answer_requests(srv, questions, "gpt-4o-mini")
    assert plugin_requests == upstream_requests
    body = answer_bodies[0]
    assert set(body) == {"model", "messages", "temperature"}  # no max_tokens, no JSON mode
    assert body["temperature"] == 0.0 and len(body["messages"]) == 1
    assert any(m["source_ids"] for q in questions for m in q["memories"])
    assert "TEST ANSWER PROMPT" in body["messages"][0]["content"]
    for q in questions:
        assert q["prediction"] == ANSWER_REPLY  # the whole reply, no marker extraction
        filed = q["details"]["answer_prompt"]
        assert filed["unattributed"] == 0 and filed["untimed"] == 0
        assert filed["speaker_1_memories"] + filed["speaker_2_memories"] == len(q["memories"])
        assert all(m["speaker"] in filed["speakers"] for m in q["memories"])
    answer = report["provenance"]["protocol"]["answer"]
    assert answer["prompt_sha256"] == report["provenance"]["protocol"]["prompt_sha256"]["answer"]
    assert answer["request"]["max_tokens"] is None and answer["request"]["temperature"] == 0.0
    assert answer["answers"] == len(questions) and answer["unattributed_memories"] == 0
    assert "first source id" in answer["attribution"]
    assert report["provenance"]["prompt_sha256"] == {
        "mem0:ACCURACY_PROMPT": report["provenance"]["protocol"]["prompt_sha256"]["judge"],
        "mem0:ANSWER_PROMPT": answer["prompt_sha256"],
    }
    assert "answers with" not in result.stdout.str()  # Mem0's own model: no warning
    result.stdout.fnmatch_lines(["*answers: Mem0's ANSWER_PROMPT request (15 answers); 0 of *"])


STRING_SYSTEM = """
import pytest


class Strings:
    def ingest(self, conversation):
        self.turns = [t.text for s in conversation.sessions for t in s.turns]

    def search(self, question, k):
        return self.turns[:2]


@pytest.fixture(scope="session")
def strings():
    return Strings()
"""


def test_mem0_answers_unattributed_memories_model_warning_and_prompt_conflict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(STRING_SYSTEM)
    out = pytester.path / "r.json"
    base = [
        "--memeval=demo",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=mem0",
        f"--memeval-protocol-source={FIXTURES / 'mem0'}",
        "--memeval-answerer=openai:gpt-4.1",
        "-p",
        "no:xdist",
    ]
    with LLMServer(reply=_answer_reply) as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        result = pytester.runpytest(*base, "--memsys=strings", f"--memeval-json={out}")
        assert result.ret == 0, result.stdout.str()
        result.stdout.fnmatch_lines(["*answers with gpt-4o-mini; gpt-4.1 gives numbers that*"])
        result.stdout.fnmatch_lines(
            ["*answers: Mem0's ANSWER_PROMPT request (15 answers); 30 of 30 memories without*"]
        )
        report = read_json(out)
        questions = report["runs"][0]["questions"]
        for q in questions:  # plain strings: no speaker, no session; nothing dropped
            filed = q["details"]["answer_prompt"]
            assert filed == {
                "protocol": "mem0",
                "speakers": filed["speakers"],
                "speaker_1_memories": 2,
                "speaker_2_memories": 0,
                "unattributed": 2,
                "untimed": 2,
            }
        answer = report["provenance"]["protocol"]["answer"]
        assert answer["unattributed_memories"] == 2 * len(questions) == answer["memories"]
        prompt = srv.requests[0].body["messages"][0]["content"]
        assert json.dumps(questions[0]["memories"][0]["text"]) in prompt  # no timestamp prefix

        own = pytester.path / "own.txt"
        own.write_text("{memories} {question} {reference_date}")
        srv.reset()
        result = pytester.runpytest(*base, "--memsys=bm25", f"--memeval-answer-prompt={own}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--memeval-answer-prompt=*drop --memeval-answer-prompt*"])
        assert srv.request_count == 0
