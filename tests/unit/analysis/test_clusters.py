"""Unit tests for cluster-aware statistics (``pytest_memeval.analysis._clusters``), the cluster a
loader declares, and the cluster regression gate (``analysis.regression.compare``) on clustered data.

Known answers are enumerated by hand or by brute force; the simulation check runs
``perf/cluster_gate.py`` with few replicates (seeded)."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t as student_t

from pytest_memeval.analysis._aggregate import CategoryMeta, aggregate_run
from pytest_memeval.analysis._clusters import (
    MAX_EXACT_CLUSTERS,
    cluster_bootstrap_ci,
    cluster_bootstrap_cis,
    cluster_bootstrap_means,
    cluster_sums,
    detectable_difference,
    paired_cluster_test,
    sign_flip_p,
)
from pytest_memeval.analysis._regression import compare, load_baseline, save_baseline
from pytest_memeval.analysis._stats import add_confidence_intervals, bootstrap_cis, mcnemar_exact
from pytest_memeval.benchmarks import LoadRequest, get_benchmark
from pytest_memeval.records import STATUS_CORRECT, STATUS_WRONG, QuestionResult
from pytest_memeval.report import Summary

REPO = Path(__file__).resolve().parents[3]
CATS = [CategoryMeta("single-hop", 4, "fact-recall")]


# --- cluster bootstrap intervals -------------------------------------------------------------


def test_singleton_clusters_give_exactly_the_question_bootstrap() -> None:
    rng = np.random.default_rng(3)
    columns = [rng.random(40).tolist(), rng.random(40).tolist(), rng.random(7).tolist()]
    clustered = cluster_bootstrap_cis(
        [(col, [f"c{i}" for i in range(len(col))]) for col in columns], seed=5
    )
    assert clustered == bootstrap_cis(columns, seed=5)


def test_cluster_bootstrap_is_reproducible_and_seeded() -> None:
    values = np.random.default_rng(0).random(60).tolist()
    clusters = [i // 6 for i in range(60)]
    a = cluster_bootstrap_means(values, clusters, resamples=500, seed=1)
    b = cluster_bootstrap_means(values, clusters, resamples=500, seed=1)
    c = cluster_bootstrap_means(values, clusters, resamples=500, seed=2)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_resampled_mean_is_the_resampled_clusters_micro_mean() -> None:
    # two clusters of sizes 1 and 3: a resample holds each cluster 0, 1 or 2 times
    values = [1.0, 0.0, 0.0, 0.0]
    clusters = ["a", "b", "b", "b"]
    means = cluster_bootstrap_means(values, clusters, resamples=400, seed=0)
    # {a, a}: 2/2, {a, b}: 1/4, {b, b}: 0/6
    assert set(np.round(means, 12).tolist()) == {1.0, 0.25, 0.0}


def test_interval_needs_two_clusters_and_contains_the_mean() -> None:
    assert cluster_bootstrap_ci([], []) is None
    assert cluster_bootstrap_ci([0.2, 0.4, 0.9], ["c", "c", "c"]) is None
    values = [1.0] * 30 + [0.0] * 30 + [1.0, 0.0] * 15
    clusters = [i // 10 for i in range(90)]
    ci = cluster_bootstrap_ci(values, clusters, seed=0)
    assert ci is not None
    mean = sum(values) / len(values)
    assert ci[0] <= mean <= ci[1]


def test_cluster_interval_is_wider_than_the_question_interval_on_clustered_data() -> None:
    rng = np.random.default_rng(0)
    p = rng.beta(0.7, 0.7, size=10)  # strongly clustered accuracies
    values = (rng.random((10, 50)) < p[:, None]).astype(float).ravel().tolist()
    clusters = np.repeat(np.arange(10), 50).tolist()
    [q_ci] = bootstrap_cis([values], seed=0)
    c_ci = cluster_bootstrap_ci(values, clusters, seed=0)
    assert q_ci is not None and c_ci is not None
    assert c_ci[1] - c_ci[0] > 2 * (q_ci[1] - q_ci[0])


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        cluster_sums([1.0], ["a", "b"])
    with pytest.raises(ValueError, match="confidence"):
        cluster_bootstrap_ci([1.0, 2.0], ["a", "b"], confidence=1.0)
    with pytest.raises(ValueError, match="at least one value"):
        cluster_bootstrap_means([], [], resamples=10, seed=0)


def _result(qid: str, conv: str, ok: bool, *, cluster: str = "") -> QuestionResult:
    return QuestionResult(
        benchmark="locomo",
        system="mem",
        question_id=qid,
        conversation_id=conv,
        category="single-hop",
        category_id=4,
        question="q?",
        gold="g",
        prediction="p",
        status=STATUS_CORRECT if ok else STATUS_WRONG,
        scores={"judge": 1.0 if ok else 0.0},
        cluster=cluster,
    )


def test_rows_resample_the_results_clusters() -> None:
    results = [_result(f"c{c}-q{i}", f"c{c}", (c + i) % 3 == 0) for c in range(5) for i in range(8)]
    run = aggregate_run("locomo", "mem", "", results, CATS, ["judge"])
    add_confidence_intervals(run, ["judge"], seed=0)
    values = [r.scores["judge"] or 0.0 for r in results]
    expected = cluster_bootstrap_ci(values, [r.conversation_id for r in results], seed=0)
    assert expected is not None
    assert run.overall.ci["judge"] == list(expected)
    assert run.clusters == 5
    assert run.summary_dict()["clusters"] == {"unit": "conversation", "count": 5}


# --- the cluster a result carries --------------------------------------------------------------


def test_cluster_travels_in_the_result_dict_and_defaults_to_the_conversation() -> None:
    r = _result("q1", "conv-1", True, cluster="case-7")
    data = r.to_dict()
    assert data["cluster"] == "case-7"
    assert QuestionResult.from_dict(data).cluster_id == "case-7"
    old = {k: v for k, v in data.items() if k != "cluster"}  # a store written before clusters
    assert QuestionResult.from_dict(old).cluster_id == "conv-1"
    assert _result("q1", "conv-1", True).to_dict()["cluster"] == "conv-1"


def test_benchmarks_declare_their_cluster_unit() -> None:
    units = {
        name: get_benchmark(name).cluster_unit  # type: ignore[attr-defined]
        for name in ("demo", "locomo", "beam", "longmemeval", "usermem")
    }
    assert units == {
        "demo": "conversation",
        "locomo": "conversation",
        "beam": "conversation",
        "longmemeval": "question",
        "usermem": "case",
    }


def test_demo_questions_cluster_by_conversation(tmp_path: Path) -> None:
    ds = get_benchmark("demo").load(LoadRequest(data_dir=None, cache_dir=tmp_path))
    assert {q.cluster for q in ds.questions} == {"demo-1", "demo-2"}
    assert all(q.cluster == q.conversation_id for q in ds.questions)


def test_real_loaders_set_the_declared_cluster(data_dir: Path, tmp_path: Path) -> None:
    def load(name: str, variant: str | None = None) -> list[object]:
        request = LoadRequest(data_dir=data_dir, cache_dir=tmp_path, variant=variant)
        return list(get_benchmark(name).load(request).questions)

    locomo = load("locomo")
    assert len({q.cluster for q in locomo}) == 10  # type: ignore[attr-defined]
    assert all(q.cluster == q.conversation_id for q in locomo)  # type: ignore[attr-defined]
    beam = load("beam", "100K")
    assert all(q.cluster == q.conversation_id for q in beam)  # type: ignore[attr-defined]
    assert len({q.cluster for q in beam}) < len(beam)  # type: ignore[attr-defined]
    lme_file = data_dir / "longmemeval" / "longmemeval_oracle_items.json"
    lme = load("longmemeval", str(lme_file))
    assert all(q.cluster == q.id for q in lme)  # type: ignore[attr-defined]
    usermem = load("usermem")
    assert all(q.cluster == q.id for q in usermem)  # type: ignore[attr-defined]


# --- the exact sign-flip test -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sums", "p"),
    [
        ([1, 1, 1], 2 / 8),  # only all-plus and all-minus reach |3|
        ([3, -1], 1.0),  # totals 4, 2, -2, -4: all at least |2|
        ([2, 1, 1], 2 / 8),  # totals 4, 2, 2, 0, 0, -2, -2, -4
        ([1, 1, 1, 0, 0], 2 / 8),  # clusters that did not change are left out
        ([0, 0], 1.0),
        ([], 1.0),
        ([1.0] * 10, 2 / 1024),
    ],
)
def test_sign_flip_hand_computed(sums: list[float], p: float) -> None:
    assert sign_flip_p(sums) == p


def test_sign_flip_agrees_with_brute_force() -> None:
    rng = np.random.default_rng(11)
    for _ in range(5):
        sums = np.round(rng.normal(size=8), 3).tolist()
        observed = abs(sum(sums))
        totals = [
            abs(sum(s * x for s, x in zip(signs, sums, strict=True)))
            for signs in itertools.product((1, -1), repeat=8)
        ]
        expected = sum(t >= observed - 1e-9 for t in totals) / 256
        assert sign_flip_p(sums) == expected


def test_sign_flip_refuses_too_many_clusters() -> None:
    with pytest.raises(ValueError, match="at most"):
        sign_flip_p([1.0] * (MAX_EXACT_CLUSTERS + 1))


def test_paired_test_picks_exact_or_bootstrap() -> None:
    deltas = [-1.0, 0.0, 0.0] * 10
    clusters = [i // 3 for i in range(30)]
    exact = paired_cluster_test(deltas, clusters)
    assert (exact.test, exact.clusters, exact.nonzero, exact.questions) == ("sign-flip", 10, 10, 30)
    assert exact.p_value == 2 / 1024 and exact.resamples == 0
    assert exact.mean == pytest.approx(-1 / 3)
    assert exact.ci is not None and exact.ci[0] <= exact.mean <= exact.ci[1]
    deltas20 = [-1.0, 0.0] * 20
    clusters20 = [i // 2 for i in range(40)]
    boot = paired_cluster_test(deltas20, clusters20, resamples=2000, seed=4)
    assert (boot.test, boot.clusters, boot.resamples) == ("cluster-bootstrap", 20, 2000)
    assert boot.p_value == 0.0 and boot.p_floor == 1 / 2000
    assert paired_cluster_test(deltas20, clusters20, resamples=2000, seed=4) == boot
    assert paired_cluster_test([], []).p_value == 1.0


def test_detectable_difference_formula() -> None:
    deltas = [-1.0, 0.0, 1.0, 0.0, -1.0, -1.0, 0.0, 0.0, 1.0, -1.0, 0.0, 0.0]
    clusters = [i // 2 for i in range(12)]  # 6 clusters of 2
    sums = np.array([-1.0, 1.0, -2.0, 0.0, 0.0, 0.0])
    mean = sum(deltas) / 12
    se = math.sqrt(6 / 5 * float(((sums - 2 * mean) ** 2).sum())) / 12
    expected = (student_t.ppf(0.975, 5) + student_t.ppf(0.8, 5)) * se
    got = detectable_difference(deltas, clusters, alpha=0.05)
    assert got == pytest.approx(expected, rel=1e-12)
    # 2 / 2**5 = 0.0625: with five clusters the exact test never reaches 0.05
    assert detectable_difference(deltas[:10], clusters[:10], alpha=0.05, exact=True) == math.inf
    assert detectable_difference([1.0, 2.0], ["a", "a"], alpha=0.05) is None
    assert detectable_difference([0.0, 0.0], ["a", "b"], alpha=0.05) is None


# --- the regression gate on clustered data ------------------------------------------------------


def _runs(
    before: dict[str, list[bool]], after: dict[str, list[bool]]
) -> tuple[Summary, dict[str, object]]:
    def run(outcomes: dict[str, list[bool]]) -> Summary:
        results = [
            _result(f"{conv}-q{i + 1}", conv, ok)
            for conv, oks in outcomes.items()
            for i, ok in enumerate(oks)
        ]
        return Summary(runs=[aggregate_run("locomo", "mem", "", results, CATS, ["judge"])])

    return run(after), save_baseline(run(before))


def _locomo_shaped(
    drop_in: dict[int, int], convs: int = 10, per_conv: int = 20
) -> tuple[Summary, dict[str, object]]:
    """Every question correct in the baseline; in conversation c the first drop_in[c] are wrong
    now (a negative count: that many were wrong before and are correct now)."""
    before: dict[str, list[bool]] = {}
    after: dict[str, list[bool]] = {}
    for c in range(convs):
        n = drop_in.get(c, 0)
        conv = f"conv-{c}"
        before[conv] = [not (n < 0 and i < -n) for i in range(per_conv)]
        after[conv] = [not (n > 0 and i < n) for i in range(per_conv)]
    return _runs(before, after)


def test_a_drop_inside_two_conversations_fails_per_question_but_not_per_conversation() -> None:
    current, baseline = _locomo_shaped({0: 9, 1: 8, 2: -1})
    [c] = compare(current, baseline, "correct", 2.0)
    assert c.test == "sign-flip" and c.clusters == 10
    assert c.question_test == "mcnemar"
    assert c.question_p_value == mcnemar_exact(17, 1)
    assert c.question_failed and not c.failed
    # cluster sums -9, -8, +1 (the rest 0), |T| = 16: of the 8 sign patterns of the three,
    # +-(9 + 8 + 1) = 18 and +-(9 + 8 - 1) = 16 reach it
    assert c.p_value == sign_flip_p([-9, -8, 1]) == 4 / 8
    assert "exact sign-flip test over 10 conversations p = 0.5" in c.message
    assert (
        "the question-level exact McNemar p = 0.000145 would have FAILED it, treating the 200 "
        "questions as independent although they come from 10 conversations" in c.message
    )
    assert c.details[0] == (
        "question-level test (questions as independent): exact McNemar over 200 questions, "
        "p = 0.000145: would fail (verdicts DIFFER)"
    )
    assert c.details[1].startswith("power: this run detects a true drop of ")
    assert c.detectable is not None and c.detectable > -c.delta  # type: ignore[operator]


def test_a_drop_in_every_conversation_fails_both_ways() -> None:
    current, baseline = _locomo_shaped(dict.fromkeys(range(10), 2))
    [c] = compare(current, baseline, "correct", 2.0)
    assert c.failed and c.question_failed
    assert c.p_value == 2 / 1024
    assert c.message.startswith(
        "regression FAILED: locomo (mem) correct over category single-hop [4] dropped 10.0"
    )
    assert c.details[0].endswith("would fail (same verdict)")
    assert not any(line.startswith("power:") for line in c.details)


def test_few_conversations_cannot_show_a_drop_and_the_power_line_says_so() -> None:
    current, baseline = _locomo_shaped(dict.fromkeys(range(4), 5), convs=4)
    [c] = compare(current, baseline, "correct", 2.0)
    assert not c.failed and c.question_failed
    assert c.p_value == 2 / 16
    assert c.detectable == math.inf
    assert (
        "power: no drop can be significant at alpha 0.05: the exact sign-flip test over 4 "
        "conversations cannot give p below 0.125; run more conversations" in c.details
    )


def test_many_conversations_use_the_cluster_bootstrap() -> None:
    current, baseline = _locomo_shaped(dict.fromkeys(range(20), 1), convs=20, per_conv=5)
    [c] = compare(current, baseline, "correct", 2.0, seed=3)
    assert c.test == "cluster-bootstrap" and c.clusters == 20
    assert "cluster bootstrap over 20 conversations p < 0.0002" in c.message
    assert c.failed


def test_baseline_file_keeps_the_cluster(tmp_path: Path) -> None:
    _, baseline = _locomo_shaped({0: 1})
    path = tmp_path / "b.json"
    path.write_text(json.dumps(baseline), encoding="utf-8")
    loaded = load_baseline(path)
    questions = loaded["runs"][0]["questions"]
    assert questions["conv-3-q2"]["cluster"] == "conv-3"


# --- the simulation (perf/cluster_gate.py), small and seeded --------------------------------------


def test_simulation_false_positive_rates(tmp_path: Path) -> None:
    out = tmp_path / "sim.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "perf" / "cluster_gate.py"),
            "--replicates",
            "300",
            "--resamples",
            "200",
            "--seed",
            "7",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text())
    assert (figures["clusters"], figures["icc"], figures["replicates"]) == (10, 0.3, 300)
    assert figures["observed_icc"] == pytest.approx(0.3, abs=0.05)
    limit = 0.05 + 3 * math.sqrt(0.05 * 0.95 / 300)
    assert figures["cluster_rate"] <= limit
    assert figures["question_rate"] > limit
    assert figures["cluster_within"] and not figures["question_within"]
    assert "cluster within, question-level NOT within" in proc.stdout
