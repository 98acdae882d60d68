"""LongMemEval-V2's LLM checks (``--memeval-protocol=longmemeval-v2``): the judge request equals the
one upstream's ``llm_abstention_checker`` / ``llm_gotchas_checker`` send for the same inputs (both
through the real openai SDK to the loopback server, upstream's functions run from the pinned
snapshot, tests/lme2_upstream.py), the reply is read as upstream's
``_parse_llm_binary_judgement`` reads it, and the request settings that carry
``reasoning_effort`` and no temperature leave every other request as it was."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedClient, make_question
from llm_server import OPENAI_PATH, LLMServer
from lme2_upstream import SCORER, load_upstream_module, upstream_file_bytes, upstream_llm_check

from pytest_memeval.benchmarks import get_benchmark
from pytest_memeval.benchmarks._base import LoadRequest
from pytest_memeval.benchmarks.longmemeval_v2._judge import LongMemEvalV2OfficialJudge, lme2_label
from pytest_memeval.llm import (
    ChatMessage,
    ProviderConfig,
    QueuedRequest,
    Request,
    anthropic_body,
    canonical_request,
    make_client,
    openai_body,
)
from pytest_memeval.protocols import load_protocol
from pytest_memeval.records import Question

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DATA = FIXTURES / "longmemeval_v2" / "data"
SHAPED = FIXTURES / "protocols" / "longmemeval-v2"
UPSTREAM = load_upstream_module()
live = pytest.mark.skipif(UPSTREAM is None, reason="no upstream LongMemEval-V2 snapshot here")
KEY = "sk-loopback-lme2"


def _questions() -> dict[str, Question]:
    ds = get_benchmark("longmemeval-v2").load(LoadRequest(DATA, Path("/nonexistent")))
    return {q.id: q for q in ds.questions}


def _judge(source_dir: Path) -> LongMemEvalV2OfficialJudge:
    judge = load_protocol("longmemeval-v2", source_dir=source_dir, cache_dir=source_dir).judge()
    assert isinstance(judge, LongMemEvalV2OfficialJudge)
    return judge


def _pinned(tmp_path: Path) -> Path:
    raw = upstream_file_bytes(SCORER)
    assert raw is not None
    (tmp_path / "evaluation").mkdir()
    (tmp_path / "evaluation" / "qa_eval_metrics.py").write_bytes(raw)
    harness = upstream_file_bytes("evaluation/harness.py")  # the reader's system prompts
    assert harness is not None
    (tmp_path / "evaluation" / "harness.py").write_bytes(harness)
    return tmp_path


# --------------------------------------------------------------------------- reply reading

REPLIES: list[tuple[str, int | None]] = [
    ('{"label": 1, "reason": "rejects the premise"}', 1),
    ('{"label": 0, "reason": "follows it"}', 0),
    ('{"label": "1", "reason": "x"}', 1),
    ('{"label": true}', 1),
    ('{"label": 1.0}', 1),
    ('{"label": 2}', None),
    ('{"label": [1]}', None),  # upstream: unhashable label -> TypeError
    ("[1, 0]", None),
    ('["label": 1]', 1),  # no {...} span: the regexes
    ('```json\n{"label": 1, "reason": "ok"}\n```', 1),
    ("```\nlabel = 0\n```", 0),
    ("The label: 1 because it is right", 1),
    ("Label=0", 0),
    ("{'label': 1, 'reason': 'single quotes'}", 1),
    ('{"label": 1, "reason": "a"} and then {"label": 0}', 1),  # greedy span fails: the regex
    ('{"reason": "none", "verdict": 1}', None),
    ("", None),
    ("   ", None),
    ("labels: 1", None),
    ('{"label": 1' + "]" * 3, 1),
    ("{" * 3000 + "}" * 3000, None),
    ('{"label": ' + "9" * 5000 + "}", None),  # upstream: ValueError (digits), not caught
    ("yes", None),
]


@pytest.mark.parametrize(("reply", "label"), REPLIES)
def test_reply_label_is_read_as_upstream_reads_it(reply: str, label: int | None) -> None:
    assert lme2_label(reply) == label
    if UPSTREAM is not None:
        try:
            theirs: int | None = UPSTREAM["_parse_llm_binary_judgement"](reply)[0]
        except Exception:  # upstream raises: its harness aborts; ours counts 0 with a warning
            theirs = None
        assert theirs == label


# --------------------------------------------------------------------------- request settings


def _request(**kw: Any) -> Request:
    return Request((ChatMessage("system", "s"), ChatMessage("user", "u")), **kw)


def test_no_temperature_and_reasoning_effort_in_bodies_and_cache_keys() -> None:
    openai = ProviderConfig("openai", "gpt-5.2", "https://api.openai.com/v1", "OPENAI_API_KEY")
    plain = _request(max_tokens=4096, max_tokens_field="max_completion_tokens")
    effort = _request(
        temperature=None,
        max_tokens=4096,
        max_tokens_field="max_completion_tokens",
        reasoning_effort="medium",
    )
    assert openai_body(openai, plain) == {
        "model": "gpt-5.2",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        "temperature": 0.0,
        "max_completion_tokens": 4096,
    }
    body = openai_body(openai, effort)
    assert "temperature" not in body and body["reasoning_effort"] == "medium"
    claude = ProviderConfig("anthropic", "m", "https://api.anthropic.com", "ANTHROPIC_API_KEY")
    assert "temperature" not in anthropic_body(claude, effort)
    assert anthropic_body(claude, plain)["temperature"] == 0.0

    def key(r: Request) -> dict[str, Any]:
        text = canonical_request(provider="openai", model="m", base_url="u", request=r)
        out: dict[str, Any] = json.loads(text)
        return out

    assert "reasoning_effort" not in key(plain) and key(plain)["temperature"] == 0.0
    assert key(effort)["temperature"] is None and key(effort)["reasoning_effort"] == "medium"
    low = _request(
        temperature=None, max_tokens=4096, max_tokens_field="max_completion_tokens",
        reasoning_effort="low",
    )  # fmt: skip
    assert len({json.dumps(key(r)) for r in (plain, effort, low)}) == 3
    with pytest.raises(ValueError, match="reasoning_effort"):
        _request(reasoning_effort="")
    queued = QueuedRequest("k", "openai", "gpt-5.2", "https://x/v1", "OPENAI_API_KEY", effort)
    assert QueuedRequest.from_dict(json.loads(json.dumps(queued.to_dict()))).request == effort
    old = QueuedRequest("k", "openai", "gpt-5.2", "https://x/v1", "OPENAI_API_KEY", plain)
    assert "reasoning_effort" not in old.to_dict()["request"]


# --------------------------------------------------------------------------- the judge


def test_judge_on_the_upstream_shaped_file() -> None:
    """Messages as the fixture's own builders make them; the harness's settings; the offline
    eval functions, an UNKNOWN answer and an empty reply send nothing."""
    judge = _judge(SHAPED)
    tree = ast.parse((SHAPED / "evaluation" / "qa_eval_metrics.py").read_text("utf-8"))
    ns: dict[str, Any] = {}
    exec(compile(tree, "qa_eval_metrics.py", "exec"), ns)
    qs = _questions()
    client = ScriptedClient(reply='{"label": 1, "reason": "ok"}')
    for qid, kind in (("q_static_abs_1", "abstention"), ("q_gotcha_1", "gotchas")):
        q = qs[qid]
        reply = "  There is none {really}.\n\\boxed{no such switch}  "
        result = judge.judge(q, reply, client)
        assert result.scores == {"judge_lme2_official": 1.0}
        want = ns[f"_build_{kind}_judge_messages"](
            question_text=q.question,
            reference_answer=str(q.gold),
            model_full_response=reply.strip(),
            model_final_answer="no such switch",
        )
        got = [{"role": m.role, "content": m.content} for m in client.calls[-1].messages]
        assert got == want
        assert client.calls[-1].kwargs == {
            "temperature": None,
            "max_tokens": 4096,
            "role": "judge",
            "max_tokens_field": "max_completion_tokens",
            "reasoning_effort": "medium",
        }
    sent = len(client.calls)
    assert judge.judge(qs["q_static_abs_1"], "\\boxed{UNKNOWN}", client).scores == {
        "judge_lme2_official": 0.0
    }
    assert judge.judge(qs["q_gotcha_1"], "  ", client).scores == {"judge_lme2_official": 0.0}
    assert judge.judge(qs["q_dyn_1"], "\\boxed{B}", client).scores == {"judge_lme2_official": 1.0}
    assert judge.judge(qs["q_dyn_1"], "\\boxed{C}", client).scores == {"judge_lme2_official": 0.0}
    assert len(client.calls) == sent  # none of these sent a request
    bad = judge.judge(qs["q_gotcha_1"], "x", ScriptedClient(reply="no idea"))
    assert bad.scores == {"judge_lme2_official": 0.0} and bad.warnings


@live
@pytest.mark.parametrize("verdict", ['{"label": 1, "reason": "ok"}', "label: 0"])
def test_request_and_verdict_equal_upstreams_through_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdict: str
) -> None:
    """Upstream's checker (run from the pinned file, as the harness calls it with its default
    evaluator settings) and ours, each through the openai SDK to the loopback server: the same
    body, key for key in the same order, and the same verdict."""
    assert UPSTREAM is not None
    judge = _judge(_pinned(tmp_path))
    qs = _questions()
    replies = [
        "The premise is wrong: there is no dark-mode switch.",
        "Reasoning {with braces}\n\n\\boxed{Verify the e-mail first}",
        "\\boxed{Settings, Appearance}",
    ]
    with LLMServer(reply=lambda messages, model, params: verdict) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        client = make_client("openai:gpt-5.2", base_url=srv.openai_base_url)
        for qid in ("q_static_abs_1", "q_gotcha_1"):
            q = qs[qid]
            for reply in replies:
                theirs = upstream_llm_check(
                    UPSTREAM,
                    q.meta["eval_function"],
                    q.question,
                    reply,
                    str(q.gold),
                    evaluator_model="gpt-5.2",
                    evaluator_base_url=srv.openai_base_url,
                    evaluator_api_key=KEY,
                    evaluator_reasoning_effort="medium",
                    evaluator_max_completion_tokens=4096,
                    evaluator_timeout_seconds=43200.0,
                )
                ours = judge.judge(q, reply, client)
                bodies = [r.body for r in srv.requests if r.path == OPENAI_PATH][-2:]
                assert json.dumps(bodies[1]) == json.dumps(bodies[0]), (qid, reply)
                assert "temperature" not in bodies[1]
                assert bodies[1]["reasoning_effort"] == "medium"
                assert ours.scores["judge_lme2_official"] == float(theirs)
        client.close()


# --------------------------------------------------------------------------- reader request


def _upstream_build_messages(harness: bytes) -> tuple[dict[str, str], Any]:
    """``DOMAIN_SYSTEM_PROMPTS`` and ``build_messages`` of the pinned harness.py, executed from
    its source (``build_messages`` only needs ``to_data_url`` for images: none here)."""
    import typing

    tree = ast.parse(harness)
    keep = [
        n
        for n in tree.body
        if (isinstance(n, ast.FunctionDef) and n.name == "build_messages")
        or (
            isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "DOMAIN_SYSTEM_PROMPTS" for t in n.targets)
        )
    ]
    ns: dict[str, Any] = {
        "Any": typing.Any,
        "Tuple": typing.Tuple,  # noqa: UP006 - upstream's annotation
        "MemoryContextItem": dict,
    }
    exec(compile(ast.Module(body=keep, type_ignores=[]), "harness.py", "exec"), ns)
    return ns["DOMAIN_SYSTEM_PROMPTS"], ns["build_messages"]


@pytest.mark.skipif(upstream_file_bytes("evaluation/harness.py") is None, reason="no snapshot")
@pytest.mark.parametrize("memories", [0, 2])
def test_reader_request_is_upstreams_bytes_or_the_labelled_correction(
    tmp_path: Path, memories: int
) -> None:
    """Official: the system message is upstream's DOMAIN_SYSTEM_PROMPTS[domain] character for
    character (the backspace of its non-raw "\\boxed{}" included) and the user message is the
    text of build_messages' parts, in order; the corrected variant differs only by "\\boxed{}"."""
    from pytest_memeval.benchmarks.longmemeval_v2._answer import Lme2AnswerPrompts
    from pytest_memeval.records import Memory

    source = _pinned(tmp_path)
    harness = upstream_file_bytes("evaluation/harness.py")
    assert harness is not None
    systems, build_messages = _upstream_build_messages(harness)
    assert all("\x08oxed{}" in text for text in systems.values())
    question = make_question(id="q1", question="Where is the report?", meta={"domain": "web"})
    found = [Memory(f"trajectory {i} text") for i in range(memories)]
    for name, fix in (("longmemeval-v2", False), ("longmemeval-v2-corrected", True)):
        loaded = load_protocol(name, source_dir=source, cache_dir=tmp_path)
        assert all(s.matches_pin for s in loaded.sources.values())
        prompts = Lme2AnswerPrompts.from_templates(
            {k: t.text for k, t in loaded.templates.items()}, fix_backspace=fix
        )
        built = prompts.messages(question, found)
        assert built is not None
        want, _ = build_messages(
            systems["web"],
            "Where is the report?",
            None,
            [{"type": "text", "value": m.text} for m in found],
        )
        want_user = "".join(part["text"] for part in want[1]["content"])
        assert built[1].content == want_user
        if fix:
            assert built[0].content == systems["web"].replace("\x08oxed{}", "\\boxed{}")
            assert "\x08" not in built[0].content
        else:
            assert built[0].content == want[0]["content"] == systems["web"]
