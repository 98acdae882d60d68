"""Cluster-aware statistics, pytest-free: questions that share a conversation are not independent.

A benchmark declares the unit its questions cluster in (``cluster_unit``: LoCoMo and BEAM
``conversation``, LongMemEval ``question``, the user-memory suite ``case``) and every question
result carries its cluster id. Everything here treats the *cluster* as the independent unit:

- :func:`cluster_bootstrap_cis`: percentile intervals of a micro mean from resampling whole
  clusters with replacement (the resampled mean is the resampled clusters' sum of values over
  their number of questions). When every cluster holds one question, in value order, the draws
  and the intervals are exactly those of the question-level bootstrap (``stats.bootstrap_cis``).
- :func:`paired_cluster_test`: the regression test on per-cluster sums of paired differences.
  With at most :data:`MAX_EXACT_CLUSTERS` clusters whose differences do not sum to zero, the exact
  sign-flip permutation test (all ``2**m`` sign patterns: under "no change" each cluster's
  difference is as likely to be positive as negative); otherwise a cluster bootstrap. When every
  cluster is one question the caller keeps its question-level test (McNemar, paired bootstrap).
- :func:`detectable_difference`: the smallest true difference the run could detect at ``alpha``
  with the given power, from the observed between-cluster spread (cluster-robust standard error,
  Student t with ``k - 1`` degrees of freedom), or infinity when the exact test cannot reach
  ``alpha`` at all with this few clusters.

Every random procedure takes a seed and uses ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_EXACT_CLUSTERS",
    "TEST_CLUSTER_BOOTSTRAP",
    "TEST_SIGN_FLIP",
    "ClusterSums",
    "ClusterTest",
    "cluster_bootstrap_ci",
    "cluster_bootstrap_cis",
    "cluster_bootstrap_means",
    "cluster_bootstrap_means_many",
    "cluster_sums",
    "detectable_difference",
    "paired_cluster_test",
    "sign_flip_p",
]

#: the exact sign-flip test enumerates 2**m patterns for at most this many non-zero clusters
MAX_EXACT_CLUSTERS = 16
TEST_SIGN_FLIP = "sign-flip"
TEST_CLUSTER_BOOTSTRAP = "cluster-bootstrap"
_CHUNK_ELEMENTS = 1 << 20  # resample indices drawn per chunk (as stats.bootstrap_means)


@dataclass(frozen=True)
class ClusterSums:
    """Values grouped by cluster, clusters in order of first appearance."""

    labels: tuple[Hashable, ...]
    sums: npt.NDArray[np.float64]
    sizes: npt.NDArray[np.float64]

    @property
    def k(self) -> int:
        return len(self.labels)

    @property
    def n(self) -> int:
        return int(self.sizes.sum())

    @property
    def singletons(self) -> bool:
        """Whether every cluster holds exactly one value (the clusters are the questions)."""
        return bool(np.all(self.sizes == 1.0))


def cluster_sums(values: Sequence[float], clusters: Sequence[Hashable]) -> ClusterSums:
    """Group ``values`` by ``clusters`` (same length). Sums use ``math.fsum`` per cluster."""
    if len(values) != len(clusters):
        raise ValueError(
            f"values and clusters differ in length ({len(values)} values, {len(clusters)} clusters)"
        )
    groups: dict[Hashable, list[float]] = {}
    for v, c in zip(values, clusters, strict=True):
        groups.setdefault(c, []).append(float(v))
    labels = tuple(groups)
    sums = np.array([math.fsum(g) for g in groups.values()], dtype=np.float64)
    sizes = np.array([len(g) for g in groups.values()], dtype=np.float64)
    return ClusterSums(labels, sums, sizes)


def _check(confidence: float, resamples: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")


def cluster_bootstrap_means_many(
    groups: Sequence[ClusterSums], resamples: int, seed: int
) -> list[npt.NDArray[np.float64]]:
    """Cluster-bootstrap means of each group (all with the same number of clusters), drawing the
    cluster indices once for all of them. Groups of one value per cluster are the question-level
    bootstrap (``stats.bootstrap_means_many`` is this with singleton clusters)."""
    k = groups[0].k
    rng = np.random.default_rng(seed)
    out = [np.empty(resamples, dtype=np.float64) for _ in groups]
    chunk = max(1, _CHUNK_ELEMENTS // k)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, k, size=(stop - start, k), dtype=np.intp)
        for g, means in zip(groups, out, strict=True):
            if g.singletons:  # the same arithmetic as the question-level bootstrap
                means[start:stop] = g.sums[idx].sum(axis=1) / k
            else:
                means[start:stop] = g.sums[idx].sum(axis=1) / g.sizes[idx].sum(axis=1)
    return out


def cluster_bootstrap_means(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    resamples: int,
    seed: int,
) -> npt.NDArray[np.float64]:
    """Micro means of ``resamples`` cluster-bootstrap resamples (``k`` clusters drawn with
    replacement). Deterministic for a given (values, clusters, resamples, seed)."""
    if not values:
        raise ValueError("cluster_bootstrap_means needs at least one value")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    return cluster_bootstrap_means_many([cluster_sums(values, clusters)], resamples, seed)[0]


def _interval(
    means: npt.NDArray[np.float64], confidence: float, centre: float
) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return (min(float(lo), centre), max(float(hi), centre))  # always contains the mean


def cluster_bootstrap_cis(
    columns: Sequence[tuple[Sequence[float], Sequence[Hashable]]],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> list[tuple[float, float] | None]:
    """Percentile cluster-bootstrap interval of the micro mean of each ``(values, clusters)``
    column. ``None`` for a column without values or with fewer than two clusters (one cluster
    says nothing about the spread between clusters). Columns with the same number of clusters
    share one draw of cluster indices, so a column's interval does not depend on the others."""
    _check(confidence, resamples)
    out: list[tuple[float, float] | None] = [None] * len(columns)
    by_k: dict[int, list[tuple[int, ClusterSums, float]]] = {}
    for i, (values, clusters) in enumerate(columns):
        if not values:
            continue
        grouped = cluster_sums(values, clusters)
        if grouped.k < 2:
            continue
        centre = math.fsum(float(v) for v in values) / len(values)
        by_k.setdefault(grouped.k, []).append((i, grouped, centre))
    for entries in by_k.values():
        means = cluster_bootstrap_means_many([g for _, g, _ in entries], resamples, seed)
        for (i, _, centre), m in zip(entries, means, strict=True):
            out[i] = _interval(m, confidence, centre)
    return out


