"""--memeval-judge-calibration through the plugin, against the loopback server with the real SDKs:
the server is told which answers to accept, and the reported acceptance must be exactly that."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from calibration_files import audit_doc
from conftest import read_json
from llm_server import ANTHROPIC_PATH, OPENAI_PATH, LLMServer

pytestmark = pytest.mark.usefixtures("memeval_env")

JUDGES = "openai:gpt-4o-mini,anthropic:claude-sonnet-4-6"
#: a vague answer of the audit's kind that the scripted judge is told to accept
VAGUE = "Sometime in early 2024"

Policy = Callable[[str, str], bool]


def lenient(gold: str, prediction: str) -> bool:
    """Accepts the gold, every negation and the vague audit answer (a judge fooled twice)."""
    return prediction in (gold, VAGUE) or prediction.startswith("Not ")


def strict(gold: str, prediction: str) -> bool:
    return prediction == gold


class Judge:
    """The server's reply function: a verdict by ``policy`` on the prompt's gold and answer,
    and a log of every verdict it gave."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.told: dict[tuple[str, str], bool] = {}
        self.lock = threading.Lock()

    def __call__(self, messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
        text = messages[-1]["content"]
        gold = re.search(r"Reference answer: (.*)", text)
        pred = re.search(r"Assistant's answer: (.*)", text)
        assert gold is not None and pred is not None
        verdict = self.policy(gold.group(1).strip(), pred.group(1).strip())
        with self.lock:
            self.told[(gold.group(1).strip(), pred.group(1).strip())] = verdict
        label = "CORRECT" if verdict else "WRONG"
        return json.dumps({"reasoning": "scripted", "label": label})


def _serve(monkeypatch: pytest.MonkeyPatch, judge: Judge) -> Iterator[LLMServer]:
    with LLMServer(reply=judge) as srv:
        for key, value in srv.env("sk-test").items():
            monkeypatch.setenv(key, value)
        yield srv


@pytest.fixture
def lenient_judge() -> Judge:
    return Judge(lenient)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, lenient_judge: Judge) -> Iterator[LLMServer]:
    yield from _serve(monkeypatch, lenient_judge)


@pytest.fixture
def wrong_file(pytester: pytest.Pytester) -> Path:
    """Answers in the audit's shape for the demo file (conversation K, question N from 0); the
    last one names a question that is not at that place."""
    path = pytester.path / "ap_demo.json"
    path.write_bytes(
        audit_doc(
            [
                (0, 1, "When did Jonas run the Lisbon half marathon?", VAGUE),
                (1, 0, "What instrument does Tom play?", "the violin"),
                (1, 1, "What instrument does Tom play?", "a guitar"),
            ]
        )
    )
    return path


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        *args,
    )


def _expected_rows(cases: list[dict[str, Any]], judge: str) -> dict[str, tuple[int, int, int, int]]:
    """category -> (gold n, gold accepted, wrong n, wrong accepted), recounted from the cases."""
    rows: dict[str, list[int]] = {}
    for c in cases:
        if c["judge"] != judge:
            continue
        for cat in (c["category"], "overall"):
            row = rows.setdefault(cat, [0, 0, 0, 0])
            at = 0 if c["kind"] == "gold" else 2
            row[at] += 1
            row[at + 1] += c["status"] == "accepted"
    return {k: (v[0], v[1], v[2], v[3]) for k, v in rows.items()}


