"""Statistics, pytest-free: bootstrap intervals, exact McNemar, paired bootstrap, pooled std.

Every random procedure takes a seed and uses ``numpy.random.default_rng(seed)``, so a report is
reproducible: the same values and seed give the same interval on every machine and every run.
Bootstrap resampling is vectorised in bounded chunks (about a million indices at a time), so 2,000
resamples of 2,000 values take a few milliseconds and memory stays small for large runs. The
question-level bootstrap is ``clusters.cluster_bootstrap_means_many`` with one value per cluster;
the row intervals of a run resample its clusters (``clusters``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..records import QuestionResult
from ..report import CategoryRow, RunSummary
from ._aggregate import row_values
from ._clusters import ClusterSums, cluster_bootstrap_cis, cluster_bootstrap_means_many

__all__ = [
    "PairedResult",
    "add_confidence_intervals",
    "add_pooled_judge_std",
    "bootstrap_ci",
    "bootstrap_cis",
    "bootstrap_means",
    "bootstrap_means_many",
    "judge_pooled_std",
    "mcnemar_exact",
    "paired_bootstrap",
    "pooled_std",
    "row_values",
]


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def bootstrap_means(
    values: Sequence[float], *, resamples: int, seed: int
) -> npt.NDArray[np.float64]:
    """Means of ``resamples`` bootstrap resamples (with replacement, same size) of ``values``.

    Deterministic for a given (values, resamples, seed). ``values`` must not be empty."""
    return bootstrap_means_many([values], resamples=resamples, seed=seed)[0]


def bootstrap_means_many(
    columns: Sequence[Sequence[float]], *, resamples: int, seed: int
) -> list[npt.NDArray[np.float64]]:
    """``bootstrap_means`` of each column (all of the same length), drawing the resample indices
    once for all of them: each result is exactly ``bootstrap_means(column, resamples=resamples,
    seed=seed)``, and drawing the indices is most of the cost."""
    xs = [np.asarray(values, dtype=np.float64) for values in columns]
    if not xs:
        return []
    n = xs[0].shape[0]
    if n == 0:
        raise ValueError("bootstrap_means needs at least one value")
    if any(x.shape[0] != n for x in xs):
        raise ValueError("bootstrap_means_many needs columns of one length")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    # every value its own cluster: the cluster bootstrap is the question-level bootstrap
    labels, ones = tuple(range(n)), np.ones(n, dtype=np.float64)
    groups = [ClusterSums(labels, x, ones) for x in xs]
    return cluster_bootstrap_means_many(groups, resamples=resamples, seed=seed)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def _percentile_interval(
    means: npt.NDArray[np.float64], confidence: float, centre: float
) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    # The percentile interval of the mean contains the sample mean except in degenerate cases where
    # numpy's summation differs from math.fsum by an ulp (constant values); clamp so it always does.
    return (min(float(lo), centre), max(float(hi), centre))


def bootstrap_ci(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of ``values``.

    ``None`` for no values; ``(v, v)`` for a single value. The interval always contains the mean
    (``math.fsum(values) / len(values)``, the way ``aggregate`` computes it)."""
    return bootstrap_cis([values], confidence=confidence, resamples=resamples, seed=seed)[0]


