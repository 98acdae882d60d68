"""Seeded simulation: false-positive rate of the regression gate's tests on clustered data.

Synthetic LoCoMo-shaped runs: ``--clusters`` conversations of ``--per-cluster`` questions. In each
conversation each of the two systems (the baseline and the current run) has its own accuracy
``p ~ Beta`` with mean ``--accuracy`` and intra-conversation correlation ``--icc`` (the beta-binomial
ICC ``1 / (a + b + 1)``: two questions of one conversation answered by one system are correlated
``--icc``); every question is then correct with that probability. The two systems' accuracies in
one conversation are correlated ``--system-correlation`` (a Gaussian copula; 0: independent): both
find the same conversations hard. Under the null hypothesis both
systems have the same expected accuracy (``--effect 0``), so every "significant drop" is a false
positive. Both tests of the gate run on every replicate, the pure functions the gate calls:

- question level: exact McNemar on the paired binary outcomes (questions treated as independent);
- cluster level: ``analysis.clusters.paired_cluster_test`` (exact sign-flip test over the
  conversations while at most 16 changed, a cluster bootstrap otherwise).

A rejection is ``p < alpha`` with a drop (current below baseline): the gate's significance half
with a margin of 0 points. The null is symmetric, so the two-sided rejection rate is also printed.
``--effect D`` lowers the current system's mean accuracy by D to estimate power instead (the
median power-line figure is printed too: run again with ``--effect`` at that value to see how
close to 80% the power is). The
Monte-Carlo error of a rate r over R replicates is ``sqrt(r (1 - r) / R)``; the gate "stays
within alpha" when its two-sided rate is at most ``alpha + 2 * sqrt(alpha (1 - alpha) / R)``.

    python perf/cluster_gate.py                       # 2,000 replicates, ~1 min on one core
    python perf/cluster_gate.py --replicates 300 --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

from pytest_memeval.analysis import mcnemar_exact, paired_cluster_test


@dataclass(frozen=True)
class Figures:
    replicates: int
    clusters: int
    per_cluster: int
    icc: float
    accuracy: float
    effect: float
    system_correlation: float
    alpha: float
    seed: int
    question_rate: float  # two-sided p < alpha, question-level McNemar
    cluster_rate: float  # two-sided p < alpha, cluster test
    question_drop_rate: float  # p < alpha and a drop: what fails the gate
    cluster_drop_rate: float
    mc_error: float  # sqrt(alpha (1 - alpha) / R)
    limit: float  # alpha + 2 * mc_error
    cluster_within: bool
    question_within: bool
    observed_icc: float  # mean within-conversation correlation of one system's outcomes
    sign_flip_share: float  # replicates where the exact sign-flip test was used
    detectable_median: float | None  # median power-line figure (smallest drop at 80% power)
    seconds: float


def _beta_params(mean: float, icc: float) -> tuple[float, float]:
    total = (1.0 - icc) / icc  # a + b, so that 1 / (a + b + 1) == icc
    return mean * total, (1.0 - mean) * total


def _outcomes(
    rng: np.random.Generator,
    per_cluster: int,
    means: tuple[float, float],
    icc: float,
    corr: float,
    clusters: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, current) 0/1 outcomes, each (clusters x per_cluster)."""
    from scipy.stats import beta, norm

    z = rng.multivariate_normal([0.0, 0.0], [[1.0, corr], [corr, 1.0]], size=clusters)
    u = norm.cdf(z)
    out = []
    for j, mean in enumerate(means):
        a, b = _beta_params(mean, icc)
        p = beta.ppf(u[:, j], a, b)
        out.append((rng.random((clusters, per_cluster)) < p[:, None]).astype(np.float64))
    return out[0], out[1]


def _icc(y: np.ndarray) -> float:
    """One-way ANOVA estimate of the intra-cluster correlation of a (clusters x m) 0/1 array."""
    k, m = y.shape
    grand = y.mean()
    msb = m * float(((y.mean(axis=1) - grand) ** 2).sum()) / (k - 1)
    msw = float(((y - y.mean(axis=1, keepdims=True)) ** 2).sum()) / (k * (m - 1))
    denom = msb + (m - 1) * msw
    return (msb - msw) / denom if denom > 0 else 0.0


