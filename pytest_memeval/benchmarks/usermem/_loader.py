"""The three-layer user-memory suite (user-memory-evaluation): 60 YAML cases, one item per case.

Files under ``DATA/usermem/``: ``test_cases/layer{1,2,3}/*.yaml`` (read with the safe YAML loader
only) and ``fixtures/gold_facts.json`` (optional; ``{test_id: {"required_facts": [...]}}``, a fact
being a string or a list of acceptable variants). The schema is described in the suite's
NOTES.md. There is no official download URL: point ``--memeval-data`` at a copy.

Each case is its own conversation (id = ``test_id``): one Session per conversation history
(id = its ``conversation_id``, dated by its ``timestamp``). The question is the case's
``user_question``; the gold is ``expected_behavior`` when present, else ``evaluation_criteria``.

Offline scoring: ``keyword_recall`` against the case's gold facts (docs/scoring.md#keyword-recall);
cases without gold facts get no ``keyword_recall`` key (they are skipped, not scored 0).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from ..._files import not_a_file
from ...errors import DatasetError
from ...records import Conversation, Prediction, Question, Session, Turn
from .._base import (
    CategoryInfo,
    Dataset,
    Deviation,
    LoadRequest,
    check_surrogates,
    named_categories,
    parse_json,
    read_data,
)

__all__ = ["BENCHMARK", "DEVIATIONS", "LAYERS", "UserMemory", "parse_gold_facts"]

NAME = "usermem"
LAYERS: Mapping[str, str] = {
    "layer1": "exact recall of facts from one earlier conversation",
    "layer2": "disambiguation: retrieve every relevant item across conversations",
    "layer3": "cross-session synthesis and proactive help",
}
METRICS = ("keyword_recall",)
_LAYOUT = "DIR/usermem/test_cases/layer{1,2,3}/*.yaml (+ DIR/usermem/fixtures/gold_facts.json)"
_HOW_TO_GET = (
    "the user-memory suite has no official download: copy chapter3/user-memory-evaluation from "
    "https://github.com/bojieli/ai-agent-book and pass --memeval-data=DIR (or set "
    f"MEMEVAL_DATA_DIR) where DIR is laid out as {_LAYOUT}"
)
_SAFE_LOADER: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)
#: deepest YAML nesting accepted (the suite's cases nest 5 deep). libyaml's composer recurses in C:
#: a file nested some 100,000 deep would overflow the stack and kill the process, so depth is
#: checked on the (iterative) event stream before anything is composed.
MAX_YAML_DEPTH = 100
#: most values (scalars, lists, mappings) a case may hold once aliases are expanded
MAX_YAML_NODES = 1_000_000
_ROLE_ALIASES = {"representative": "assistant", "agent": "assistant"}
_ROLES = ("user", "assistant", "system")

Fact = tuple[str, ...]


def _parse_timestamp(raw: str) -> datetime | None:
    try:
        return datetime.fromisoformat(raw.strip())
    except ValueError:
        return None


def parse_gold_facts(data: object, path: str) -> dict[str, tuple[Fact, ...]]:
    """``gold_facts.json`` -> {test_id: facts}; each fact a tuple of acceptable variants.

    Values that are neither an object nor a list (the ``_comment`` string) are ignored; a bare list
    is accepted as the fact list.
    """
    if not isinstance(data, Mapping):
        raise DatasetError(
            f"expected an object keyed by test_id, got {type(data).__name__}", path=path
        )
    out: dict[str, tuple[Fact, ...]] = {}
    for test_id, value in data.items():
        if isinstance(value, Mapping):
            if "required_facts" not in value:
                raise DatasetError(
                    'missing key; write {"required_facts": [fact, ...]}',
                    path=path,
                    record=str(test_id),
                    field="required_facts",
                )
            facts = value["required_facts"]
        elif isinstance(value, list):
            facts = value
        else:
            continue
        if not isinstance(facts, list):
            raise DatasetError(
                f"expected a list of facts, got {type(facts).__name__}",
                path=path,
                record=str(test_id),
                field="required_facts",
            )
        parsed: list[Fact] = []
        for i, fact in enumerate(facts):
            variants = (fact,) if isinstance(fact, str) else fact
            if (
                not isinstance(variants, (list, tuple))
                or not variants
                or not all(isinstance(v, str) and v.strip() for v in variants)
            ):
                raise DatasetError(
                    f"fact {i} must be a non-empty string or a non-empty list of strings",
                    path=path,
                    record=str(test_id),
                    field="required_facts",
                )
            parsed.append(tuple(variants))
        out[str(test_id)] = tuple(parsed)
    return out


def _messages(raw: object, path: str, record: str, field_name: str) -> list[tuple[str, str]]:
    if not isinstance(raw, list):
        raise DatasetError(
            f"expected a list of messages, got {type(raw).__name__}",
            path=path,
            record=record,
            field=field_name,
        )
    out: list[tuple[str, str]] = []
    for j, msg in enumerate(raw, start=1):
        if not isinstance(msg, Mapping):
            raise DatasetError(
                f"message {j} is {type(msg).__name__}, expected a mapping",
                path=path,
                record=record,
                field=field_name,
            )
        if "role" in msg:
            role, content = msg.get("role"), msg.get("content")
        else:  # legacy {user: ...} / {assistant|representative|agent: ...}
            keys = [k for k in msg if k in (*_ROLES, *_ROLE_ALIASES)]
            if len(keys) != 1:
                raise DatasetError(
                    f"message {j} needs 'role' and 'content' (or one key user/assistant)",
                    path=path,
                    record=record,
                    field=field_name,
                )
            role, content = keys[0], msg[keys[0]]
        role = _ROLE_ALIASES.get(str(role), role)
        if role not in _ROLES or not isinstance(content, str):
            raise DatasetError(
                f"message {j}: role must be user/assistant/system and content a string",
                path=path,
                record=record,
                field=field_name,
            )
        out.append((str(role), content))
    return out


def _required_str(case: Mapping[str, Any], key: str, path: str, record: str) -> str:
    value = case.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(
            "missing or not a string; see the suite's YAML schema",
            path=path,
            record=record,
            field=key,
        )
    return value


def _criteria_text(value: object, path: str, record: str) -> str:
    """evaluation_criteria: a string, or the legacy mapping flattened to text."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, Mapping):
        parts: list[str] = []
        if isinstance(value.get("description"), str):
            parts.append(value["description"])
        for key in ("required_information", "success_indicators", "failure_indicators"):
            items = value.get(key)
            if isinstance(items, list) and items:
                parts.append(f"{key.replace('_', ' ').capitalize()}:")
                parts += [f"- {item}" for item in items]
        if parts:
            return "\n".join(parts)
    raise DatasetError(
        "missing; every case needs evaluation_criteria (text)",
        path=path,
        record=record,
        field="evaluation_criteria",
    )


