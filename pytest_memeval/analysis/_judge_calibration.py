"""Judge calibration, pure part: the built-in wrong answers, acceptance rates with Wilson
intervals, and the calibration figures that ``--memeval-fail-under`` reads.

A calibration *case* is one answer the judge is asked about: the gold answer itself (kind
``gold``, which the judge should accept) or a known-wrong answer (every other kind, which it
should reject). A judge *accepts* an answer when its score reaches the run's pass threshold, the
same rule that makes a system's item CORRECT.

Wrong-answer kinds built here from the gold text, deterministically (no randomness, no LLM):

- ``wrong-entity``: the gold's names (capitalised words other than months, weekdays and a few
  sentence openers) replaced by other names found in the golds of the same benchmark; a gold
  without names takes the gold of another question of the same category that shares no word
  with it.
- ``wrong-date``: every year moved back by one, every month and weekday moved to the next one;
  golds without a date part get no such case.
- ``negation``: a yes/no gold flipped ("Likely yes; ..." -> "Likely no"); any other gold
  prefixed with "Not".

Gate metrics (category ``overall`` or a category name, ``[JUDGE]`` instead of ``[SYSTEM]``):
``judge_true_accept`` (share of gold answers accepted), ``judge_false_accept`` (share of wrong
answers accepted, all wrong kinds pooled) and ``judge_false_accept_<kind>`` for one kind
(``-`` written ``_``: ``judge_false_accept_wrong_date``, ``judge_false_accept_audit_v2``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from .._dates import MONTHS, WEEKDAYS

__all__ = [
    "CALIBRATION_METRIC_PREFIX",
    "KIND_GOLD",
    "PERTURBATION_KINDS",
    "Outcome",
    "Rate",
    "gate_values",
    "is_calibration_metric",
    "kind_metric",
    "metric_value",
    "negation",
    "perturb",
    "summarize",
    "wilson_interval",
    "wrong_date",
    "wrong_entity",
]

KIND_GOLD = "gold"
PERTURBATION_KINDS: tuple[str, ...] = ("wrong-entity", "wrong-date", "negation")
CALIBRATION_METRIC_PREFIX = "judge_"
TRUE_ACCEPT = "judge_true_accept"
FALSE_ACCEPT = "judge_false_accept"

# outcome statuses
ACCEPTED = "accepted"
REJECTED = "rejected"
UNSCORED = "unscored"
SKIPPED = "skipped"
ERROR = "error"


def is_calibration_metric(metric: str) -> bool:
    """``judge_true_accept``, ``judge_false_accept`` or ``judge_false_accept_<kind>``."""
    return metric in (TRUE_ACCEPT, FALSE_ACCEPT) or metric.startswith(FALSE_ACCEPT + "_")


def kind_metric(kind: str) -> str:
    """The gate metric of one wrong-answer kind: ``judge_false_accept_wrong_date``."""
    return f"{FALSE_ACCEPT}_{kind.replace('-', '_')}"


# --------------------------------------------------------------------------- perturbations

_MONTH_RE = re.compile(r"\b(" + "|".join(MONTHS) + r")\b", re.IGNORECASE)
_WEEKDAY_RE = re.compile(r"\b(" + "|".join(WEEKDAYS) + r")\b", re.IGNORECASE)
_YEAR_RE = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_NAME_RE = re.compile(r"\b[A-Z][\w-]*")
_WORD_RE = re.compile(r"[a-z0-9]+")
_YES_NO_RE = re.compile(r"^\s*((?:likely|probably|maybe|possibly)\s+)?(yes|no)\b", re.IGNORECASE)
#: capitalised words that open a sentence rather than name something
_OPENERS = frozenset(
    [
        "The",
        "A",
        "An",
        "It",
        "Its",
        "He",
        "She",
        "They",
        "Her",
        "His",
        "Their",
        "Not",
        "Yes",
        "No",
        "Likely",
        "Probably",
        "Maybe",
        "Possibly",
        "Once",
        "After",
        "Before",
        "When",
        "Since",
        "Every",
        "Some",
        "In",
        "On",
        "At",
        "By",
        "For",
        "From",
        "With",
        "Because",
        "I",
        "We",
        "You",
    ]
)
_DATE_WORDS = frozenset(w.lower() for w in (*MONTHS, *WEEKDAYS))


def _same_case(word: str, like: str) -> str:
    if like.isupper():
        return word.upper()
    if like.islower():
        return word.lower()
    return word


def _shift(names: Sequence[str], word: str) -> str:
    at = next(i for i, n in enumerate(names) if n.lower() == word.lower())
    return _same_case(names[(at + 1) % len(names)], word)


def wrong_date(gold: str) -> str | None:
    """The gold with each year one earlier and each month and weekday the next one; ``None``
    when the gold has none of these."""
    out = _YEAR_RE.sub(lambda m: str(int(m.group(1)) - 1), gold)
    out = _MONTH_RE.sub(lambda m: _shift(MONTHS, m.group(1)), out)
    out = _WEEKDAY_RE.sub(lambda m: _shift(WEEKDAYS, m.group(1)), out)
    return out if out != gold else None


def names_in(text: str) -> list[str]:
    """Capitalised words that name something (not months, weekdays or sentence openers)."""
    found: list[str] = []
    for m in _NAME_RE.finditer(text):
        word = m.group(0)
        if word in _OPENERS or word.lower() in _DATE_WORDS or word in found:
            continue
        found.append(word)
    return found


def _words(text: str) -> set[str]:
    return set(_WORD_RE.findall(text.lower()))


def _stable_rank(key: str, item: str) -> str:
    return hashlib.sha256(f"{key}\x00{item}".encode()).hexdigest()


def _first(items: Sequence[str], key: str) -> str:
    """The item ranked first by a hash of ``key``: a fixed, seed-free choice."""
    return min(items, key=lambda item: _stable_rank(key, item))


def wrong_entity(
    key: str, gold: str, name_pool: Sequence[str], same_category_golds: Sequence[str]
) -> str | None:
    """The gold with its names replaced by other names of ``name_pool``; without names, another
    gold of ``same_category_golds`` sharing no word with this one. ``key`` (the question id) makes
    the choice stable. ``None`` when neither is possible."""
    names = names_in(gold)
    if names:
        candidates = sorted(
            {n for n in name_pool if n not in names and n.lower() not in _words(gold)}
        )
        if candidates:
            out = gold
            for name in names:
                pick = _first(candidates, key + name)
                out = re.sub(rf"\b{re.escape(name)}\b", pick, out)
            if out != gold:
                return out
    own = _words(gold)
    others = sorted(
        {g for g in same_category_golds if g.strip() and own.isdisjoint(_words(g))},
        key=lambda g: _stable_rank(key, g),
    )
    return others[0] if others else None


def negation(gold: str) -> str | None:
    """A yes/no gold flipped (its justification dropped); any other gold prefixed with "Not"."""
    text = gold.strip()
    if not text:
        return None
    m = _YES_NO_RE.match(text)
    if m:
        hedge, word = m.group(1) or "", m.group(2)
        flipped = "no" if word.lower() == "yes" else "yes"
        return f"{hedge}{_same_case(flipped, word) if word[0].islower() else flipped.capitalize()}"
    first, _, rest = text.partition(" ")
    if first in _OPENERS and first != "I":
        text = f"{first.lower()} {rest}".strip()
    return f"Not {text}"


def perturb(
    key: str, gold: str, name_pool: Sequence[str], same_category_golds: Sequence[str]
) -> dict[str, str]:
    """kind -> wrong answer for every built-in kind that applies to this gold (never the gold
    itself, compared without case and surrounding space)."""
    made = {
        "wrong-entity": wrong_entity(key, gold, name_pool, same_category_golds),
        "wrong-date": wrong_date(gold),
        "negation": negation(gold),
    }
    norm = gold.strip().lower()
    return {k: v for k, v in made.items() if v is not None and v.strip().lower() != norm}


# --------------------------------------------------------------------------- intervals


def wilson_interval(accepted: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion ``accepted / n`` (``n >= 1``)."""
    if n < 1 or not 0 <= accepted <= n:
        raise ValueError(f"wilson_interval needs 0 <= accepted <= n and n >= 1, got {accepted}/{n}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = accepted / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Rate:
    """``accepted`` of ``n`` judged answers, with the Wilson 95% interval (None when n = 0)."""

    n: int
    accepted: int

    @property
    def rate(self) -> float | None:
        return self.accepted / self.n if self.n else None

    @property
    def ci(self) -> tuple[float, float] | None:
        return wilson_interval(self.accepted, self.n) if self.n else None

    def to_dict(self) -> dict[str, Any]:
        ci = self.ci
        return {
            "n": self.n,
            "accepted": self.accepted,
            "rate": self.rate,
            "ci": list(ci) if ci is not None else None,
        }


# --------------------------------------------------------------------------- outcomes


@dataclass(frozen=True)
class Outcome:
    """One judge's verdict on one calibration answer."""

    benchmark: str
    judge: str  # PROVIDER:MODEL
    question_id: str
    conversation: str
    category: str
    kind: str
    answer: str
    status: str  # accepted | rejected | unscored | skipped | error
    score: float | None = None
    reasoning: str | None = None
    error: str | None = None

    @property
    def correct(self) -> bool:
        """Whether the answer is a correct one (the gold)."""
        return self.kind == KIND_GOLD

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "judge": self.judge,
            "id": self.question_id,
            "conversation": self.conversation,
            "category": self.category,
            "kind": self.kind,
            "answer": self.answer,
            "status": self.status,
            "score": self.score,
            "reasoning": self.reasoning,
            "error": self.error,
        }


