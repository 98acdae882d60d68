"""HaluMem's official judge (``--memeval-protocol=halumem``): each question's QA judgment, and
the storage judgments (memory integrity, accuracy, update) of what each conversation's system
stored, with their inputs built as upstream's ``eval/evaluation.py`` ``process_user`` builds them
(:func:`storage_plan`). The prompt texts come from the pinned ``eval/eval_tools.py``
(:func:`~pytest_memeval.protocols._judges.load_protocol`); nothing here holds upstream text."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...judges import JudgeResult, gold_text
from ...llm import BatchDeferred, ChatMessage, CircuitOpenError, LLMClient, run_parallel
from ...protocols import HALUMEM, LoadedProtocol, RequestShape, Template, ask
from ...records import Conversation, Memory, Question, Session, Turn
from ...systems import STORED_META

__all__ = [
    "STORAGE_WORKERS",
    "HaluMemOfficialJudge",
    "StorageCall",
    "StoragePlan",
    "dialogue_text",
    "halumem_accuracy",
    "halumem_integrity",
    "halumem_json",
    "halumem_label",
    "official_judge",
    "storage_plan",
]


@dataclass(frozen=True)
class StorageCall:
    """One extraction / update judge call: the template (``integrity``, ``accuracy``,
    ``update``: ``EVALUATION_PROMPT_FOR_MEMORY_INTEGRITY`` / ``_MEMORY_ACCURACY`` /
    ``_UPDATE_MEMORY``), its ``str.format`` keywords as upstream's ``evaluation_for_*`` pass them,
    and the record the judgment is written into (upstream's field names)."""

    kind: str
    fields: Mapping[str, str]
    record: Mapping[str, Any]


@dataclass(frozen=True)
class StoragePlan:
    """Every extraction / update judgment of one conversation. ``granularity`` is ``session``
    when every stored memory names a turn of the conversation in its ``source_ids`` (each session
    is then judged against the memories that came from it, as upstream judges the memories each
    ``add`` returned), else ``conversation`` (the whole conversation is one session: every
    expected point against everything stored). ``settled``: integrity records upstream scores 0
    without a call (nothing was extracted from that session)."""

    granularity: str
    calls: tuple[StorageCall, ...]
    settled: tuple[Mapping[str, Any], ...]


def dialogue_text(turns: Sequence[Turn]) -> str:
    """Upstream ``process_user``'s ``dialogue_str``: ``[timestamp]role: content`` per turn, an
    empty line after each assistant turn, joined by newlines."""
    lines: list[str] = []
    for turn in turns:
        lines.append(f"[{turn.meta.get('timestamp')}]{turn.speaker}: {turn.text}")
        if turn.speaker == "assistant":
            lines.append("")
    return "\n".join(lines)


def _session_of(stored: Sequence[Memory], sessions: Sequence[Session]) -> list[int] | None:
    """The session index each stored memory came from (its first source id that is a turn of
    the conversation), or None when one of them names none."""
    owner = {t.id: i for i, s in enumerate(sessions) for t in s.turns}
    found: list[int] = []
    for memory in stored:
        where = next((owner[t] for t in memory.source_ids if t in owner), None)
        if where is None:
            return None
        found.append(where)
    return found


def storage_plan(conversation: Conversation, stored: Sequence[Memory]) -> StoragePlan:
    """Upstream ``process_user``'s extraction and update inputs, over what the system stored
    (``dump``) instead of what each ``add`` returned: per session (skipping generated-QA
    sessions), each memory point with ``is_update == "True"``, ``original_memories`` and some
    memory from that session goes to the update judge (the session's memories standing for
    upstream's ``memories_from_system``), every other point to the integrity judge (score 0
    without a call when the session has no memory), and every memory of the session to the
    accuracy judge with the session's dialogue and its non-interference points."""
    sessions = conversation.sessions
    owners = _session_of(stored, sessions)
    groups: list[tuple[str, list[Session], list[str]]] = []
    if owners is not None:
        for i, session in enumerate(sessions):
            texts = [m.text for m, at in zip(stored, owners, strict=True) if at == i]
            groups.append((session.id, [session], texts))
    else:
        groups.append(("all", list(sessions), [m.text for m in stored]))
    calls: list[StorageCall] = []
    settled: list[Mapping[str, Any]] = []
    for label, members, extracted in groups:
        members = [s for s in members if not s.meta.get("is_generated_qa_session")]
        if not members:
            continue
        golden = [p for s in members for p in s.meta.get("memory_points") or []]
        extracted_str = "\n".join(extracted)
        for point in golden:
            record = {
                "session": label,
                "memory_content": point["memory_content"],
                "memory_type": point.get("memory_type"),
                "memory_source": point.get("memory_source"),
                "importance": point.get("importance"),
            }
            originals = point.get("original_memories") or []
            if point.get("is_update") == "True" and originals and extracted:
                fields = {
                    "memories": extracted_str,
                    "updated_memory": point["memory_content"],
                    "original_memory": "\n".join(originals),
                }
                calls.append(StorageCall("update", fields, record))
            elif extracted_str.strip() == "":
                settled.append(record | {"memory_integrity_score": 0})
            else:
                fields = {
                    "memories": extracted_str,
                    "expected_memory_point": point["memory_content"],
                }
                calls.append(StorageCall("integrity", fields, record))
        dialogue = "\n".join(dialogue_text(s.turns) for s in members)
        golden_str = "\n".join(
            p["memory_content"] for p in golden if p.get("memory_source") != "interference"
        )
        for text in extracted:
            fields = {"dialogue": dialogue, "golden_memories": golden_str, "candidate_memory": text}
            calls.append(
                StorageCall("accuracy", fields, {"session": label, "memory_content": text})
            )
    granularity = "session" if owners is not None else "conversation"
    return StoragePlan(granularity, tuple(calls), tuple(settled))


#: upstream eval/llms.py ``llm_request_for_json``: the first fenced JSON block
_HALUMEM_JSON = re.compile(r"```json\s*(\{.*?\})\s*```", re.DOTALL)


def halumem_json(reply: str) -> dict[str, Any] | None:
    """Upstream ``llm_request_for_json``'s reading: ``json.loads`` of the first ```json {...}```
    block; None where it raises (no block, bad JSON)."""
    match = _HALUMEM_JSON.search(reply)
    if not match:
        return None
    try:
        parsed = json.loads(match.group(1).strip())
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def halumem_label(reply: str) -> str | None:
    """``evaluation_result`` of the reply's first ```json block, as upstream reads it; None when
    upstream's call would raise (no block, bad JSON, not an object) or the key is absent."""
    parsed = halumem_json(reply)
    label = parsed.get("evaluation_result") if parsed is not None else None
    return label if isinstance(label, str) else None


#: what upstream's ``except Exception`` around ``int(result.get(...))`` catches in practice
_INT_ERRORS = (TypeError, ValueError, OverflowError)


def halumem_integrity(reply: str) -> int | None:
    """Upstream's ``int(result.get("score"))`` (``None`` where it raises: no JSON block, a score
    that ``int`` refuses such as ``"2|1|0"`` or a missing one)."""
    parsed = halumem_json(reply)
    if parsed is None:
        return None
    try:
        return int(parsed.get("score"))  # type: ignore[arg-type]  # upstream's call, any value
    except _INT_ERRORS:
        return None


def halumem_accuracy(reply: str) -> tuple[int | None, Any]:
    """Upstream's ``(int(result.get("accuracy_score")), result.get(
    "is_included_in_golden_memories", "false"))``; ``(None, "false")`` where the call or the
    ``int`` raises (the inclusion flag is then never read, as upstream)."""
    parsed = halumem_json(reply)
    if parsed is None:
        return None, "false"
    try:
        score = int(parsed.get("accuracy_score"))  # type: ignore[arg-type]  # as upstream
    except _INT_ERRORS:
        return None, "false"
    return score, parsed.get("is_included_in_golden_memories", "false")


#: how many storage judgments of one conversation are in flight at once (the LLM client's own
#: concurrency limit still applies)
STORAGE_WORKERS = 8


@dataclass
class HaluMemOfficialJudge:
    """HaluMem's QA judge (``eval_tools.evaluation_for_question``): the pinned template filled with
    ``question``, ``reference_answer``, ``key_memory_points`` (the evidence memory points joined by
    newlines) and ``response``; score 1 for the label ``Correct``, else 0 (an unreadable reply
    too, as upstream's ``(all)`` ratios count it); the label is kept in the details."""

    template: Template
    shape: RequestShape
    #: ``integrity``, ``accuracy``, ``update``: the extraction / update templates
    storage_templates: Mapping[str, Template] = field(default_factory=dict)
    name: str = "halumem-official"
    metric: str = HALUMEM.metric

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {"halumem:question": self.template.sha256} | {
            f"halumem:{key}": t.sha256 for key, t in sorted(self.storage_templates.items())
        }

    def render(self, question: Question, prediction: str) -> str:
        return self.template.text.format(
            question=question.question,
            reference_answer=gold_text(question.gold),
            key_memory_points=str(question.meta.get("key_memory_points", "")),
            response=prediction,
        )

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        reply = ask(client, [ChatMessage("user", self.render(question, prediction))], self.shape)
        label = halumem_label(reply)
        details: dict[str, Any] = {"protocol": "halumem", "label": label}
        storage = question.meta.get(STORED_META)
        if storage is not None:  # this question carries its conversation's storage judgments
            conversation, stored = storage
            details["storage"] = self.judge_storage(storage_plan(conversation, stored), client)
        return JudgeResult(
            scores={self.metric: float(label == "Correct")}, raw=[reply], details=details
        )

    def render_storage(self, call: StorageCall) -> str:
        """The prompt upstream's ``evaluation_for_memory_integrity`` / ``_memory_accuracy`` /
        ``_update_memory`` builds for the same inputs."""
        return self.storage_templates[call.kind].text.format(**call.fields)

    def judge_storage(self, plan: StoragePlan, client: LLMClient) -> dict[str, Any]:
        """One conversation's extraction and update judgments, read as upstream reads them, as
        upstream's records (``memory_integrity_records``, ``memory_accuracy_records``,
        ``memory_update_records``) for :func:`benchmarks.halumem.aggregate`."""

        failed: list[str] = []

        def one(call: StorageCall) -> dict[str, Any]:
            try:
                reply = ask(client, [ChatMessage("user", self.render_storage(call))], self.shape)
            except (BatchDeferred, CircuitOpenError):
                raise  # judged later (batch) / the endpoint is down: the carrier says so
            except Exception as exc:  # upstream's `except Exception`: the judgment is None
                failed.append(type(exc).__name__)  # the type only: a message may echo a key
                reply = ""
            record = dict(call.record)
            if call.kind == "integrity":
                record["memory_integrity_score"] = halumem_integrity(reply)
            elif call.kind == "accuracy":
                score, included = halumem_accuracy(reply)
                record["memory_accuracy_score"] = score
                record["is_included_in_golden_memories"] = included
            else:
                record["memory_update_type"] = halumem_label(reply)
            return record

        judged = run_parallel(one, plan.calls, max(1, min(STORAGE_WORKERS, len(plan.calls))))
        kinds = [c.kind for c in plan.calls]
        return {
            "granularity": plan.granularity,
            "calls": len(plan.calls),
            # calls that raised after the LLM layer's retries (their judgment is None, as
            # upstream records it; not cached, so a rerun asks again)
            "failed": sorted(failed),
            "integrity": [dict(r) for r in plan.settled]
            + [r for r, k in zip(judged, kinds, strict=True) if k == "integrity"],
            "accuracy": [r for r, k in zip(judged, kinds, strict=True) if k == "accuracy"],
            "update": [r for r, k in zip(judged, kinds, strict=True) if k == "update"],
        }


def official_judge(protocol: LoadedProtocol) -> HaluMemOfficialJudge | None:
    """The judge of ``--memeval-protocol=halumem`` from its loaded prompts (the QA prompt and the
    three storage prompts); None under another protocol."""
    p, t = protocol.profile, protocol.templates
    if p.name != HALUMEM.name or p.judge is None:
        return None
    return HaluMemOfficialJudge(
        t["question"], p.judge, {k: t[k] for k in ("integrity", "accuracy", "update")}
    )
