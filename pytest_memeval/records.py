"""Vocabulary: the frozen records that flow through the pipeline.

Layer 0: imports nothing from the rest of the package. Every record that crosses a process boundary
(pytest-xdist) has ``to_dict`` / ``from_dict`` producing plain JSON-compatible values; nothing is
ever pickled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

__all__ = [
    "PENDING_ANSWER",
    "PENDING_VERDICT",
    "STATUSES",
    "STATUS_CORRECT",
    "STATUS_ERROR",
    "STATUS_UNSCORED",
    "STATUS_WRONG",
    "Conversation",
    "Memory",
    "Pending",
    "Prediction",
    "Question",
    "QuestionResult",
    "ResultKey",
    "Score",
    "Session",
    "Turn",
    "as_memory",
    "finite_float",
    "score_float",
]

STATUS_CORRECT = "CORRECT"
STATUS_WRONG = "WRONG"
STATUS_ERROR = "ERROR"
STATUS_UNSCORED = "UNSCORED"
STATUSES = (STATUS_CORRECT, STATUS_WRONG, STATUS_UNSCORED, STATUS_ERROR)

Gold = str | int | float | None


@dataclass(frozen=True)
class Turn:
    """One message. ``id`` is the benchmark's own turn id (LoCoMo ``dia_id`` such as ``D1:3``)."""

    id: str
    speaker: str
    text: str
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Session:
    """A dated group of turns. ``date`` is parsed when possible; ``date_raw`` keeps the source text."""

    id: str
    date: datetime | None
    turns: tuple[Turn, ...]
    date_raw: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Conversation:
    """Everything a memory system ingests before the questions about it are asked."""

    id: str
    sessions: tuple[Session, ...]
    speakers: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def sessions_by_date(self) -> tuple[Session, ...]:
        """Sessions in date order (stable; undated sessions keep their file position at the end)."""
        indexed = list(enumerate(self.sessions))
        indexed.sort(key=lambda p: (p[1].date is None, p[1].date or datetime.min, p[0]))
        return tuple(s for _, s in indexed)

    def turns(self) -> list[tuple[Session, Turn]]:
        """All turns with their session, sessions in date order."""
        return [(s, t) for s in self.sessions_by_date() for t in s.turns]