def test_acceptance_is_what_the_server_was_told(
    pytester: pytest.Pytester,
    server: LLMServer,
    lenient_judge: Judge,
    wrong_file: Path,
    run_mode: list[str],
) -> None:
    out, md, html = (pytester.path / n for n in ("r.json", "r.md", "r.html"))
    result = _run(
        pytester,
        f"--memeval-judge={JUDGES}",
        "--memeval-judge-calibration=only",
        f"--memeval-calibration-wrong=perturb,{wrong_file}",
        f"--memeval-json={out}",
        f"--memeval-markdown={md}",
        f"--memeval-html={html}",
        *run_mode,
    )
    assert result.ret == 0, result.stdout.str()
    outcomes = result.parseoutcomes()
    assert not {"passed", "failed", "errors"} & set(outcomes)  # =only: no question ran
    if "2" not in run_mode:  # under xdist the workers deselect, the controller does not count
        assert outcomes["deselected"] == 15
    report = read_json(out)
    assert report["runs"] == []
    block = report["extra"]["judge_calibration"]
    cases = block["cases"]
    gold_of = {c["id"]: c["answer"] for c in cases if c["kind"] == "gold"}
    # every answer went to both judges through both SDKs, once
    assert server.count(OPENAI_PATH) == server.count(ANTHROPIC_PATH) == block["answers"]
    assert len(cases) == block["judgments"] == 2 * block["answers"]
    for c in cases:
        told = lenient_judge.told[(gold_of[c["id"]], c["answer"])]
        assert c["status"] == ("accepted" if told else "rejected"), c
    kinds = {c["kind"] for c in cases}
    assert kinds == {"gold", "wrong-entity", "wrong-date", "negation", "file-ap_demo"}
    for table in block["tables"]:
        expected = _expected_rows(cases, table["judge"])
        for row in table["rows"]:
            n, acc, wn, wacc = expected[row["category"]]
            assert (row["correct"]["n"], row["correct"]["accepted"]) == (n, acc)
            assert (row["wrong"]["n"], row["wrong"]["accepted"]) == (wn, wacc)
        overall = table["rows"][-1]
        assert overall["correct"]["rate"] == 1.0  # the gold is always accepted
        negations = [c for c in cases if c["kind"] == "negation" and c["judge"] == table["judge"]]
        told_yes = sum(c["answer"].startswith("Not ") for c in negations)
        assert 0 < told_yes < len(negations)  # "Not X" accepted, a flipped "Likely no" not
        assert overall["wrong_by_kind"]["negation"]["accepted"] == told_yes
        assert overall["wrong_by_kind"]["wrong-date"]["rate"] == 0.0
        # the vague answer (accepted) and "the violin" (rejected); "a guitar" is misplaced
        assert overall["wrong_by_kind"]["file-ap_demo"]["n"] == 2
        assert overall["wrong_by_kind"]["file-ap_demo"]["accepted"] == 1
    assert block["unmatched"] == {"demo": {"file-ap_demo": 1}}
    prov = report["provenance"]["judge_calibration"]
    assert prov["mode"] == "only" and prov["sources"] == ["perturb", "file-ap_demo"]
    (ws,) = prov["wrong_sets"]
    assert ws["file"] == str(wrong_file) and len(ws["sha256"]) == 64
    result.stdout.fnmatch_lines(
        [
            "*- judge calibration -*",
            "run instead of the system; * answers, * judgments*",
            "demo · judge openai:gpt-4o-mini",
            "*category*gold accepted*wrong accepted*wrong-entity*wrong-date*negation*",
            "*overall*",
            "demo · judge anthropic:claude-sonnet-4-6",
            "*note: demo: 1 answer(s) of file-ap_demo matched no question*",
        ]
    )
    text = md.read_text()
    assert "### Judge calibration" in text and "openai:gpt-4o-mini" in text
    assert "Judge calibration only: no question of the system ran." in text
    page = html.read_text()
    assert 'id="calibration"' in page and "judge anthropic:claude-sonnet-4-6" in page


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_gate_fails_a_judge_that_accepts_wrong_answers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    gates = [
        "--memeval-fail-under=demo.overall.judge_false_accept<=0.1",
        "--memeval-fail-under=demo[openai:gpt-4o-mini].temporal.judge_true_accept>=90%",
    ]
    args = ["--memeval-judge=openai:gpt-4o-mini", "--memeval-judge-calibration=only"]
    for policy, ret in ((lenient, 1), (strict, 0)):
        servers = _serve(monkeypatch, Judge(policy))
        next(servers)
        try:
            result = _run(pytester, *args, *gates, "--memeval-no-cache", *mode)
        finally:
            servers.close()
        assert result.ret == ret, result.stdout.str()
        if ret:
            result.stdout.fnmatch_lines(
                ["memeval gate failed: demo.overall.judge_false_accept = 0.* > 0.100 (judge *"]
            )
        else:
            assert "gate failed" not in result.stdout.str()


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_before_runs_the_system_on_the_same_cache_and_accounting(
    pytester: pytest.Pytester, server: LLMServer, mode: list[str]
) -> None:
    out = pytester.path / "r.json"
    args = [
        "--memeval-judge=openai:gpt-4o-mini",
        "--memeval-judge-calibration",  # no value: before
        f"--memeval-json={out}",
        *mode,
    ]
    result = _run(pytester, *args)
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    block = report["extra"]["judge_calibration"]
    assert block["mode"] == "before"
    assert len(report["runs"][0]["questions"]) == 15  # the system ran too
    calls = report["extra"]["tokens"]["judge"]["openai:gpt-4o-mini"]
    cache = report["extra"]["llm_cache"]
    # calibration and system judgments are counted together; a system answer equal to a gold
    # answer is a cache hit of the calibration's call
    assert calls["calls"] == server.count(OPENAI_PATH) == cache["misses"]
    assert cache["misses"] + cache["hits"] == block["judgments"] + 13
    warm = _run(pytester, *args)
    assert warm.ret == 0
    assert server.count(OPENAI_PATH) == calls["calls"]  # warm rerun: zero new requests
    again = read_json(out)["extra"]["judge_calibration"]
    assert [c["status"] for c in again["cases"]] == [c["status"] for c in block["cases"]]
    assert again["cache"]["hits"] == block["judgments"]


