"""BEAM scoring maths: event ordering (tau-b x F1) and rubric-nugget aggregation.

Rules: docs/scoring.md#event-ordering and docs/scoring.md#rubric-nuggets (BEAM
``compute_metrics.py`` / ``report_results.py``). The LLM that decides whether two event descriptions
are the same is replaced by the ``equivalent`` callable; the default (case-insensitive equality) is
the fake used to compute the official vectors. Judges elsewhere pass an LLM-backed callable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "NuggetScore",
    "OrderingResult",
    "case_insensitive_equal",
    "nugget_score",
    "official_nugget_score",
    "ordering_score",
    "response_lines",
]


def case_insensitive_equal(reference_item: str, system_item: str) -> bool:
    """Default event equivalence: the two snippets are equal ignoring case."""
    return reference_item.casefold() == system_item.casefold()


def response_lines(response: str) -> list[str]:
    """BEAM's system event list: ``response.split("\\n")``, blank and header lines included."""
    return response.split("\n")


@dataclass(frozen=True)
class OrderingResult:
    """BEAM event-ordering score of one answer.

    ``tau_norm`` = (Kendall tau-b + 1) / 2 over the union of items, NaN when tau-b is undefined
    (a constant rank vector, e.g. a one-item union). ``final_score`` = ``tau_norm * f1``.
    The official BEAM table averages ``tau_norm`` only; ``final_score`` is reported beside it.
    ``aligned`` is the system list after alignment (matched lines replaced by reference text).
    """

    precision: float
    recall: float
    f1: float
    tau_norm: float
    final_score: float
    aligned: tuple[str, ...] = ()

    @property
    def final(self) -> float:
        """Alias of ``final_score`` (tau_norm x F1)."""
        return self.final_score

    def to_dict(self) -> dict[str, float]:
        """The keys of upstream's result dict."""
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tau_norm": self.tau_norm,
            "final_score": self.final_score,
        }


def _align(
    reference: Sequence[str],
    system: Sequence[str],
    equivalent: Callable[[str, str], bool],
) -> list[str]:
    """Upstream ``align_with_llm``: each system line, in order, takes the text of the first unused
    reference item judged equivalent (called as ``equivalent(reference_item, system_line)``);
    unmatched lines are kept verbatim."""
    used: set[int] = set()
    out: list[str] = []
    for line in system:
        match: int | None = None
        for index, item in enumerate(reference):
            if index in used:
                continue
            if equivalent(item, line):
                match = index
                break
        if match is None:
            out.append(line)
        else:
            out.append(reference[match])
            used.add(match)
    return out


def _kendall_tau_b(x: Sequence[int], y: Sequence[int]) -> float:
    """``scipy.stats.kendalltau(x, y, variant="b")`` statistic; NaN when undefined.

    Constant or shorter-than-2 inputs are answered NaN here without calling scipy, which would
    warn (and warnings are errors in strict test runs).
    """
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return math.nan
    # Imported here: scipy.stats costs about half a second, and only BEAM's ordering questions
    # need it (a LoCoMo or LongMemEval run never pays for it).
    from scipy.stats import kendalltau

    result = kendalltau(x, y, variant="b")
    return float(result.statistic)


def ordering_score(
    predicted: Sequence[str],
    gold: Sequence[str],
    equivalent: Callable[[str, str], bool] | None = None,
) -> OrderingResult:
    """BEAM's ``event_ordering_score`` (docs/scoring.md#event-ordering) for system lines
    ``predicted`` against the reference event list ``gold``.

    1. align ``predicted`` to ``gold`` with ``equivalent`` (default: case-insensitive equality);
    2. tp = |set(gold) & set(aligned)|, fp = aligned entries (with repeats) not in gold,
       fn = gold items not in aligned; P, R, F1 (0 when undefined);
    3. union = gold items then new aligned items (first occurrence order); an item's rank in a
       sequence is 1 + its last index there, absent items share rank len(union) + 1;
       tau_norm = (tau_b + 1) / 2; final_score = tau_norm * F1.
    """
    eq = equivalent if equivalent is not None else case_insensitive_equal
    reference = list(gold)
    aligned = _align(reference, predicted, eq)

    reference_set = set(reference)
    aligned_set = set(aligned)
    tp = len(reference_set & aligned_set)
    fp = sum(1 for x in aligned if x not in reference_set)
    fn = sum(1 for x in reference if x not in aligned_set)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    union = list(dict.fromkeys(reference + aligned))
    tie_rank = len(union) + 1

    def to_rank(seq: Sequence[str]) -> list[int]:
        rank = {item: i + 1 for i, item in enumerate(seq)}
        return [rank.get(u, tie_rank) for u in union]

    tau_b = _kendall_tau_b(to_rank(reference), to_rank(aligned))
    tau_norm = (tau_b + 1) / 2
    return OrderingResult(
        precision=float(precision),
        recall=float(recall),
        f1=float(f1),
        tau_norm=tau_norm,
        final_score=tau_norm * f1,
        aligned=tuple(aligned),
    )


@dataclass(frozen=True)
class NuggetScore:
    """BEAM rubric aggregation for one answer.

    ``mean``: mean of the per-item judge scores with 0.5 kept (the plugin's nugget score).
    ``official``: BEAM's ``sum(int(score)) / len(rubric)`` (0.5 truncates to 0), or None when the
    official code would raise (a score given as the string "0.5" or "1.0").
    """

    mean: float
    official: float | None
    count: int


def official_nugget_score(scores: Sequence[float | int | str]) -> float:
    """BEAM's official ``llm_judge_score`` for the nine non-ordering categories:
    ``sum(int(s) for s in scores) / len(scores)``. Raises ValueError exactly where upstream does
    (``int("0.5")``) and for an empty rubric (upstream: ZeroDivisionError)."""
    if not scores:
        raise ValueError("a BEAM rubric needs at least one item")
    return sum(int(s) for s in scores) / len(scores)


def nugget_score(scores: Sequence[float | int | str]) -> NuggetScore:
    """Both BEAM rubric aggregations of per-item judge scores (1.0 / 0.5 / 0.0).

    Scores may be numbers or numeric strings (judges sometimes quote them). Raises ValueError
    for an empty rubric or a score that is not a number in [0, 1].
    """
    if not scores:
        raise ValueError("a BEAM rubric needs at least one item")
    values: list[float] = []
    for s in scores:
        try:
            value = float(s)
        except (TypeError, ValueError):
            raise ValueError(f"rubric score {s!r} is not a number") from None
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"rubric score {s!r} is outside [0, 1]")
        values.append(value)
    try:
        official: float | None = official_nugget_score(scores)
    except ValueError:
        official = None
    return NuggetScore(mean=sum(values) / len(values), official=official, count=len(values))
