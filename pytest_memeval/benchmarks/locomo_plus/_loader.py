"""LoCoMo-Plus (arXiv 2602.10715): the 401 Cognitive cue / trigger pairs of ``locomo_plus.json``,
each stitched into a LoCoMo-10 conversation as upstream's evaluation input does.

Upstream (``xjtuleeyf/Locomo-Plus``, pinned below): ``data/unified_input.py`` pairs Cognitive item
``i`` with LoCoMo conversation ``i % len(locomo10)`` (``i % 10``) and stitches it with ``data/build_conv.py``'s
``build_context``: the query goes 7 days after the conversation's last session, the cue
``time_gap`` before the query (``parse_time_gap``: weeks 7 days, months 30, years 365), A / B
mapped to the conversation's two speakers, events sorted by time. Here the cue dialogue is one
more dated session (``CUE``, turns ``CUE:1`` ...), the trigger query is the question, asked on the
query date, and the cue turns are the evidence (the judge reads them as ``Speaker：text`` lines,
as upstream's ``_cue_dialogue_to_evidence`` writes them). There is no reference answer.

Offline score: ``cue_recall``, the share of cue turns among the retrieved memories' source ids
(when the system names them; else the question is UNSCORED). The official score is the LLM judge
of ``--memeval-protocol=locomo-plus`` (docs/scoring.md#locomo-plus).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

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
    file_stats,
    parse_json,
    read_bytes,
)
from .._categories import shared_category
from .._download import Pins, download
from ..locomo import LOCOMO_FILE, LOCOMO_PINS, LOCOMO_SHA256, LOCOMO_URL, load_locomo_file
from ._pins import (
    LOCOMO_PLUS_FILE,
    LOCOMO_PLUS_PINS,
    LOCOMO_PLUS_SHA256,
    LOCOMO_PLUS_URL,
)

if TYPE_CHECKING:
    from ...judges import Judge
    from ...protocols import LoadedProtocol

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "CUE_SESSION",
    "DEVIATIONS",
    "LocomoPlusBenchmark",
    "PlusItem",
    "cue_evidence_text",
    "pairing_rule",
    "parse_ab_dialogue",
    "parse_locomo_plus",
    "parse_time_gap",
    "stitch",
]

#: the id of the inserted cue session; its turns are ``CUE:1``, ``CUE:2``, ...
CUE_SESSION = "CUE"


def pairing_rule(conversations: int) -> str:
    """How a Cognitive item picks its LoCoMo conversation, with the file's conversation count
    (recorded in the provenance): upstream ``data/unified_input.py``'s
    ``locomo_list[i % len(locomo_list)]`` (10 for the official locomo10.json)."""
    return (
        f"item i -> locomo10.json conversation i % {conversations} (file order; upstream "
        "data/unified_input.py locomo_list[i % len(locomo_list)], not build_conv.py's "
        "unseeded random.choice)"
    )


CATEGORIES: Mapping[int | str, CategoryInfo] = MappingProxyType(
    {
        "Cognitive": CategoryInfo(
            "Cognitive",
            "cognitive",
            shared_category("locomo-plus", "cognitive"),
            "a later trigger must be answered in the light of an earlier implicit cue",
        )
    }
)

_HINT = "Fix the file or re-download the official locomo_plus.json."
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_NUM_WORD = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_GAP = re.compile(
    r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a|an)\b\s*"
    r"(week|weeks|month|months|year|years)\b"
)


def parse_time_gap(time_gap: str) -> int:
    """Days between cue and query, as upstream's ``build_conv.parse_time_gap`` reads them: the
    first ``<number|word|a|an> <week|month|year>(s)`` in the lower-cased text; weeks are 7 days,
    months 30, years 365; no match is 0 (the cue then goes on the query date)."""
    m = _GAP.search(time_gap.lower().strip())
    if not m:
        return 0
    num, unit = m.groups()
    if num.isdigit():
        count = int(num)
    elif num in {"a", "an"}:
        count = 1
    else:
        count = _NUM_WORD.get(num, 0)
    if unit.startswith("week"):
        return count * 7
    if unit.startswith("month"):
        return count * 30
    return count * 365


def parse_ab_dialogue(text: str) -> list[tuple[str, str]]:
    """``(A|B, text)`` per line that starts with ``A:`` or ``B:`` (after stripping); other lines
    are dropped (upstream ``parse_ab_dialogue``)."""
    turns: list[tuple[str, str]] = []
    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith("A:"):
            turns.append(("A", line[2:].strip()))
        elif line.startswith("B:"):
            turns.append(("B", line[2:].strip()))
    return turns


def _speaker(ab: str, speakers: tuple[str, str]) -> str:
    return speakers[0] if ab == "A" else speakers[1]  # upstream map_speaker: not A -> B


def cue_evidence_text(cue_dialogue: str, speakers: tuple[str, str]) -> str:
    """The cue as the judge's evidence (upstream ``_cue_dialogue_to_evidence``): one
    ``Speaker：text`` line per non-empty turn, A / B replaced by the speakers' names."""
    return "\n".join(
        f"{_speaker(ab, speakers)}：{text.strip()}"
        for ab, text in parse_ab_dialogue(cue_dialogue)
        if text
    )


