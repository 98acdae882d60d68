"""The LLM answerer (``--memeval-answerer=PROVIDER:MODEL``).

It asks for a short answer (a few words) from the retrieved memories, shown oldest first, each
with its date and never with its retrieval score. The reference ("today") date is the question's
own date when the benchmark has one (LongMemEval), else the conversation's last session date
(LoCoMo, BEAM: ``reference_dates``, filled by the plugin from the loaded conversations, so it is
the same for every question of a conversation), else the newest memory date. The prediction is the text after the last ``ANSWER:``
marker when the reply has one (or after ``Answer:`` / "the answer is:", which small models write
instead), first line only, else the whole reply, stripped.

The prompt is our own text: ``templates/answer.txt`` (LoCoMo, demo and the others: a few words),
or the suite's own when the registry names one (``benchmarks.SUITE_ANSWER_PROMPTS``: LongMemEval's
``benchmarks/longmemeval/answer_prompt.txt``, a chat assistant recalling past sessions: latest
fact wins, preferences, "I do not know" when the history lacks it; BEAM's
``benchmarks/beam/answer_prompt.txt``, a full reply, one item per line for ordering questions,
the whole reply being the prediction, no marker).
Placeholders ``{memories}``, ``{question}`` and ``{reference_date}``; ``--memeval-answer-prompt=PATH``
replaces all of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from ..benchmarks import SUITE_ANSWER_PROMPTS
from ..judges import PromptTemplate, load_template
from ..llm import ChatMessage, LLMClient
from ..records import Conversation, Memory, Prediction, Question

__all__ = [
    "ANSWER_MARKER",
    "ANSWER_TEMPLATE_FILE",
    "AnswerRequest",
    "LLMAnswerer",
    "SuiteAnswerer",
    "extract_answer",
    "format_date",
    "format_memories",
    "last_session_dates",
    "order_memories",
]

ANSWER_MARKER = "ANSWER:"
ANSWER_TEMPLATE_FILE = "answer.txt"
ANSWER_FIELDS = ("memories", "question", "reference_date")

_DATE_FORMATS = (
    "%Y/%m/%d %H:%M",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d",
    "%I:%M %p on %d %B, %Y",
    "%I:%M %p on %d %b, %Y",
    "%d %B %Y",
    "%B %d, %Y",
)


def _parse_date(value: datetime | str | None) -> datetime | None:
    """A naive datetime (aware ones converted to UTC) for sorting, or None."""
    if value is None:
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        text = value.strip()
        # LongMemEval style "2023/05/01 (Mon) 21:05": drop the parenthesised weekday
        if "(" in text and ")" in text:
            head, _, rest = text.partition("(")
            text = (head + rest.partition(")")[2]).strip()
            text = " ".join(text.split())
        parsed: datetime | None = None
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            for fmt in _DATE_FORMATS:
                try:
                    parsed = datetime.strptime(text, fmt)
                    break
                except ValueError:
                    continue
        if parsed is None:
            return None
        dt = parsed
    if dt.tzinfo is not None:
        try:
            dt = dt.astimezone(UTC).replace(tzinfo=None)
        except (OverflowError, ValueError):  # 0001-01-01T00:00:00+14:00 is before year 1 in UTC
            return None
    return dt


def format_date(value: datetime | str | None) -> str:
    """``2023-05-08 (Monday)``, with ``HH:MM`` when the time is not midnight; strings that do not
    parse as dates are shown as written; ``None`` is ``undated``."""
    if value is None:
        return "undated"
    dt = value if isinstance(value, datetime) else _parse_date(value)
    if dt is None:
        return str(value).strip() or "undated"
    text = f"{dt:%Y-%m-%d} ({dt:%A})"
    if (dt.hour, dt.minute) != (0, 0):
        text += f" {dt:%H:%M}"
    return text


def order_memories(memories: Sequence[Memory]) -> list[Memory]:
    """Memories oldest first (stable); memories without a parseable date keep their order after
    the dated ones."""
    indexed = [(i, m, _parse_date(m.date)) for i, m in enumerate(memories)]
    indexed.sort(key=lambda t: (t[2] is None, t[2] or datetime.min, t[0]))
    return [m for _, m, _ in indexed]


def format_memories(memories: Sequence[Memory]) -> str:
    """One ``- <date>: <text>`` line per memory, oldest first, no retrieval scores."""
    if not memories:
        return "(no memories were retrieved)"
    return "\n".join(f"- {format_date(m.date)}: {m.text}" for m in order_memories(memories))


#: the marker in any case, bold or not ("ANSWER:", "Answer:", "**Final answer:**")
_MARKER_ANY_CASE = re.compile(r"\banswer\s*\**\s*:", re.IGNORECASE)
#: what small models write instead: "The answer is: John", 'The answer to "..." is: 2023-06-14'
_ANSWER_IS = re.compile(r"\banswer\b[^\n]{0,160}?\bis\s*:", re.IGNORECASE)
_QUOTES = ('"', "'", "\u201c\u201d", "\u2018\u2019")


def _clean(text: str) -> str:
    """The first non-empty line, markdown bold and one pair of surrounding quotes removed."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = line.strip("*").strip()
    for quote in _QUOTES:
        opening, closing = quote[0], quote[-1]
        if len(line) >= 2 and line[0] == opening and line[-1] == closing:
            line = line[1:-1].strip()
            break
    return line


