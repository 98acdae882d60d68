"""Answerers: turn retrieved memories into a prediction.

This module holds the :class:`Answerer` protocol and the offline :class:`ExtractiveAnswerer`
(``--memeval-answerer=extractive``), a deterministic, LLM-free baseline that copies a short span
out of the retrieved memories. An LLM answerer implements the same protocol.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from .._dates import MONTHS, WEEKDAYS
from ..records import Memory, Prediction, Question
from ..systems import STOPWORDS, content_tokens, light_stem, words

__all__ = [
    "EXTRACTIVE_LABEL",
    "NO_INFORMATION",
    "Answerer",
    "ExtractiveAnswerer",
    "extractive_answer",
]

EXTRACTIVE_LABEL = "extractive"
#: the answer when nothing was retrieved (LoCoMo's adversarial keyword rule scores it 1)
NO_INFORMATION = "No information available"


@runtime_checkable
class Answerer(Protocol):
    """Produces the prediction for a question from the memories a system retrieved."""

    @property
    def label(self) -> str:
        """``"extractive"`` or ``"PROVIDER:MODEL"``; stored as ``Prediction.answered_by``."""
        ...

    def answer(self, question: Question, memories: Sequence[Memory]) -> Prediction: ...


@dataclass(frozen=True)
class ExtractiveAnswerer:
    """The offline answerer: :func:`extractive_answer` wrapped as an :class:`Answerer`."""

    max_words: int = 8

    @property
    def label(self) -> str:
        return EXTRACTIVE_LABEL

    def answer(self, question: Question, memories: Sequence[Memory]) -> Prediction:
        text = extractive_answer(question, memories, max_words=self.max_words)
        return Prediction(text=text, memories=tuple(memories), answered_by=EXTRACTIVE_LABEL)


# --------------------------------------------------------------------------------------------
# text pieces

_SPEAKER_RE = re.compile(r"^\s*[^\s:\[\]][^:\n\[\]]{0,40}:\s+")
_SHARES_RE = re.compile(r"\[shares:\s*([^\]]*)\]")
_CLAUSE_SPLIT_RE = re.compile(r"(?<=[.!?;])\s+|:\s+|,\s+(?!\d)|\s+[-–—]+\s+|\n+")
_TOKEN_RE = re.compile(r"[\w'’+#&$%-]+")

_MONTH_RE = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
)
_DAY_RE = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR_RE = r"(?:19|20)\d{2}"
_EXPLICIT_DATE_RE = re.compile(
    rf"\b(?:(?P<d1>{_DAY_RE})\s+(?:of\s+)?)?(?P<m>{_MONTH_RE})(?:\s+(?P<d2>{_DAY_RE})\b)?"
    rf"(?:,?\s+(?P<y>{_YEAR_RE}))?(?!\w)"
    rf"|\b(?P<yo>{_YEAR_RE})\b"
)
_NUMBER_WORDS = (
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|few)"
)
_DURATION_RE = re.compile(
    rf"\b{_NUMBER_WORDS}\s+(?:day|week|month|year|decade|hour)s?(?:\s+ago)?\b", re.IGNORECASE
)
_SMALL_NUMBERS = {
    w: i
    for i, w in enumerate(
        ("a", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"), start=1
    )
} | {"an": 1, "one": 1}
_WEEKDAYS = tuple(w.lower() for w in WEEKDAYS)
_WHEN_RE = re.compile(
    r"^\s*when\b|\b(?:what|which)\s+(?:year|month|date|day|time|week)\b|\bhow\s+long\s+ago\b",
    re.IGNORECASE,
)
_YEAR_Q_RE = re.compile(r"\b(?:what|which)\s+year\b|\bin\s+what\s+year\b", re.IGNORECASE)
_HOW_LONG_RE = re.compile(r"\bhow\s+long\b|\bhow\s+many\s+(?:years|months|weeks|days)\b", re.I)
#: conversational filler that is never an answer (kept out of extractive spans)
_FILLER: frozenset[str] = frozenset(
    """
    great nice good awesome cool amazing wonderful fantastic incredible glad happy thanks thank
    love loved totally definitely sure still lately much always really super pretty lot lots
    things thing something stuff sounds sound know think like well even ever right fun though
    guess bit hear wow cute exciting excited proud true yep okay ok hope means mean
    """.split()  # noqa: SIM905
)
_DATE_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo
    "%Y/%m/%d (%a) %H:%M",  # LongMemEval
    "%Y-%m-%d",
    "%d %B %Y",
    "%B %d, %Y",
)


def _fmt(d: datetime) -> str:
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


def _as_datetime(value: datetime | str | None) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    raw = value.strip()
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(raw, fmt)
        except ValueError:
            continue
    return None


def _body(text: str) -> str:
    """The memory text without its ``speaker:`` prefix; ``[shares: X]`` becomes a sentence."""
    text = _SPEAKER_RE.sub("", text, count=1)
    return _SHARES_RE.sub(lambda m: f". {m.group(1)}.", text)


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSE_SPLIT_RE.split(text) if c and c.strip()]


def _overlap(tokens: set[str], text: str) -> int:
    return len(tokens.intersection(content_tokens(text)))


def _explicit_date(text: str, anchor: datetime | None) -> str | None:
    """The first explicit date in ``text`` (``7 May 2023``, ``May 7``, ``July 2022``, ``2016``)."""
    for m in _EXPLICIT_DATE_RE.finditer(text):
        if m.group("yo"):
            return m.group("yo")
        month = m.group("m").rstrip(".")
        if month == "May" and not (m.group("d1") or m.group("d2") or m.group("y")):
            continue  # the modal verb, most likely
        full = next((n for n in MONTHS if n.lower().startswith(month.lower()[:3])), month)
        day = m.group("d1") or m.group("d2")
        year = m.group("y") or (str(anchor.year) if anchor else "")
        parts = [re.sub(r"\D", "", day)] if day else []
        parts += [full] + ([year] if year else [])
        return " ".join(parts)
    return None


def _relative_date(text: str, anchor: datetime) -> str | None:
    """Resolve a relative time expression in ``text`` against the memory's date."""
    low = text.lower()
    d = _fmt(anchor)
    if re.search(r"\bday before yesterday\b", low):
        return _fmt(anchor - timedelta(days=2))
    if re.search(r"\byesterday\b|\blast night\b", low):
        return _fmt(anchor - timedelta(days=1))
    if re.search(r"\btoday\b|\btonight\b|\bthis (?:morning|afternoon|evening)\b", low):
        return d
    if re.search(r"\blast weekend\b", low):
        return f"the weekend before {d}"
    if re.search(r"\blast week\b", low):
        return f"the week before {d}"
    if re.search(r"\bnext week\b", low):
        return f"the week after {d}"
    wd = re.search(r"\blast (" + "|".join(_WEEKDAYS) + r")\b", low)
    if wd:
        return f"the {wd.group(1)} before {d}"
    wd = re.search(r"\b(?:on|this past) (" + "|".join(_WEEKDAYS) + r")\b", low)
    if wd:  # "on Sunday": the latest such day before the memory's date
        back = (anchor.weekday() - _WEEKDAYS.index(wd.group(1))) % 7 or 7
        return _fmt(anchor - timedelta(days=back))
    if re.search(r"\blast month\b", low):
        prev = anchor.replace(day=1) - timedelta(days=1)
        return f"{MONTHS[prev.month - 1]} {prev.year}"
    if re.search(r"\bnext month\b", low):
        nxt = (anchor.replace(day=28) + timedelta(days=4)).replace(day=1)
        return f"{MONTHS[nxt.month - 1]} {nxt.year}"
    if re.search(r"\bthis month\b", low):
        return f"{MONTHS[anchor.month - 1]} {anchor.year}"
    if re.search(r"\blast year\b", low):
        return str(anchor.year - 1)
    if re.search(r"\bnext year\b", low):
        return str(anchor.year + 1)
    if re.search(r"\bthis year\b", low):
        return str(anchor.year)
    ago = re.search(rf"\b({_NUMBER_WORDS})\s+(day|week|month|year)s?\s+ago\b", low)
    if ago:
        n, unit = ago.group(1), ago.group(2)
        count = int(n) if n.isdigit() else _SMALL_NUMBERS.get(n)
        if count is not None and unit == "year":
            return str(anchor.year - count)
        if count is not None and unit == "day":
            return _fmt(anchor - timedelta(days=count))
        if count is not None and unit == "week":
            return f"the week of {_fmt(anchor - timedelta(weeks=count))}"
        return f"{n} {unit}s before {d}"
    return None


