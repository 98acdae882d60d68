"""LLM answerer and judges through the plugin, against the loopback server with the real SDKs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import RUN_MODES, question_scores, read_json, shared_pytester
from llm_server import ANTHROPIC_PATH, OPENAI_PATH, LLMServer, judge_reply

pytestmark = pytest.mark.usefixtures("memeval_env")

CANARY = "sk-canary-7f3a9c1e5b2d4680"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer(reply=judge_reply) as srv:
        for key, value in srv.env(CANARY).items():
            monkeypatch.setenv(key, value)
        yield srv


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--memeval=demo", f"--memeval-cache-dir={pytester.path / 'cache'}", *args
    )


PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}


class SharedMem0Runs:
    """The cold and warm runs of :func:`test_mem0_judge_cache_and_warm_rerun`, made once per run
    mode (on first use) with a price table, against one loopback judge for the module (the warm
    run's cache keys name its address): the ``-n 2`` cold run is also the run
    :func:`test_price_table_gives_cost` reads (it was a run of its own, with the same options but
    the gate)."""

    def __init__(
        self, request: pytest.FixtureRequest, factory: pytest.TempPathFactory, server: LLMServer
    ) -> None:
        self._request = request
        self._factory = factory
        self.server = server
        self._folders: dict[str, pytest.Pytester] = {}
        self._runs: dict[tuple[str, str], tuple[pytest.RunResult, dict[str, Any], int]] = {}

    def cold(self, mode: str) -> tuple[pytest.RunResult, dict[str, Any], int]:
        """The run's result, its JSON report and the judge calls the server had from it."""
        return self._run(mode, "cold")

    def warm(self, mode: str) -> tuple[pytest.RunResult, dict[str, Any], int]:
        """The same run again, on the cold run's cache (its calls: the cold run's and its own)."""
        self.cold(mode)
        return self._run(mode, "warm")

    def _run(self, mode: str, which: str) -> tuple[pytest.RunResult, dict[str, Any], int]:
        if (mode, which) not in self._runs:
            before = self.server.count(OPENAI_PATH)
            with shared_pytester(self._request, self._factory, self.server.env(CANARY)) as made:
                tester = self._folders.setdefault(mode, made)
                with pytest.MonkeyPatch.context() as mp:
                    mp.chdir(tester.path)
                    out = tester.path / "r.json"
                    prices = tester.path / "prices.json"
                    prices.write_text(json.dumps(PRICES))
                    result = _run(
                        tester,
                        "--memsys=bm25",
                        "--memeval-judge=openai:gpt-4o-mini",
                        f"--memeval-json={out}",
                        "--memeval-fail-under=demo.overall.judge>=0.01",
                        f"--memeval-prices={prices}",
                        *RUN_MODES[mode],
                    )
                    assert result.ret == 0, result.stdout.str()
                    report = read_json(out)
            # the judge calls of this mode's runs so far (the server serves both modes)
            calls = self.server.count(OPENAI_PATH) - before
            if which == "warm":
                calls += self._runs[mode, "cold"][2]
            self._runs[mode, which] = (result, report, calls)
        return self._runs[mode, which]


@pytest.fixture(scope="module")
def mem0_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedMem0Runs]:
    with LLMServer(reply=judge_reply) as server:
        yield SharedMem0Runs(request, tmp_path_factory, server)


