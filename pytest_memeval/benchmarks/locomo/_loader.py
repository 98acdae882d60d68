"""LoCoMo (ACL 2024): ``locomo10.json`` -> Conversation / Question records, and its offline scores.

Schema, quirks and scoring rules: docs/scoring.md#locomo (official per-category F1, plus the
A-Mem/Mem0 lexical metrics for categories 1-4 and evidence recall when the retrieved memories name
their sources). The demo benchmark uses the same schema and this parser.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..._files import not_a_file
from ...errors import DatasetError
from ...records import Conversation, Prediction, Question, Session, Turn
from .._base import (
    CategoryInfo,
    Dataset,
    Deviation,
    LoadRequest,
    check_surrogates,
    decode_text,
    find_lone_surrogate,
    parse_json,
    read_bytes,
)
from .._categories import shared_category
from .._download import Pins, download
from ._pins import LOCOMO_FILE, LOCOMO_PINS, LOCOMO_SHA256, LOCOMO_URL

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "DATE_FORMAT",
    "DEVIATIONS",
    "METRICS",
    "LocomoBenchmark",
    "ParsedLocomo",
    "build_dataset",
    "evidence_text",
    "find_lone_surrogate",
    "load_locomo_file",
    "parse_locomo",
    "score_locomo",
]

DATE_FORMAT = "%I:%M %p on %d %B, %Y"
METRICS: tuple[str, ...] = ("f1", "set_f1", "bleu1")


def _shared(name: str) -> str:
    return shared_category("locomo", name)


#: categories in the paper's column order (the official stats script prints keys [4, 1, 2, 3, 5])
CATEGORIES: Mapping[int | str, CategoryInfo] = MappingProxyType(
    {
        4: CategoryInfo(4, "single-hop", _shared("single-hop"), "answer stated in one turn"),
        1: CategoryInfo(
            1, "multi-hop", _shared("multi-hop"), "answer combines several turns or sessions"
        ),
        2: CategoryInfo(
            2, "temporal", _shared("temporal"), "when something happened (session dates)"
        ),
        3: CategoryInfo(
            3,
            "open-domain",
            _shared("open-domain"),
            "inference with world or commonsense knowledge",
        ),
        5: CategoryInfo(
            5,
            "adversarial",
            _shared("adversarial"),
            "unanswerable from the conversation; the answer must say it was not mentioned",
            in_overall=False,
        ),
    }
)
_CATEGORY_NAMES: dict[int, str] = {int(k): v.name for k, v in CATEGORIES.items()}

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D\d+:\d+")
#: ``Question.meta`` key: the ids of the question's conversation a memory may cite
SOURCE_IDS_META = "conversation_source_ids"
_TURN_META_KEYS = ("blip_caption", "query", "img_url")
_ESCAPED_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class ParsedLocomo:
    """The records of one LoCoMo-schema file (immutable; cached per file version)."""

    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]
    sha256: str


_HINT = "Fix the file or re-download the official locomo10.json."


def _err(source: str, record: str | None, fld: str | None, message: str) -> DatasetError:
    return DatasetError(f"{message}. {_HINT}", path=source, record=record, field=fld)


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


@functools.lru_cache(maxsize=1024)
def _parse_date(raw: str) -> datetime | None:
    try:
        return datetime.strptime(raw.strip(), DATE_FORMAT)
    except ValueError:
        return None


def _parse_turns(source: str, record: str, raw: object) -> tuple[Turn, ...]:
    if not isinstance(raw, list):
        raise _err(
            source, record, None, f"a session must be a list of turns, got {_type_name(raw)}"
        )
    turns: list[Turn] = []
    for j, item in enumerate(raw):
        if not isinstance(item, dict):
            raise _err(
                source, f"{record}[{j}]", None, f"a turn must be an object, got {_type_name(item)}"
            )
        try:
            dia_id = item["dia_id"]
            speaker = item["speaker"]
            text = item["text"]
        except KeyError as exc:
            raise _err(source, f"{record}[{j}]", str(exc.args[0]), "missing turn field") from None
        if type(dia_id) is not str or type(speaker) is not str or type(text) is not str:
            for name, value in (("dia_id", dia_id), ("speaker", speaker), ("text", text)):
                if not isinstance(value, str):
                    raise _err(
                        source,
                        f"{record}[{j}]",
                        name,
                        f"must be a string, got {_type_name(value)}",
                    )
        if len(item) > 3:
            meta = {
                k: tuple(v) if isinstance(v, list) else v
                for k in _TURN_META_KEYS
                if (v := item.get(k)) is not None
            }
            turns.append(Turn(dia_id, speaker, text, meta))
        else:
            turns.append(Turn(dia_id, speaker, text, {}))
    return tuple(turns)


def _parse_conversation(source: str, sample_id: str, raw: object) -> Conversation:
    if not isinstance(raw, dict):
        raise _err(
            source,
            sample_id,
            "conversation",
            f"must be an object with speaker_a, speaker_b and session_<N> keys, "
            f"got {_type_name(raw)}",
        )
    speakers: list[str] = []
    for key in ("speaker_a", "speaker_b"):
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise _err(
                source,
                sample_id,
                f"conversation.{key}",
                f"must be a string, got {_type_name(value)}",
            )
        speakers.append(value)
    numbered: list[tuple[int, str]] = []
    for key in raw:
        m = _SESSION_KEY.fullmatch(key)
        if m is not None:
            numbered.append((int(m.group(1)), key))
    numbered.sort()
    sessions: list[Session] = []
    for n, key in numbered:
        date_key = f"{key}_date_time"
        date_raw = raw.get(date_key)
        if date_raw is None:
            date_raw = ""
        elif not isinstance(date_raw, str):
            raise _err(
                source,
                sample_id,
                f"conversation.{date_key}",
                f"must be a date string like '1:56 pm on 8 May, 2023', got {_type_name(date_raw)}",
            )
        turns = _parse_turns(source, f"{sample_id} {key}", raw[key])
        sessions.append(
            Session(
                id=f"S{n}",
                date=_parse_date(date_raw) if date_raw else None,
                turns=turns,
                date_raw=date_raw,
            )
        )
    return Conversation(id=sample_id, sessions=tuple(sessions), speakers=tuple(speakers))


def evidence_text(conversation: Conversation, evidence: Sequence[str]) -> str:
    """The evidence turns as LoCoMo-Plus's judge reads them (``data/unified_input.py``,
    ``_parse_evidence_list`` then ``_evidence_to_text``): each id split on ``;``, ``Dn:k`` looked up
    as the k-th turn (by position) of ``session_n``, one ``Speaker：text`` line each (a
    full-width colon, as upstream writes it); ``[id] [Missing turn]`` for a turn that does not
    exist and ``[id] [Parse error]`` for an id that is not ``<x>n:k``."""
    sessions = {s.id: s.turns for s in conversation.sessions}
    lines: list[str] = []
    for raw in evidence:
        for part in str(raw).split(";"):
            evid = part.strip()
            if not evid:
                continue
            pieces = evid.split(":")
            try:
                if len(pieces) != 2:
                    raise ValueError(evid)
                session_idx = int(pieces[0].replace("D", ""))
                turn_idx = int(pieces[1])
            except ValueError:
                lines.append(f"[{evid}] [Parse error]")
                continue
            turns = sessions.get(f"S{session_idx}", ())
            if 0 <= turn_idx - 1 < len(turns):
                turn = turns[turn_idx - 1]
                lines.append(f"{turn.speaker}：{turn.text}")
            else:
                lines.append(f"[{evid}] [Missing turn]")
    return "\n".join(lines)


def _parse_questions(
    source: str,
    sample_id: str,
    raw: object,
    source_ids: frozenset[str] = frozenset(),
    conversation: Conversation | None = None,
) -> list[Question]:
    if not isinstance(raw, list):
        raise _err(source, sample_id, "qa", f"must be a list of questions, got {_type_name(raw)}")
    questions: list[Question] = []
    for i, item in enumerate(raw):
        record = f"{sample_id} qa[{i}]"
        if not isinstance(item, dict):
            raise _err(
                source, record, None, f"a question must be an object, got {_type_name(item)}"
            )
        text = item.get("question")
        if text is None:
            raise _err(source, record, "question", "missing field")
        if not isinstance(text, str):
            raise _err(source, record, "question", f"must be a string, got {_type_name(text)}")
        cat = item.get("category")
        if cat is None:
            raise _err(source, record, "category", "missing field (an integer 1-5)")
        if type(cat) is not int or cat not in _CATEGORY_NAMES:
            raise _err(source, record, "category", f"must be an integer 1-5, got {cat!r:.40}")
        gold = item.get("answer")
        if gold is None:
            if cat != 5:
                raise _err(
                    source,
                    record,
                    "answer",
                    f"missing (required for category {cat}; only category 5 may omit it)",
                )
        elif isinstance(gold, bool) or not isinstance(gold, str | int | float):
            raise _err(
                source, record, "answer", f"must be a string or a number, got {_type_name(gold)}"
            )
        elif isinstance(gold, float) and not math.isfinite(gold):
            raise _err(source, record, "answer", f"must be a finite number, got {gold!r}")
        evidence_raw = item.get("evidence")
        if evidence_raw is None:
            evidence: tuple[str, ...] = ()
        elif isinstance(evidence_raw, list) and all(type(e) is str for e in evidence_raw):
            evidence = tuple(evidence_raw)
        else:
            raise _err(
                source,
                record,
                "evidence",
                f"must be a list of dia_id strings like 'D1:3', got {evidence_raw!r:.60}",
            )
        meta: dict[str, Any] = {SOURCE_IDS_META: source_ids}
        adversarial = item.get("adversarial_answer")
        if adversarial is not None:
            meta["adversarial_answer"] = adversarial
        if any(_EVIDENCE_ID.fullmatch(e) is None for e in evidence):
            meta["malformed_evidence"] = True
        if conversation is not None:  # LoCoMo-Plus's judge reads the evidence as text
            meta["evidence_text"] = evidence_text(conversation, evidence)
        questions.append(
            Question(
                id=f"{sample_id}-q{i + 1}",
                conversation_id=sample_id,
                category=_CATEGORY_NAMES[cat],
                question=text,
                gold=gold,
                evidence=evidence,
                category_id=cat,
                abstention=cat == 5,
                index=i + 1,
                meta=meta,
                cluster=sample_id,  # questions about one conversation are not independent
            )
        )
    return questions


def _decode(data: bytes, source: str) -> Any:
    text = decode_text(data, source, "save the file as UTF-8 or re-download the official file")
    return parse_json(text, source, "re-download the file or fix it")


def parse_locomo(data: bytes, source: str) -> ParsedLocomo:
    """Parse the bytes of a LoCoMo-schema file. ``source`` names the file in error messages.

    Every problem raises ``DatasetError`` naming the file, the record (``conv-26 qa[12]``,
    ``conv-26 session_3[4]``) and the field.
    """
    top = _decode(data, source)
    if _ESCAPED_SURROGATE_BYTES.search(data):
        check_surrogates(top, source)
    if not isinstance(top, list):
        raise DatasetError(
            f"the top level must be a list of conversation samples, got {_type_name(top)}. {_HINT}",
            path=source,
        )
    conversations: list[Conversation] = []
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for k, sample in enumerate(top):
        if not isinstance(sample, dict):
            raise _err(
                source, f"[{k}]", None, f"a sample must be an object, got {_type_name(sample)}"
            )
        sample_id = sample.get("sample_id")
        if sample_id is None:
            raise _err(source, f"[{k}]", "sample_id", "missing field")
        if not isinstance(sample_id, str) or not sample_id:
            raise _err(
                source, f"[{k}]", "sample_id", f"must be a non-empty string, got {sample_id!r:.40}"
            )
        if sample_id in seen:
            raise _err(
                source,
                f"[{k}]",
                "sample_id",
                f"duplicate sample_id {sample_id!r} (first used by [{seen[sample_id]}])",
            )
        seen[sample_id] = k
        for required in ("conversation", "qa"):
            if required not in sample:
                raise _err(source, sample_id, required, "missing field")
        conversation = _parse_conversation(source, sample_id, sample["conversation"])
        conversations.append(conversation)
        # the ids a memory may cite for evidence recall: this conversation's turns and sessions
        source_ids = frozenset(
            [s.id for s in conversation.sessions]
            + [t.id for s in conversation.sessions for t in s.turns]
        )
        questions.extend(
            _parse_questions(source, sample_id, sample["qa"], source_ids, conversation)
        )
    return ParsedLocomo(
        conversations=tuple(conversations),
        questions=tuple(questions),
        sha256=hashlib.sha256(data).hexdigest(),
    )


@functools.lru_cache(maxsize=8)
def _parse_file_cached(path: str, mtime_ns: int, size: int) -> ParsedLocomo:
    del mtime_ns, size  # cache key only: a changed file is parsed again
    return parse_locomo(read_bytes(path, "pass the LoCoMo JSON file"), path)


def load_locomo_file(path: Path) -> ParsedLocomo:
    """Parse a LoCoMo-schema file once per process and file version (path, mtime, size)."""
    try:
        resolved = path.resolve()
        st = resolved.stat()
    except OSError as exc:
        raise DatasetError(f"cannot read the file: {exc.strerror or exc}", path=str(path)) from None
    return _parse_file_cached(str(resolved), st.st_mtime_ns, st.st_size)


def build_dataset(
    benchmark: str,
    parsed: ParsedLocomo,
    path: Path,
    sha_key: str,
    meta: dict[str, Any] | None = None,
) -> Dataset:
    """A fresh (mutable) Dataset around cached immutable records."""
    return Dataset(
        benchmark=benchmark,
        questions=list(parsed.questions),
        files=[path],
        sha256={sha_key: parsed.sha256},
        conversations={c.id: c for c in parsed.conversations},
        meta=dict(meta or {}),
    )


# --------------------------------------------------------------------------- scoring


def score_locomo(question: Question, prediction: Prediction) -> dict[str, float]:
    """Offline LoCoMo scores for one prediction (shared by ``locomo`` and ``demo``).

    ``f1`` is the official per-category score (unrounded); ``set_f1`` and ``bleu1`` (Mem0/A-Mem)
    are omitted for category 5, which that protocol skips; ``evidence_recall`` is added when any
    retrieved memory carries ``source_ids`` (ids in retrieval order, duplicates dropped; only
    ids that are turns or sessions of the question's conversation count, so a memory claiming
    every id it can think of gains nothing from the ids that do not exist).
    """
    from ...metrics import bleu1, evidence_recall, locomo_f1, set_f1

    cat = question.category_id
    if not isinstance(cat, int):
        raise ValueError(f"LoCoMo question {question.id} has no integer category_id: {cat!r}")
    pred = prediction.text
    scores: dict[str, float] = {"f1": float(locomo_f1(pred, question.gold, cat))}
    if cat != 5:
        gold = question.gold
        scores["set_f1"] = float(set_f1(pred, gold))
        scores["bleu1"] = float(bleu1(pred, gold))
    if any(m.source_ids for m in prediction.memories):
        retrieved = list(dict.fromkeys(s for m in prediction.memories for s in m.source_ids))
        valid = question.meta.get(SOURCE_IDS_META)
        scores["evidence_recall"] = float(
            evidence_recall(retrieved, question.evidence, valid_ids=valid)
        )
    return scores


# --------------------------------------------------------------------------- benchmark


def _missing_file_error(path: Path, data_dir: Path) -> DatasetError:
    return DatasetError(
        f"LoCoMo file not found (looked in {path}). --memeval-data=DIR expects the layout "
        f"DIR/{LOCOMO_FILE} (here DIR is {data_dir}); download it from {LOCOMO_URL}, or drop "
        "--memeval-data / MEMEVAL_DATA_DIR to let pytest-memeval download it into its cache.",
        path=str(path),
    )


@dataclass(frozen=True, eq=False)
class LocomoBenchmark:
    """The LoCoMo benchmark. ``url`` / ``sha256`` pin the official file (replaceable in tests)."""

    name: str = "locomo"
    categories: Mapping[int | str, CategoryInfo] = field(default_factory=lambda: CATEGORIES)
    metrics: Sequence[str] = METRICS
    pass_metric: str = "f1"
    #: the official pipeline rounds each question's F1 to 3 decimals before averaging
    #: (docs/scoring.md#locomo-aggregation)
    round3_metrics: tuple[str, ...] = ("f1",)
    #: statistics resample conversations: its questions share one (issue 15)
    cluster_unit: str = "conversation"
    url: str = LOCOMO_URL
    sha256: str = LOCOMO_SHA256
    timeout: float = 30.0
    #: the release a local copy is checked against (the plugin's --memeval-accept-unpinned)
    pins: Pins = LOCOMO_PINS

    def load(self, request: LoadRequest) -> Dataset:
        meta: dict[str, Any] = {}
        if request.data_dir is not None:
            path = Path(request.data_dir) / LOCOMO_FILE
            if not path.is_file():
                odd = not_a_file(path)
                if odd is not None:
                    raise DatasetError(f"{odd}; expected the LoCoMo JSON file", path=str(path))
                raise _missing_file_error(path, Path(request.data_dir))
            meta["source"] = "data_dir"
        else:
            path = Path(request.cache_dir) / "data" / LOCOMO_FILE
            download(
                self.url,
                path,
                self.sha256,
                timeout=self.timeout,
                what="the LoCoMo file",
                layout=f"DIR/{LOCOMO_FILE}",
                progress=request.progress,
                hash_cache=Path(request.cache_dir) / "data" / ".sha256-cache",
            )
            meta["source"] = self.url
        parsed = load_locomo_file(path)
        if parsed.sha256 != self.sha256:
            meta["sha256_mismatch"] = True
            meta["expected_sha256"] = self.sha256
        return build_dataset(self.name, parsed, path, LOCOMO_FILE, meta)

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        return score_locomo(question, prediction)

    def preload(self) -> None:
        """BLEU-1's Punkt English model (:mod:`~pytest_memeval.metrics._word_tokenize`), read and
        checked now: the plugin calls this once in the main thread, before any judge or
        answerer thread. A missing or altered model raises ``PunktUnavailableError`` (a
        RuntimeError) with its fix."""
        from ...metrics import word_tokenizer

        word_tokenizer()

    def tokenizer_provenance(self) -> dict[str, Any]:
        """How BLEU-1 tokenises (the pinned nltk behaviour, the Punkt model): the report's
        provenance ``bleu1_tokenizer``."""
        from ...metrics import provenance

        return provenance()


BENCHMARK = LocomoBenchmark()


#: known differences from upstream and what the plugin does (the protocol card lists them)
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "category-5",
        "category 5 (adversarial) items often have no `answer`; upstream's scorer raises KeyError "
        "on them, and the Mem0 judge never judges them",
        "scored by the keyword rule only ('no information available' / 'not mentioned'), the gold "
        "never read; judges skip it (no score), overall_all includes it, overall excludes it",
        "locomo-per-category-score",
    ),
    Deviation(
        "category-3-gold",
        "open-domain golds hold 'answer; rationale'",
        "token F1 against the gold cut at its first ';' (upstream's rule); Set-F1/BLEU-1 keep "
        "the whole gold, as Mem0's code does",
        "set-f1-exact-match-and-bleu-1",
    ),
)
