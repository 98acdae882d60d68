"""HaluMem (arXiv 2511.03506): per user, sessions of dialogue with the memory points each session
should produce (``memory_points``: content, type, source, ``is_update``, ``original_memories``,
``importance``) and questions asked after some sessions (``question``, ``answer``, ``evidence``).

Upstream (``MemTensor/HaluMem``, pinned below) scores with ``eval/evaluation.py``: every judgment
is an LLM call (``eval/eval_tools.py`` prompts: memory integrity 0/1/2, memory accuracy 0/1/2 plus
"included in golden memories", update Correct / Hallucination / Omission / Other, QA Correct /
Hallucination / Omission); the figures are counts over those judgments
(``aggregate_eval_results``). Here each user is one conversation (sessions as turns, in file
order), each question one item whose category is its ``question_type``; the judgment arithmetic
is :func:`aggregate`, equal to upstream's on recorded vectors (tests/halumem_upstream.py); the QA
judge is ``--memeval-protocol=halumem`` (protocols/: its prompts read from the pinned
``eval/eval_tools.py`` at run time, never copied), which also judges what each conversation's
system stored (``dump``; :func:`storage_plan` builds upstream's ``process_user`` inputs);
analysis/halumem_official.py pools the records into the run's figures.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import DatasetError, terminal_safe
from ..metrics.lexical import token_f1
from ..records import Conversation, Memory, Prediction, Question, Session, Turn
from .base import (
    CategoryInfo,
    Dataset,
    Deviation,
    LoadRequest,
    Parsed,
    check_surrogates,
    decode_text,
    load_parts,
    named_categories,
    parse_jsonl,
    read_bytes,
)
from .download import PinnedFile, Pins, fetch_pinned

__all__ = [
    "BENCHMARK",
    "DEVIATIONS",
    "FILES",
    "HF_DATASET",
    "MEMORY_TYPES",
    "QUESTION_TYPES",
    "UPSTREAM_COMMIT",
    "UPSTREAM_SHA256",
    "HaluMem",
    "StorageCall",
    "StoragePlan",
    "aggregate",
    "build",
    "compute_f1",
    "dialogue_text",
    "memory_type_accuracy",
    "parse_users",
    "storage_plan",
]

#: the MemTensor/HaluMem commit whose scorer and loader this module follows
UPSTREAM_COMMIT = "59402b9d662507406b584047d1982e0cbf453a0f"
#: sha256 of the upstream files read at that commit
UPSTREAM_SHA256: Mapping[str, str] = MappingProxyType(
    {
        "eval/evaluation.py": "eee601e1b73aea91f13fa8e0dc3bdef6d39d611359c6e05990107240c5368c32",
        "eval/eval_tools.py": "0c08e5ecb8c93945bafc4bd0336bd6c9756b40d175f442ce44aca4a43169ee3b",
        "eval/eval_memzero.py": "7fa34de7e45e1b9730bb63453ee17627925c8a4304645eda7249844eb24ca3c1",
        "eval/llms.py": "3944e8133c3777506f2f17971884f18c83ab7379fc3d79d22dfd6a748c0b8547",
        "scripts/stage6_2_final_result_medium.py": (
            "bddcc2214a26858c79e703052eb5453027a72dc974c5dddb91cc8d8d0934c32c"
        ),
    }
)
HF_DATASET = "IAAR-Shanghai/HaluMem"
FOLDER = "halumem"
#: variant -> file name below DIR/halumem (the Hugging Face file names)
FILES: Mapping[str, str] = MappingProxyType(
    {"medium": "HaluMem-Medium.jsonl", "long": "HaluMem-Long.jsonl"}
)
#: the release: the Hugging Face dataset at a revision; variant -> its file
PINS = Pins(
    host="huggingface",
    repo=HF_DATASET,
    revision="cb04336aa1b732d4b24f5186c552456b4099806e",
    files={
        "medium": PinnedFile(
            FILES["medium"],
            f"{FOLDER}/{FILES['medium']}",
            "486fbc130a5c8781a2af27ffa508a1d7855245137aa449c193ac4d29c45634e7",
            33_511_525,
        ),
        "long": PinnedFile(
            FILES["long"],
            f"{FOLDER}/{FILES['long']}",
            "dfdbed570b402b7b8c17e0d7808fc6f3ae7a53b6144f18feb16bbdd3f55cb0c9",
            106_535_674,
        ),
    },
)
#: upstream's session date format (``eval_memzero.py``: ``"%b %d, %Y, %H:%M:%S"``)
DATE_FORMAT = "%b %d, %Y, %H:%M:%S"
#: the labels upstream counts (``aggregate_eval_results``)
UPDATE_LABELS = ("Correct", "Hallucination", "Omission", "Other")
QA_LABELS = ("Correct", "Hallucination", "Omission")
#: the memory point types of upstream's ``memory_type_accuracy`` (``main``'s ``eval_results``)
MEMORY_TYPES = ("Event Memory", "Persona Memory", "Relationship Memory")

#: upstream ``question_type`` (config.json at the pinned commit) -> our category (a marker name)
QUESTION_TYPES: Mapping[str, str] = MappingProxyType(
    {
        "Basic Fact Recall": "basic_fact_recall",
        "Multi-hop Inference": "multi_hop_inference",
        "Dynamic Update": "dynamic_update",
        "Memory Boundary": "memory_boundary",
        "Generalization & Application": "generalization_application",
        "Memory Conflict": "memory_conflict",
    }
)
CATEGORIES: Mapping[int | str, CategoryInfo] = MappingProxyType(
    named_categories(
        "halumem",
        {
            "basic_fact_recall": "recall a fact the user stated (Basic Fact Recall)",
            "multi_hop_inference": "combine several memory points (Multi-hop Inference)",
            "dynamic_update": "answer with the latest of updated facts (Dynamic Update)",
            "memory_boundary": "recognise what was never said (Memory Boundary)",
            "generalization_application": "apply memories to a new case "
            "(Generalization & Application)",
            "memory_conflict": "reject a false premise against memory (Memory Conflict)",
        },
    )
)

_HINT = "fix the file or export it again from the Hugging Face dataset"


# ---------------------------------------------------------------------------------------------
# the judgment arithmetic (upstream evaluation.py aggregate_eval_results, our own code)
# ---------------------------------------------------------------------------------------------


def compute_f1(precision: float, recall: float) -> float:
    """Upstream ``compute_f1``: 0.0 when both are 0."""
    if precision + recall == 0:
        return 0.0
    return 2 * (precision * recall) / (precision + recall)


def _ratio(num: float, den: float) -> float | None:
    """``num / den``; None where upstream would raise ZeroDivisionError (nothing to score)."""
    return num / den if den else None


def aggregate(
    integrity: Sequence[Mapping[str, Any]],
    accuracy: Sequence[Mapping[str, Any]],
    update: Sequence[Mapping[str, Any]],
    qa: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Upstream's figures from judged records (fields as upstream names them):
    ``integrity`` {memory_source, importance, memory_integrity_score: 0/1/2 or None},
    ``accuracy`` {memory_accuracy_score: 0/1/2 or None, is_included_in_golden_memories},
    ``update`` {memory_update_type}, ``qa`` {result_type}; ``memory_type_accuracy`` reads
    ``memory_type`` of the integrity and update records. A figure whose denominator is 0 is
    None (upstream raises ZeroDivisionError there)."""
    mi_score = mi_wscore = 0.0
    mi_valid = mi_num = 0
    mi_wvalid = mi_wnum = 0.0
    if_score = if_valid = if_num = 0
    for item in integrity:
        interference = item["memory_source"] == "interference"
        if not interference:
            mi_num += 1
            mi_wnum += item["importance"]
        else:
            if_num += 1
        score = item["memory_integrity_score"]
        if score is None:
            continue
        if not interference:
            if score == 2:
                mi_score += 1
            mi_wscore += 0.5 * score * item["importance"]
            mi_valid += 1
            mi_wvalid += item["importance"]
        else:
            if score == 0:
                if_score += 1
            if_valid += 1
    ta_score = wa_score = 0.0
    ta_valid = ta_num = a_valid = a_num = 0
    for item in accuracy:
        a_num += 1
        target = item["is_included_in_golden_memories"] in ("true", "True")
        if target:
            ta_num += 1
        score = item["memory_accuracy_score"]
        if score is None:
            continue
        if target:
            ta_score += 0.5 * score
            ta_valid += 1
        wa_score += 0.5 * score
        a_valid += 1
    up = dict.fromkeys(UPDATE_LABELS, 0)
    up_num = up_valid = 0
    for item in update:
        up_num += 1
        label = item["memory_update_type"]
        if label in up:
            up[label] += 1
            up_valid += 1
    qa_counts = dict.fromkeys(QA_LABELS, 0)
    qa_num = qa_valid = 0
    for item in qa:
        qa_num += 1
        label = item["result_type"]
        if label in qa_counts:
            qa_counts[label] += 1
            qa_valid += 1
    recall_all = _ratio(mi_score, mi_num)
    target_all = _ratio(ta_score, ta_num)
    return {
        "memory_integrity": {
            "recall(all)": recall_all,
            "recall(valid)": _ratio(mi_score, mi_valid),
            "weighted_recall(all)": _ratio(mi_wscore, mi_wnum),
            "weighted_recall(valid)": _ratio(mi_wscore, mi_wvalid),
        },
        "memory_accuracy": {
            "interference_accuracy(all)": _ratio(if_score, if_num),
            "interference_accuracy(valid)": _ratio(if_score, if_valid),
            "target_accuracy(all)": target_all,
            "target_accuracy(valid)": _ratio(ta_score, ta_valid),
            "weighted_accuracy(all)": _ratio(wa_score, a_num),
            "weighted_accuracy(valid)": _ratio(wa_score, a_valid),
        },
        "memory_extraction_f1": (
            None if recall_all is None or target_all is None else compute_f1(target_all, recall_all)
        ),
        "memory_update": {
            f"{label.lower()}_update_memory_ratio({base})": _ratio(up[label], den)
            for label in UPDATE_LABELS
            for base, den in (("all", up_num), ("valid", up_valid))
        },
        "question_answering": {
            f"{label.lower()}_qa_ratio({base})": _ratio(qa_counts[label], den)
            for label in QA_LABELS
            for base, den in (("all", qa_num), ("valid", qa_valid))
        },
        "memory_type_accuracy": memory_type_accuracy(integrity, update),
    }