def _date_raw(when: datetime) -> str:
    """LoCoMo's date style (``1:56 pm on 8 May, 2023``)."""
    hour = when.hour % 12 or 12
    half = "am" if when.hour < 12 else "pm"
    return f"{hour}:{when.minute:02d} {half} on {when.day} {_MONTHS[when.month - 1]}, {when.year}"


@dataclass(frozen=True)
class PlusItem:
    """One record of ``locomo_plus.json`` (the fields the evaluation reads)."""

    index: int
    cue_dialogue: str
    trigger_query: str
    time_gap: str
    relation_type: str = ""


def parse_locomo_plus(data: bytes, source: str) -> tuple[PlusItem, ...]:
    """The records of ``locomo_plus.json``; every problem is a DatasetError naming the file, the
    record (``[12]``) and the field."""
    fix = "re-download the official locomo_plus.json or fix it"
    top = parse_json(decode_text(data, source, fix), source, fix)
    check_surrogates(top, source)
    return _parse_items(top, source)


def _parse_items(top: object, source: str) -> tuple[PlusItem, ...]:
    if not isinstance(top, list):
        raise DatasetError(
            f"the top level must be a list of cue / trigger records. {_HINT}", path=source
        )
    items: list[PlusItem] = []
    for i, rec in enumerate(top):
        if not isinstance(rec, dict):
            raise DatasetError(f"a record must be an object. {_HINT}", path=source, record=f"[{i}]")
        values: dict[str, str] = {}
        for name in ("cue_dialogue", "trigger_query", "time_gap"):
            value = rec.get(name)
            if not isinstance(value, str):
                raise DatasetError(
                    f"must be a string, got {'nothing' if value is None else type(value).__name__}"
                    f". {_HINT}",
                    path=source,
                    record=f"[{i}]",
                    field=name,
                )
            values[name] = value
        relation = rec.get("relation_type")
        items.append(
            PlusItem(
                index=i,
                cue_dialogue=values["cue_dialogue"],
                trigger_query=values["trigger_query"],
                time_gap=values["time_gap"],
                relation_type=relation if isinstance(relation, str) else "",
            )
        )
    return tuple(items)