@pytest.mark.parametrize("mode", list(RUN_MODES), ids=list(RUN_MODES))
def test_mem0_judge_cache_and_warm_rerun(mem0_runs: SharedMem0Runs, mode: str) -> None:
    result, cold, calls = mem0_runs.cold(mode)
    # 13 judged questions: LoCoMo category 5 is not judged under the Mem0 protocol
    assert calls == 13
    questions = cold["runs"][0]["questions"]
    for q in questions:
        if q["category"] == "adversarial":
            assert "judge_mem0" not in q["scores"]
        else:
            assert q["scores"]["judge_mem0"] in (0.0, 1.0)
            assert q["status"] == ("CORRECT" if q["scores"]["judge_mem0"] == 1.0 else "WRONG")
            assert q["details"]["judge_mem0"]["raw"]
    assert cold["provenance"]["judge"] == ["openai:gpt-4o-mini"]
    assert cold["provenance"]["judge_metric"] == {"demo": "judge_mem0"}
    # the alias `judge` is the first judge's metric on the benchmark
    (gate,) = cold["extra"]["gates"]
    assert gate["passed"] and "memeval gate passed: demo.overall.judge_mem0 = " in gate["message"]
    assert gate["actual"] == cold["runs"][0]["summary"]["overall"]["judge_mem0"]
    assert cold["provenance"]["prompt_sha256"]
    assert cold["extra"]["tokens"]["judge"]
    result.stdout.fnmatch_lines(["*judges: openai:gpt-4o-mini*", "*llm cache: 0 hits, 13 misses*"])

    warm, report, calls = mem0_runs.warm(mode)
    assert calls == 13  # zero new HTTP requests
    assert question_scores(report) == question_scores(cold)
    warm.stdout.fnmatch_lines(["*llm cache: 13 hits, 0 misses*"])


def test_price_table_gives_cost(pytester: pytest.Pytester, mem0_runs: SharedMem0Runs) -> None:
    # a judged demo run with -n 2 and the price table PRICES
    result, report, _ = mem0_runs.cold("n2")
    extra = report["extra"]
    judge = extra["tokens"]["judge"]["openai:gpt-4o-mini"]
    expected = (judge["input_tokens"] * 0.15 + judge["output_tokens"] * 0.6) / 1e6
    assert extra["cost_usd"]["total"] == pytest.approx(expected)
    assert expected > 0
    result.stdout.fnmatch_lines(["*cost: $*"])
    bad = pytester.path / "bad.json"
    bad.write_text('{"gpt-4o-mini": {"input": "cheap"}}')
    usage = _run(pytester, "--memsys=bm25", f"--memeval-prices={bad}")
    assert usage.ret == pytest.ExitCode.USAGE_ERROR
    usage.stderr.fnmatch_lines(["*needs numeric 'input' and 'output'*"])


def test_canary_key_never_leaks(pytester: pytest.Pytester, server: LLMServer) -> None:
    out = pytester.path / "r.json"
    junit = pytester.path / "junit.xml"
    result = _run(
        pytester,
        "--memsys=bm25",
        "--memeval-judge=openai:gpt-4o-mini",
        "--memeval-answerer=openai:gpt-4o-mini",
        f"--memeval-json={out}",
        f"--junitxml={junit}",
        "-n",
        "2",
    )
    assert result.ret == 0, result.stdout.str()
    assert any(r.api_key == CANARY for r in server.requests)  # it did reach the server
    texts = [result.stdout.str(), result.stderr.str(), out.read_text(), junit.read_text()]
    for path in (pytester.path / "cache").rglob("*"):
        if path.is_file():
            texts.append(path.read_bytes().decode("latin-1"))
    assert all(CANARY not in t for t in texts)


def test_llm_answerer_prediction(pytester: pytest.Pytester, server: LLMServer) -> None:
    out = pytester.path / "r.json"
    result = _run(
        pytester,
        "--memsys=bm25",
        "--memeval-answerer=openai:gpt-4o-mini",
        "-k",
        "demo-1-q1",
        f"--memeval-json={out}",
    )
    assert result.ret == 0, result.stdout.str()
    (q,) = read_json(out)["runs"][0]["questions"]
    assert q["prediction"] == "beagle"
    assert q["scores"]["f1"] == 1.0
    body = server.requests[-1].body
    assert "beagle" in json.dumps(body)  # memories went into the prompt