def memory_type_accuracy(
    integrity: Sequence[Mapping[str, Any]], update: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, float | None]]:
    """Upstream's ``memory_type_accuracy`` per memory type (Event / Persona / Relationship):
    every integrity record (interference points and unscored ones too) and every update record
    with an ``importance`` key counts once in ``total_num``; ``memory_integrity_acc`` = integrity
    records scored 2 / ``total_num``, ``memory_update_acc`` = update records judged ``Correct`` /
    ``total_num`` (both over the same total), ``memory_acc`` their sum. A type with no record
    has None figures (upstream raises ZeroDivisionError); a record of another type is not
    counted (upstream raises KeyError)."""
    hits = {t: [0, 0, 0] for t in MEMORY_TYPES}  # integrity hits, update hits, total
    for item in integrity:
        row = hits.get(item.get("memory_type"))  # type: ignore[arg-type]
        if row is None or "memory_integrity_score" not in item or "importance" not in item:
            continue
        row[0] += 1 if item["memory_integrity_score"] == 2 else 0
        row[2] += 1
    for item in update:
        row = hits.get(item.get("memory_type"))  # type: ignore[arg-type]
        if row is None or "memory_update_type" not in item or "importance" not in item:
            continue
        row[1] += 1 if item["memory_update_type"] == "Correct" else 0
        row[2] += 1
    out: dict[str, dict[str, float | None]] = {}
    for kind, (mi, mu, total) in hits.items():
        mi_acc, mu_acc = _ratio(mi, total), _ratio(mu, total)
        out[kind] = {
            "memory_integrity_acc": mi_acc,
            "memory_update_acc": mu_acc,
            "total_num": total,
            "memory_acc": None if mi_acc is None or mu_acc is None else mi_acc + mu_acc,
        }
    return out


