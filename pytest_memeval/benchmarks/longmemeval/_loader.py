"""LongMemEval (ICLR 2025): the original JSON schema, indexed so a 277 MB file stays cheap.

Each question is its own conversation (its dated haystack sessions). ``load`` streams the file once:
it parses one item at a time, validates it, keeps the ``Question`` and the item's byte range, and
drops the haystack. ``Dataset.conversation_loader(question_id)`` re-reads just that byte range.
Peak memory is therefore one item plus the read buffer, not a multiple of the file
(``perf/gen_longmemeval.py --measure FILE`` prints it).

Scoring here is offline only: ``f1`` is a LoCoMo-style token F1 between prediction and
``str(answer)`` -- an offline *proxy*, not the official LongMemEval metric (the official one is the
per-type yes/no judge, docs/scoring.md#longmemeval-judge, run by the judge layer). Retrieval metrics
follow docs/scoring.md#retrieval-metrics at session level when the memories carry ``source_ids``.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._files import not_a_file
from ...errors import DatasetError
from ...records import Conversation, Prediction, Question, Session, Turn
from .._base import (
    ESCAPED_SURROGATE,
    CategoryInfo,
    Dataset,
    Deviation,
    LoadRequest,
    check_surrogates,
    json_value_error,
    named_categories,
)
from .._download import Pins, fetch_pinned
from ._pins import HF_URL, NAME, PINS

if TYPE_CHECKING:
    from ...judges import Judge
    from ...protocols import LoadedProtocol

__all__ = [
    "BENCHMARK",
    "DEVIATIONS",
    "QUESTION_TYPES",
    "VARIANT_FILES",
    "LongMemEval",
    "iter_json_array",
    "parse_longmemeval_date",
]

#: variant -> accepted file names under ``DATA/longmemeval/`` (first one is downloaded)
VARIANT_FILES: Mapping[str, tuple[str, ...]] = {
    "oracle": ("longmemeval_oracle.json",),
    "s": ("longmemeval_s_cleaned.json", "longmemeval_s.json"),
    "m": ("longmemeval_m_cleaned.json", "longmemeval_m.json"),
}
DEFAULT_VARIANT = "s"

#: question_type -> description, in the order of the paper's tables
QUESTION_TYPES: Mapping[str, str] = {
    "single-session-user": "recall a fact the user stated in one session",
    "single-session-assistant": "recall something the assistant said in one session",
    "single-session-preference": "personalised answer from the user's preferences (gold: a rubric)",
    "multi-session": "aggregate or compare facts across sessions",
    "temporal-reasoning": "reason about dates and time spans of events",
    "knowledge-update": "use the latest value of a fact that changed",
}

RETRIEVAL_KS = (5, 10)
METRICS = ("f1", "recall_all@5", "ndcg_any@5", "recall_all@10", "ndcg_any@10")

_WEEKDAY = re.compile(r"\s*\([^)]*\)\s*")
_DATE_FORMAT = "%Y/%m/%d %H:%M"
_CHUNK = 1 << 18  # bytes read per step while indexing (grows for bigger items)
_LAYOUT = "DIR/longmemeval/longmemeval_{oracle,s_cleaned,m_cleaned}.json"


def parse_longmemeval_date(raw: str) -> datetime | None:
    """``2023/05/30 (Tue) 23:40`` -> datetime (the parenthesised weekday is dropped); None if it
    does not parse."""
    text = _WEEKDAY.sub(" ", raw).strip()
    try:
        return datetime.strptime(text, _DATE_FORMAT)
    except ValueError:
        return None


# --------------------------------------------------------------------------- streaming index


def iter_json_array(
    path: Path, chunk_size: int = _CHUNK, digest: Any = None
) -> Iterator[tuple[Any, int, int]]:
    """Yield ``(item, byte_offset, byte_length)`` for each element of the top-level JSON array in
    ``path``, reading ``chunk_size`` bytes at a time (one element in memory at once).

    A leading UTF-8 BOM is accepted. Raises DatasetError (naming the element index and byte offset)
    on malformed or truncated input. ``digest`` (a ``hashlib`` object) is fed every byte read: when
    the iteration completes it has seen the whole file (the end is checked for trailing data), so
    the file is hashed in the same pass that parses it.
    """
    decoder = json.JSONDecoder()
    incremental = codecs.getincrementaldecoder("utf-8")()
    buf = ""
    buf_byte0 = 0  # byte offset of buf[0] in the file
    read_bytes = 0  # bytes read from the file so far
    eof = False
    path_s = str(path)

    with open(path, "rb") as fh:

        def fill() -> bool:
            nonlocal buf, eof, read_bytes
            if eof:
                return False
            data = fh.read(max(chunk_size, len(buf)))  # geometric growth for big items
            read_bytes += len(data)
            if digest is not None:
                digest.update(data)
            if not data:
                eof = True
                try:
                    buf += incremental.decode(b"", final=True)
                except UnicodeDecodeError as exc:
                    raise DatasetError(
                        f"file is not valid UTF-8 ({exc.reason}); re-download it",
                        path=path_s,
                    ) from None
                return False
            try:
                buf += incremental.decode(data)
            except UnicodeDecodeError as exc:
                # exc.start counts from the decoder's pending bytes (at most 3) plus this chunk
                near = max(0, read_bytes - len(data) + exc.start - 3)
                raise DatasetError(
                    f"file is not valid UTF-8 near byte {near} ({exc.reason}); re-download it",
                    path=path_s,
                ) from None
            return True

        def consume(n_chars: int) -> None:
            nonlocal buf, buf_byte0
            head = buf[:n_chars]
            buf_byte0 += len(head) if head.isascii() else len(head.encode("utf-8"))
            buf = buf[n_chars:]

        def skip_ws() -> str:
            """Drop leading whitespace; return the next char ('' at end of file)."""
            while True:
                stripped = buf.lstrip(" \t\r\n")
                consume(len(buf) - len(stripped))
                if buf:
                    return buf[0]
                if not fill():
                    return ""

        fill()
        if buf.startswith("\ufeff"):
            consume(1)
        if skip_ws() != "[":
            raise DatasetError(
                "expected a JSON list of question objects (the file does not start with '['); "
                "use the original LongMemEval file",
                path=path_s,
            )
        consume(1)

        def close() -> None:
            """Consume the closing ']' and check that only whitespace follows it."""
            consume(1)
            if skip_ws() != "":
                raise DatasetError(
                    f"unexpected data after the closing ']' at byte {buf_byte0} (two files "
                    "joined, or a damaged download); use the original LongMemEval file",
                    path=path_s,
                )

        index = 0
        want = 0  # characters to have buffered before parsing the next item
        if skip_ws() == "]":
            close()
            return
        while True:
            if skip_ws() == "":
                raise DatasetError(
                    f"file ends inside the list after {index} items (truncated download?); "
                    "delete it and download it again",
                    path=path_s,
                    record=f"#{index}",
                )
            # items have similar sizes: read enough for one like the last before parsing, so a
            # failed (incomplete) parse and its retry are rare
            while len(buf) < want and fill():
                pass
            while True:
                try:
                    item, end = decoder.raw_decode(buf)
                    break
                except json.JSONDecodeError as exc:
                    if not fill():
                        raise DatasetError(
                            f"invalid or truncated JSON at byte {buf_byte0 + exc.pos} "
                            f"({exc.msg}); delete the file and download it again",
                            path=path_s,
                            record=f"#{index}",
                        ) from None
                except RecursionError:
                    raise DatasetError(
                        f"invalid JSON near byte {buf_byte0}: arrays or objects nested too "
                        "deeply; use the original LongMemEval file",
                        path=path_s,
                        record=f"#{index}",
                    ) from None
                except ValueError as exc:  # e.g. an integer literal over Python's digit limit
                    raise DatasetError(
                        f"invalid JSON near byte {buf_byte0} ({json_value_error(exc)}); use the "
                        "original LongMemEval file",
                        path=path_s,
                        record=f"#{index}",
                    ) from None
            head = buf[:end]
            if "\\u" in head and ESCAPED_SURROGATE.search(head):
                check_surrogates(
                    item, path_s, record=f"#{index}", hint="use the original LongMemEval file"
                )
            length = len(head) if head.isascii() else len(head.encode("utf-8"))
            want = end + end // 4
            yield item, buf_byte0, length
            consume(end)
            index += 1
            nxt = skip_ws()
            if nxt == ",":
                consume(1)
                continue
            if nxt == "]":
                close()
                return
            raise DatasetError(
                f"expected ',' or ']' after item at byte {buf_byte0}, found "
                f"{nxt or 'end of file'!r} (truncated or malformed file); download it again",
                path=path_s,
                record=f"#{index}",
            )


# --------------------------------------------------------------------------- item -> records


def _require(item: Mapping[str, Any], key: str, types: type | tuple[type, ...], ctx: _Ctx) -> Any:
    if key not in item:
        raise DatasetError(
            "missing key; every LongMemEval item needs question_id, question_type, question, "
            "answer, question_date, haystack_session_ids, haystack_dates, haystack_sessions",
            path=ctx.path,
            record=ctx.record,
            field=key,
        )
    value = item[key]
    if not isinstance(value, types) or isinstance(value, bool):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise DatasetError(
            f"expected {names}, got {type(value).__name__}; the file does not follow the "
            "LongMemEval schema",
            path=ctx.path,
            record=ctx.record,
            field=key,
        )
    return value


@dataclass
class _Ctx:
    path: str
    record: str


def _str_list(item: Mapping[str, Any], key: str, ctx: _Ctx) -> list[str]:
    values = _require(item, key, list, ctx)
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise DatasetError(
                f"element {i} is {type(v).__name__}, expected a string",
                path=ctx.path,
                record=ctx.record,
                field=key,
            )
    return list(values)


def _question_from_item(item: object, path: str, position: int) -> Question:
    ctx = _Ctx(path=path, record=f"#{position}")
    if not isinstance(item, dict):
        raise DatasetError(
            f"expected a question object, got {type(item).__name__}",
            path=path,
            record=ctx.record,
        )
    qid = _require(item, "question_id", str, ctx)
    if not qid.strip() or not qid.isprintable():
        raise DatasetError(
            f"question_id {qid!r} must be non-empty, without control characters",
            path=path,
            record=ctx.record,
            field="question_id",
        )
    ctx.record = f"{qid} (#{position})"
    qtype = _require(item, "question_type", str, ctx)
    if qtype not in QUESTION_TYPES:
        raise DatasetError(
            f"unknown question_type {qtype!r}; expected one of {', '.join(QUESTION_TYPES)}",
            path=path,
            record=ctx.record,
            field="question_type",
        )
    text = _require(item, "question", str, ctx)
    answer = _require(item, "answer", (str, int, float), ctx)
    if isinstance(answer, float) and not math.isfinite(answer):
        raise DatasetError(
            f"must be a string or a finite number, got {answer!r}",
            path=path,
            record=ctx.record,
            field="answer",
        )
    date_raw = _require(item, "question_date", str, ctx)
    session_ids = _str_list(item, "haystack_session_ids", ctx)
    dates = _str_list(item, "haystack_dates", ctx)
    sessions = _require(item, "haystack_sessions", list, ctx)
    if not len(session_ids) == len(dates) == len(sessions):
        raise DatasetError(
            f"haystack_session_ids ({len(session_ids)}), haystack_dates ({len(dates)}) and "
            f"haystack_sessions ({len(sessions)}) must have the same length",
            path=path,
            record=ctx.record,
            field="haystack_dates",
        )
    if len(set(session_ids)) != len(session_ids):
        dup = next(s for s in session_ids if session_ids.count(s) > 1)
        raise DatasetError(
            f"duplicate session id {dup!r}",
            path=path,
            record=ctx.record,
            field="haystack_session_ids",
        )
    evidence = _str_list(item, "answer_session_ids", ctx) if "answer_session_ids" in item else []
    correct: list[str] = []
    for sid, sess in zip(session_ids, sessions, strict=True):
        turns = _check_session(sess, sid, ctx)
        # docs/scoring.md#longmemeval-records: an 'answer' session with no user turn marked
        # has_answer counts as 'noans'
        if "answer" in sid and any(t.get("role") == "user" and t.get("has_answer") for t in turns):
            correct.append(sid)
    return Question(
        id=qid,
        conversation_id=qid,
        category=qtype,
        category_id=qtype,
        question=text,
        gold=str(answer),
        evidence=tuple(evidence),
        question_date=parse_longmemeval_date(date_raw),
        question_date_raw=date_raw,
        abstention="_abs" in qid,
        index=position,
        meta={
            "question_type": qtype,
            "haystack_session_ids": tuple(session_ids),
            "retrieval_correct_ids": tuple(dict.fromkeys(correct)),
        },
        cluster=qid,  # each question has its own haystack
    )


def _check_session(sess: object, sid: str, ctx: _Ctx) -> list[dict[str, Any]]:
    if not isinstance(sess, list):
        raise DatasetError(
            f"session {sid!r} is {type(sess).__name__}, expected a list of turns",
            path=ctx.path,
            record=ctx.record,
            field="haystack_sessions",
        )
    for k, turn in enumerate(sess, start=1):
        if (
            not isinstance(turn, dict)
            or not isinstance(turn.get("role"), str)
            or not isinstance(turn.get("content"), str)
        ):
            raise DatasetError(
                f"session {sid!r} turn {k} must be an object with string 'role' and 'content'",
                path=ctx.path,
                record=ctx.record,
                field="haystack_sessions",
            )
    return sess


def conversation_from_item(item: Mapping[str, Any]) -> Conversation:
    """Build the Conversation of one (already validated) LongMemEval item."""
    qid = str(item["question_id"])
    sessions: list[Session] = []
    for sid, date_raw, turns in zip(
        item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True
    ):
        sessions.append(
            Session(
                id=sid,
                date=parse_longmemeval_date(date_raw),
                date_raw=date_raw,
                turns=tuple(
                    Turn(
                        id=f"{sid}:{k}",
                        speaker=t["role"],
                        text=t["content"],
                        meta={"has_answer": bool(t.get("has_answer", False))},
                    )
                    for k, t in enumerate(turns, start=1)
                ),
            )
        )
    return Conversation(
        id=qid,
        sessions=tuple(sessions),
        speakers=("user", "assistant"),
        meta={"question_type": item.get("question_type")},
    )


@dataclass
class _ItemIndex:
    """Callable ``question_id -> Conversation`` that re-reads one item's byte range."""

    path: Path
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)

    def __call__(self, question_id: str) -> Conversation:
        span = self.spans.get(question_id)
        if span is None:
            raise KeyError(question_id)
        offset, length = span
        with open(self.path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(length)
        try:
            item = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DatasetError(
                f"item changed on disk since it was indexed ({exc}); rerun",
                path=str(self.path),
                record=question_id,
            ) from None
        if not isinstance(item, dict) or item.get("question_id") != question_id:
            raise DatasetError(
                "item changed on disk since it was indexed; rerun",
                path=str(self.path),
                record=question_id,
            )
        return conversation_from_item(item)


# --------------------------------------------------------------------------- benchmark


def _resolve_file(request: LoadRequest, pins: Pins = PINS) -> tuple[Path, str]:
    variant = request.variant or DEFAULT_VARIANT
    if variant.lower().endswith(".json"):
        path = Path(variant).expanduser()
        if not path.is_absolute() and request.data_dir is not None:
            candidate = request.data_dir / NAME / path
            if candidate.is_file():
                path = candidate
        if not path.is_file():
            odd = not_a_file(path)
            if odd is not None:
                raise DatasetError(f"{odd}; --memeval-variant names a JSON file", path=str(path))
            raise DatasetError(
                "no such file; --memeval-variant may name a LongMemEval JSON file "
                "(absolute, relative to the current folder, or to DIR/longmemeval/)",
                path=str(path),
            )
        return path, variant
    key = variant.lower()
    if key not in VARIANT_FILES:
        raise DatasetError(
            f"unknown LongMemEval variant {variant!r}: use oracle, s, m or a path to a .json file"
        )
    names = VARIANT_FILES[key]
    if request.data_dir is not None:
        folder = request.data_dir / NAME
        for name in names:
            if (folder / name).is_file():
                return folder / name, key
            odd = not_a_file(folder / name)
            if odd is not None:
                raise DatasetError(
                    f"{odd}; expected the LongMemEval JSON file", path=str(folder / name)
                )
        raise DatasetError(
            f"LongMemEval {key!r} file not found (looked for {', '.join(names)}); download it from "
            f"{HF_URL.format(file=names[0])} or point --memeval-data at a folder laid out as "
            f"{_LAYOUT}",
            path=str(folder),
        )
    dest = fetch_pinned(
        pins,
        key,
        request.cache_dir / "data",
        what=f"the LongMemEval {key!r} file",
        progress=request.progress,
    )
    return dest, key


@dataclass(frozen=True)
class LongMemEval:
    """The LongMemEval benchmark (``--memeval=longmemeval --memeval-variant=oracle|s|m|FILE.json``).

    ``pass_metric`` is ``f1`` for now: the official pass rule is the per-type yes/no ``judge``
    (docs/scoring.md#longmemeval-judge); until a judge runs, the offline token-F1 proxy decides
    CORRECT / WRONG.
    """

    name: str = NAME
    categories: Mapping[int | str, CategoryInfo] = field(
        default_factory=lambda: named_categories(NAME, QUESTION_TYPES)
    )
    metrics: Sequence[str] = METRICS
    pass_metric: str = "f1"
    #: each question has its own haystack: the questions are the independent units
    cluster_unit: str = "question"
    #: the release a local copy is checked against (the plugin's --memeval-accept-unpinned)
    pins: Pins = PINS

    def load(self, request: LoadRequest) -> Dataset:
        path, variant = _resolve_file(request, self.pins)
        path_s = str(path)
        digest = hashlib.sha256()  # filled by the parsing pass: the file is read once
        index = _ItemIndex(path=path)
        questions: list[Question] = []
        for position, (item, offset, length) in enumerate(iter_json_array(path, digest=digest)):
            question = _question_from_item(item, path_s, position)
            if question.id in index.spans:
                raise DatasetError(
                    "duplicate question_id; every question_id must be unique in the file",
                    path=path_s,
                    record=f"{question.id} (#{position})",
                    field="question_id",
                )
            index.spans[question.id] = (offset, length)
            questions.append(question)
        return Dataset(
            benchmark=NAME,
            questions=questions,
            files=[path],
            sha256={path.name: digest.hexdigest()},
            variant=variant,
            conversation_loader=index,
            meta={"file_bytes": os.path.getsize(path)},
        )

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        """Offline metrics: ``f1`` (LoCoMo-style token F1 vs ``str(answer)``, an offline proxy for
        the official judge) and, when memories carry ``source_ids`` and the item is not an
        abstention item, session-level recall_all@k / ndcg_any@k for k = 5, 10
        (docs/scoring.md#longmemeval-offline-scores)."""
        from ...metrics import ndcg_any_at_k, recall_all_at_k, token_f1

        scores: dict[str, float] = {"f1": float(token_f1(prediction.text, str(question.gold)))}
        if question.abstention:
            return scores
        ranked = ranked_session_ids(prediction)
        if not ranked:
            return scores
        correct = list(question.meta.get("retrieval_correct_ids", question.evidence))
        corpus = list(question.meta.get("haystack_session_ids", ())) or None
        for k in RETRIEVAL_KS:
            scores[f"recall_all@{k}"] = float(recall_all_at_k(ranked, correct, k))
            scores[f"ndcg_any@{k}"] = float(ndcg_any_at_k(ranked, correct, k, corpus_ids=corpus))
        return scores

    def official_judge(self, protocol: LoadedProtocol) -> Judge | None:
        """The judge of ``--memeval-protocol=longmemeval`` (:mod:`._judge`)."""
        from ._judge import official_judge

        return official_judge(protocol)


def ranked_session_ids(prediction: Prediction) -> list[str]:
    """Session ids in retrieval order from the memories' ``source_ids`` (a turn id
    ``<session>:<k>`` counts for its session), first occurrence kept."""
    seen: dict[str, None] = {}
    for memory in prediction.memories:
        for source in memory.source_ids:
            sid, sep, k = source.rpartition(":")
            seen.setdefault(sid if sep and k.isdigit() else source, None)
    return list(seen)


BENCHMARK = LongMemEval()


#: known differences from upstream and what the plugin does (the protocol card lists them)
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "noans-sessions",
        "an `answer` session without a has_answer user turn is renamed `noans`",
        "such a session is not a retrieval target (the same set of targets as upstream)",
        "longmemeval-records",
    ),
    Deviation(
        "offline-f1-proxy",
        "the official metric is the per-type LLM judge",
        "`f1` is an offline proxy and the pass metric only until a judge runs",
        "longmemeval-offline-scores",
    ),
)