def _when_answer(question: Question, clause: str, memory: Memory) -> str | None:
    anchor = _as_datetime(memory.date)
    found = _explicit_date(clause, anchor)
    if found is None and anchor is not None:
        found = _relative_date(clause, anchor)
    if found is None:
        if anchor is not None:
            found = _fmt(anchor)
        elif isinstance(memory.date, str) and memory.date.strip():
            found = memory.date.strip()
    if found is not None and _YEAR_Q_RE.search(question.question):
        years: list[str] = re.findall(_YEAR_RE, found)
        if years:
            return years[-1]
    return found


def _span(clause: str, question_stems: set[str], max_words: int) -> str:
    """Clause words whose stem is not in the question and that are not stopwords, in order."""
    out: list[str] = []
    for raw in _TOKEN_RE.findall(clause):
        word = raw.strip("'’-")
        if not word:
            continue
        parts = words(word)
        if not parts or all(p in STOPWORDS or p in _FILLER for p in parts):
            continue
        if all(light_stem(p) in question_stems for p in parts):
            continue
        out.append(word)
        if len(out) >= max_words:
            break
    return " ".join(out)


def extractive_answer(question: Question, memories: Sequence[Memory], *, max_words: int = 8) -> str:
    """A deterministic, offline, extractive answer (no model; microseconds per call).

    1. No memories: return ``"No information available"``. This is intended: LoCoMo's official
       category-5 (adversarial) rule gives 1 to any prediction containing "no information
       available", so ``no-memory`` scores 1 on adversarial questions and 0 on every other metric.
    2. Question tokens: lower-cased words, stopwords dropped, a light suffix stemmer.
    3. Pick the memory whose tokens overlap the question's most (ties: the earliest, i.e. the best
       ranked); drop its ``speaker:`` prefix (a shared image caption becomes its own sentence).
    4. Split it into clauses (sentence ends, commas not followed by a digit, colons, dashes);
       pick the clause with the most overlap (ties: earliest).
    5. "When" questions (``when ...``, ``what year/month/date ...``): return the first explicit date
       in the clause (``7 May 2023``; a missing year is taken from the memory's date), else a
       relative expression resolved against the memory's date (``yesterday`` -> the day before,
       ``last week`` -> ``the week before 9 June 2023``, ``last year`` -> the year before), else the
       memory's date as ``D Month YYYY``. "What year" questions keep only the year.
       "How long" questions return a duration (``three years``) found in the clause, if any.
    6. Otherwise return the clause's words that are neither question words nor stopwords, in order,
       trimmed to ``max_words``; when that is empty, the following clauses are tried, then the
       whole memory, then the clause itself (trimmed).
    """
    if not memories:
        return NO_INFORMATION
    q_tokens = set(content_tokens(question.question))
    q_stems = {light_stem(w) for w in words(question.question)}

    best_i, best_overlap = 0, -1
    for i, memory in enumerate(memories):
        overlap = _overlap(q_tokens, memory.text)
        if overlap > best_overlap:
            best_i, best_overlap = i, overlap
    memory = memories[best_i]
    body = _body(memory.text)
    clauses = _clauses(body) or [body.strip()]

    best_c, best_c_overlap = 0, -1
    for i, clause in enumerate(clauses):
        overlap = _overlap(q_tokens, clause)
        if overlap > best_c_overlap:
            best_c, best_c_overlap = i, overlap
    clause = clauses[best_c]

    if _WHEN_RE.search(question.question):
        when = _when_answer(question, clause, memory)
        if when:
            return when
    if _HOW_LONG_RE.search(question.question):
        for text in (clause, body):
            duration = _DURATION_RE.search(text)
            if duration:
                return duration.group(0)

    for candidate in (*clauses[best_c:], body):
        span = _span(candidate, q_stems, max_words)
        if span:
            return span
    return " ".join(clause.split()[:max_words]) or NO_INFORMATION
