"""Unit tests for ``pytest_memeval.analysis._gates``: parsing good and bad gate expressions, and checking them
against constructed summaries with known means and latencies."""

from __future__ import annotations

import pytest

from pytest_memeval.analysis._aggregate import CategoryMeta, aggregate_run
from pytest_memeval.analysis._gates import Gate, GateSyntaxError, check_gates, parse_gate
from pytest_memeval.errors import MemevalError
from pytest_memeval.records import STATUS_CORRECT, STATUS_ERROR, STATUS_WRONG, QuestionResult
from pytest_memeval.report import RunSummary, Summary

CATS = [
    CategoryMeta("temporal", 2, "temporal"),
    CategoryMeta("single-hop", 4, "fact-recall"),
    CategoryMeta("adversarial", 5, "abstention", in_overall=False),
]


def _result(
    system: str, qid: str, category: str, f1: float | None, *, search: float = 0.1
) -> QuestionResult:
    return QuestionResult(
        benchmark="locomo",
        system=system,
        question_id=qid,
        conversation_id="conv-1",
        category=category,
        category_id=None,
        question="q?",
        gold="g",
        prediction="p",
        status=STATUS_ERROR if f1 is None else (STATUS_CORRECT if f1 >= 0.5 else STATUS_WRONG),
        scores={} if f1 is None else {"f1": f1},
        latency={"search": search, "answer": 2 * search},
    )


def _run(system: str, temporal: list[float], single: list[float], adv: list[float]) -> RunSummary:
    results = [_result(system, f"t{i}", "temporal", v) for i, v in enumerate(temporal)]
    results += [_result(system, f"s{i}", "single-hop", v) for i, v in enumerate(single)]
    results += [_result(system, f"a{i}", "adversarial", v) for i, v in enumerate(adv)]
    return aggregate_run("locomo", system, "", results, CATS, ["f1"])


@pytest.fixture
def summary() -> Summary:
    # bm25: temporal mean 0.312; single-hop mean 0.8; adversarial 0.0 (out of overall)
    bm25 = _run("bm25", [0.312, 0.312], [0.8, 0.8], [0.0, 0.0])
    # mem0: temporal mean 0.5
    mem0 = _run("mem0", [0.4, 0.6], [0.7, 0.9], [1.0, 1.0])
    return Summary(runs=[bm25, mem0])


# --- parsing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "locomo.temporal.f1>=0.40",
            Gate("locomo.temporal.f1>=0.40", "locomo", "temporal", "f1", ">=", 0.40),
        ),
        (
            " locomo.overall.judge >= 65% ",
            Gate(" locomo.overall.judge >= 65% ", "locomo", "overall", "judge", ">=", 0.65),
        ),
        (
            "longmemeval[bm25].overall_all.recall_all@5>=.8",
            Gate(
                "longmemeval[bm25].overall_all.recall_all@5>=.8",
                "longmemeval",
                "overall_all",
                "recall_all@5",
                ">=",
                0.8,
                system="bm25",
            ),
        ),
        (
            "longmemeval.single-session-user.evidence_recall>=1e-1",
            Gate(
                "longmemeval.single-session-user.evidence_recall>=1e-1",
                "longmemeval",
                "single-session-user",
                "evidence_recall",
                ">=",
                0.1,
            ),
        ),
        (
            "locomo.overall.latency.search.p95<=500ms",
            Gate(
                "locomo.overall.latency.search.p95<=500ms",
                "locomo",
                "overall",
                "latency.search.p95",
                "<=",
                0.5,
            ),
        ),
        (
            "my-bench[pkg.mod:factory].overall.latency.answer.p50<=2s",
            Gate(
                "my-bench[pkg.mod:factory].overall.latency.answer.p50<=2s",
                "my-bench",
                "overall",
                "latency.answer.p50",
                "<=",
                2.0,
                system="pkg.mod:factory",
            ),
        ),
        (
            "beam[replay:a=b.jsonl].event_ordering.ordering<=0.9",
            Gate(
                "beam[replay:a=b.jsonl].event_ordering.ordering<=0.9",
                "beam",
                "event_ordering",
                "ordering",
                "<=",
                0.9,
                system="replay:a=b.jsonl",
            ),
        ),
    ],
)
def test_parse_good(text: str, expected: Gate) -> None:
    assert parse_gate(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the expression is empty"),
        ("locomo.temporal.f1>0.4", "operator '>' is not supported"),
        ("locomo.temporal.f1=0.4", "operator '=' is not supported"),
        ("locomo.temporal.f1=>0.4", "operator '=>' is written '>='"),
        ("locomo.temporal.f1>=0.4<=0.5", "more than one operator ('>=' and '<=')"),
        (">=0.4", "the left side (benchmark.category.metric) is missing"),
        ("locomo.temporal.f1>=", "the value after the operator is missing"),
        ("locomo.temporal.f1>=forty", "the value 'forty' is not a number"),
        ("locomo.temporal.f1>=0.4x", "the value '0.4x' is not a number"),
        ("locomo.temporal>=0.4", "needs both a category and a metric"),
        ("locomo>=0.4", "has no category and metric after the benchmark"),
        ("loco mo.temporal.f1>=0.4", "benchmark name 'loco mo' is not valid"),
        (".temporal.f1>=0.4", "the benchmark name is missing"),
        ("locomo[].overall.f1>=0.4", "the system filter must be written [SYSTEM]"),
        ("locomo.tem poral.f1>=0.4", "category 'tem poral' is not valid"),
        ("locomo.temporal.f$1>=0.4", "metric 'f$1' is not valid"),
        ("locomo.temporal.>=0.4", "the metric name is missing"),
        ("locomo.a.b.f1>=0.4", "too many dotted parts"),
        ("locomo.overall.latency<=1", "a latency gate names a stage and a figure"),
        ("locomo.temporal.latency.search.p95<=1", "latency gates use the category 'overall'"),
        ("locomo.overall.latency.retrieve.p95<=1", "latency stage 'retrieve' is not one of"),
        ("locomo.overall.latency.search.p99<=1", "latency figure 'p99' is not one of"),
        ("locomo.overall.latency.search.p95<=5%", "a latency value takes 's' or 'ms', not '%'"),
        ("locomo.overall.f1>=300ms", "the unit 'ms' in '300ms' is for latency gates only"),
    ],
)
def test_parse_bad_names_the_problem_and_shows_grammar(text: str, problem: str) -> None:
    with pytest.raises(GateSyntaxError) as info:
        parse_gate(text)
    err = info.value
    assert isinstance(err, MemevalError)
    assert problem in err.problem
    message = str(err)
    assert message.startswith(f"--memeval-fail-under {text!r}: {err.problem}; grammar: ")
    assert "BENCHMARK[SYSTEM].CATEGORY.METRIC>=VALUE or <=VALUE" in message
    assert "examples: locomo.temporal.f1>=0.40" in message