@dataclass(frozen=True)
class Question:
    """One benchmark question.

    ``category`` is the category *name* used for markers and tables (``single-hop``);
    ``category_id`` the benchmark's own id (LoCoMo: the integer 1-5). ``gold`` keeps the source type
    (LoCoMo has integer golds) and may be ``None`` (LoCoMo category 5).
    """

    id: str
    conversation_id: str
    category: str
    question: str
    gold: Gold
    evidence: tuple[str, ...] = ()
    category_id: int | str | None = None
    question_date: datetime | None = None
    question_date_raw: str = ""
    abstention: bool = False
    index: int = 0
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: the unit this question is not independent within, set by the loader (the benchmark's
    #: ``cluster_unit``: LoCoMo/BEAM the conversation, LongMemEval the question); "" = conversation
    cluster: str = ""


@dataclass(frozen=True)
class Memory:
    """What a memory system returns from ``search``: text plus optional provenance.

    ``speaker``: who said what the memory came from (a ``Turn.speaker``), when the system knows
    it; the Mem0 answer protocol files each memory under its speaker (else it derives the speaker
    from the first source id)."""

    text: str
    id: str | None = None
    date: datetime | str | None = None
    score: float | None = None
    source_ids: tuple[str, ...] = ()
    speaker: str | None = None

    def to_dict(self) -> dict[str, Any]:
        date = self.date.isoformat() if isinstance(self.date, datetime) else self.date
        score = self.score if self.score is None or math.isfinite(self.score) else None
        return {
            "text": self.text,
            "id": self.id,
            "date": date,
            "score": score,
            "source_ids": list(self.source_ids),
        } | ({} if self.speaker is None else {"speaker": self.speaker})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Memory:
        """Also reads results stored before ``speaker`` existed (no key: ``None``)."""
        speaker = data.get("speaker")
        return cls(
            text=str(data.get("text", "")),
            id=data.get("id"),
            date=data.get("date"),
            score=data.get("score"),
            source_ids=tuple(str(s) for s in data.get("source_ids") or ()),
            speaker=None if speaker is None else str(speaker),
        )


def as_memory(item: object) -> Memory:
    """Accept a ``Memory`` or a plain string from ``search``; anything else is a type error."""
    if isinstance(item, Memory):
        return item
    if isinstance(item, str):
        return Memory(text=item)
    raise TypeError(
        f"search() must return Memory objects or strings, got {type(item).__name__}: {item!r:.80}"
    )


@dataclass(frozen=True)
class Prediction:
    """The answer produced for a question, with the memories it was produced from."""

    text: str
    memories: tuple[Memory, ...] = ()
    answered_by: str = ""  # "system" (system.answer), "extractive", or "PROVIDER:MODEL"
    #: what the answerer reports about this answer (plain JSON values), kept in the result's
    #: ``details`` (the Mem0 answer protocol: ``answer_prompt``, how the memories were filed)
    details: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Score:
    """Deprecated and unused: scores are plain floats in ``QuestionResult.scores`` (None when
    unscored). Kept importable for code written against 0.1; ``pytest_memeval.Score`` warns."""

    value: float
    unscored: bool = False
    raw: str | None = None
    explanation: str | None = None

    @classmethod
    def unscorable(cls, raw: str | None, explanation: str | None = None) -> Score:
        return cls(value=math.nan, unscored=True, raw=raw, explanation=explanation)


def score_float(value: object) -> float | None:
    """A score as stored: None stays None, anything else goes through ``float()`` and a
    non-finite value becomes None."""
    if value is None:
        return None
    f = float(value)  # type: ignore[arg-type]
    return f if math.isfinite(f) else None


def finite_float(value: object) -> float | None:
    """A number (not a bool) as a finite float; anything else, NaN, infinities and integers
    beyond float range give None. For values read back from reports and baselines."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


class ResultKey(NamedTuple):
    """What identifies one result everywhere (controller, results store, resume, rejudge, gates,
    baselines, reports): never the pytest node id, whose form is pytest's to change."""

    benchmark: str
    system: str
    flow: str  # "" for built-in items; the test function name for hand-written tests
    question_id: str


#: what a :class:`Pending` call waits for: a judge's verdict, or (``--memeval-reanswer``) the answer
PENDING_VERDICT = "verdict"
PENDING_ANSWER = "answer"
#: the ``details`` keys earlier runs (before ``QuestionResult.pending``) marked a pending call with:
#: the judge's score key held ``{"unscored": true, "label": ..., "batch_pending": [keys]}`` and a
#: queued answer the same under ``answer_batch``; only :meth:`QuestionResult.from_dict` reads them
_OLD_KEYS_FIELD = "batch_pending"
_OLD_ANSWER_SLOT = "answer_batch"


@dataclass(frozen=True)
class Pending:
    """A call of a result that waits for the end-of-run batch (``--memeval-llm-batch``): a judge's
    verdict (``what`` = ``"verdict"``, ``slot`` its score key) or a re-answer's answer
    (``"answer"``); ``label`` the judge or answerer that made it, ``keys`` the cache keys (the
    batch requests' custom ids) it waits for, ``error`` why they failed (the result stays
    UNSCORED with it)."""

    what: str
    label: str
    keys: tuple[str, ...]
    slot: str = ""
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"what": self.what, "label": self.label, "keys": list(self.keys)}
        if self.slot:
            out["slot"] = self.slot
        if self.error:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pending:
        return cls(
            str(data.get("what", PENDING_VERDICT)),
            str(data.get("label", "")),
            tuple(str(k) for k in data.get("keys") or ()),
            str(data.get("slot", "")),
            str(data.get("error", "")),
        )