def case_to_records(
    case: object, path: str, folder_layer: str, facts: Sequence[Fact] = ()
) -> tuple[Conversation, Question]:
    """One YAML case -> (Conversation, Question)."""
    if not isinstance(case, Mapping):
        raise DatasetError(
            f"expected a YAML mapping, got {type(case).__name__}", path=path, field="test_id"
        )
    test_id = case.get("test_id")
    if test_id is None:
        raise DatasetError(
            "missing test_id (e.g. layer1_01_bank_account)", path=path, field="test_id"
        )
    if not isinstance(test_id, str) or not test_id.strip() or not test_id.isprintable():
        raise DatasetError(
            f"test_id must be a non-empty one-line string (e.g. layer1_01_bank_account), got "
            f"{test_id!r:.60}",
            path=path,
            field="test_id",
        )
    layer = case.get("category", folder_layer)
    if layer not in LAYERS:
        raise DatasetError(
            f"unknown category {layer!r}; expected layer1, layer2 or layer3",
            path=path,
            record=test_id,
            field="category",
        )
    question_text = _required_str(case, "user_question", path, test_id)
    criteria = _criteria_text(case.get("evaluation_criteria"), path, test_id)
    expected = case.get("expected_behavior")
    if expected is not None and not isinstance(expected, str):
        raise DatasetError("must be a string", path=path, record=test_id, field="expected_behavior")
    histories = case.get("conversation_histories")
    if not isinstance(histories, list) or not histories:
        raise DatasetError(
            "missing or empty; a case needs at least one conversation history",
            path=path,
            record=test_id,
            field="conversation_histories",
        )
    sessions: list[Session] = []
    for h, hist in enumerate(histories, start=1):
        where = f"{test_id} history {h}"
        if not isinstance(hist, Mapping):
            raise DatasetError(
                "expected a mapping", path=path, record=where, field="conversation_histories"
            )
        sid = hist.get("conversation_id", hist.get("id"))
        if not isinstance(sid, str) or not sid:
            raise DatasetError(
                "missing conversation_id", path=path, record=where, field="conversation_id"
            )
        if any(s.id == sid for s in sessions):
            raise DatasetError(
                f"duplicate conversation_id {sid!r}",
                path=path,
                record=where,
                field="conversation_id",
            )
        stamp = hist.get("timestamp")
        if isinstance(stamp, datetime):  # unquoted YAML timestamps
            date: datetime | None = stamp
            stamp = stamp.isoformat(sep=" ")
        elif isinstance(stamp, _dt.date):  # unquoted YAML date without a time
            date = datetime(stamp.year, stamp.month, stamp.day)
            stamp = stamp.isoformat()
        elif isinstance(stamp, str):
            date = _parse_timestamp(stamp)
        else:
            raise DatasetError(
                f"missing timestamp (e.g. '2024-10-15 11:00:00'), got {stamp!r:.40}",
                path=path,
                record=where,
                field="timestamp",
            )
        key = "messages" if "messages" in hist else "conversation"
        msgs = _messages(hist.get(key), path, where, key)
        metadata = hist.get("metadata")
        sessions.append(
            Session(
                id=sid,
                date=date,
                date_raw=str(stamp),
                turns=tuple(
                    Turn(id=f"{sid}:{k}", speaker=role, text=content)
                    for k, (role, content) in enumerate(msgs, start=1)
                ),
                meta={"metadata": dict(metadata)} if isinstance(metadata, Mapping) else {},
            )
        )
    title = case.get("title")
    description = case.get("description")
    conversation = Conversation(
        id=test_id, sessions=tuple(sessions), speakers=("user", "assistant"), meta={"file": path}
    )
    question = Question(
        id=test_id,
        conversation_id=test_id,
        category=str(layer),
        category_id=str(layer),
        question=question_text,
        gold=expected.strip() if isinstance(expected, str) and expected.strip() else criteria,
        meta={
            "title": title if isinstance(title, str) else "",
            "description": description if isinstance(description, str) else "",
            "evaluation_criteria": criteria,
            "expected_behavior": expected,
            "facts": tuple(facts),
            "file": path,
        },
        cluster=test_id,  # a case is its own history and question
    )
    return conversation, question