# ---------------------------------------------------------------------------------------------
# the storage judgments' inputs (upstream evaluation.py process_user, our own code)
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# loader
# ---------------------------------------------------------------------------------------------


def _need(value: Mapping[str, Any], name: str, kind: type, source: str, where: str) -> Any:
    got = value.get(name)
    if not isinstance(got, kind):
        what = "missing" if name not in value else f"a {type(got).__name__}"
        raise DatasetError(
            f"must be a {kind.__name__} (is {what}); {_HINT}",
            path=source,
            record=where,
            field=name,
        )
    return got


def _rows(raw: bytes, source: str) -> list[object]:
    return [row for _, row in parse_jsonl(decode_text(raw, source, _HINT), source, _HINT)]


def parse_users(raw: bytes, source: str) -> list[Mapping[str, Any]]:
    """The user records of one JSONL file, every field this module reads checked; a problem is a
    DatasetError naming the file, the record (``user[2].sessions[0]``) and the field."""
    rows = _rows(raw, source)
    check_surrogates(rows, source)
    users: list[Mapping[str, Any]] = []
    seen: dict[str, int] = {}
    for u, row in enumerate(rows):
        where = f"user[{u}]"
        if not isinstance(row, dict):
            raise DatasetError(f"must be a JSON object; {_HINT}", path=source, record=where)
        uuid = _need(row, "uuid", str, source, where)
        if uuid in seen:
            raise DatasetError(
                f"duplicate uuid {terminal_safe(uuid, 80)!r} (first used by user[{seen[uuid]}]);"
                " every user's uuid must be unique in the file (its questions would share ids)",
                path=source,
                record=where,
                field="uuid",
            )
        seen[uuid] = u
        sessions = _need(row, "sessions", list, source, where)
        for s, session in enumerate(sessions):
            sw = f"{where}.sessions[{s}]"
            if not isinstance(session, dict):
                raise DatasetError(f"must be a JSON object; {_HINT}", path=source, record=sw)
            for t, turn in enumerate(_need(session, "dialogue", list, source, sw)):
                tw = f"{sw}.dialogue[{t}]"
                if not isinstance(turn, dict):
                    raise DatasetError(f"must be a JSON object; {_HINT}", path=source, record=tw)
                _need(turn, "role", str, source, tw)
                _need(turn, "content", str, source, tw)
            for q, qa in enumerate(session.get("questions") or []):
                qw = f"{sw}.questions[{q}]"
                if not isinstance(qa, dict):
                    raise DatasetError(f"must be a JSON object; {_HINT}", path=source, record=qw)
                _need(qa, "question", str, source, qw)
                _need(qa, "answer", str, source, qw)
                qtype = _need(qa, "question_type", str, source, qw)
                if qtype not in QUESTION_TYPES:
                    raise DatasetError(
                        f"unknown question type {qtype!r} (HaluMem has "
                        f"{', '.join(QUESTION_TYPES)}); {_HINT}",
                        path=source,
                        record=qw,
                        field="question_type",
                    )
                for e, ev in enumerate(qa.get("evidence") or []):
                    _need(ev, "memory_content", str, source, f"{qw}.evidence[{e}]")
            if not session.get("is_generated_qa_session", False):
                for m, point in enumerate(_need(session, "memory_points", list, source, sw)):
                    mw = f"{sw}.memory_points[{m}]"
                    if not isinstance(point, dict):
                        raise DatasetError(
                            f"must be a JSON object; {_HINT}", path=source, record=mw
                        )
                    _need(point, "memory_content", str, source, mw)
                    # read by the storage judgments (upstream's process_user and aggregate)
                    _need(point, "memory_source", str, source, mw)
                    _need(point, "is_update", str, source, mw)
                    importance = point.get("importance")
                    if isinstance(importance, bool) or not isinstance(importance, int | float):
                        raise DatasetError(
                            f"must be a number (is {type(importance).__name__}); {_HINT}",
                            path=source,
                            record=mw,
                            field="importance",
                        )
                    originals = point.get("original_memories") or []
                    if not isinstance(originals, list) or not all(
                        isinstance(o, str) for o in originals
                    ):
                        raise DatasetError(
                            f"must be a list of strings; {_HINT}",
                            path=source,
                            record=mw,
                            field="original_memories",
                        )
        users.append(row)
    return users