def test_parse_without_operator_says_to_quote_in_one_line() -> None:
    """The shell ate an unquoted '>': the fix is quoting, so no grammar dump follows."""
    with pytest.raises(GateSyntaxError) as info:
        parse_gate("locomo.temporal.f1")
    message = str(info.value)
    assert message.startswith("--memeval-fail-under 'locomo.temporal.f1': no comparison operator")
    assert "quote the whole expression" in message
    assert "--memeval-fail-under='locomo.overall.f1>=0.40'" in message
    assert "grammar" not in message and "\n" not in message


# --- checking -------------------------------------------------------------------------------


def test_failing_gate_message_names_value_threshold_and_system(summary: Summary) -> None:
    result = parse_gate("locomo.temporal.f1>=0.40").check(summary)
    assert result.passed is False
    assert result.actual == pytest.approx(0.312)
    assert result.message == "memeval gate failed: locomo.temporal.f1 = 0.312 < 0.400 (system bm25)"
    assert [(r.system, r.passed) for r in result.runs] == [("bm25", False), ("mem0", True)]
    assert result.runs[1].actual == pytest.approx(0.5)


def test_system_filter_selects_one_run(summary: Summary) -> None:
    result = parse_gate("locomo[mem0].temporal.f1>=0.40").check(summary)
    assert result.passed is True
    assert result.actual == pytest.approx(0.5)
    assert result.message == (
        "memeval gate passed: locomo[mem0].temporal.f1 = 0.500 >= 0.400 (system mem0)"
    )


def test_gate_passes_on_all_runs(summary: Summary) -> None:
    result = parse_gate("locomo.single-hop.f1>=70%").check(summary)
    assert result.passed is True
    assert result.actual == pytest.approx(0.8)  # both runs' single-hop mean is 0.8
    assert result.message == (
        "memeval gate passed: locomo.single-hop.f1 >= 0.700 on all 2 runs (bm25, mem0)"
    )


def test_several_failing_runs_in_one_sentence(summary: Summary) -> None:
    result = parse_gate("locomo.temporal.f1>=0.6").check(summary)
    assert result.passed is False
    assert result.actual == pytest.approx(0.312)
    assert result.message == (
        "memeval gate failed: locomo.temporal.f1 = 0.312 < 0.600 (system bm25); "
        "= 0.500 < 0.600 (system mem0)"
    )


def test_overall_excludes_out_of_overall_categories(summary: Summary) -> None:
    # bm25 overall (temporal + single-hop) = (0.312*2 + 0.8*2) / 4 = 0.556; overall_all adds
    # two adversarial zeros: 2.224 / 6 = 0.37066...
    overall = parse_gate("locomo[bm25].overall.f1>=0.55").check(summary)
    overall_all = parse_gate("locomo[bm25].overall_all.f1>=0.55").check(summary)
    assert overall.passed and overall.actual == pytest.approx(0.556)
    assert not overall_all.passed and overall_all.actual == pytest.approx(2.224 / 6)


def test_threshold_equal_to_mean_passes(summary: Summary) -> None:
    # 0.312 is computed as (0.312 + 0.312) / 2; the gate at exactly that value passes both ways
    assert parse_gate("locomo[bm25].temporal.f1>=0.312").check(summary).passed
    assert parse_gate("locomo[bm25].temporal.f1<=0.312").check(summary).passed