@dataclass
class _Counts:
    correct_n: int = 0
    correct_accepted: int = 0
    kinds: dict[str, list[int]] = field(default_factory=dict)  # kind -> [n, accepted]
    unscored: int = 0
    skipped: int = 0
    errors: int = 0

    def add(self, outcome: Outcome) -> None:
        if outcome.status == UNSCORED:
            self.unscored += 1
            return
        if outcome.status == SKIPPED:
            self.skipped += 1
            return
        if outcome.status == ERROR:
            self.errors += 1
            return
        accepted = int(outcome.status == ACCEPTED)
        if outcome.correct:
            self.correct_n += 1
            self.correct_accepted += accepted
        else:
            pair = self.kinds.setdefault(outcome.kind, [0, 0])
            pair[0] += 1
            pair[1] += accepted

    def row(self, category: str, kinds: Sequence[str]) -> dict[str, Any]:
        wrong_n = sum(n for n, _ in self.kinds.values())
        wrong_acc = sum(a for _, a in self.kinds.values())
        return {
            "category": category,
            "correct": Rate(self.correct_n, self.correct_accepted).to_dict(),
            "wrong": Rate(wrong_n, wrong_acc).to_dict(),
            "wrong_by_kind": {
                k: Rate(*self.kinds.get(k, [0, 0])).to_dict() for k in kinds if k in self.kinds
            },
            "unscored": self.unscored,
            "skipped": self.skipped,
            "errors": self.errors,
        }


