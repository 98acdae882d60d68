"""BEAM's official composite (docs/scoring.md#beam-official-protocol), as BEAM's
``report_results.py`` forms it: conversation-level means, not question means.

For each conversation, a category's score is the mean over that conversation's questions of the
protocol's score (``llm_judge_score``; event ordering: ``tau_norm``: both are the ``beam``
protocol judge's headline key); a category's value is the mean of those scores over the
conversations. BEAM's script stops at the category values and its README defines no overall
number, so the overall here is the unweighted mean of the category values (said so wherever it is
shown). A conversation that has no scored question in a category is left out of that category's
mean (upstream would divide by zero or write NaN); so is a question without a value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...records import QuestionResult

if TYPE_CHECKING:
    from ...protocols import LoadedProtocol
    from ...report import RunSummary

__all__ = [
    "OVERALL_RULE",
    "OfficialCategory",
    "OfficialComposite",
    "official_composite",
    "official_summary",
]

#: how the overall is formed (BEAM defines none)
OVERALL_RULE = "mean of the category values (BEAM's report_results.py defines no overall)"


@dataclass(frozen=True)
class OfficialCategory:
    """One category: the mean over ``conversations`` of the per-conversation means."""

    category: str
    category_id: int | str | None
    value: float | None
    conversations: int  # conversations with at least one scored question in the category
    questions: int  # scored questions

    def to_dict(self) -> dict[str, Any]:
        return {
            "category_id": self.category_id,
            "value": self.value,
            "conversations": self.conversations,
            "questions": self.questions,
        }


@dataclass(frozen=True)
class OfficialComposite:
    """The official BEAM table of one run: ``metric`` is the score key averaged."""

    metric: str
    categories: tuple[OfficialCategory, ...]
    overall: float | None
    unscored: int  # questions without a value (left out)
    overall_rule: str = OVERALL_RULE

    def value(self, category: str) -> float | None:
        return next((c.value for c in self.categories if c.category == category), None)

    @property
    def counted(self) -> int:
        """Categories with a value (the overall's denominator)."""
        return sum(1 for c in self.categories if c.value is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "by_category": {c.category: c.to_dict() for c in self.categories},
            "overall": self.overall,
            "overall_rule": self.overall_rule,
            "categories_counted": self.counted,
            "unscored": self.unscored,
        }


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def official_composite(
    results: Sequence[QuestionResult], metric: str, order: Sequence[str] = ()
) -> OfficialComposite:
    """BEAM's category values and their mean from per-question ``scores[metric]``, grouped by
    conversation (``QuestionResult.cluster_id``). Categories come in ``order`` first, then in
    order of appearance; NaN counts as no value."""
    per: dict[str, dict[str, list[float]]] = {}
    ids: dict[str, int | str | None] = {}
    unscored = 0
    for r in results:
        ids.setdefault(r.category, r.category_id)
        per.setdefault(r.category, {})
        value = r.scores.get(metric)
        if value is None or not math.isfinite(value):
            unscored += 1
            continue
        per[r.category].setdefault(r.cluster_id, []).append(float(value))
    keys = [k for k in order if k in per] + [k for k in per if k not in order]
    categories = []
    for key in keys:
        by_conv = per[key]
        conv_means = [m for m in (_mean(v) for v in by_conv.values()) if m is not None]
        categories.append(
            OfficialCategory(
                key,
                ids[key],
                _mean(conv_means),
                len(conv_means),
                sum(len(v) for v in by_conv.values()),
            )
        )
    overall = _mean([c.value for c in categories if c.value is not None])
    return OfficialComposite(metric, tuple(categories), overall, unscored)


def official_summary(
    protocol: LoadedProtocol,
    run: RunSummary,
    results: Sequence[QuestionResult],
    judge_metric: str | None,
) -> None:
    """Under ``--memeval-protocol=beam``: the run's official composite (``run.official``), over
    the protocol's metric, its categories in the run's order; nothing under another protocol."""
    from ...protocols import BEAM

    if protocol.name != BEAM.name:
        return
    run.official = official_composite(
        results, protocol.profile.metric, [row.key for row in run.categories]
    )
