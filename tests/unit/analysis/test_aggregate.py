"""Aggregation rules (docs/scoring.md#aggregation, docs/scoring.md#locomo-aggregation):
per-question rounding, micro means, overall over the in-overall categories, overall_all over all,
errors and unscored counted apart."""

from __future__ import annotations

import pytest

from pytest_memeval.analysis._aggregate import CategoryMeta, aggregate_run, percentile
from pytest_memeval.records import QuestionResult

CATS = [
    CategoryMeta("single-hop", 4, "fact-recall"),
    CategoryMeta("multi-hop", 1, "multi-hop"),
    CategoryMeta("temporal", 2, "temporal"),
    CategoryMeta("open-domain", 3, "world-knowledge"),
    CategoryMeta("adversarial", 5, "abstention", in_overall=False),
]
NAME = {c.category_id: c.key for c in CATS}


def _r(i: int, cat: int, f1: float | None, status: str = "CORRECT") -> QuestionResult:
    return QuestionResult(
        benchmark="locomo",
        system="s",
        question_id=f"q{i}",
        conversation_id="c",
        category=NAME[cat],
        category_id=cat,
        question="?",
        gold="g",
        prediction="p",
        status=status,
        scores={} if f1 is None else {"f1": f1},
    )


def test_official_example_from_scoring_1_7() -> None:
    # cat4 {1.0, 0.5}, cat1 {0.333}, cat2 {0.0}, cat3 {1.0}, cat5 {1, 1}: per-category means and
    # the overall over all five categories (the official script's micro mean)
    results = [
        _r(0, 4, 1.0),
        _r(1, 4, 0.5),
        _r(2, 1, 0.3333333),
        _r(3, 2, 0.0),
        _r(4, 3, 1.0),
        _r(5, 5, 1.0),
        _r(6, 5, 1.0),
    ]
    run = aggregate_run("locomo", "s", "", results, CATS, ["f1"], round3=["f1"])
    means = {row.key: row.metrics["f1"] for row in run.categories}
    assert means == pytest.approx(
        {
            "single-hop": 0.75,
            "multi-hop": 0.333,
            "temporal": 0.0,
            "open-domain": 1.0,
            "adversarial": 1.0,
        }
    )
    assert run.overall_all.metrics["f1"] == pytest.approx((1.5 + 0.333 + 0 + 1 + 2) / 7)
    assert run.overall.metrics["f1"] == pytest.approx((1.5 + 0.333 + 0 + 1) / 5)
    assert run.overall.count == 5 and run.overall_all.count == 7


def test_round3_applies_per_question() -> None:
    results = [_r(0, 4, 0.6666666), _r(1, 4, 0.6666666), _r(2, 4, 0.6666666)]
    rounded = aggregate_run("locomo", "s", "", results, CATS, ["f1"], round3=["f1"])
    plain = aggregate_run("locomo", "s", "", results, CATS, ["f1"])
    assert rounded.overall.metrics["f1"] == pytest.approx(0.667, abs=1e-12)
    assert plain.overall.metrics["f1"] == pytest.approx(0.6666666, abs=1e-12)


def test_errors_and_unscored_counted_apart() -> None:
    results = [_r(0, 4, 1.0), _r(1, 4, None, "ERROR"), _r(2, 4, None, "UNSCORED")]
    run = aggregate_run("locomo", "s", "", results, CATS, ["f1"])
    row = run.categories[0]
    assert row.count == 3 and row.scored["f1"] == 1 and row.metrics["f1"] == 1.0
    assert row.statuses == {"CORRECT": 1, "WRONG": 0, "UNSCORED": 1, "ERROR": 1}


def test_percentile_matches_numpy_linear() -> None:
    np = pytest.importorskip("numpy")
    values = [0.3, 0.1, 0.7, 0.2, 0.9, 0.4]
    for q in (0, 50, 95, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    assert percentile([], 50) is None


def test_macro_and_abstention_rows_longmemeval_style() -> None:
    # LongMemEval's per-type accuracy example: labels SSU {1,0,1abs}, SSP {1}, SSA {0,0},
    # MS {1,1,0,0abs}, TR {1},
    # KU {1,1abs} -> task-averaged 0.6944, overall 8/13, abstention 2/3
    types = ["ssu", "ssp", "ssa", "ms", "tr", "ku"]
    cats = [CategoryMeta(t, t, "") for t in types]
    labels = {
        "ssu": [1, 0, (1, "abs")],
        "ssp": [1],
        "ssa": [0, 0],
        "ms": [1, 1, 0, (0, "abs")],
        "tr": [1],
        "ku": [1, (1, "abs")],
    }
    results = []
    for t, values in labels.items():
        for i, v in enumerate(values):
            value, abst = (v[0], True) if isinstance(v, tuple) else (v, False)
            results.append(
                QuestionResult(
                    benchmark="longmemeval",
                    system="s",
                    question_id=f"{t}{i}",
                    conversation_id=f"{t}{i}",
                    category=t,
                    category_id=t,
                    question="?",
                    gold="g",
                    prediction="p",
                    status="CORRECT" if value else "WRONG",
                    scores={"judge": float(value)},
                    details={"abstention": True} if abst else {},
                )
            )
    run = aggregate_run("longmemeval", "s", "", results, cats, ["judge"])
    assert run.macro is not None and run.macro.metrics["judge"] == pytest.approx(0.69444, abs=1e-4)
    assert run.overall.metrics["judge"] == pytest.approx(8 / 13)
    assert run.abstention is not None and run.abstention.metrics["judge"] == pytest.approx(2 / 3)
    summary = run.to_dict()["summary"]
    assert summary["macro"]["categories"] == 6 and summary["abstention"]["count"] == 3