def test_garbage_replies_are_unscored(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LLMServer(reply=lambda m, model, p: "I refuse to answer in JSON") as srv:
        for key, value in srv.env(CANARY).items():
            monkeypatch.setenv(key, value)
        out = pytester.path / "r.json"
        result = _run(
            pytester, "--memsys=bm25", "--memeval-judge=openai:gpt-4o-mini", f"--memeval-json={out}"
        )
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    overall = report["runs"][0]["summary"]["overall_all"]
    assert overall["statuses"]["UNSCORED"] == 13
    assert overall["statuses"]["CORRECT"] + overall["statuses"]["WRONG"] == 2  # category 5
    assert report["extra"]["judge_unscored"] == 13
    unscored = [q for q in report["runs"][0]["questions"] if q["status"] == "UNSCORED"]
    assert all(
        q["details"]["judge_mem0"]["raw"] == ["I refuse to answer in JSON"] for q in unscored
    )
    result.stdout.fnmatch_lines(["*13 unscored*"])


def test_two_judges_and_agreement(pytester: pytest.Pytester, server: LLMServer) -> None:
    out = pytester.path / "r.json"
    result = _run(
        pytester,
        "--memsys=bm25",
        "--memeval-judge=openai:gpt-4o-mini,anthropic:claude-sonnet-4-6",
        f"--memeval-json={out}",
    )
    assert result.ret == 0, result.stdout.str()
    assert server.count(OPENAI_PATH) == 13 and server.count(ANTHROPIC_PATH) == 13
    report = read_json(out)
    q = next(q for q in report["runs"][0]["questions"] if q["category"] != "adversarial")
    assert "judge_mem0" in q["scores"] and "judge_mem0@anthropic:claude-sonnet-4-6" in q["scores"]
    (pair,) = report["extra"]["judge_agreement"]
    assert pair == "judge_mem0 vs judge_mem0@anthropic:claude-sonnet-4-6"
    kappa = report["extra"]["judge_agreement"][pair]
    assert kappa == 1.0  # the loopback judge answers identically on both APIs
    result.stdout.fnmatch_lines(["*judge agreement (Cohen's kappa)*1.000*"])


def test_judge_alias_without_a_judge_is_a_usage_error(pytester: pytest.Pytester) -> None:
    for option in ("--memeval-fail-under=demo.overall.judge>=0.5", "--memeval-metrics=f1,judge"):
        result = _run(pytester, "--memsys=bm25", option)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["*names the first judge's metric*no --memeval-judge is given*"]
        )


def test_missing_key_is_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = _run(pytester, "--memsys=bm25", "--memeval-judge=openai:gpt-4o-mini")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*OPENAI_API_KEY*"])
    bad = _run(pytester, "--memsys=bm25", "--memeval-judge=gpt-4o")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*PROVIDER:MODEL*openai:gpt-4o-mini*"])


def test_rejudge_uses_stored_predictions(pytester: pytest.Pytester, server: LLMServer) -> None:
    pytester.makeconftest("""
import os, pytest
from pytest_memeval.systems._builtin import BM25System

class Guarded(BM25System):
    def ingest(self, conversation):
        if os.environ.get("MEMEVAL_FORBID_INGEST"):
            raise RuntimeError("the memory system must not run during a rejudge")
        super().ingest(conversation)

@pytest.fixture(scope="session")
def guarded():
    return Guarded()
""")
    first = pytester.path / "first.json"
    result = _run(pytester, "--memsys=guarded", f"--memeval-json={first}")
    assert result.ret == 0, result.stdout.str()
    assert server.count() == 0
    import os

    os.environ["MEMEVAL_FORBID_INGEST"] = "1"
    try:
        second = pytester.path / "second.json"
        result = _run(
            pytester,
            "--memsys=guarded",
            "--memeval-rejudge",
            "-n",
            "2",
            "--memeval-judge=openai:gpt-4o-mini",
            f"--memeval-json={second}",
        )
    finally:
        del os.environ["MEMEVAL_FORBID_INGEST"]
    assert result.ret == 0, result.stdout.str()
    a = {q["id"]: q["prediction"] for q in read_json(first)["runs"][0]["questions"]}
    rejudged = read_json(second)["runs"][0]["questions"]
    assert {q["id"]: q["prediction"] for q in rejudged} == a
    assert server.count(OPENAI_PATH) == 13
    assert all("judge_mem0" in q["scores"] for q in rejudged if q["category"] != "adversarial")


