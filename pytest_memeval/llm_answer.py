"""The LLM answerer (``--memeval-answerer=PROVIDER:MODEL``).

It asks for a short answer (a few words) from the retrieved memories, shown oldest first, each
with its date and never with its retrieval score. The reference ("today") date is the question's
own date when the benchmark has one, else the date passed by the caller (the conversation's last
session), else the newest memory date. The prediction is the text after the last ``ANSWER:``
marker when the reply has one, else the whole reply, stripped.

The prompt is our own text in ``templates/answer.txt`` with the placeholders ``{memories}``,
``{question}`` and ``{reference_date}``; ``--memeval-answer-prompt=PATH`` replaces it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .judges.base import PromptTemplate, load_template
from .llm.base import ChatMessage, LLMClient
from .records import Memory, Prediction, Question

__all__ = [
    "ANSWER_MARKER",
    "ANSWER_TEMPLATE_FILE",
    "LLMAnswerer",
    "extract_answer",
    "format_date",
    "format_memories",
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
        dt = dt.astimezone(UTC).replace(tzinfo=None)
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


def extract_answer(reply: str) -> str:
    """The text after the last ``ANSWER:`` marker (markdown bold around it removed), stripped;
    the whole reply stripped when there is no marker."""
    idx = reply.rfind(ANSWER_MARKER)
    if idx == -1:
        return reply.strip()
    return reply[idx + len(ANSWER_MARKER) :].strip().strip("*").strip()


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


@dataclass
class LLMAnswerer:
    """Answers from memories with one temperature-0 call (role ``"answerer"``)."""

    client: LLMClient
    template_path: str | None = None
    max_tokens: int = 256
    template: PromptTemplate = field(init=False)

    def __post_init__(self) -> None:
        self.template = load_template(ANSWER_TEMPLATE_FILE, ANSWER_FIELDS, self.template_path)

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
        return self.template.render(
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
        prompt = self.render(question, memories, reference_date=reference_date)
        reply = self.client.complete(
            [ChatMessage("user", prompt)],
            temperature=0.0,
            max_tokens=self.max_tokens,
            role="answerer",
        ).text
        return Prediction(
            text=extract_answer(reply), memories=tuple(memories), answered_by=self.client.label
        )