def stitch(item: PlusItem, base: Conversation, source: str) -> tuple[Conversation, Question]:
    """The conversation (LoCoMo sessions plus the cue session) and the question of one item,
    as upstream's ``build_context`` places them."""
    if not base.sessions:
        raise DatasetError(
            "has no sessions: a Cognitive item needs a dated LoCoMo conversation",
            path=source,
            record=base.id,
        )
    last = base.sessions[-1]  # upstream: session_times[-1], the last session by number
    for session in base.sessions:
        if session.date is None:
            raise DatasetError(
                f"session date {session.date_raw!r} is not like '1:56 pm on 8 May, 2023' "
                "(LoCoMo-Plus places the cue by the session dates)",
                path=source,
                record=f"{base.id} {session.id}",
            )
    assert last.date is not None
    try:
        query_time = last.date + timedelta(days=7)
    except OverflowError:
        raise DatasetError(
            f"the last session's date {last.date_raw!r} is too late to put the query a week "
            "after it (past the year 9999); fix the session date",
            path=source,
            record=f"{base.id} {last.id}",
        ) from None
    gap = parse_time_gap(item.time_gap)
    try:
        cue_time = query_time - timedelta(days=gap)
    except OverflowError:
        raise DatasetError(
            f"{item.time_gap[:80]!r} ({gap:,} days) puts the cue before the year 1 (the query "
            f"is on {_date_raw(query_time)}); a gap is a few weeks, months or years",
            path=source,
            record=f"[{item.index}]",
            field="time_gap",
        ) from None
    speakers = (
        base.speakers[0] if base.speakers else "A",
        base.speakers[1] if len(base.speakers) > 1 else "B",
    )
    cue_turns = tuple(
        Turn(f"{CUE_SESSION}:{j + 1}", _speaker(ab, speakers), text)
        for j, (ab, text) in enumerate(parse_ab_dialogue(item.cue_dialogue))
    )
    cue = Session(
        id=CUE_SESSION,
        date=cue_time,
        turns=cue_turns,
        date_raw=_date_raw(cue_time),
        meta={"time_gap": item.time_gap},
    )
    conv_id = f"lp{item.index + 1:03d}-{base.id}"
    # the cue session goes after the LoCoMo sessions: on a date tie it sorts after them, as
    # upstream's stable sort of (time, session) events keeps it
    conversation = Conversation(
        id=conv_id,
        sessions=(*base.sessions, cue),
        speakers=base.speakers,
        meta={"base_conversation": base.id},
    )
    query = parse_ab_dialogue(item.trigger_query)
    text = (
        "\n".join(f"{_speaker(ab, speakers)}: {t}" for ab, t in query)
        if query
        else item.trigger_query.strip()
    )
    question = Question(
        id=f"{conv_id}-q1",
        conversation_id=conv_id,
        category="cognitive",
        question=text,
        gold=None,
        evidence=tuple(t.id for t in cue_turns if t.text),
        category_id="Cognitive",
        question_date=query_time,
        question_date_raw=_date_raw(query_time),
        index=item.index + 1,
        meta={
            "evidence_text": cue_evidence_text(item.cue_dialogue, speakers),
            "trigger_query": item.trigger_query,
            "time_gap": item.time_gap,
            "relation_type": item.relation_type,
            "base_conversation": base.id,
        },
        cluster=base.id,  # items stitched into one LoCoMo conversation share its haystack
    )
    return conversation, question


@dataclass(frozen=True)
class _Parsed:
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]
    sha256: str
    locomo_sha256: str
    #: LoCoMo conversations the items were spread over (i % bases)
    bases: int


@functools.lru_cache(maxsize=4)
def _build(plus_path: str, locomo_path: str, key: tuple[int, ...]) -> _Parsed:
    del key  # cache key only (mtimes and sizes): a changed file is parsed again
    raw = read_bytes(plus_path, "re-download the official locomo_plus.json or fix it")
    items = parse_locomo_plus(raw, plus_path)
    locomo = load_locomo_file(Path(locomo_path))
    bases = locomo.conversations
    if items and not bases:
        raise DatasetError(
            "holds no conversation: LoCoMo-Plus stitches its items into locomo10.json's",
            path=plus_path,
        )
    conversations: list[Conversation] = []
    questions: list[Question] = []
    for item in items:
        conv, question = stitch(item, bases[item.index % len(bases)], plus_path)
        conversations.append(conv)
        questions.append(question)
    return _Parsed(
        tuple(conversations),
        tuple(questions),
        hashlib.sha256(raw).hexdigest(),
        locomo.sha256,
        len(bases),
    )


def score_locomo_plus(question: Question, prediction: Prediction) -> dict[str, float]:
    """``cue_recall``: the share of the cue turns among the retrieved memories' source ids (only
    when some memory names its sources; else no score, and the question is UNSCORED)."""
    if not any(m.source_ids for m in prediction.memories) or not question.evidence:
        return {}
    retrieved = {s for m in prediction.memories for s in m.source_ids}
    found = sum(1 for e in question.evidence if e in retrieved)
    return {"cue_recall": found / len(question.evidence)}


def _local(data_dir: Path, rel: str, what: str, url: str) -> Path:
    path = data_dir / rel
    if not path.is_file():
        odd = not_a_file(path)
        if odd is not None:
            raise DatasetError(f"{odd}; expected {what}", path=str(path))
        raise DatasetError(
            f"{what} not found (looked in {path}). --memeval-data=DIR expects DIR/"
            f"{LOCOMO_PLUS_FILE} and DIR/{LOCOMO_FILE} (here DIR is {data_dir}); download it "
            f"from {url}, or drop --memeval-data / MEMEVAL_DATA_DIR to let pytest-memeval "
            "download both into its cache.",
            path=str(path),
        )
    return path