def _read_yaml(path: Path) -> object:
    _, text = read_data(path, "save the file as UTF-8 text")
    try:
        _check_depth(text, str(path))
        # the same safe constructor set as yaml.safe_load; libyaml's parser when available (9x)
        data: object = yaml.load(text, Loader=_SAFE_LOADER)
    except RecursionError:
        raise DatasetError(
            f"YAML nested too deeply (more than {MAX_YAML_DEPTH} levels); fix the file",
            path=str(path),
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise DatasetError(
            f"YAML does not parse{where} ({problem}); fix the file", path=str(path)
        ) from None
    check_surrogates(data, str(path))
    return data


def _check_depth(text: str, path: str) -> None:
    """Refuse documents nested deeper than MAX_YAML_DEPTH or holding more than MAX_YAML_NODES
    values once aliases are expanded (a few nested aliases make billions: "billion laughs"),
    reading parser events (no recursion, nothing composed yet)."""
    sizes: dict[str, int] = {}  # anchor -> expanded size of its node
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, expanded size so far)
    total = 0

    def add(n: int, event: yaml.Event) -> None:
        nonlocal total
        total += n
        if total > MAX_YAML_NODES:
            raise DatasetError(
                f"YAML expands to more than {MAX_YAML_NODES:,} values (aliases{_where(event)} "
                "repeat large lists or mappings); write the content out",
                path=path,
            )
        if open_nodes:
            anchor, size = open_nodes[-1]
            open_nodes[-1] = (anchor, size + n)

    for event in yaml.parse(text, Loader=_SAFE_LOADER):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            open_nodes.append((event.anchor, 1))
            if len(open_nodes) > MAX_YAML_DEPTH:
                raise DatasetError(
                    f"YAML nested more than {MAX_YAML_DEPTH} levels deep{_where(event)}; "
                    "fix the file",
                    path=path,
                )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, size = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = size
            add(size, event)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                sizes[event.anchor] = 1
            add(1, event)
        elif isinstance(event, yaml.AliasEvent):
            add(sizes.get(event.anchor or "", 1), event)