def simulate(
    *,
    replicates: int,
    clusters: int = 10,
    per_cluster: int = 150,
    icc: float = 0.3,
    accuracy: float = 0.6,
    effect: float = 0.0,
    system_correlation: float = 0.0,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = 1000,
) -> Figures:
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(clusters), per_cluster).tolist()
    q_rej = c_rej = q_drop = c_drop = exact = 0
    iccs: list[float] = []
    detectable: list[float] = []
    for r in range(replicates):
        before, after = _outcomes(
            rng, per_cluster, (accuracy, accuracy - effect), icc, system_correlation, clusters
        )
        iccs.append(_icc(before))
        deltas = (after - before).ravel()
        to_wrong = int(np.count_nonzero(deltas < 0))
        to_correct = int(np.count_nonzero(deltas > 0))
        drop = to_wrong > to_correct
        p_q = mcnemar_exact(to_wrong, to_correct)
        test = paired_cluster_test(
            deltas.tolist(), labels, alpha=alpha, resamples=resamples, seed=seed + r
        )
        exact += test.test == "sign-flip"
        if test.detectable is not None:
            detectable.append(test.detectable)
        q_rej += p_q < alpha
        c_rej += test.p_value < alpha
        q_drop += p_q < alpha and drop
        c_drop += test.p_value < alpha and drop
    mc = math.sqrt(alpha * (1.0 - alpha) / replicates)
    limit = alpha + 2.0 * mc
    return Figures(
        replicates=replicates,
        clusters=clusters,
        per_cluster=per_cluster,
        icc=icc,
        accuracy=accuracy,
        effect=effect,
        system_correlation=system_correlation,
        alpha=alpha,
        seed=seed,
        question_rate=q_rej / replicates,
        cluster_rate=c_rej / replicates,
        question_drop_rate=q_drop / replicates,
        cluster_drop_rate=c_drop / replicates,
        mc_error=mc,
        limit=limit,
        cluster_within=c_rej / replicates <= limit,
        question_within=q_rej / replicates <= limit,
        observed_icc=float(np.mean(iccs)),
        sign_flip_share=exact / replicates,
        detectable_median=float(np.median(detectable)) if detectable else None,
        seconds=time.perf_counter() - started,
    )


def _rate(rate: float, n: int) -> str:
    return f"{rate:.4f} (+/- {math.sqrt(rate * (1.0 - rate) / n):.4f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--per-cluster", type=int, default=150)
    parser.add_argument("--icc", type=float, default=0.3)
    parser.add_argument("--accuracy", type=float, default=0.6)
    parser.add_argument("--effect", type=float, default=0.0)
    parser.add_argument("--system-correlation", type=float, default=0.0)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    if not 0.0 < args.icc < 1.0 or args.clusters < 2 or args.per_cluster < 2:
        parser.error("--icc must lie in (0, 1); --clusters and --per-cluster at least 2")
    if not -1.0 < args.system_correlation < 1.0:
        parser.error("--system-correlation must lie in (-1, 1)")
    f = simulate(
        replicates=args.replicates,
        clusters=args.clusters,
        per_cluster=args.per_cluster,
        icc=args.icc,
        accuracy=args.accuracy,
        effect=args.effect,
        system_correlation=args.system_correlation,
        alpha=args.alpha,
        seed=args.seed,
        resamples=args.resamples,
    )
    what = (
        "false-positive rate" if f.effect == 0 else f"rejection rate (power) at effect {f.effect}"
    )
    print(
        f"cluster gate simulation: {f.replicates} replicates, {f.clusters} clusters x "
        f"{f.per_cluster} questions, ICC {f.icc} (observed {f.observed_icc:.3f}), accuracy "
        f"{f.accuracy}, system correlation {f.system_correlation}, alpha {f.alpha}, seed "
        f"{f.seed}; {f.seconds:.1f} s"
    )
    print(f"{what}, two-sided p < alpha:")
    print(f"  question-level exact McNemar : {_rate(f.question_rate, f.replicates)}")
    print(
        f"  cluster test                 : {_rate(f.cluster_rate, f.replicates)} "
        f"(exact sign-flip in {f.sign_flip_share:.0%} of replicates)"
    )
    print("rejections that are drops (what fails the gate at a margin of 0):")
    print(f"  question-level : {_rate(f.question_drop_rate, f.replicates)}")
    print(f"  cluster        : {_rate(f.cluster_drop_rate, f.replicates)}")
    if f.detectable_median is not None:
        print(
            f"power line (smallest drop detected with 80% power), median over replicates: "
            f"{f.detectable_median:.4f}"
        )
    if f.effect == 0:
        print(
            f"alpha + 2 x Monte-Carlo error = {f.alpha} + 2 x {f.mc_error:.4f} = {f.limit:.4f}: "
            f"cluster {'within' if f.cluster_within else 'NOT within'}, question-level "
            f"{'within' if f.question_within else 'NOT within'}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(asdict(f), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