def test_close_values_shown_with_enough_digits() -> None:
    run = aggregate_run(
        "locomo", "bm25", "", [_result("bm25", "t0", "temporal", 0.39996)], CATS, ["f1"]
    )
    result = parse_gate("locomo.temporal.f1>=0.4").check(Summary(runs=[run]))
    assert result.message == (
        "memeval gate failed: locomo.temporal.f1 = 0.39996 < 0.40000 (system bm25)"
    )


def test_missing_benchmark_category_metric_are_failures_not_exceptions(summary: Summary) -> None:
    no_bench = parse_gate("longmemeval.overall.f1>=0.1").check(summary)
    assert not no_bench.passed and no_bench.actual is None
    assert no_bench.message == (
        "memeval gate failed: longmemeval.overall.f1: no results for benchmark 'longmemeval' "
        "in this session (benchmarks run: locomo)"
    )
    no_system = parse_gate("locomo[zep].overall.f1>=0.1").check(summary)
    assert no_system.message == (
        "memeval gate failed: locomo[zep].overall.f1: system 'zep' did not run locomo in this "
        "session (systems: bm25, mem0)"
    )
    no_cat = parse_gate("locomo[bm25].multi-hop.f1>=0.1").check(summary)
    assert not no_cat.passed
    assert no_cat.message == (
        "memeval gate failed: locomo[bm25].multi-hop.f1: benchmark locomo (system bm25) has no "
        "category 'multi-hop' in this session (categories: overall, overall_all, temporal, "
        "single-hop, adversarial)"
    )
    no_metric = parse_gate("locomo[bm25].overall.judge_mem0>=0.1").check(summary)
    assert no_metric.message == (
        "memeval gate failed: locomo[bm25].overall.judge_mem0: metric 'judge_mem0' was not "
        "computed for locomo (system bm25) (metrics: f1)"
    )
    # the alias `judge` needs a judge: without one the gate fails and says what to add
    no_judge = parse_gate("locomo[bm25].overall.judge>=0.1").check(summary)
    assert not no_judge.passed and no_judge.message == (
        "memeval gate failed: locomo[bm25].overall.judge: 'judge' stands for the first judge's "
        "metric, and no judge scored locomo in this session (add --memeval-judge=PROVIDER:MODEL, "
        "or name a metric such as f1)"
    )


def test_metric_without_values_fails_with_counts() -> None:
    results = [_result("bm25", "t0", "temporal", None), _result("bm25", "t1", "temporal", None)]
    run = aggregate_run("locomo", "bm25", "", results, CATS, ["f1"])
    result = parse_gate("locomo.temporal.f1>=0.1").check(Summary(runs=[run]))
    assert not result.passed and result.actual is None
    assert result.message == (
        "memeval gate failed: locomo.temporal.f1: no question in locomo.temporal (system bm25) "
        "has a value for f1 (2 questions: 2 ERROR)"
    )


def test_latency_gates(summary: Summary) -> None:
    slow = _run("slow", [0.5], [0.5], [0.5])
    slow.latency["search"]["p95"] = 1.25
    full = Summary(runs=[*summary.runs, slow])
    ok = parse_gate("locomo[bm25].overall.latency.search.p95<=500ms").check(full)
    assert ok.passed and ok.actual == pytest.approx(0.1)
    assert ok.message == (
        "memeval gate passed: locomo[bm25].overall.latency.search.p95 = 0.100 s <= 0.500 s "
        "(system bm25)"
    )
    bad = parse_gate("locomo.overall.latency.search.p95<=0.5").check(full)
    assert not bad.passed
    assert bad.actual == pytest.approx(1.25)  # the worst (highest) value
    assert bad.message == (
        "memeval gate failed: locomo.overall.latency.search.p95 = 1.250 s > 0.500 s (system slow)"
    )
    slow.latency.pop("answer")
    missing = parse_gate("locomo[slow].overall.latency.answer.p50<=1").check(full)
    assert missing.message == (
        "memeval gate failed: locomo[slow].overall.latency.answer.p50: no answer latency was "
        "recorded for locomo (system slow)"
    )


def test_check_gates_all(summary: Summary) -> None:
    gates = [parse_gate("locomo.temporal.f1>=0.3"), parse_gate("locomo.temporal.f1>=0.4")]
    assert [r.passed for r in check_gates(gates, summary)] == [True, False]


def test_flow_runs_are_labelled() -> None:
    results = [_result("bm25", "t0", "temporal", 0.1)]
    for r in results:
        r.flow = "test_my_flow"
    run = aggregate_run("locomo", "bm25", "test_my_flow", results, CATS, ["f1"])
    result = parse_gate("locomo.temporal.f1>=0.2").check(Summary(runs=[run]))
    assert result.message == (
        "memeval gate failed: locomo.temporal.f1 = 0.100 < 0.200 (system bm25 / test_my_flow)"
    )