def _where(event: yaml.Event) -> str:
    mark = event.start_mark
    return f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class UserMemory:
    """The three-layer user-memory suite (``--memeval=usermem``). Pass metric ``keyword_recall``;
    the threshold is the plugin's (default 0.6, docs/scoring.md#keyword-recall)."""

    name: str = NAME
    categories: Mapping[int | str, CategoryInfo] = field(
        default_factory=lambda: named_categories(NAME, LAYERS)
    )
    metrics: Sequence[str] = METRICS
    pass_metric: str = "keyword_recall"
    #: why a question may have no pass metric offline (shown beside the UNSCORED count)
    unscored_reason: str = (
        "a case without gold facts has no offline keyword_recall; only an LLM judge scores it "
        "(--memeval-judge=PROVIDER:MODEL)"
    )
    #: one case = one history + one question: the cases are the independent units
    cluster_unit: str = "case"
    #: reward >= 0.6 passes (docs/scoring.md#keyword-recall; --memeval-pass-threshold overrides)
    default_threshold: float = 0.6

    def load(self, request: LoadRequest) -> Dataset:
        if request.data_dir is None:
            raise DatasetError(_HOW_TO_GET)
        root = request.data_dir / NAME
        cases_dir = root / "test_cases"
        if not cases_dir.is_dir():
            raise DatasetError(f"folder not found; {_HOW_TO_GET}", path=str(cases_dir))
        sha: dict[str, str] = {}
        files: list[Path] = []
        facts_path = root / "fixtures" / "gold_facts.json"
        gold: dict[str, tuple[Fact, ...]] = {}
        odd = not_a_file(facts_path)
        if odd is not None:
            raise DatasetError(f"{odd}; expected the gold facts JSON file", path=str(facts_path))
        if facts_path.is_file():
            raw, text = read_data(facts_path, "fix or remove the file")
            sha[str(facts_path.relative_to(root))] = _hash(raw)
            files.append(facts_path)
            data = parse_json(text, str(facts_path), "fix or remove the file")
            check_surrogates(data, str(facts_path))
            gold = parse_gold_facts(data, str(facts_path))
        questions: list[Question] = []
        conversations: dict[str, Conversation] = {}
        for layer in LAYERS:
            folder = cases_dir / layer
            if not folder.is_dir():
                continue
            paths = sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])
            for path in paths:
                case = _read_yaml(path)
                test_id = case.get("test_id") if isinstance(case, Mapping) else None
                facts = gold.get(test_id, ()) if isinstance(test_id, str) else ()
                conv, question = case_to_records(case, str(path), layer, facts)
                if conv.id in conversations:
                    raise DatasetError(
                        f"duplicate test_id (also in {conversations[conv.id].meta.get('file')})",
                        path=str(path),
                        record=conv.id,
                        field="test_id",
                    )
                conversations[conv.id] = conv
                questions.append(replace(question, index=len(questions)))
                sha[str(path.relative_to(root))] = _hash(path.read_bytes())
                files.append(path)
        if not questions:
            raise DatasetError(f"no YAML cases found; {_HOW_TO_GET}", path=str(cases_dir))
        unknown = sorted(set(gold) - set(conversations))
        if unknown:
            raise DatasetError(
                "gold facts name a test_id that no YAML case has; fix the key or remove it",
                path=str(facts_path),
                record=unknown[0],
                field="required_facts",
            )
        return Dataset(
            benchmark=NAME,
            questions=questions,
            files=files,
            sha256=sha,
            variant=request.variant,
            conversations=conversations,
            meta={"cases_with_facts": sum(1 for q in questions if q.meta["facts"])},
        )

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        """``keyword_recall`` of the case's gold facts in the answer (omitted without facts)."""
        from ...metrics import keyword_recall

        facts = question.meta.get("facts") or ()
        value = keyword_recall(prediction.text, list(facts))
        return {} if value is None else {"keyword_recall": float(value)}


BENCHMARK = UserMemory()


#: no upstream scorer to follow: the suite's YAML cases are scored by the project's own rules
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "no-official-scorer",
        "the suite ships cases and criteria, no scorer and no download URL",
        "offline keyword_recall against gold_facts.json (a case without gold facts is skipped, "
        "not 0); the usermem judge is the project's",
        "user-memory-suite",
    ),
)
