"""Scores under a gold-answer errata overlay (pure): per category, the official score, the score
on the questions whose gold is sound, and the ceiling the errors impose.

The ceiling is the share of a category's (selected) questions whose gold answer is sound: a
system that answers every question correctly is still marked wrong where the gold is wrong, so it
cannot score above that share (the audit's own definition). Means follow the run's table rules
(``aggregate.row_values``: LoCoMo's per-question 3-decimal rounding, UNSCORED excluded).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..benchmarks import Errata
from ..records import QuestionResult
from ..report import CategoryRow, RunSummary
from ._aggregate import row_values

__all__ = ["errata_rows", "question_errata"]


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _row(
    row: CategoryRow,
    results: Sequence[QuestionResult],
    errata: Errata,
    audited: bool,
    metrics: Sequence[str],
    round3: Iterable[str],
) -> dict[str, Any]:
    round3 = tuple(round3)
    bad = [r for r in results if not errata.sound(r.question_id)]
    listed = [r for r in results if errata.get(r.question_id) is not None]
    sound = [r for r in results if errata.sound(r.question_id)]
    n = len(results)
    return {
        "category": row.key,
        "category_id": row.category_id,
        "count": n,
        "audited": audited,
        "unsound": len(bad) if audited else None,
        "citation_only": len(listed) - len(bad) if audited else None,
        "sound_count": len(sound) if audited else None,
        "ceiling": (n - len(bad)) / n if audited and n else None,
        "official": {m: row.metrics.get(m) for m in metrics},
        "sound_gold": (
            {m: _mean(row_values(sound, m, round3)) for m in metrics}
            if audited
            else dict.fromkeys(metrics)
        ),
    }


def errata_rows(
    run: RunSummary, errata: Errata, round3: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """One dict per category row of ``run`` and for ``overall`` (the categories in the overall
    figure): count, unsound, citation_only, sound_count, ceiling, official and sound_gold means
    per metric. Categories the overlay does not cover have ``audited: False`` and no figures."""
    by_cat: dict[str, list[QuestionResult]] = {}
    for r in run.results:
        by_cat.setdefault(r.category, []).append(r)
    rows = []
    for row in run.categories:
        audited = errata.audited(row.category_id)
        rows.append(_row(row, by_cat.get(row.key, []), errata, audited, run.metrics, round3))
    inside = [row for row in run.categories if row.in_overall]
    overall_results = [r for row in inside for r in by_cat.get(row.key, [])]
    overall_audited = bool(inside) and all(errata.audited(row.category_id) for row in inside)
    rows.append(_row(run.overall, overall_results, errata, overall_audited, run.metrics, round3))
    return rows


def question_errata(run: RunSummary, errata: Errata) -> dict[str, dict[str, Any] | None]:
    """Question id -> its erratum as a dict (None: no erratum), for every question of the run."""
    out: dict[str, dict[str, Any] | None] = {}
    for r in run.results:
        e = errata.get(r.question_id)
        out[r.question_id] = e.to_dict(errata.name) if e is not None else None
    return out