def _date(raw: object, source: str, where: str) -> datetime | None:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return datetime.strptime(raw, DATE_FORMAT)
    except ValueError:
        raise DatasetError(
            f"{raw!r} is not a date like 'Jan 05, 2025, 10:00:00' ({DATE_FORMAT}); {_HINT}",
            path=source,
            record=where,
            field="start_time",
        ) from None


def build(
    variant: str, users: Sequence[Mapping[str, Any]], source: str = ""
) -> tuple[list[Conversation], list[Question]]:
    """One conversation per user (each session's dialogue as turns ``S<i>:T<j>``, speaker the
    turn's ``role``), one question per ``sessions[i].questions[j]`` (asked after the whole
    history: upstream asks right after session ``i``; docs/scoring.md#halumem)."""
    conversations: list[Conversation] = []
    questions: list[Question] = []
    for u, user in enumerate(users):
        conv_id = f"{variant}-{user['uuid']}"
        sessions: list[Session] = []
        roles: dict[str, None] = {}
        n_q = 0
        for s, session in enumerate(user["sessions"]):
            sid = f"S{s + 1}"
            turns = []
            for t, turn in enumerate(session["dialogue"]):
                roles.setdefault(turn["role"], None)
                turns.append(
                    Turn(
                        f"{sid}:T{t + 1}",
                        turn["role"],
                        turn["content"],
                        meta={"timestamp": turn.get("timestamp")},
                    )
                )
            start = session.get("start_time")
            sessions.append(
                Session(
                    id=sid,
                    date=_date(start, source, f"user[{u}].sessions[{s}]"),
                    turns=tuple(turns),
                    date_raw=start if isinstance(start, str) else "",
                    meta={
                        "memory_points": session.get("memory_points") or [],
                        "is_generated_qa_session": bool(
                            session.get("is_generated_qa_session", False)
                        ),
                    },
                )
            )
            for qa in session.get("questions") or []:
                n_q += 1
                category = QUESTION_TYPES[qa["question_type"]]
                evidence = [ev["memory_content"] for ev in qa.get("evidence") or []]
                questions.append(
                    Question(
                        id=f"{conv_id}-q{n_q}",
                        conversation_id=conv_id,
                        category=category,
                        question=qa["question"],
                        gold=qa["answer"],
                        category_id=category,
                        index=n_q,
                        meta={
                            "session": s,
                            # ask the system what it stored (the optional dump hook)
                            "dump": True,
                            "question_type": qa["question_type"],
                            # upstream's key_memory_points for the QA judge
                            "key_memory_points": "\n".join(evidence),
                        },
                    )
                )
        conversations.append(
            Conversation(
                id=conv_id,
                sessions=tuple(sessions),
                speakers=tuple(roles),
                meta={"uuid": user["uuid"], "variant": variant},
            )
        )
    return conversations, questions


