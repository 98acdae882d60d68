"""Aggregation, pytest-free: per-category tables with micro means, named overall figures.

Rules (docs/scoring.md#aggregation): a metric listed in ``round3`` is rounded per question to 3
decimals before averaging (LoCoMo's official pipeline); every mean is a micro mean over the questions
that have a value for that metric; ``overall`` covers the categories marked ``in_overall`` (LoCoMo 1-4,
the Mem0 protocol) and ``overall_all`` every category (the LoCoMo paper protocol). ERROR items have no
scores and are counted apart; UNSCORED values (None) are excluded from means and counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..benchmarks import Benchmark

from ..records import STATUSES, QuestionResult
from ..report import CategoryRow, RunSummary

__all__ = [
    "CategoryMeta",
    "aggregate_run",
    "benchmark_shape",
    "group_runs",
    "percentile",
    "row_values",
]


@dataclass(frozen=True)
class CategoryMeta:
    key: str
    category_id: int | str | None
    shared: str
    in_overall: bool = True


def benchmark_shape(
    bench: Benchmark | None,
) -> tuple[list[CategoryMeta], list[str], tuple[str, ...]]:
    """What ``aggregate_run`` needs from a benchmark: its categories, offline metrics and the
    metrics rounded per question (nothing for an unknown benchmark)."""
    if bench is None:
        return [], [], ()
    metas = [CategoryMeta(c.name, c.id, c.shared, c.in_overall) for c in bench.categories.values()]
    return metas, list(bench.metrics), tuple(getattr(bench, "round3_metrics", ()))


def row_values(
    results: Iterable[QuestionResult], metric: str, round3: Iterable[str] = ()
) -> list[float]:
    """The per-question values a mean is taken over: missing, None and NaN values skipped, a metric
    in ``round3`` rounded to 3 decimals per question (LoCoMo's per-question rounding). The table
    means and the bootstrap intervals (``stats``) both use it."""
    rounding = metric in set(round3)
    out: list[float] = []
    for r in results:
        v = r.scores.get(metric)
        if v is None or math.isnan(v):
            continue
        out.append(round(float(v), 3) if rounding else float(v))
    return out


def _row(
    key: str,
    category_id: int | str | None,
    shared: str,
    results: Sequence[QuestionResult],
    metrics: Sequence[str],
    round3: Iterable[str],
) -> CategoryRow:
    round3 = tuple(round3)
    means: dict[str, float | None] = {}
    scored: dict[str, int] = {}
    for metric in metrics:
        values = row_values(results, metric, round3)
        scored[metric] = len(values)
        means[metric] = math.fsum(values) / len(values) if values else None
    statuses = dict.fromkeys(STATUSES, 0)
    for r in results:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    return CategoryRow(key, category_id, shared, len(results), means, scored, statuses)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolation percentile (numpy's default), q in [0, 100]."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return ordered[lo]
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _latency(results: Sequence[QuestionResult]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    per_conv_ingest: dict[str, float] = {}
    per_conv_ready: dict[str, float] = {}
    stages: dict[str, list[float]] = {"search": [], "answer": []}
    for r in results:
        if "ingest" in r.latency:
            per_conv_ingest.setdefault(r.conversation_id, r.latency["ingest"])
        if "ready" in r.latency:  # wait_ready after ingest: once per conversation, like ingest
            per_conv_ready.setdefault(r.conversation_id, r.latency["ready"])
        for stage, values in stages.items():
            if stage in r.latency:
                values.append(r.latency[stage])
    series = {"ingest": list(per_conv_ingest.values()), **stages}
    if per_conv_ready:
        series["ready"] = list(per_conv_ready.values())
    for stage, values in series.items():
        if not values:
            continue
        p50 = percentile(values, 50)
        p95 = percentile(values, 95)
        out[stage] = {
            "count": float(len(values)),
            "mean": math.fsum(values) / len(values),
            "p50": p50 if p50 is not None else 0.0,
            "p95": p95 if p95 is not None else 0.0,
        }
    return out


def aggregate_run(
    benchmark: str,
    system: str,
    flow: str,
    results: Sequence[QuestionResult],
    categories: Sequence[CategoryMeta],
    metrics: Sequence[str],
    round3: Iterable[str] = (),
) -> RunSummary:
    round3 = tuple(round3)
    by_cat: dict[str, list[QuestionResult]] = {}
    for r in results:
        by_cat.setdefault(r.category, []).append(r)
    known = {c.key for c in categories}
    metas = list(categories) + [
        CategoryMeta(key, by_cat[key][0].category_id, "") for key in by_cat if key not in known
    ]
    rows = []
    for m in metas:
        if m.key in by_cat:
            row = _row(m.key, m.category_id, m.shared, by_cat[m.key], metrics, round3)
            row.in_overall = m.in_overall
            rows.append(row)
    in_overall = {m.key for m in metas if m.in_overall}
    overall_results = [r for r in results if r.category in in_overall]
    overall = _row("overall", None, "", overall_results, metrics, round3)
    overall_all = _row("overall_all", None, "", list(results), metrics, round3)
    ordered = sorted(
        results, key=lambda r: (r.conversation_id, r.details.get("index", 0), r.question_id)
    )
    macro = None
    notes: list[str] = []
    if len(rows) > 1:
        macro_means: dict[str, float | None] = {}
        for metric in metrics:
            values = [row.metrics[metric] for row in rows if row.metrics.get(metric) is not None]
            macro_means[metric] = (
                math.fsum(v for v in values if v is not None) / len(values) if (values) else None
            )
        macro = CategoryRow("macro", None, "", len(rows), macro_means)
        absent = [c.key for c in categories if c.key not in by_cat]
        if absent and benchmark.startswith("longmemeval"):
            notes.append(
                f"macro: the mean of the {len(rows)} categories present; absent: "
                + ", ".join(absent)
                + " (LongMemEval's print_qa_metrics.py would print nan for its task-averaged "
                "accuracy)"
            )
    flagged = [r for r in results if r.details.get("abstention")]
    abstention = None
    if flagged and not any({id(r) for r in flagged} == {id(r) for r in by_cat[c]} for c in by_cat):
        abstention = _row("abstention", None, "abstention", flagged, metrics, round3)
    return RunSummary(
        benchmark=benchmark,
        system=system,
        flow=flow,
        metrics=list(metrics),
        categories=rows,
        overall=overall,
        overall_all=overall_all,
        results=ordered,
        latency=_latency(results),
        macro=macro,
        abstention=abstention,
        notes=notes,
    )


def group_runs(
    results: Iterable[QuestionResult],
) -> dict[tuple[str, str, str], list[QuestionResult]]:
    runs: dict[tuple[str, str, str], list[QuestionResult]] = {}
    for r in results:
        runs.setdefault(r.run_key, []).append(r)
    return runs


def metric_union(results: Iterable[QuestionResult], preferred: Sequence[str]) -> list[str]:
    """The preferred metrics first, then any other metric a result carries (hook-added)."""
    seen: dict[str, None] = dict.fromkeys(preferred)
    for r in results:
        for key in r.scores:
            seen.setdefault(key, None)
    return list(seen)
