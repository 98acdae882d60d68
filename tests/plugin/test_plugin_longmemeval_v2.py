"""``--memeval=longmemeval-v2`` end to end on hand-written files in upstream's shape: bm25
without xdist and with ``-n 2`` (the same numbers), every question collected, the question types
as markers, the LLM-checked items without an offline score."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import XDIST_MODES, marked_ids, read_json, status_scores
from llm_server import OPENAI_PATH, LLMServer

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "longmemeval_v2" / "data"

pytestmark = pytest.mark.usefixtures("memeval_env")


def test_bm25_same_numbers_without_and_with_xdist(pytester: pytest.Pytester) -> None:
    reports = []
    for mode in XDIST_MODES.values():
        out = pytester.path / f"r{len(reports)}.json"
        result = pytester.runpytest(
            "--memeval=longmemeval-v2",
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
    assert run["summary"]["overall"]["count"] == 6  # every question of questions.jsonl
    scored = {q["id"] for q in run["questions"] if "lme2_score" in q["scores"]}
    # the two LLM-checked questions have no offline score (unless the reply is UNKNOWN)
    assert {"q_static_1", "q_proc_1", "q_dyn_1", "q_ent_1"} <= scored
    assert all("lme2_unknown" in q["scores"] for q in run["questions"])
    ds = first["provenance"]["datasets"]["longmemeval-v2"]
    assert ds["questions_total"] == 6


@pytest.mark.parametrize(
    ("marker", "count"),
    [("static-environment", 2), ("errors-gotchas", 1), ("static-environment-abs", 1)],
)
def test_question_types_are_markers(pytester: pytest.Pytester, marker: str, count: int) -> None:
    ids = marked_ids(pytester, "longmemeval-v2", DATA, marker)
    assert len(ids) == count, ids


# --------------------------------------------------------------------------- the LLM checks

SHAPED = Path(__file__).resolve().parent.parent / "fixtures" / "protocols" / "longmemeval-v2"


def test_llm_checks_judged_same_numbers_and_cached(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge alone (the protocol is the default for this suite) sends the abstention and the
    gotcha question to it, with the harness's settings; the other questions keep their rule
    verdict under the same metric. No xdist and ``-n 2`` give the same numbers, and a rerun on
    the same cache sends nothing."""
    labels = {"dark-mode": '{"label": 1, "reason": "ok"}', "trips up": '{"label": 0}'}

    def reply(messages: list[dict[str, str]], model: str, params: dict[str, object]) -> str:
        text = messages[-1]["content"]
        return next(v for k, v in labels.items() if k in text)

    reports = []
    with LLMServer(reply=reply) as srv:
        for key, value in srv.env("sk-loopback-lme2").items():
            monkeypatch.setenv(key, value)
        for mode in [*XDIST_MODES.values(), ["-p", "no:xdist"]]:
            before = srv.count(OPENAI_PATH)
            out = pytester.path / f"j{len(reports)}.json"
            result = pytester.runpytest(
                "--memeval=longmemeval-v2",
                f"--memeval-data={DATA}",
                "--memeval-accept-unpinned",  # a small file at the release's path
                "--memsys=bm25",
                "--memeval-judge=openai:gpt-5.2",
                f"--memeval-protocol-source={SHAPED}",
                f"--memeval-cache-dir={pytester.path / ('cache' if reports else 'cache0')}",
                f"--memeval-json={out}",
                *mode,
            )
            assert result.ret in (0, 1), result.stdout.str()
            reports.append((read_json(out), srv.count(OPENAI_PATH) - before))
        bodies = [r.body for r in srv.requests if r.path == OPENAI_PATH]
    (first, sent0), (second, sent1), (third, sent2) = reports
    assert (sent0, sent1, sent2) == (2, 2, 0)  # the rerun on the -n 2 run's cache: all hits
    assert status_scores(first) == status_scores(second) == status_scores(third)
    scores = {q["id"]: q["scores"] for q in first["runs"][0]["questions"]}
    assert scores["q_static_abs_1"]["judge_lme2_official"] == 1.0
    assert scores["q_gotcha_1"]["judge_lme2_official"] == 0.0
    assert all("judge_lme2_official" in s for s in scores.values())  # every question
    for body in bodies:
        assert body["model"] == "gpt-5.2" and "temperature" not in body
        assert body["reasoning_effort"] == "medium" and body["max_completion_tokens"] == 4096
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert first["provenance"]["protocol"]["name"] == "longmemeval-v2"