def test_unparseable_replies_are_unscored_and_fail_the_gate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LLMServer(reply=lambda m, model, p: "no JSON today") as srv:
        for key, value in srv.env("sk-test").items():
            monkeypatch.setenv(key, value)
        out = pytester.path / "r.json"
        result = _run(
            pytester,
            "--memeval-judge=openai:gpt-4o-mini",
            "--memeval-judge-calibration=only",
            "--memeval-fail-under=demo.overall.judge_false_accept<=0.1",
            f"--memeval-json={out}",
        )
    assert result.ret == 1, result.stdout.str()
    overall = read_json(out)["extra"]["judge_calibration"]["tables"][0]["rows"][-1]
    assert overall["unscored"] == srv.count(OPENAI_PATH) and overall["wrong"]["n"] == 0
    result.stdout.fnmatch_lines(["*judge_false_accept: no wrong answers were scored*"])


def test_usage_errors(pytester: pytest.Pytester, server: LLMServer) -> None:
    no_judge = _run(pytester, "--memeval-judge-calibration=only")
    assert no_judge.ret == pytest.ExitCode.USAGE_ERROR
    no_judge.stderr.fnmatch_lines(["*add --memeval-judge=PROVIDER:MODEL*"])
    gate = _run(pytester, "--memeval-fail-under=demo.overall.judge_false_accept<=0.1")
    assert gate.ret == pytest.ExitCode.USAGE_ERROR
    gate.stderr.fnmatch_lines(["*judge calibration figure; add --memeval-judge-calibration*"])
    stray = pytester.path / "stray.json"
    stray.write_bytes(audit_doc([(7, 0, "Not a demo question?", "x")]))
    nomatch = _run(
        pytester,
        "--memeval-judge=openai:gpt-4o-mini",
        "--memeval-judge-calibration=only",
        f"--memeval-calibration-wrong={stray}",
    )
    assert nomatch.ret == pytest.ExitCode.USAGE_ERROR
    nomatch.stderr.fnmatch_lines(["*stray.json: none of its 1 answers matches a loaded question*"])
    broken = pytester.path / "broken.json"
    broken.write_text('{"detailed_results": {"u": [{"question_id": "x"}]}}')
    bad = _run(
        pytester,
        "--memeval-judge=openai:gpt-4o-mini",
        "--memeval-judge-calibration=only",
        f"--memeval-calibration-wrong={broken}",
    )
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*broken.json, record detailed_results*field 'question_id'*"])
    assert server.count() == 0


def test_calibration_calls_retry_like_judging(pytester: pytest.Pytester, server: LLMServer) -> None:
    server.push(500, 429, "drop")  # the first three requests fail, each once
    out = pytester.path / "r.json"
    result = _run(
        pytester,
        "--memeval-judge=openai:gpt-4o-mini",
        "--memeval-judge-calibration=only",
        "--memeval-llm-backoff=0",
        "--memeval-llm-concurrency=1",
        f"--memeval-json={out}",
    )
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    block = report["extra"]["judge_calibration"]
    tokens = report["extra"]["tokens"]["judge"]["openai:gpt-4o-mini"]
    assert tokens["retries"] == 3 and tokens["failures"] == 0
    assert server.count(OPENAI_PATH) == block["judgments"] + 3
    assert all(c["status"] in ("accepted", "rejected") for c in block["cases"])