@dataclass(frozen=True, eq=False)
class LocomoPlusBenchmark:
    """The LoCoMo-Plus Cognitive items. ``url`` / ``sha256`` pin upstream's file."""

    name: str = "locomo-plus"
    categories: Mapping[int | str, CategoryInfo] = field(default_factory=lambda: CATEGORIES)
    metrics: Sequence[str] = ("cue_recall",)
    pass_metric: str = "cue_recall"
    #: without a judge a question passes when every cue turn was retrieved
    default_threshold: float = 1.0
    cluster_unit: str = "conversation"
    url: str = LOCOMO_PLUS_URL
    sha256: str = LOCOMO_PLUS_SHA256
    locomo_url: str = LOCOMO_URL
    locomo_sha256: str = LOCOMO_SHA256
    timeout: float = 30.0
    #: the releases a local copy is checked against (the plugin's --memeval-accept-unpinned)
    pins: tuple[Pins, ...] = (LOCOMO_PLUS_PINS, LOCOMO_PINS)

    def load(self, request: LoadRequest) -> Dataset:
        meta: dict[str, Any] = {}
        if request.data_dir is not None:
            root = Path(request.data_dir)
            plus = _local(root, LOCOMO_PLUS_FILE, "the LoCoMo-Plus file", self.url)
            locomo = _local(root, LOCOMO_FILE, "the LoCoMo file", self.locomo_url)
            meta["source"] = "data_dir"
        else:
            root = Path(request.cache_dir) / "data"
            plus, locomo = root / LOCOMO_PLUS_FILE, root / LOCOMO_FILE
            download(
                self.url,
                plus,
                self.sha256,
                timeout=self.timeout,
                what="the LoCoMo-Plus file",
                layout=f"DIR/{LOCOMO_PLUS_FILE}",
                progress=request.progress,
                hash_cache=root / ".sha256-cache",
            )
            download(
                self.locomo_url,
                locomo,
                self.locomo_sha256,
                timeout=self.timeout,
                what="the LoCoMo file",
                layout=f"DIR/{LOCOMO_FILE}",
                progress=request.progress,
                hash_cache=root / ".sha256-cache",
            )
            meta["source"] = self.url
        key = tuple(n for pair in file_stats((plus, locomo)) for n in pair)
        built = _build(str(plus.resolve()), str(locomo.resolve()), key)
        meta["pairing"] = pairing_rule(built.bases)
        for got, want, name in (
            (built.sha256, self.sha256, LOCOMO_PLUS_FILE),
            (built.locomo_sha256, self.locomo_sha256, LOCOMO_FILE),
        ):
            if got != want:
                meta.setdefault("sha256_mismatch", []).append(name)
        return Dataset(
            benchmark=self.name,
            questions=list(built.questions),
            files=[plus, locomo],
            sha256={LOCOMO_PLUS_FILE: built.sha256, LOCOMO_FILE: built.locomo_sha256},
            conversations={c.id: c for c in built.conversations},
            meta=meta,
        )

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        return score_locomo_plus(question, prediction)

    def official_judge(self, protocol: LoadedProtocol) -> Judge | None:
        """The judge of ``--memeval-protocol=locomo-plus`` (:mod:`._judge`)."""
        from ._judge import official_judge

        return official_judge(protocol)


BENCHMARK = LocomoPlusBenchmark()


#: known differences from upstream and what the plugin does (the protocol card lists them)
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "pairing-i-mod-10",
        "data/unified_input.py pairs item i with locomo10.json conversation i % 10; the "
        "stand-alone build_conv.py draws an unseeded random.choice (its output is never scored)",
        "follows unified_input.py: item i -> conversation i % n (n = 10 for the official file), "
        "deterministic across workers, shards and resumes; recorded as "
        "provenance.datasets['locomo-plus'].pairing",
        "locomo-plus-records",
    ),
    Deviation(
        "api-error-reply",
        "an API error becomes the reply text '[API Error: ...]', then judged as a reply",
        "a failed call is retried, then the question is UNSCORED (never a judged 0)",
        "locomo-plus-judge",
    ),
)
