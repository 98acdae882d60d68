"""BEAM (ICLR 2026): probing questions over very long chats, one item per probing question.

Layouts read (docs/scoring.md#beam-records), all under ``DATA/beam/``:

- GitHub layout, sizes 100K / 500K / 1M: ``<size>/<n>/chat.json`` (a list of batches
  ``{batch_number, turns: [[message, ...], ...], time_anchor}``) and
  ``<size>/<n>/probing_questions/probing_questions.json``. ``chats/<size>/<n>`` (a clone of the
  repository) is accepted too.
- 10M plan layout: ``10M/<n>/chat.json`` as a list of ``{"plan-k": [batch, ...]}`` objects, or,
  when that file is absent, the per-plan files ``10M/<n>/plan-<k>/chat.json`` in plan order.
- Hugging Face rows exported to JSON lines (``DATA/beam/<size>.jsonl``, one row per conversation
  with ``conversation_id``, ``chat`` -- a 2-D list batch -> messages -- and ``probing_questions``
  as a Python-literal string). Those strings are parsed with ``ast.literal_eval`` only, after a
  size check; nothing is ever evaluated.

``*.pickle`` files are never opened: only the file names above are read.

One Session per batch (``batch-<k>``, or ``plan-<p>/batch-<k>`` in 10M), dated by the batch's
time anchor (``March-15-2024``, format ``%B-%d-%Y``); one Turn per message with the message's
integer ``id`` as its id (so ``source_chat_ids`` in the questions are turn ids; per-plan 10M
files, whose ids restart at 0, get ``plan-<p>/<id>``).

Scoring here is offline only: ``f1`` is LoCoMo-style token F1 against the gold field (a proxy;
the official metric is the rubric-nugget judge), and for event_ordering ``ordering_tau`` (BEAM's
tau_norm, the value its table averages) and ``ordering`` (tau_norm x F1), from the answer's lines
aligned to the rubric by case-insensitive equality (the official alignment asks an LLM).
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
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
    file_sha256,
    json_value_error,
    named_categories,
    parse_json,
    read_data,
)

if TYPE_CHECKING:
    from ...judges import Judge
    from ...protocols import LoadedProtocol
    from ...records import QuestionResult
    from ...report import RunSummary

__all__ = [
    "ABILITIES",
    "BENCHMARK",
    "DEVIATIONS",
    "GOLD_FIELDS",
    "MAX_LITERAL_CHARS",
    "SIZES",
    "Beam",
    "parse_python_literal",
    "parse_time_anchor",
]

NAME = "beam"
SIZES = ("100K", "500K", "1M", "10M")
DEFAULT_SIZE = "100K"

#: ability -> (gold field, description), in the official file order (docs/scoring.md#beam-records)
ABILITIES: Mapping[str, tuple[str, str]] = {
    "abstention": ("ideal_response", "say the chat does not contain the answer"),
    "contradiction_resolution": ("ideal_answer", "notice and resolve contradicting statements"),
    "event_ordering": ("answer", "list mentioned events in order"),
    "information_extraction": ("answer", "recall a stated detail"),
    "instruction_following": ("expected_compliance", "follow an instruction given earlier"),
    "knowledge_update": ("answer", "use the updated value of a fact"),
    "multi_session_reasoning": ("answer", "combine facts from several sessions"),
    "preference_following": ("expected_compliance", "respect a stated preference"),
    "summarization": ("ideal_summary", "summarise the discussion"),
    "temporal_reasoning": ("answer", "reason about dates and durations"),
}
GOLD_FIELDS: Mapping[str, str] = {k: v[0] for k, v in ABILITIES.items()}

METRICS = ("f1", "ordering", "ordering_tau")
#: longest Python-literal string accepted from the Hugging Face layout (characters)
MAX_LITERAL_CHARS = 20_000_000
_TIME_FORMAT = "%B-%d-%Y"
_PLAN_KEY = re.compile(r"^plan-(\d+)$")
#: a Hugging Face row's conversation_id (it becomes part of every question id)
_ROW_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_HOW_TO_GET = (
    "BEAM is not downloaded automatically yet: clone https://github.com/mohammadtavakoli78/BEAM "
    "and pass --memeval-data=DIR where DIR/beam/<size>/<n>/chat.json and "
    "DIR/beam/<size>/<n>/probing_questions/probing_questions.json exist (DIR/beam may also be a "
    "link to the repository's chats/ folder)"
)


def parse_time_anchor(raw: str) -> datetime | None:
    """``March-15-2024`` -> datetime; None when it does not parse."""
    try:
        return datetime.strptime(raw.strip(), _TIME_FORMAT)
    except ValueError:
        return None


def parse_python_literal(text: str, *, path: str, record: str, field: str) -> Any:
    """Parse a Python-literal string (the Hugging Face copy's ``probing_questions``) with
    ``ast.literal_eval`` only, refusing strings longer than MAX_LITERAL_CHARS."""
    if len(text) > MAX_LITERAL_CHARS:
        raise DatasetError(
            f"Python-literal string of {len(text)} characters exceeds the limit of "
            f"{MAX_LITERAL_CHARS}; use the GitHub layout instead",
            path=path,
            record=record,
            field=field,
        )
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise DatasetError(
            f"not a valid Python literal ({type(exc).__name__}); re-export the row",
            path=path,
            record=record,
            field=field,
        ) from None
    check_surrogates(value, str(path), record=f"{record}.{field}")
    return value


def read_run_json(path: Path) -> Any:
    _, text = read_data(path, "fetch the file again", missing=f"file not found. {_HOW_TO_GET}")
    data = parse_json(text, str(path), "fetch the file again")
    if ESCAPED_SURROGATE.search(text):
        check_surrogates(data, str(path))
    return data


def _loads_line(line: str, path: Path, line_number: int) -> object:
    """One JSON-lines row (or, with ``line_number`` 1, a whole ``.json`` rows file); errors name
    the file and the line."""
    try:
        data = json.loads(line)
        if ESCAPED_SURROGATE.search(line):
            check_surrogates(data, str(path), record=f"line {line_number}")
        return data
    except json.JSONDecodeError as exc:
        line_number += exc.lineno - 1  # a multi-line document: the line the error is on
        problem = f"{exc.msg} at column {exc.colno}"
    except RecursionError:
        problem = "arrays or objects nested too deeply"
    except ValueError as exc:
        problem = json_value_error(exc)
    raise DatasetError(
        f"invalid or truncated JSON ({problem}); export the rows again",
        path=str(path),
        record=f"line {line_number}",
    )


def _flatten_ids(value: object) -> list[str]:
    """Message ids named by ``source_chat_ids`` (an int list, or a dict of int lists)."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, str):
        return [value] if value.strip().isdigit() else []
    if isinstance(value, Mapping):
        return [i for v in value.values() for i in _flatten_ids(v)]
    if isinstance(value, Sequence):
        return [i for v in value for i in _flatten_ids(v)]
    return []


# --------------------------------------------------------------------------- questions


def questions_from_probing(
    probing: object, *, size: str, n: str, path: str, conversation_id: str
) -> list[Question]:
    """Validate one ``probing_questions`` object and turn it into Questions (10 abilities, in the
    official key order; position ``i`` is 0-based as in BEAM's own answer alignment)."""
    if isinstance(probing, str):
        probing = parse_python_literal(
            probing, path=path, record=conversation_id, field="probing_questions"
        )
    if not isinstance(probing, Mapping):
        raise DatasetError(
            f"expected an object keyed by ability, got {type(probing).__name__}",
            path=path,
            record=conversation_id,
        )
    unknown = [k for k in probing if k not in ABILITIES]
    if unknown:
        raise DatasetError(
            f"unknown ability {unknown[0]!r}; expected the ten BEAM abilities "
            f"({', '.join(ABILITIES)})",
            path=path,
            record=conversation_id,
            field=str(unknown[0]),
        )
    questions: list[Question] = []
    for ability, (gold_field, _desc) in ABILITIES.items():
        if ability not in probing:
            raise DatasetError(
                "ability missing; every probing_questions file has all ten abilities",
                path=path,
                record=conversation_id,
                field=ability,
            )
        items = probing[ability]
        if not isinstance(items, list):
            raise DatasetError(
                f"expected a list of questions, got {type(items).__name__}",
                path=path,
                record=conversation_id,
                field=ability,
            )
        for i, item in enumerate(items):
            qid = f"{conversation_id}-{ability}-{i}"
            questions.append(
                _question(item, qid, ability, gold_field, i, size, n, path, conversation_id)
            )
    return questions


def _question(
    item: object,
    qid: str,
    ability: str,
    gold_field: str,
    position: int,
    size: str,
    n: str,
    path: str,
    conversation_id: str,
) -> Question:
    record = f"{ability}[{position}]"
    if not isinstance(item, Mapping):
        raise DatasetError(
            f"expected a question object, got {type(item).__name__}", path=path, record=record
        )
    text = item.get("question")
    if not isinstance(text, str) or not text.strip():
        raise DatasetError(
            "missing or empty question text", path=path, record=record, field="question"
        )
    gold = item.get(gold_field)
    if isinstance(gold, float) and not math.isfinite(gold):
        raise DatasetError(
            f"must be text or a finite number, got {gold!r}",
            path=path,
            record=record,
            field=gold_field,
        )
    if isinstance(gold, (int, float)) and not isinstance(gold, bool):
        gold = str(gold)
    if not isinstance(gold, str):
        raise DatasetError(
            f"missing gold answer: {ability} questions carry their ideal answer in {gold_field!r}",
            path=path,
            record=record,
            field=gold_field,
        )
    rubric = item.get("rubric")
    if (
        not isinstance(rubric, list)
        or not rubric
        or not all(isinstance(r, str) and r.strip() for r in rubric)
    ):
        raise DatasetError(
            "malformed rubric: expected a non-empty list of non-empty strings (the official "
            "scorer divides by its length)",
            path=path,
            record=record,
            field="rubric",
        )
    extra = {
        k: v for k, v in item.items() if k not in ("question", gold_field, "rubric", "difficulty")
    }
    meta: dict[str, Any] = {
        "ability": ability,
        "gold_field": gold_field,
        "rubric": tuple(rubric),
        "difficulty": item.get("difficulty"),
        "size": size,
        "conversation_number": n,
        "position": position,
        "fields": extra,
    }
    if ability == "event_ordering":
        # the rubric items are the bare event labels in gold order (docs/scoring.md#beam-records)
        meta["ordering_reference"] = tuple(rubric)
    return Question(
        id=qid,
        conversation_id=conversation_id,
        category=ability,
        category_id=ability,
        question=text,
        gold=gold,
        evidence=tuple(_flatten_ids(item.get("source_chat_ids"))),
        abstention=ability == "abstention",
        meta=meta,
        cluster=conversation_id,  # the probing questions of one chat are not independent
    )


# --------------------------------------------------------------------------- conversations


def _messages_to_turns(
    messages: Sequence[object], path: str, record: str, group_of: Sequence[int] | None = None
) -> tuple[list[Turn], str]:
    turns: list[Turn] = []
    anchor = ""
    for j, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            raise DatasetError(
                f"message {j} is {type(msg).__name__}, expected an object",
                path=path,
                record=record,
            )
        role, content, mid = msg.get("role"), msg.get("content"), msg.get("id")
        if not isinstance(role, str) or not isinstance(content, str):
            raise DatasetError(
                f"message {j} needs string 'role' and 'content'",
                path=path,
                record=record,
                field="role" if not isinstance(role, str) else "content",
            )
        if mid is None or isinstance(mid, bool) or not isinstance(mid, (int, str)):
            raise DatasetError(
                f"message {j} needs an integer 'id'", path=path, record=record, field="id"
            )
        meta: dict[str, Any] = {}
        for key in ("question_type", "index", "time_anchor"):
            if key in msg:
                meta[key] = msg[key]
        if group_of is not None:
            meta["turn"] = group_of[j]
        ta = msg.get("time_anchor")
        if isinstance(ta, str) and ta and not anchor:
            anchor = ta
        turns.append(Turn(id=str(mid), speaker=role, text=content, meta=meta))
    return turns, anchor


def _batch_session(batch: object, sid: str, path: str, position: int) -> Session:
    record = f"batch #{position}"
    if isinstance(batch, list):  # Hugging Face 2-D layout: batch -> flat message list
        turns, anchor = _messages_to_turns(batch, path, record)
        number: object = position + 1
    elif isinstance(batch, Mapping):
        groups = batch.get("turns")
        if not isinstance(groups, list) or not all(isinstance(g, list) for g in groups):
            raise DatasetError(
                "expected 'turns' as a list of message lists",
                path=path,
                record=record,
                field="turns",
            )
        flat = [m for g in groups for m in g]
        group_of = [gi for gi, g in enumerate(groups, start=1) for _ in g]
        turns, anchor = _messages_to_turns(flat, path, record, group_of)
        batch_anchor = batch.get("time_anchor")
        if isinstance(batch_anchor, str) and batch_anchor:
            anchor = batch_anchor
        number = batch.get("batch_number", position + 1)
    else:
        raise DatasetError(
            f"expected a batch object, got {type(batch).__name__}", path=path, record=record
        )
    return Session(
        id=sid.format(number=number),
        date=parse_time_anchor(anchor) if anchor else None,
        date_raw=anchor,
        turns=tuple(turns),
        meta={"batch_number": number},
    )


def sessions_from_chat(chat: object, path: str, prefix: str = "") -> list[Session]:
    """Sessions of one chat: a list of batches (GitHub), a 2-D list (Hugging Face), or the 10M
    top-level list of ``{"plan-k": [batch, ...]}`` objects."""
    if not isinstance(chat, list):
        raise DatasetError(
            f"expected a list of batches, got {type(chat).__name__}; use the original chat.json",
            path=path,
        )
    sessions: list[Session] = []
    for i, entry in enumerate(chat):
        if isinstance(entry, Mapping) and len(entry) == 1:
            ((key, batches),) = entry.items()
            if isinstance(key, str) and _PLAN_KEY.match(key) and isinstance(batches, list):
                sessions += sessions_from_chat(batches, path, prefix=f"{key}/")
                continue
        sessions.append(_batch_session(entry, prefix + "batch-{number}", path, i))
    return sessions


def _check_unique(sessions: Sequence[Session], path: str) -> None:
    seen: set[str] = set()
    turn_ids: set[str] = set()
    for s in sessions:
        if s.id in seen:
            raise DatasetError(
                f"duplicate batch {s.id!r}", path=path, record=s.id, field="batch_number"
            )
        seen.add(s.id)
        for t in s.turns:
            if t.id in turn_ids:
                raise DatasetError(
                    f"duplicate message id {t.id}; message ids must be unique in a chat",
                    path=path,
                    record=s.id,
                    field="id",
                )
            turn_ids.add(t.id)


@dataclass
class _ChatSource:
    """Where one conversation's chat lives: chat files (GitHub/10M) or an inline HF row."""

    files: list[tuple[str, Path]]  # (session-id prefix, chat.json)
    inline: object = None
    origin: str = ""  # where an inline chat came from (file and row), for error messages


@dataclass
class _ConversationLoader:
    """Callable ``conversation_id -> Conversation``; parses chat files on demand (``Dataset``
    keeps the most recent one)."""

    sources: dict[str, _ChatSource]

    def __call__(self, conversation_id: str) -> Conversation:
        source = self.sources.get(conversation_id)
        if source is None:
            raise KeyError(conversation_id)
        sessions: list[Session] = []
        if source.files:
            for prefix, path in source.files:
                part = sessions_from_chat(read_run_json(path), str(path), prefix)
                if prefix:  # per-plan 10M files restart message ids at 0: keep turn ids unique
                    part = [
                        replace(s, turns=tuple(replace(t, id=prefix + t.id) for t in s.turns))
                        for s in part
                    ]
                sessions += part
        else:
            sessions = sessions_from_chat(source.inline, source.origin or f"row {conversation_id}")
        _check_unique(
            sessions,
            str(source.files[0][1]) if source.files else source.origin or conversation_id,
        )
        return Conversation(
            id=conversation_id, sessions=tuple(sessions), speakers=("user", "assistant")
        )


# --------------------------------------------------------------------------- benchmark


def _size(variant: str | None) -> str:
    if variant is None:
        return DEFAULT_SIZE
    for size in SIZES:
        if variant.strip().upper() == size.upper():
            return size
    raise DatasetError(f"unknown BEAM variant {variant!r}: use one of {', '.join(SIZES)}")


def _numbered_dirs(folder: Path) -> Iterator[tuple[str, Path]]:
    entries = [p for p in folder.iterdir() if p.is_dir() and p.name.isdigit()]
    for p in sorted(entries, key=lambda p: int(p.name)):
        yield p.name, p


def _chat_files(conv_dir: Path, size: str) -> list[tuple[str, Path]]:
    top = conv_dir / "chat.json"
    if top.is_file():
        return [("", top)]
    if size == "10M":
        plans = sorted(
            (int(m.group(1)), p)
            for p in conv_dir.iterdir()
            if p.is_dir() and (m := _PLAN_KEY.match(p.name))
        )
        files = [(f"plan-{k}/", p / "chat.json") for k, p in plans]
        missing = [str(f) for _, f in files if not f.is_file()]
        if files and not missing:
            return files
        if missing:
            raise DatasetError(
                f"10M conversation has neither chat.json nor every plan-*/chat.json "
                f"({len(missing)} missing, e.g. {missing[0]}); fetch the full files",
                path=str(conv_dir),
            )
    odd = not_a_file(top)
    if odd is not None:
        raise DatasetError(f"{odd}; expected BEAM's chat.json", path=str(top))
    raise DatasetError(f"chat.json not found. {_HOW_TO_GET}", path=str(top))


@dataclass(frozen=True)
class Beam:
    """The BEAM benchmark (``--memeval=beam --memeval-variant=100K|500K|1M|10M``).

    ``pass_metric`` is ``f1`` until the nugget judge is available (the official pass rule is the
    rubric-nugget score >= 0.5, docs/scoring.md#rubric-nuggets).
    """

    name: str = NAME
    categories: Mapping[int | str, CategoryInfo] = field(
        default_factory=lambda: named_categories(
            NAME, {ability: desc for ability, (_gold, desc) in ABILITIES.items()}
        )
    )
    metrics: Sequence[str] = METRICS
    pass_metric: str = "f1"
    #: statistics resample conversations (a chat and its probing questions)
    cluster_unit: str = "conversation"

    def load(self, request: LoadRequest) -> Dataset:
        size = _size(request.variant)
        if request.data_dir is None:
            raise DatasetError(_HOW_TO_GET)
        root = request.data_dir / NAME
        rows = [root / f"{size}.jsonl", root / f"{size}.json"]
        for candidate in (root / size, root / "chats" / size):
            if candidate.is_dir():
                return self._load_github(candidate, size)
        for row_file in rows:
            if row_file.is_file():
                return self._load_rows(row_file, size)
        raise DatasetError(f"no BEAM {size} data found. {_HOW_TO_GET}", path=str(root / size))

    def _load_github(self, folder: Path, size: str) -> Dataset:
        questions: list[Question] = []
        sources: dict[str, _ChatSource] = {}
        files: list[Path] = []
        sha: dict[str, str] = {}
        for n, conv_dir in _numbered_dirs(folder):
            conversation_id = f"beam-{size}-{n}"
            probing_path = conv_dir / "probing_questions" / "probing_questions.json"
            chat_files = _chat_files(conv_dir, size)
            questions += questions_from_probing(
                read_run_json(probing_path),
                size=size,
                n=n,
                path=str(probing_path),
                conversation_id=conversation_id,
            )
            sources[conversation_id] = _ChatSource(files=chat_files)
            for path in [probing_path, *(p for _, p in chat_files)]:
                files.append(path)
                sha[str(path.relative_to(folder.parent))] = file_sha256(path)
        if not sources:
            raise DatasetError(
                f"no numbered conversation folders (1, 2, ...). {_HOW_TO_GET}", path=str(folder)
            )
        questions = [replace(q, index=i) for i, q in enumerate(questions)]
        return Dataset(
            benchmark=NAME,
            questions=questions,
            files=files,
            sha256=sha,
            variant=size,
            conversation_loader=_ConversationLoader(sources),
            meta={"layout": "github", "conversations": len(sources)},
        )

    def _load_rows(self, path: Path, size: str) -> Dataset:
        """Hugging Face rows exported as JSON lines (or a JSON list of rows)."""
        text_rows: list[object]
        _, raw = read_data(path, "export the rows again")
        if path.suffix == ".jsonl":
            text_rows = [
                _loads_line(line, path, number)
                for number, line in enumerate(raw.splitlines(), start=1)
                if line.strip()
            ]
        else:
            loaded = _loads_line(raw, path, 1)
            text_rows = loaded if isinstance(loaded, list) else [loaded]
        questions: list[Question] = []
        sources: dict[str, _ChatSource] = {}
        for i, row in enumerate(text_rows, start=1):
            if not isinstance(row, Mapping):
                raise DatasetError(
                    f"row is {type(row).__name__}, expected an object",
                    path=str(path),
                    record=f"#{i}",
                )
            raw_id = row.get("conversation_id", i)
            if (
                isinstance(raw_id, bool)
                or not isinstance(raw_id, (int, str))
                or not _ROW_ID.fullmatch(str(raw_id))
            ):
                raise DatasetError(
                    f"conversation_id must be an integer or a name of letters, digits, '_', '-' "
                    f"and '.', got {raw_id!r:.60}",
                    path=str(path),
                    record=f"#{i}",
                    field="conversation_id",
                )
            n = str(raw_id)
            conversation_id = f"beam-{size}-{n}"
            if conversation_id in sources:
                raise DatasetError(
                    "duplicate conversation_id", path=str(path), record=n, field="conversation_id"
                )
            for key in ("chat", "probing_questions"):
                if key not in row:
                    raise DatasetError("missing key", path=str(path), record=n, field=key)
            chat = row["chat"]
            if isinstance(chat, str):
                chat = parse_python_literal(chat, path=str(path), record=n, field="chat")
            questions += questions_from_probing(
                row["probing_questions"],
                size=size,
                n=n,
                path=str(path),
                conversation_id=conversation_id,
            )
            sources[conversation_id] = _ChatSource(
                files=[], inline=chat, origin=f"{path} row {n} field 'chat'"
            )
        questions = [replace(q, index=i) for i, q in enumerate(questions)]
        return Dataset(
            benchmark=NAME,
            questions=questions,
            files=[path],
            sha256={path.name: file_sha256(path)},
            variant=size,
            conversation_loader=_ConversationLoader(sources),
            meta={"layout": "huggingface-rows", "conversations": len(sources)},
        )

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        """Offline proxies: ``f1`` (token F1 vs the gold field); for event_ordering with a
        reference list, ``ordering_tau`` (tau_norm) and ``ordering`` (tau_norm x F1 of the
        answer's lines, aligned by case-insensitive equality). Undefined tau (one-item union)
        leaves both ordering keys out."""
        from ...metrics import ordering_score, response_lines, token_f1

        scores = {
            "f1": float(
                token_f1(prediction.text, "" if question.gold is None else str(question.gold))
            )
        }
        reference = question.meta.get("ordering_reference")
        if question.category == "event_ordering" and reference:
            result = ordering_score(response_lines(prediction.text), list(reference))
            if not math.isnan(result.tau_norm):
                scores["ordering_tau"] = float(result.tau_norm)
                scores["ordering"] = float(result.final_score)
        return scores

    def official_judge(self, protocol: LoadedProtocol) -> Judge | None:
        """The judge of ``--memeval-protocol=beam`` (:mod:`._judge`)."""
        from ._judge import official_judge

        return official_judge(protocol)

    def official_provenance(self, protocol: LoadedProtocol) -> dict[str, Any]:
        """The protocol's extra provenance: the json_repair release (:mod:`._judge`)."""
        from ._judge import official_provenance

        return official_provenance(protocol)

    def official_warnings(self, protocol: LoadedProtocol) -> list[str]:
        """A json_repair release other than BEAM's (:mod:`._judge`)."""
        from ._judge import official_warnings

        return official_warnings(protocol)

    def official_summary(
        self,
        protocol: LoadedProtocol,
        run: RunSummary,
        results: Sequence[QuestionResult],
        judge_metric: str | None,
    ) -> None:
        """The run's official composite under ``--memeval-protocol=beam`` (:mod:`._figures`)."""
        from ._figures import official_summary

        official_summary(protocol, run, results, judge_metric)


BENCHMARK = Beam()


#: known differences from upstream and what the plugin does (the protocol card lists them)
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "unreadable-judge-reply",
        "a reply json_repair cannot read, or without a score, aborts the conversation's evaluation",
        "the item counts 0 with a warning naming it",
        "beam-official-protocol",
    ),
    Deviation(
        "json-repair-release",
        "BEAM pins json_repair 0.44.1",
        "the installed release is recorded (provenance.protocol.json_repair); another one gives "
        "a ProtocolWarning",
        "beam-official-protocol",
    ),
    Deviation(
        "no-overall",
        "report_results.py has no overall and BEAM's README defines none",
        "the official table's overall is the unweighted mean of the category values",
        "beam-official-protocol",
    ),
    Deviation(
        "offline-alignment",
        "event ordering aligns answer lines to the rubric with LLM equivalence calls",
        "offline `ordering_tau` aligns by case-insensitive equality (a proxy); the protocol "
        "sends upstream's calls",
        "beam-offline-scores",
    ),
)