def summarize(
    outcomes: Iterable[Outcome], category_order: Mapping[str, Sequence[str]] | None = None
) -> list[dict[str, Any]]:
    """One table per (benchmark, judge): a row per category (in ``category_order[benchmark]``
    order, then any others) and a last ``overall`` row pooling every case of the table.

    Rows are plain dicts (the JSON report's shape): ``correct`` and ``wrong`` are rates of
    acceptance (``n``, ``accepted``, ``rate``, ``ci``), ``wrong_by_kind`` the same per kind."""
    tables: dict[tuple[str, str], dict[str, _Counts]] = {}
    overall: dict[tuple[str, str], _Counts] = {}
    kinds_seen: dict[tuple[str, str], list[str]] = {}
    for o in outcomes:
        key = (o.benchmark, o.judge)
        tables.setdefault(key, {}).setdefault(o.category, _Counts()).add(o)
        overall.setdefault(key, _Counts()).add(o)
        seen = kinds_seen.setdefault(key, [])
        if not o.correct and o.kind not in seen:
            seen.append(o.kind)
    out: list[dict[str, Any]] = []
    for key, cats in tables.items():
        bench, judge = key
        order = list((category_order or {}).get(bench, ()))
        names = [c for c in order if c in cats] + sorted(c for c in cats if c not in order)
        seen = kinds_seen[key]
        kinds = [k for k in PERTURBATION_KINDS if k in seen] + [
            k for k in seen if k not in PERTURBATION_KINDS
        ]
        rows = [cats[c].row(c, kinds) for c in names]
        rows.append(overall[key].row("overall", kinds))
        out.append({"benchmark": bench, "judge": judge, "kinds": list(kinds), "rows": rows})
    return out


def metric_value(row: Mapping[str, Any], metric: str) -> tuple[float | None, str | None]:
    """A calibration gate metric's value in one table row, or ``(None, reason)``."""
    if metric == TRUE_ACCEPT:
        rate = row.get("correct") or {}
        what = "gold answers"
    elif metric == FALSE_ACCEPT:
        rate = row.get("wrong") or {}
        what = "wrong answers"
    else:
        by_kind = row.get("wrong_by_kind") or {}
        kind = next((k for k in by_kind if kind_metric(k) == metric), None)
        if kind is None:
            known = ", ".join(kind_metric(k) for k in by_kind) or "none"
            return None, f"no wrong answers of that kind were judged (kind metrics: {known})"
        rate = by_kind[kind]
        what = f"{kind} answers"
    value = rate.get("rate")
    if value is None:
        return None, f"no {what} were scored by the judge in this category"
    return float(value), None


def gate_values(
    block: Mapping[str, Any] | None,
    benchmark: str,
    judge: str | None,
    category: str,
    metric: str,
) -> tuple[list[tuple[str, float | None, str | None]], str | None]:
    """A calibration gate's figures: ``(judge, value, reason when None)`` per calibrated judge of
    ``benchmark`` (only ``judge`` when given), or ``([], why)`` when there is nothing to check."""
    if block is None:
        return [], "the judge calibration did not run (add --memeval-judge-calibration)"
    every = list(block.get("tables") or ())
    tables = [
        t for t in every if t.get("benchmark") == benchmark and judge in (None, t.get("judge"))
    ]
    if not tables:
        judges = sorted({str(t.get("judge")) for t in every})
        benches = sorted({str(t.get("benchmark")) for t in every})
        if judge is not None and benchmark in benches:
            return [], f"judge {judge!r} was not calibrated (judges: {', '.join(judges)})"
        known = ", ".join(benches) or "none"
        return [], f"no calibration for benchmark {benchmark!r} (calibrated: {known})"
    out: list[tuple[str, float | None, str | None]] = []
    wanted = "overall" if category in ("overall", "overall_all") else category
    for table in tables:
        rows = {str(r.get("category")): r for r in table.get("rows") or ()}
        row = rows.get(wanted)
        if row is None:
            missing = f"no category {category!r} (categories: {', '.join(rows) or 'none'})"
            out.append((str(table.get("judge")), None, missing))
            continue
        value, reason = metric_value(row, metric)
        out.append((str(table.get("judge")), value, reason))
    return out, None
