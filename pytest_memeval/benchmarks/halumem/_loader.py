"""HaluMem (arXiv 2511.03506): per user, sessions of dialogue with the memory points each session
should produce (``memory_points``: content, type, source, ``is_update``, ``original_memories``,
``importance``) and questions asked after some sessions (``question``, ``answer``, ``evidence``).

Upstream (``MemTensor/HaluMem``, pinned below) scores with ``eval/evaluation.py``: every judgment
is an LLM call (``eval/eval_tools.py`` prompts: memory integrity 0/1/2, memory accuracy 0/1/2 plus
"included in golden memories", update Correct / Hallucination / Omission / Other, QA Correct /
Hallucination / Omission); the figures are counts over those judgments
(``aggregate_eval_results``). Here each user is one conversation (sessions as turns, in file
order), each question one item whose category is its ``question_type``; the judgment arithmetic
is :func:`.scorer.aggregate`, equal to upstream's on recorded vectors (tests/halumem_upstream.py); the QA
judge is ``--memeval-protocol=halumem`` (protocols/: its prompts read from the pinned
``eval/eval_tools.py`` at run time, never copied), which also judges what each conversation's
system stored (``dump``; :func:`.judge.storage_plan` builds upstream's ``process_user`` inputs);
:mod:`._figures` pools the records into the run's figures.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ...errors import DatasetError, terminal_safe
from ...metrics import token_f1
from ...records import Conversation, Prediction, Question, Session, Turn
from .._base import (
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
from .._download import Pins, fetch_pinned
from ._pins import FILES, FOLDER, PINS, UPSTREAM

if TYPE_CHECKING:
    from ...judges import Judge
    from ...protocols import LoadedProtocol
    from ...records import QuestionResult
    from ...report import RunSummary

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "DATE_FORMAT",
    "DEVIATIONS",
    "QUESTION_TYPES",
    "HaluMem",
    "build",
    "parse_users",
    "score_halumem",
]

#: upstream's session date format (``eval_memzero.py``: ``"%b %d, %Y, %H:%M:%S"``)
DATE_FORMAT = "%b %d, %Y, %H:%M:%S"

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
            {"source": source, "upstream": UPSTREAM.label},
        )

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        return score_halumem(question, prediction)

    def official_judge(self, protocol: LoadedProtocol) -> Judge | None:
        """The judge of ``--memeval-protocol=halumem`` (:mod:`._judge`)."""
        from ._judge import official_judge

        return official_judge(protocol)

    def official_summary(
        self,
        protocol: LoadedProtocol,
        run: RunSummary,
        results: Sequence[QuestionResult],
        judge_metric: str | None,
    ) -> None:
        """The run's official figures under ``--memeval-protocol=halumem`` (:mod:`._figures`)."""
        from ._figures import official_summary

        official_summary(protocol, run, results, judge_metric)


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