def extract_answer(reply: str) -> str:
    """The short answer in a reply.

    In order: the text after the last ``ANSWER:`` marker; else after the last marker in another
    case or in bold (``Answer:``, ``**Final answer:**``); else after the last "answer ... is:"
    (``The answer is: John``, which small models write instead of the marker). Of that text the
    first non-empty line is kept (later lines are explanations), markdown bold and one pair of
    surrounding quotes removed. Without any marker the whole reply, stripped."""
    idx = reply.rfind(ANSWER_MARKER)
    if idx != -1:
        return _clean(reply[idx + len(ANSWER_MARKER) :])
    for rx in (_MARKER_ANY_CASE, _ANSWER_IS):
        matches = list(rx.finditer(reply))
        if matches:
            return _clean(reply[matches[-1].end() :])
    return reply.strip()


def _reference_date(
    question: Question, memories: Sequence[Memory], reference_date: datetime | str | None
) -> str:
    if question.question_date is not None:
        return format_date(question.question_date)
    if question.question_date_raw:
        return format_date(question.question_date_raw)
    if reference_date is not None:
        return format_date(reference_date)
    dated = [d for d in (_parse_date(m.date) for m in memories) if d is not None]
    if dated:
        return format_date(max(dated))
    return "unknown"


def last_session_dates(conversations: Iterable[Conversation]) -> dict[str, datetime | str]:
    """conversation id -> its last session's date (the newest parsed date; else the last session's
    raw date text); conversations without any date are left out."""
    out: dict[str, datetime | str] = {}
    for conv in conversations:
        dated = [s.date for s in conv.sessions if s.date is not None]
        if dated:
            out[conv.id] = max(dated, key=lambda d: _parse_date(d) or datetime.min)
            continue
        raw = [s.date_raw for s in conv.sessions if s.date_raw]
        if raw:
            out[conv.id] = raw[-1]
    return out


@dataclass(frozen=True)
class AnswerRequest:
    """A suite's own answer request (its official protocol's): the messages and how they are
    sent. The whole reply is the prediction: upstream reads it with its own parsing."""

    messages: list[ChatMessage]
    max_tokens: int
    #: None: the field is not sent (the provider's default)
    temperature: float | None = 0.0
    #: the request field the limit goes in (``max_tokens`` or ``max_completion_tokens``)
    max_tokens_field: str = "max_tokens"


class SuiteAnswerer(Protocol):
    """A suite's answer request for its own questions (a benchmark's ``official_answerer`` hook
    builds one from the loaded protocol's prompts)."""

    def request(self, question: Question, memories: Sequence[Memory]) -> AnswerRequest | None:
        """The request for ``question``; None: the plugin's own prompt answers it."""
        ...