def cluster_bootstrap_ci(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """:func:`cluster_bootstrap_cis` of one column."""
    return cluster_bootstrap_cis(
        [(values, clusters)], confidence=confidence, resamples=resamples, seed=seed
    )[0]


def sign_flip_p(sums: Sequence[float]) -> float:
    """Two-sided exact sign-flip p-value of ``sum(sums)``: the share of the ``2**m`` sign
    patterns over the ``m`` non-zero cluster sums whose total is at least as far from zero as the
    observed one (clusters summing to zero change no total and are left out). ``m`` is at most
    :data:`MAX_EXACT_CLUSTERS`; with no non-zero sum, 1.0."""
    s = np.asarray([float(x) for x in sums if float(x) != 0.0], dtype=np.float64)
    m = int(s.shape[0])
    if m == 0:
        return 1.0
    if m > MAX_EXACT_CLUSTERS:
        raise ValueError(
            f"sign_flip_p enumerates at most 2**{MAX_EXACT_CLUSTERS} patterns, got {m} clusters"
        )
    patterns = np.arange(1 << m, dtype=np.int64)
    signs = ((patterns[:, None] >> np.arange(m, dtype=np.int64)) & 1) * 2.0 - 1.0
    totals = np.abs(signs @ s)
    observed = abs(math.fsum(s.tolist()))
    tolerance = 1e-9 * math.fsum(np.abs(s).tolist())  # ties up to float rounding count as ties
    extreme = int(np.count_nonzero(totals >= observed - tolerance))
    return extreme / (1 << m)


def detectable_difference(
    deltas: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    alpha: float,
    power: float = 0.8,
    exact: bool = False,
) -> float | None:
    """The smallest true mean difference (on the metric's scale, positive) a two-sided test at
    ``alpha`` detects with probability ``power``, given the spread of these paired differences
    between clusters: ``(t(1 - alpha/2) + t(power)) * SE`` with ``k - 1`` degrees of freedom and
    the cluster-robust ``SE = sqrt(k / (k - 1) * sum_j (S_j - n_j * mean)^2) / N``.

    ``exact``: the test is the exact sign-flip test, which cannot give a p-value below
    ``2 / 2**k``; when that is not below ``alpha`` no difference is detectable (``math.inf``).
    ``None`` with fewer than two clusters or when the differences do not vary between clusters."""
    from scipy.stats import t as student_t

    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"alpha and power must lie strictly between 0 and 1 ({alpha}, {power})")
    if not deltas:
        return None
    g = cluster_sums(deltas, clusters)
    k = g.k
    if k < 2:
        return None
    if exact and 2.0 / 2.0**k >= alpha:
        return math.inf
    n = float(g.n)
    mean = math.fsum(float(d) for d in deltas) / n
    resid = g.sums - g.sizes * mean
    var = k / (k - 1) * math.fsum((resid * resid).tolist())
    if var <= 0.0:
        return None
    se = math.sqrt(var) / n
    df = k - 1
    return float((student_t.ppf(1.0 - alpha / 2.0, df) + student_t.ppf(power, df)) * se)