def test_rejudge_without_stored_predictions_errors(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--memsys=bm25", "--memeval-rejudge")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memeval-rejudge: no earlier run*"])
    assert _run(pytester, "--memsys=bm25", "-k", "demo-1-q1").ret == 0
    result = _run(pytester, "--memsys=bm25", "--memeval-rejudge", "-k", "demo-1-q1 or demo-1-q2")
    assert _outcomes_errors(result) == 1
    result.stdout.fnmatch_lines(["*no stored prediction for demo / bm25 / demo-1-q2*"])


def _outcomes_errors(result: pytest.RunResult) -> int:
    return int(result.parseoutcomes().get("errors", 0))


def graded_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    text = "\n".join(m["content"] for m in messages)
    return json.dumps({"score": 90 if "beagle" in text.lower() else 20, "explanation": "graded"})


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["no-n", "n2"])
def test_graded_judge_has_its_own_metric_and_old_baselines_are_mapped(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    """A graded judge writes judge_graded*, never the binary judge's name; `judge` gates it; an
    old baseline file (every judge wrote `judge`) is read through its recorded style."""
    out = pytester.path / "r.json"
    with LLMServer(reply=graded_reply) as srv:
        for key, value in srv.env(CANARY).items():
            monkeypatch.setenv(key, value)
        args = [
            "--memsys=bm25",
            "--memeval-judge=openai:gpt-4o-mini",
            "--memeval-judge-style=graded",
            "--memeval-judge-runs=2",
            f"--memeval-json={out}",
            "--memeval-fail-under=demo.overall.judge>=0.1",
        ]
        first = _run(pytester, *args, *mode)
        assert first.ret == 0, first.stdout.str()
        report = read_json(out)
        judged = [q for q in report["runs"][0]["questions"] if q["category"] != "adversarial"]
        for q in judged:
            assert {"judge_graded", "judge_graded_std", "judge_graded_runs"} <= set(q["scores"])
            assert not {"judge", "judge_mem0"} & set(q["scores"])
            assert q["details"]["pass_metric"] == "judge_graded"
            assert q["details"]["judge_graded"]["style"] == "graded"
        assert report["provenance"]["judge_metric"] == {"demo": "judge_graded"}
        overall = report["runs"][0]["summary"]["overall"]
        assert overall["judge_graded_pooled_std"] == 0.0  # the loopback judge never varies
        first.stdout.fnmatch_lines(["*pass rule: demo: judge_graded >= 0.5 (graded judge*"])

        # the same run, saved the way an earlier version wrote it
        old = json.loads(json.dumps(report))
        for q in old["runs"][0]["questions"]:
            q["scores"] = {
                ("judge" + k[len("judge_graded") :] if k.startswith("judge_graded") else k): v
                for k, v in q["scores"].items()
            }
        del old["provenance"]["judge_metric"]
        legacy = pytester.path / "old.json"
        legacy.write_text(json.dumps(old), "utf-8")
        again = _run(
            pytester, *args, f"--memeval-baseline={legacy}", "--memeval-max-drop=judge:1", *mode
        )
        assert again.ret == 0, again.stdout.str()
        (c,) = read_json(out)["extra"]["regression"]
        assert c["metric"] == "judge_graded" and not c["failed"]

        # without the recorded style the old file is refused, naming the file and the fix
        del old["provenance"]["judge_style"]
        legacy.write_text(json.dumps(old), "utf-8")
        bad = _run(
            pytester, *args, f"--memeval-baseline={legacy}", "--memeval-max-drop=judge:1", *mode
        )
    assert bad.ret != 0
    (error,) = [line for line in bad.stdout.lines if "provenance.judge_style" in line]
    assert str(legacy) in error and "--memeval-save-baseline" in error