@dataclass
class LLMAnswerer:
    """Answers from memories with one temperature-0 call (role ``"answerer"``)."""

    client: LLMClient
    template_path: str | None = None
    max_tokens: int = 256
    template: PromptTemplate = field(init=False)
    #: conversation id -> the reference ("today") date of its questions without a date
    reference_dates: dict[str, datetime | str] = field(default_factory=dict)
    #: conversation id -> benchmark name (picks the benchmark's own prompt)
    benchmark_of: dict[str, str] = field(default_factory=dict)
    by_benchmark: dict[str, PromptTemplate] = field(init=False, default_factory=dict)
    #: benchmark -> its own answer request (the ``official_answerer`` hook of a suite under its
    #: official protocol), used for its questions unless ``--memeval-answer-prompt`` replaces
    #: every prompt
    official: dict[str, SuiteAnswerer] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.template = load_template(ANSWER_TEMPLATE_FILE, ANSWER_FIELDS, self.template_path)
        if self.template_path is None:  # a user's prompt replaces every benchmark's
            self.by_benchmark = {
                bench: load_template(prompt.file, ANSWER_FIELDS, folder=prompt.folder)
                for bench, prompt in SUITE_ANSWER_PROMPTS.items()
            }

    @property
    def prompt_hashes(self) -> dict[str, str]:
        """``answer`` (the default prompt) and ``answer:<benchmark>`` for the others."""
        out = {"answer": self.template.sha256}
        out.update({f"answer:{b}": t.sha256 for b, t in self.by_benchmark.items()})
        return out

    def add_dataset(
        self, benchmark: str, conversations: Iterable[Conversation], questions: Iterable[Question]
    ) -> None:
        """Learn a loaded benchmark: each conversation's "today" (its last session date) and which
        benchmark's prompt its questions get."""
        self.reference_dates.update(last_session_dates(conversations))
        self.benchmark_of.update((q.conversation_id, benchmark) for q in questions)

    def _official_request(
        self, question: Question, memories: Sequence[Memory]
    ) -> AnswerRequest | None:
        if self.template_path is not None:
            return None
        suite = self.official.get(self.benchmark_of.get(question.conversation_id, ""))
        return None if suite is None else suite.request(question, memories)

    def _template(self, question: Question) -> PromptTemplate:
        bench = self.benchmark_of.get(question.conversation_id, "")
        return self.by_benchmark.get(bench, self.template)

    @property
    def label(self) -> str:
        return self.client.label

    @property
    def prompt_sha256(self) -> str:
        return self.template.sha256

    def render(
        self,
        question: Question,
        memories: Sequence[Memory],
        *,
        reference_date: datetime | str | None = None,
    ) -> str:
        """The prompt text for a question (exposed for tests and ``--collect-only`` previews)."""
        if reference_date is None:
            reference_date = self.reference_dates.get(question.conversation_id)
        return self._template(question).render(
            {
                "memories": format_memories(memories),
                "question": question.question,
                "reference_date": _reference_date(question, memories, reference_date),
            }
        )

    def answer(
        self,
        question: Question,
        memories: Sequence[Memory],
        *,
        reference_date: datetime | str | None = None,
    ) -> Prediction:
        """``reference_date``: the conversation's last session date, used when the question has no
        date of its own (else the newest memory date is used)."""
        upstream = self._official_request(question, memories)
        if upstream is not None:  # upstream scores the whole reply with its own parsing
            reply = self.client.complete(
                upstream.messages,
                temperature=upstream.temperature,
                max_tokens=upstream.max_tokens,
                role="answerer",
                max_tokens_field=upstream.max_tokens_field,
            ).text
            return Prediction(text=reply, memories=tuple(memories), answered_by=self.client.label)
        prompt = self.render(question, memories, reference_date=reference_date)
        reply = self.client.complete(
            [ChatMessage("user", prompt)],
            temperature=0.0,
            max_tokens=self.max_tokens,
            role="answerer",
        ).text
        own = SUITE_ANSWER_PROMPTS.get(self.benchmark_of.get(question.conversation_id, ""))
        whole = own is not None and own.whole_reply
        text = reply.strip() if whole and self.template_path is None else extract_answer(reply)
        return Prediction(text=text, memories=tuple(memories), answered_by=self.client.label)
