"""HaluMem's official figures of one run (docs/scoring.md#halumem-storage-judgments): upstream
``aggregate_eval_results`` (:func:`.scorer.aggregate`) over the records the
``halumem`` protocol judge wrote, pooled over the run's conversations as upstream pools its users.

The extraction and update records of a conversation ride on the first question of that
conversation the run asked of the system (``details.storage_carrier``; the judge's details
``storage``); the QA records are every judged question's label. A conversation carried twice (a
resumed run that asked again) counts once: its question with the lowest index. A system without
``dump``, or whose ``dump`` failed (raised, returned the wrong type, timed out), has its storage
figures UNSCORED with the reason (the first question's ``details.stored_unscored``), never zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...records import QuestionResult
from ._scorer import aggregate

if TYPE_CHECKING:
    from ...protocols import LoadedProtocol
    from ...report import RunSummary

__all__ = ["HaluMemOfficial", "halumem_official", "official_summary"]

#: the storage figure groups of ``aggregate`` (the rest is ``question_answering``)
STORAGE_GROUPS = (
    "memory_integrity",
    "memory_accuracy",
    "memory_extraction_f1",
    "memory_update",
    "memory_type_accuracy",
)


@dataclass(frozen=True)
class HaluMemOfficial:
    """Upstream's ``overall_score`` figures of one run (``figures``: ``aggregate``'s dict, the
    storage groups left out when ``storage_unscored`` says why)."""

    metric: str
    figures: Mapping[str, Any]
    #: conversations whose storage judgments are in the figures / conversations in the run
    conversations: int
    conversations_total: int
    #: judged questions in the QA figures
    questions: int
    #: conversations judged per session / as one session (memories without a turn id)
    granularity: Mapping[str, int] = field(default_factory=dict)
    storage_unscored: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "figures": dict(self.figures),
            "conversations": self.conversations,
            "conversations_total": self.conversations_total,
            "questions": self.questions,
            "granularity": dict(self.granularity),
            "storage_unscored": self.storage_unscored,
        }


def _judged(result: QuestionResult, metric: str) -> Mapping[str, Any] | None:
    info = result.details.get(metric)
    if not isinstance(info, Mapping) or info.get("skipped"):
        return None
    inner = info.get("details")
    return inner if isinstance(inner, Mapping) and inner.get("protocol") == "halumem" else None


def halumem_official(results: Sequence[QuestionResult], metric: str) -> HaluMemOfficial:
    """The run's figures from its questions' judge details under ``metric`` (the first judge's
    headline key)."""
    storage: dict[str, tuple[int, Mapping[str, Any]]] = {}
    qa: list[dict[str, Any]] = []
    no_dump: str | None = None
    for r in results:
        reason = r.details.get("stored_unscored")
        if reason and no_dump is None:
            no_dump = str(reason)
        judged = _judged(r, metric)
        if judged is None:
            continue
        qa.append({"result_type": judged.get("label")})
        carried = judged.get("storage")
        if isinstance(carried, Mapping):
            index = int(r.details.get("index", 0) or 0)
            earlier = storage.get(r.conversation_id)
            if earlier is None or index < earlier[0]:
                storage[r.conversation_id] = (index, carried)
    conversations = [c for _, c in storage.values()]
    integrity = [rec for c in conversations for rec in c.get("integrity", [])]
    accuracy = [rec for c in conversations for rec in c.get("accuracy", [])]
    update = [rec for c in conversations for rec in c.get("update", [])]
    figures: dict[str, Any] = dict(aggregate(integrity, accuracy, update, qa))
    unscored = None
    if no_dump is not None:
        unscored = no_dump
    elif not conversations:
        unscored = "no conversation's storage was judged (none of its questions was asked)"
    if unscored is not None:
        for group in STORAGE_GROUPS:
            figures.pop(group, None)
    granularity: dict[str, int] = {}
    for c in conversations:
        key = str(c.get("granularity", ""))
        granularity[key] = granularity.get(key, 0) + 1
    return HaluMemOfficial(
        metric=metric,
        figures=figures,
        conversations=len(conversations),
        conversations_total=len({r.conversation_id for r in results}),
        questions=len(qa),
        granularity=granularity,
        storage_unscored=unscored,
    )


def official_summary(
    protocol: LoadedProtocol,
    run: RunSummary,
    results: Sequence[QuestionResult],
    judge_metric: str | None,
) -> None:
    """Under ``--memeval-protocol=halumem``: the run's official figures (``run.halumem``) from
    the judge details under ``judge_metric`` (the first judge's headline key); nothing without
    a judge or under another protocol."""
    from ...protocols import HALUMEM

    if protocol.name != HALUMEM.name or judge_metric is None:
        return
    run.halumem = halumem_official(results, judge_metric)