def _old_pending(details: dict[str, Any]) -> list[Pending]:
    """The pending calls an earlier run's result marked in its ``details`` (taken out of them)."""
    out: list[Pending] = []
    for key, value in list(details.items()):
        if not isinstance(value, Mapping) or not isinstance(value.get(_OLD_KEYS_FIELD), list):
            continue
        keys = tuple(str(k) for k in value[_OLD_KEYS_FIELD])
        if not keys:
            continue
        del details[key]
        answer = key == _OLD_ANSWER_SLOT
        out.append(
            Pending(
                PENDING_ANSWER if answer else PENDING_VERDICT,
                str(value.get("label", "")),
                keys,
                "" if answer else key,
                str(value.get("error") or ""),
            )
        )
    return out


@dataclass
class QuestionResult:
    """Everything one item records. Travels as a plain dict in ``report.user_properties``."""

    benchmark: str
    system: str
    question_id: str
    conversation_id: str
    category: str
    category_id: int | str | None
    question: str
    gold: Gold
    prediction: str | None
    status: str
    scores: dict[str, float | None] = field(default_factory=dict)
    memories: list[Memory] = field(default_factory=list)
    latency: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    flow: str = ""  # "" for built-in items; the test function name for hand-written tests
    details: dict[str, Any] = field(default_factory=dict)
    nodeid: str = ""
    cluster: str = ""  # the question's cluster (Question.cluster); "" = its conversation
    #: its calls still waiting for the end-of-run batch (``--memeval-llm-batch``), in call order
    pending: tuple[Pending, ...] = ()

    @property
    def cluster_id(self) -> str:
        """The cluster the statistics resample and the regression gate pairs by."""
        return self.cluster or self.conversation_id

    @property
    def run_key(self) -> tuple[str, str, str]:
        return (self.benchmark, self.system, self.flow)

    @property
    def key(self) -> ResultKey:
        return ResultKey(self.benchmark, self.system, self.flow, self.question_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.question_id,
            "benchmark": self.benchmark,
            "system": self.system,
            "flow": self.flow,
            "conversation": self.conversation_id,
            "cluster": self.cluster_id,
            "category": self.category,
            "category_id": self.category_id,
            "question": self.question,
            "gold": self.gold,
            "prediction": self.prediction,
            "status": self.status,
            "scores": {k: score_float(v) for k, v in self.scores.items()},
            "memories": [m.to_dict() for m in self.memories],
            "latency": dict(self.latency),
            "error": self.error,
            "details": self.details,
            "nodeid": self.nodeid,
            # only while some call waits: the reports of every other run keep their shape
            **({"pending": [p.to_dict() for p in self.pending]} if self.pending else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QuestionResult:
        """The result ``to_dict`` wrote; an earlier run's pending calls, marked in its
        ``details`` (``batch_pending``), are read into ``pending``."""
        scores = data.get("scores") or {}
        details = dict(data.get("details") or {})
        pending = [Pending.from_dict(p) for p in data.get("pending") or ()]
        pending += _old_pending(details)
        return cls(
            benchmark=str(data["benchmark"]),
            system=str(data["system"]),
            question_id=str(data["id"]),
            conversation_id=str(data.get("conversation", "")),
            category=str(data.get("category", "")),
            category_id=data.get("category_id"),
            question=str(data.get("question", "")),
            gold=data.get("gold"),
            prediction=data.get("prediction"),
            status=str(data.get("status", STATUS_ERROR)),
            scores={str(k): score_float(v) for k, v in scores.items()},
            memories=[Memory.from_dict(m) for m in data.get("memories") or ()],
            latency={str(k): float(v) for k, v in (data.get("latency") or {}).items()},
            error=data.get("error"),
            flow=str(data.get("flow", "")),
            details=details,
            nodeid=str(data.get("nodeid", "")),
            cluster=str(data.get("cluster") or ""),
            pending=tuple(pending),
        )