def _shaped_systems() -> dict[str, str]:
    """``DOMAIN_SYSTEM_PROMPTS`` of the upstream-shaped harness.py, evaluated from its source."""
    import ast

    tree = ast.parse((SHAPED / "evaluation" / "harness.py").read_text("utf-8"))
    (node,) = [n for n in tree.body if isinstance(n, ast.Assign)]
    systems: dict[str, str] = ast.literal_eval(node.value)
    return systems


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
@pytest.mark.parametrize("protocol", ["longmemeval-v2", "longmemeval-v2-corrected"])
def test_reader_request_is_upstreams_or_the_labelled_correction(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, protocol: str, mode: str
) -> None:
    """The LLM answerer sends harness.py's reader request: the domain's system prompt (the
    official protocol: upstream's characters, the backspace of its non-raw "\\boxed{}"
    included; the corrected variant: "\\boxed{}", and labelled so in the provenance), then the
    memory context and the question; the whole reply is the prediction."""
    with LLMServer(reply=lambda messages, model, params: '\\boxed{UNKNOWN} {"label": 1}') as srv:
        for key, value in srv.env("sk-loopback-lme2").items():
            monkeypatch.setenv(key, value)
        out = pytester.path / "r.json"
        result = pytester.runpytest(
            "--memeval=longmemeval-v2",
            f"--memeval-data={DATA}",
            "--memeval-accept-unpinned",  # a small file at the release's path
            "--memsys=bm25",
            "--memeval-answerer=openai:qwen-reader",
            "--memeval-judge=openai:gpt-5.2",
            f"--memeval-protocol={protocol}",
            f"--memeval-protocol-source={SHAPED}",
            f"--memeval-cache-dir={pytester.path / 'cache'}",
            f"--memeval-json={out}",
            *XDIST_MODES[mode],
        )
        assert result.ret in (0, 1), result.stdout.str()
        answers = [
            r.body
            for r in srv.requests
            if r.path == OPENAI_PATH and r.body["model"] == "qwen-reader"
        ]
    report = read_json(out)
    questions = {q["id"]: q for q in report["runs"][0]["questions"]}
    assert len(answers) == len(questions) == 6
    systems = _shaped_systems()
    assert all("\x08oxed{}" in text for text in systems.values())
    if protocol == "longmemeval-v2":
        want = systems
    else:
        want = {k: v.replace("\x08oxed{}", "\\boxed{}") for k, v in systems.items()}
    domains = {"q_ent_1": "enterprise"}
    by_question = {}
    for body in answers:
        system, user = body["messages"]
        assert system["role"] == "system" and user["role"] == "user"
        qid = next(q for q, v in questions.items() if user["content"].endswith(v["question"]))
        by_question[qid] = body
        assert system["content"] == want[domains.get(qid, "web")]
        assert ("\x08" in system["content"]) == (protocol == "longmemeval-v2")
        assert user["content"].startswith("### Memory context:\n")
        assert f"\n\n### Question to answer:\n{questions[qid]['question']}" in user["content"]
        assert "temperature" not in body and body["max_completion_tokens"] == 20000
    assert set(by_question) == set(questions)
    assert all(q["prediction"] == '\\boxed{UNKNOWN} {"label": 1}' for q in questions.values())
    described = report["provenance"]["protocol"]
    assert described["name"] == protocol
    corrected = [n for n in described["notes"] if n.startswith("CORRECTED VARIANT")]
    assert len(corrected) == (protocol == "longmemeval-v2-corrected")
    # the published figures were measured with upstream's bytes: beside the corrected variant
    # they are a reference, with the protocol as the reason
    published = report["extra"]["published"]["longmemeval-v2"]
    assert published
    for row in published:
        reasons = [r for r in row["reasons"] if r.startswith("protocol:")]
        assert bool(reasons) == (protocol == "longmemeval-v2-corrected"), row["reasons"]