@dataclass(frozen=True)
class ClusterTest:
    """A paired test on per-cluster differences (current - baseline).

    ``test`` is :data:`TEST_SIGN_FLIP` (exact; ``resamples`` 0) or :data:`TEST_CLUSTER_BOOTSTRAP`;
    ``clusters`` the number of clusters, ``nonzero`` how many of them changed in total; ``ci`` the
    cluster-bootstrap percentile interval of ``mean`` (the micro mean difference); ``p_floor`` the
    smallest p-value the test can show; ``detectable`` see :func:`detectable_difference`."""

    test: str
    clusters: int
    nonzero: int
    questions: int
    mean: float
    ci: tuple[float, float] | None
    p_value: float
    p_floor: float
    resamples: int
    detectable: float | None


def paired_cluster_test(
    deltas: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    resamples: int = 5000,
    seed: int = 0,
    confidence: float = 0.95,
    max_exact: int = MAX_EXACT_CLUSTERS,
) -> ClusterTest:
    """Test whether the paired ``deltas`` (one per question, ``clusters`` its cluster ids) differ
    from zero, the cluster being the independent unit. The statistic is the sum of the cluster
    sums (``N`` times the micro mean difference). At most ``max_exact`` clusters with a non-zero
    sum: exact sign-flip test; more: cluster bootstrap, ``p = min(1, 2 * min(P(mean* <= 0),
    P(mean* >= 0)))`` over ``resamples`` seeded resamples."""
    _check(confidence, resamples)
    if not deltas:
        return ClusterTest(TEST_SIGN_FLIP, 0, 0, 0, 0.0, None, 1.0, 1.0, 0, None)
    if max_exact > MAX_EXACT_CLUSTERS:
        raise ValueError(f"max_exact is at most {MAX_EXACT_CLUSTERS}, got {max_exact}")
    g = cluster_sums(deltas, clusters)
    k = g.k
    n = g.n
    mean = math.fsum(float(d) for d in deltas) / n
    nonzero = int(np.count_nonzero(g.sums != 0.0))
    ci: tuple[float, float] | None = None
    boot: npt.NDArray[np.float64] | None = None
    if k >= 2:
        boot = cluster_bootstrap_means_many([g], resamples, seed)[0]
        ci = _interval(boot, confidence, mean)
    exact = nonzero <= max_exact or boot is None
    if exact:
        p = sign_flip_p(g.sums.tolist())
        test, floor, used = TEST_SIGN_FLIP, 2.0 / 2.0**k, 0
    else:
        assert boot is not None
        below = float(np.count_nonzero(boot <= 0.0)) / resamples
        above = float(np.count_nonzero(boot >= 0.0)) / resamples
        p = min(1.0, 2.0 * min(below, above))
        test, floor, used = TEST_CLUSTER_BOOTSTRAP, 1.0 / resamples, resamples
    detectable = detectable_difference(deltas, clusters, alpha=alpha, power=power, exact=exact)
    return ClusterTest(test, k, nonzero, n, mean, ci, p, min(1.0, floor), used, detectable)