@functools.lru_cache(maxsize=4)
def _build(paths: tuple[str, ...], variant: str, key: tuple[tuple[int, int], ...]) -> Parsed:
    del key  # cache key only (mtime and size)
    (path,) = paths
    raw = read_bytes(path, _HINT)
    conversations, questions = build(variant, parse_users(raw, path), path)
    return Parsed(tuple(conversations), tuple(questions), (hashlib.sha256(raw).hexdigest(),))


def score_halumem(question: Question, prediction: Prediction) -> dict[str, float]:
    """``token_f1`` of the answer against the reference answer: an offline stand-in only
    (upstream's QA figure is the LLM judge's Correct / Hallucination / Omission)."""
    return {"token_f1": token_f1(prediction.text, str(question.gold))}


@dataclass(frozen=True, eq=False)
class HaluMem:
    """HaluMem Medium and Long, read from ``DIR/halumem`` or downloaded."""

    name: str = "halumem"
    categories: Mapping[int | str, CategoryInfo] = field(default_factory=lambda: CATEGORIES)
    metrics: Sequence[str] = ("token_f1",)
    pass_metric: str = "token_f1"
    default_threshold: float = 0.5
    cluster_unit: str = "conversation"
    #: the release a local copy is checked against (the plugin's --memeval-accept-unpinned)
    pins: Pins = PINS

    def load(self, request: LoadRequest) -> Dataset:
        if request.variant and request.variant not in FILES:
            raise DatasetError(
                f"unknown variant {request.variant!r}; HaluMem has {', '.join(FILES)}"
            )
        wanted = (request.variant,) if request.variant else tuple(FILES)
        source = "data_dir"
        if request.data_dir is None:  # the pinned files, into the cache
            root = Path(request.cache_dir) / "data"
            for variant in wanted:
                what = f"the HaluMem {variant} file"
                fetch_pinned(self.pins, variant, root, what=what, progress=request.progress)
            request = replace(request, data_dir=root)
            source = f"huggingface:{self.pins.repo}@{self.pins.revision}"
        assert request.data_dir is not None
        folder = Path(request.data_dir) / FOLDER
        return load_parts(
            request,
            self.name,
            [(variant, (folder / FILES[variant],)) for variant in wanted],
            _build,
            f"no HaluMem file found. --memeval-data=DIR expects DIR/{FOLDER}/"
            f"{' or '.join(FILES[v] for v in wanted)}",
            {"source": source, "upstream": f"MemTensor/HaluMem@{UPSTREAM_COMMIT}"},
        )

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        return score_halumem(question, prediction)


BENCHMARK = HaluMem()


#: known differences from upstream and what the plugin does (the protocol card lists them)
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "memory-type-accuracy",
        "memory_type_accuracy raises KeyError on a record of another type and ZeroDivisionError "
        "on a type without records",
        "a record of another type is left out; a figure whose denominator is 0 is None",
        "halumem-judge",
    ),
    Deviation(
        "zero-denominator",
        "aggregate_eval_results raises ZeroDivisionError on an empty group",
        "the figure is None",
        "halumem-judge",
    ),
    Deviation(
        "no-dump",
        "every system's stored memories are read for the storage judgments",
        "a system without dump() gets its storage figures UNSCORED (QA still judged)",
        "the-dump-hook-what-a-system-stored",
    ),
)
