"""A run's headline, defined once: which questions and which metric the scoreboard's number covers.

The scoreboard, the regression gate (``--memeval-max-drop``), the health gate, the nearest
published figure, the board's index and its diffs all read a run through these functions, so the
number a verdict quotes is the number the scoreboard shows:

- the **metric** is the one that decided CORRECT/WRONG in most of the run's questions (the first
  judge's, e.g. ``judge_mem0``, when a judge ran), else the benchmark's pass metric recorded in
  the provenance, else the run's first metric;
- the **selection** is the ``overall`` row: the categories the benchmark marks ``in_overall``
  (LoCoMo leaves out category 5, adversarial, as the Mem0 protocol does); ``overall_all`` is every
  category, and a category key names one category.

Pure: no pytest, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..records import QuestionResult
from ._model import CategoryRow, RunSummary

__all__ = [
    "HEADLINE_ROW",
    "Headline",
    "decided_metric",
    "headline",
    "headline_metric",
    "row_categories",
    "row_selection",
]

#: the scoreboard's row: the categories in ``overall``
HEADLINE_ROW = "overall"


@dataclass(frozen=True)
class Headline:
    """A run's headline: ``metric`` over the questions of ``categories`` (the ``row``), its
    ``value`` and 95% ``ci`` as the scoreboard prints them, and ``selection`` in words
    (``categories excl. adversarial [5]``)."""

    metric: str | None
    row: str
    categories: frozenset[str]
    selection: str
    value: float | None
    ci: tuple[float, float] | None


def decided_metric(results: Iterable[QuestionResult]) -> str | None:
    """The metric that decided CORRECT/WRONG in most of ``results`` (``details.pass_metric``);
    None when no question recorded one. Ties go to the metric seen first."""
    counts: dict[str, int] = {}
    for r in results:
        metric = r.details.get("pass_metric")
        if isinstance(metric, str):
            counts[metric] = counts.get(metric, 0) + 1
    return max(counts, key=lambda m: counts[m]) if counts else None


def headline_metric(run: RunSummary, provenance: Mapping[str, Any] | None = None) -> str | None:
    """The headline metric of ``run`` (module docstring): the deciding metric, else the pass
    metric of its benchmark in ``provenance``, else its first metric."""
    found = decided_metric(run.results)
    if found is not None:
        return found
    by_bench = (provenance or {}).get("pass_metric")
    if isinstance(by_bench, Mapping):
        metric = by_bench.get(run.benchmark)
        if isinstance(metric, str) and metric:
            return metric
    return run.metrics[0] if run.metrics else None


def row_categories(run: RunSummary, row: str) -> frozenset[str] | None:
    """The category keys row ``row`` of ``run`` covers (``overall``: those in overall;
    ``overall_all``: all; a category key: that one); None when ``run`` has no such row."""
    if row == "overall":
        return frozenset(c.key for c in run.categories if c.in_overall)
    if row == "overall_all":
        return frozenset(c.key for c in run.categories)
    found = run.row(row)
    return frozenset({found.key}) if found is not None else None


def _named(row: CategoryRow) -> str:
    return row.key if row.category_id is None else f"{row.key} [{row.category_id}]"


def row_selection(run: RunSummary, row: str) -> str:
    """Row ``row`` of ``run`` in words: ``all categories``, ``categories excl. adversarial [5]``,
    ``category temporal``."""
    if row in ("overall", "overall_all"):
        inside = [c for c in run.categories if row == "overall_all" or c.in_overall]
        if len(inside) == 1 and len(run.categories) == 1:  # a run of one category (-m, data)
            return f"category {_named(inside[0])}"
        outside = [_named(c) for c in run.categories if c not in inside]
        return f"categories excl. {', '.join(outside)}" if outside else "all categories"
    found = run.row(row)
    return f"category {_named(found)}" if found is not None else f"category {row}"


def headline(run: RunSummary, provenance: Mapping[str, Any] | None = None) -> Headline:
    """``run``'s headline (module docstring) with the value and CI the scoreboard prints."""
    metric = headline_metric(run, provenance)
    row = run.overall
    value = row.metrics.get(metric) if metric else None
    ci_raw = row.ci.get(metric) if metric else None
    ci = (float(ci_raw[0]), float(ci_raw[1])) if ci_raw else None
    return Headline(
        metric=metric,
        row=HEADLINE_ROW,
        categories=row_categories(run, HEADLINE_ROW) or frozenset(),
        selection=row_selection(run, HEADLINE_ROW),
        value=value,
        ci=ci,
    )