def bootstrap_cis(
    columns: Sequence[Sequence[float]],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> list[tuple[float, float] | None]:
    """``bootstrap_ci`` of each column; columns of the same length share one draw of resample
    indices (same values as separate calls, a fraction of the cost)."""
    _check_confidence(confidence)
    out: list[tuple[float, float] | None] = [None] * len(columns)
    by_length: dict[int, list[int]] = {}
    for i, values in enumerate(columns):
        if len(values) == 1:
            v = float(values[0])
            out[i] = (v, v)
        elif len(values) > 1:
            by_length.setdefault(len(values), []).append(i)
    for positions in by_length.values():
        group = [columns[i] for i in positions]
        means = bootstrap_means_many(group, resamples=resamples, seed=seed)
        for i, values, m in zip(positions, group, means, strict=True):
            out[i] = _percentile_interval(m, confidence, _mean(values))
    return out


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs.

    Under the null hypothesis each discordant pair falls either way with probability 1/2, so the
    p-value is the two-sided binomial test ``min(1, 2 * P(X <= min(b, c)))`` with
    ``X ~ Binomial(b + c, 1/2)``, computed exactly with integers. ``b + c == 0`` gives 1.0."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    term = 1  # C(n, 0)
    tail = 1
    for i in range(k):
        term = term * (n - i) // (i + 1)  # C(n, i + 1), exact
        tail += term
    if 2 * tail >= 1 << n:
        return 1.0
    return (2 * tail) / (1 << n)  # int / int: correctly rounded, no overflow


@dataclass(frozen=True)
class PairedResult:
    """A paired bootstrap of per-question differences (current - baseline)."""

    n: int
    mean: float
    ci: tuple[float, float] | None
    p_value: float
    resamples: int
    confidence: float

    @property
    def p_floor(self) -> float:
        """The smallest non-zero p-value this many resamples can show (a p of 0 means below it)."""
        return 1.0 / self.resamples


def paired_bootstrap(
    deltas: Sequence[float],
    *,
    resamples: int = 5000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedResult:
    """Mean of the paired ``deltas``, its percentile bootstrap interval and a two-sided p-value.

    p = ``min(1, 2 * min(P(mean* <= 0), P(mean* >= 0)))`` over the bootstrap means ``mean*``. With
    no deltas: mean 0, no interval, p = 1."""
    _check_confidence(confidence)
    n = len(deltas)
    if n == 0:
        return PairedResult(0, 0.0, None, 1.0, resamples, confidence)
    centre = _mean(deltas)
    means = bootstrap_means(deltas, resamples=resamples, seed=seed)
    ci = _percentile_interval(means, confidence, centre)
    below = float(np.count_nonzero(means <= 0.0)) / resamples
    above = float(np.count_nonzero(means >= 0.0)) / resamples
    p = min(1.0, 2.0 * min(below, above))
    return PairedResult(n, centre, ci, p, resamples, confidence)


def pooled_std(groups: Sequence[tuple[float, int]]) -> float | None:
    """Pooled sample std from per-group ``(std, n)`` pairs: ``sqrt(sum((n-1) s^2) / sum(n-1))``.

    Groups with ``n < 2`` carry no degrees of freedom and are skipped (docs/scoring.md#aggregation);
    ``None`` when no group has any, or a std that is not finite is given."""
    num: list[float] = []
    dof = 0
    for std, n in groups:
        if n < 2:
            continue
        if not math.isfinite(std):
            return None
        num.append((n - 1) * std * std)
        dof += n - 1
    if dof == 0:
        return None
    return math.sqrt(math.fsum(num) / dof)


def judge_pooled_std(
    results: Iterable[QuestionResult],
    *,
    std_key: str = "judge_graded_std",
    runs_key: str = "judge_graded_runs",
) -> float | None:
    """Pooled std of a judge run several times per question (graded judge: ``judge_graded_std``
    and ``judge_graded_runs`` in each result's scores). ``None`` when no question had two or more runs."""
    groups: list[tuple[float, int]] = []
    for r in results:
        std = r.scores.get(std_key)
        runs = r.scores.get(runs_key)
        if std is None or runs is None or math.isnan(std) or math.isnan(runs):
            continue
        groups.append((float(std), round(runs)))
    return pooled_std(groups)


def _rows_with_results(run: RunSummary) -> list[tuple[CategoryRow, list[QuestionResult]]]:
    by_cat: dict[str, list[QuestionResult]] = {}
    for r in run.results:
        by_cat.setdefault(r.category, []).append(r)
    in_overall = {row.key for row in run.categories if row.in_overall}
    pairs = [(row, by_cat.get(row.key, [])) for row in run.categories]
    pairs.append((run.overall, [r for r in run.results if r.category in in_overall]))
    pairs.append((run.overall_all, list(run.results)))
    return pairs


def _values_and_clusters(
    results: Sequence[QuestionResult], metric: str, round3: tuple[str, ...]
) -> tuple[list[float], list[str]]:
    """``row_values`` with the cluster of each value beside it."""
    kept = [r for r in results if r.scores.get(metric) is not None]
    kept = [r for r in kept if not math.isnan(r.scores[metric] or 0.0)]
    return row_values(kept, metric, round3), [r.cluster_id for r in kept]


def add_confidence_intervals(
    run: RunSummary,
    metrics: Sequence[str],
    *,
    seed: int = 0,
    round3: Iterable[str] = (),
    confidence: float = 0.95,
    resamples: int = 2000,
) -> None:
    """Fill ``row.ci[metric]`` (``[low, high]`` or ``None``) for every category row, ``overall`` and
    ``overall_all`` of ``run``, from the same per-question values the row means are taken over, so
    each interval contains its mean. Same seed for every row: the run is reproducible.

    The bootstrap resamples clusters (each result's ``cluster_id``: a LoCoMo conversation, a
    LongMemEval question), never questions inside a cluster; a row whose values come from one
    cluster has no interval. When every cluster is one question this is the question bootstrap."""
    round3 = tuple(round3)
    for row, results in _rows_with_results(run):
        cis = cluster_bootstrap_cis(
            [_values_and_clusters(results, metric, round3) for metric in metrics],
            confidence=confidence,
            resamples=resamples,
            seed=seed,
        )
        for metric, ci in zip(metrics, cis, strict=True):
            row.ci[metric] = None if ci is None else [ci[0], ci[1]]


def add_pooled_judge_std(
    run: RunSummary,
    *,
    key: str = "judge_graded_pooled_std",
    std_key: str = "judge_graded_std",
    runs_key: str = "judge_graded_runs",
) -> bool:
    """Put the judge's pooled std into ``row.metrics[key]`` of every row of ``run`` when some
    question was judged two or more times; returns whether it did (nothing is added otherwise)."""
    pairs = _rows_with_results(run)
    if judge_pooled_std(run.results, std_key=std_key, runs_key=runs_key) is None:
        return False
    for row, results in pairs:
        row.metrics[key] = judge_pooled_std(results, std_key=std_key, runs_key=runs_key)
    return True
