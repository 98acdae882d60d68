"""Unit tests for ``pytest_memeval.analysis._stats``: bootstrap CIs, McNemar, paired bootstrap, pooled std.

Known answers are computed by hand (binomial sums, pooled variance) or from normal theory."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fakes import make_result
from scipy.stats import binomtest

from pytest_memeval.analysis._aggregate import CategoryMeta, aggregate_run
from pytest_memeval.analysis._stats import (
    add_confidence_intervals,
    add_pooled_judge_std,
    bootstrap_ci,
    bootstrap_cis,
    bootstrap_means,
    judge_pooled_std,
    mcnemar_exact,
    paired_bootstrap,
    pooled_std,
    row_values,
)
from pytest_memeval.records import QuestionResult

LOCOMO_CATS = [
    CategoryMeta("multi-hop", 1, "multi-hop"),
    CategoryMeta("temporal", 2, "temporal"),
    CategoryMeta("adversarial", 5, "abstention", in_overall=False),
]


def _result(qid: str, category: str, scores: dict[str, float | None]) -> QuestionResult:
    return make_result(qid, category=category, scores=scores)


# --- bootstrap_ci ---------------------------------------------------------------------------


def test_bootstrap_ci_empty_and_single() -> None:
    assert bootstrap_ci([]) is None
    assert bootstrap_ci([0.37]) == (0.37, 0.37)


def test_bootstrap_ci_constant_values_is_a_point_containing_the_mean() -> None:
    values = [0.1] * 7
    lo, hi = bootstrap_ci(values) or (math.nan, math.nan)
    mean = math.fsum(values) / len(values)
    assert lo <= mean <= hi
    assert hi - lo < 1e-15


def test_bootstrap_ci_reproducible_and_seed_dependent() -> None:
    values = list(np.random.default_rng(7).random(300))
    first = bootstrap_ci(values, seed=0)
    assert first == bootstrap_ci(values, seed=0)
    assert first != bootstrap_ci(values, seed=1)


def test_bootstrap_cis_equal_separate_calls() -> None:
    """Columns of one length share their resample indices: each interval is still exactly the
    one a separate ``bootstrap_ci`` call gives (lengths 0, 1, 2 and two shared groups)."""
    rng = np.random.default_rng(11)
    columns = [
        list(rng.random(40)),
        [],
        list(rng.integers(0, 2, 40).astype(float)),
        [0.25],
        list(rng.random(7)),
        list(np.round(rng.random(40), 3)),
        list(rng.random(7)),
        [0.0, 1.0],
    ]
    together = bootstrap_cis(columns, resamples=500, seed=4)
    assert together == [bootstrap_ci(c, resamples=500, seed=4) for c in columns]
    assert together[1] is None and together[3] == (0.25, 0.25)
    # and the shared draws are exactly numpy's default_rng(seed) index draws, column by column
    x = np.asarray(columns[0])
    idx = np.random.default_rng(4).integers(0, 40, size=(500, 40), dtype=np.intp)
    assert np.array_equal(
        bootstrap_means(columns[0], resamples=500, seed=4), x[idx].sum(axis=1) / 40
    )


def test_bootstrap_ci_matches_normal_theory_and_brackets_mean() -> None:
    values = list(np.random.default_rng(3).random(2000))
    ci = bootstrap_ci(values)
    assert ci is not None
    mean = math.fsum(values) / len(values)
    half = 1.959964 * float(np.std(values, ddof=1)) / math.sqrt(len(values))
    assert ci[0] < mean < ci[1]
    # percentile bootstrap of a mean of 2000 uniforms is close to mean +- 1.96 se
    assert ci[0] == pytest.approx(mean - half, abs=0.15 * half)
    assert ci[1] == pytest.approx(mean + half, abs=0.15 * half)
    narrower = bootstrap_ci(values, confidence=0.5)
    assert narrower is not None and ci[0] < narrower[0] < narrower[1] < ci[1]


def test_bootstrap_ci_binary_values_brackets_share() -> None:
    values = [1.0] * 30 + [0.0] * 70
    lo, hi = bootstrap_ci(values) or (math.nan, math.nan)
    # normal approximation: 0.3 +- 1.96 * sqrt(0.21 / 100) = 0.3 +- 0.0898
    assert lo == pytest.approx(0.21, abs=0.02)
    assert hi == pytest.approx(0.39, abs=0.02)


def test_bootstrap_ci_rejects_bad_confidence() -> None:
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([1.0, 2.0], confidence=1.0)


# --- mcnemar_exact --------------------------------------------------------------------------


def test_mcnemar_hand_computed_values() -> None:
    assert mcnemar_exact(10, 0) == 2 * 0.5**10  # 0.001953125: ten flips one way
    assert mcnemar_exact(0, 10) == 2 * 0.5**10
    assert mcnemar_exact(3, 0) == 0.25  # 2 * 0.5**3
    # b=5, c=7: 2 * (C(12,0)+...+C(12,5)) / 2**12 = 2 * 1586 / 4096
    assert mcnemar_exact(5, 7) == 2 * 1586 / 4096
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(1, 0) == 1.0
    assert mcnemar_exact(6, 6) == 1.0


@pytest.mark.parametrize(("b", "c"), [(1, 9), (4, 11), (20, 35), (40, 60), (300, 360)])
def test_mcnemar_agrees_with_scipy_binomtest(b: int, c: int) -> None:
    expected = binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_exact(-1, 3)


# --- paired_bootstrap -----------------------------------------------------------------------


def test_paired_bootstrap_constant_drop_is_certain() -> None:
    res = paired_bootstrap([-0.05] * 40)
    assert res.n == 40
    assert res.mean == pytest.approx(-0.05)
    assert res.ci is not None and res.ci[0] == pytest.approx(-0.05) == res.ci[1]
    assert res.p_value == 0.0
    assert res.p_floor == 1 / 5000


def test_paired_bootstrap_no_change_gives_p_one() -> None:
    res = paired_bootstrap([0.0] * 25)
    assert res.p_value == 1.0
    assert res.mean == 0.0


def test_paired_bootstrap_noisy_small_drop_not_significant() -> None:
    deltas = [0.5, -0.56] * 50  # mean -0.03, sd ~0.53, se ~0.053: p ~ 0.57
    res = paired_bootstrap(deltas)
    assert res.mean == pytest.approx(-0.03)
    assert res.ci is not None and res.ci[0] < -0.03 < res.ci[1] and res.ci[1] > 0
    assert 0.4 < res.p_value < 0.75
    assert res == paired_bootstrap(deltas)  # fixed seed: identical


def test_paired_bootstrap_empty() -> None:
    res = paired_bootstrap([])
    assert (res.n, res.mean, res.ci, res.p_value) == (0, 0.0, None, 1.0)


# --- pooled std -----------------------------------------------------------------------------


def test_pooled_std_hand_computed() -> None:
    # sqrt((2 * 1^2 + 4 * 2^2) / (2 + 4)) = sqrt(3)
    assert pooled_std([(1.0, 3), (2.0, 5)]) == pytest.approx(math.sqrt(3))
    # groups with fewer than two runs have no degrees of freedom
    assert pooled_std([(1.0, 3), (9.0, 1), (0.0, 0)]) == pytest.approx(1.0)
    assert pooled_std([(0.3, 1)]) is None
    assert pooled_std([]) is None
    assert pooled_std([(math.nan, 4)]) is None


def test_pooled_std_seed_example_single_question() -> None:
    # docs/scoring.md#graded-judge: sample std 1.5055
    scores = [70, 72, 68, 71, 73, 69, 70, 72, 71, 70]
    std = float(np.std(scores, ddof=1))
    assert pooled_std([(std, 10)]) == pytest.approx(1.5055, abs=1e-4)


def test_judge_pooled_std_and_rows() -> None:
    results = [
        _result("a", "temporal", {"judge": 0.7, "judge_graded_std": 0.1, "judge_graded_runs": 3.0}),
        _result("b", "temporal", {"judge": 0.5, "judge_graded_std": 0.2, "judge_graded_runs": 5.0}),
        _result(
            "c", "multi-hop", {"judge": 0.4, "judge_graded_std": 0.0, "judge_graded_runs": 1.0}
        ),
        _result(
            "d", "multi-hop", {"judge": None, "judge_graded_std": None, "judge_graded_runs": 0.0}
        ),
    ]
    expected = math.sqrt((2 * 0.01 + 4 * 0.04) / 6)
    assert judge_pooled_std(results) == pytest.approx(expected)
    run = aggregate_run("locomo", "bm25", "", results, LOCOMO_CATS, ["judge"])
    assert add_pooled_judge_std(run) is True
    temporal = next(r for r in run.categories if r.key == "temporal")
    multi = next(r for r in run.categories if r.key == "multi-hop")
    assert temporal.metrics["judge_graded_pooled_std"] == pytest.approx(expected)
    assert multi.metrics["judge_graded_pooled_std"] is None  # one run only: no degrees of freedom
    assert run.overall.metrics["judge_graded_pooled_std"] == pytest.approx(expected)
    single = aggregate_run("locomo", "bm25", "", results[2:], LOCOMO_CATS, ["judge"])
    assert add_pooled_judge_std(single) is False
    assert "judge_graded_pooled_std" not in single.overall.metrics


# --- add_confidence_intervals ---------------------------------------------------------------


def _run_with_f1() -> list[QuestionResult]:
    rng = np.random.default_rng(11)
    results = []
    for i in range(60):
        cat = ("multi-hop", "temporal", "adversarial")[i % 3]
        f1 = float(rng.random()) if i % 7 else None  # some UNSCORED-like gaps
        results.append(_result(f"q{i}", cat, {"f1": f1, "bleu1": float(rng.random())}))
    return results


def test_add_confidence_intervals_brackets_every_mean() -> None:
    results = _run_with_f1()
    run = aggregate_run("locomo", "bm25", "", results, LOCOMO_CATS, ["f1", "bleu1"], round3=["f1"])
    add_confidence_intervals(run, ["f1", "bleu1", "judge"], round3=["f1"])
    rows = [*run.categories, run.overall, run.overall_all]
    assert len(rows) == 5
    for row in rows:
        for metric in ("f1", "bleu1"):
            ci = row.ci[metric]
            mean = row.metrics[metric]
            assert ci is not None and mean is not None
            assert ci[0] <= mean <= ci[1], (row.key, metric, ci, mean)
            assert ci[0] < ci[1]
        assert row.ci["judge"] is None  # no values: no interval
    # overall covers the in-overall categories only (adversarial excluded), with f1 rounded
    # (in the run's own question order: resampling is order-dependent, like any seeded draw)
    in_overall = [r for r in run.results if r.category != "adversarial"]
    expected = bootstrap_ci(row_values(in_overall, "f1", ["f1"]))
    assert expected is not None
    assert run.overall.ci["f1"] == [expected[0], expected[1]]
    assert run.overall.count == len(in_overall)
    # the JSON form carries it
    assert run.categories[0].to_dict()["ci"]["f1"] == run.categories[0].ci["f1"]


def test_add_confidence_intervals_reproducible() -> None:
    results = _run_with_f1()
    a = aggregate_run("locomo", "bm25", "", results, LOCOMO_CATS, ["f1"])
    b = aggregate_run("locomo", "bm25", "", results, LOCOMO_CATS, ["f1"])
    add_confidence_intervals(a, ["f1"])
    add_confidence_intervals(b, ["f1"])
    assert [r.ci for r in a.categories] == [r.ci for r in b.categories]
    assert a.overall_all.ci == b.overall_all.ci


def test_row_values_rounding_and_gaps() -> None:
    results = [
        _result("a", "temporal", {"f1": 0.12345}),
        _result("b", "temporal", {"f1": None}),
        _result("c", "temporal", {"f1": math.nan}),
        _result("d", "temporal", {}),
    ]
    assert row_values(results, "f1", ["f1"]) == [0.123]
    assert row_values(results, "f1") == [0.12345]
