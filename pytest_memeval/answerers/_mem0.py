"""The LLM answerer under ``--memeval-protocol=mem0``: Mem0's answer request, byte for byte.

Mem0's evaluation (``evaluation/src/memzero/search.py``, ``MemorySearch.answer_question``, at the
pinned commit) searches each speaker's memory store, turns every hit into ``"<timestamp>:
<memory>"`` (the timestamp is the session's ``session_<N>_date_time`` text, which
``evaluation/src/memzero/add.py`` stores as the memory's metadata), renders ``ANSWER_PROMPT`` with
``jinja2.Template(...).render(...)`` (each speaker's list as ``json.dumps(..., indent=4)``, the
speakers' names, the question, and the graph-memory variables, ``null`` without a graph) and
sends the result as one system message at temperature 0.0 with no token limit. The reply's
content, whole, is the prediction.

This answerer sends the same request for the memories a system returned. The prompt text is read
from the pinned upstream file (``protocols``); nothing here holds upstream text. Rendering uses
the real Jinja, because Jinja's rules (the trailing-newline rule, newline normalisation) are what
Mem0's bytes are.

Our systems return one ranked list, so each memory is filed under a speaker
(:data:`ATTRIBUTION_RULE`) and keeps its rank within that speaker's list; its timestamp follows
:data:`TIMESTAMP_RULE`. Each answer's ``details["answer_prompt"]`` says how many memories went to
each speaker, how many had no known speaker (then the prompt is not the one Mem0 would have
built) and how many had no timestamp.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .._dates import MONTHS
from ..errors import JudgeError
from ..llm import ChatMessage, LLMClient
from ..protocols import RequestShape, Template
from ..records import Conversation, Memory, Prediction, Question, Session

__all__ = [
    "ATTRIBUTION_RULE",
    "REQUEST_SHAPE",
    "TIMESTAMP_RULE",
    "Filing",
    "Mem0Answerer",
    "file_memories",
    "filing_totals",
    "locomo_date_text",
]

#: how a memory is filed under a speaker (also in the provenance)
ATTRIBUTION_RULE = (
    "speaker = Memory.speaker, else the speaker of the conversation turn named by the memory's "
    "first source id; the conversation's first speaker (LoCoMo speaker_a) fills "
    "speaker_1_memories, the second (speaker_b) speaker_2_memories, each in the system's rank "
    "order; a memory with no known speaker, or a speaker who is neither, goes to "
    "speaker_1_memories at its rank (nothing is dropped) and is counted as unattributed"
)
#: where a memory's timestamp comes from (also in the provenance)
TIMESTAMP_RULE = (
    "the raw date text of the memory's session (the session of the first source id naming a "
    "turn of the conversation, else of the first naming a session), as Mem0's add.py stores it "
    "(session_<N>_date_time); else the "
    "memory's own date (its text, a datetime written as LoCoMo writes dates); else no "
    "'<timestamp>: ' prefix (counted as untimed)"
)
#: the request, as provenance
REQUEST_SHAPE = (
    "jinja2.Template(ANSWER_PROMPT).render(speaker_1_user_id, speaker_2_user_id, "
    "speaker_1_memories=json.dumps([f'{timestamp}: {memory}', ...], indent=4), "
    "speaker_2_memories, speaker_1_graph_memories='null', speaker_2_graph_memories='null', "
    "question) as one system message; the prediction is the whole reply content"
)


def locomo_date_text(value: datetime) -> str:
    """A datetime as LoCoMo writes session dates: ``1:56 pm on 8 May, 2023`` (locale-free)."""
    hour = value.hour % 12 or 12
    half = "am" if value.hour < 12 else "pm"
    return (
        f"{hour}:{value.minute:02d} {half} on {value.day} {MONTHS[value.month - 1]}, {value.year}"
    )


@dataclass(frozen=True)
class _ConversationIndex:
    """What filing needs from one conversation: its two speakers, turn -> (speaker, session),
    session id -> session."""

    speakers: tuple[str, str]
    turns: dict[str, tuple[str, Session]]
    sessions: dict[str, Session]

    @classmethod
    def of(cls, conversation: Conversation | None) -> _ConversationIndex:
        if conversation is None:
            return cls(("", ""), {}, {})
        named = [s for s in conversation.speakers if s]
        for session in conversation.sessions:  # a file without speaker_a/b: order of appearance
            for turn in session.turns:
                if len(named) >= 2:
                    break
                if turn.speaker not in named:
                    named.append(turn.speaker)
        named += ["", ""]
        turns: dict[str, tuple[str, Session]] = {}
        for session in conversation.sessions:
            for turn in session.turns:
                turns.setdefault(turn.id, (turn.speaker, session))
        sessions = {s.id: s for s in conversation.sessions}
        return cls((named[0], named[1]), turns, sessions)


@dataclass(frozen=True)
class Filing:
    """One question's memories as Mem0's prompt holds them."""

    speaker_1: str  # the name as rendered (upstream: the user id's part before the first "_")
    speaker_2: str
    speaker_1_lines: tuple[str, ...]
    speaker_2_lines: tuple[str, ...]
    unattributed: int
    untimed: int

    def details(self) -> dict[str, Any]:
        return {
            "protocol": "mem0",
            "speakers": [self.speaker_1, self.speaker_2],
            "speaker_1_memories": len(self.speaker_1_lines),
            "speaker_2_memories": len(self.speaker_2_lines),
            "unattributed": self.unattributed,
            "untimed": self.untimed,
        }


def _timestamp(memory: Memory, index: _ConversationIndex) -> str | None:
    session: Session | None = None
    for sid in memory.source_ids:
        if sid in index.turns:
            session = index.turns[sid][1]
            break
    if session is None:
        session = next((index.sessions[s] for s in memory.source_ids if s in index.sessions), None)
    if session is not None and session.date_raw:
        return session.date_raw
    if isinstance(memory.date, datetime):
        return locomo_date_text(memory.date)
    if isinstance(memory.date, str) and memory.date:
        return memory.date
    if session is not None and session.date is not None:
        return locomo_date_text(session.date)
    return None


def _speaker(memory: Memory, index: _ConversationIndex) -> str | None:
    if memory.speaker is not None:
        return memory.speaker
    if memory.source_ids and memory.source_ids[0] in index.turns:
        return index.turns[memory.source_ids[0]][0]
    return None


def file_memories(conversation: Conversation | None, memories: Sequence[Memory]) -> Filing:
    """Each memory under its speaker, in rank order, as ``"<timestamp>: <text>"`` (pure)."""
    return _file(_ConversationIndex.of(conversation), memories)


def _file(index: _ConversationIndex, memories: Sequence[Memory]) -> Filing:
    first, second = index.speakers
    lines: tuple[list[str], list[str]] = ([], [])
    unattributed = untimed = 0
    for memory in memories:
        speaker = _speaker(memory, index)
        if speaker is not None and speaker == second and second != first:
            target = 1
        else:
            target = 0
            if speaker is None or speaker != first or not first:
                unattributed += 1
        stamp = _timestamp(memory, index)
        if stamp is None:
            untimed += 1
            lines[target].append(memory.text)
        else:
            lines[target].append(f"{stamp}: {memory.text}")
    return Filing(
        speaker_1=first.split("_")[0],
        speaker_2=second.split("_")[0],
        speaker_1_lines=tuple(lines[0]),
        speaker_2_lines=tuple(lines[1]),
        unattributed=unattributed,
        untimed=untimed,
    )


def filing_totals(details: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The ``answer_prompt`` details of many results summed: answers, memories, unattributed and
    untimed memories (for the provenance)."""
    totals = {"answers": 0, "memories": 0, "unattributed_memories": 0, "untimed_memories": 0}
    for entry in details:
        filed = entry.get("answer_prompt")
        if not isinstance(filed, Mapping):
            continue
        totals["answers"] += 1
        totals["memories"] += int(filed.get("speaker_1_memories", 0)) + int(
            filed.get("speaker_2_memories", 0)
        )
        totals["unattributed_memories"] += int(filed.get("unattributed", 0))
        totals["untimed_memories"] += int(filed.get("untimed", 0))
    return totals


#: an answer prompt's rendering may produce this many times its inputs (template + values), and
#: take this long (checked between output pieces; the constructs that could spin without output
#: are refused when the template is read)
RENDER_FACTOR = 4
RENDER_SECONDS = 10.0
#: Jinja constructs an answer prompt may not use: other files, macros (recursion), any call
#: (``range``, methods), repetition operators and nested loops
_REFUSED_NODES = {
    "Extends": "{% extends %}",
    "Include": "{% include %}",
    "Import": "{% import %}",
    "FromImport": "{% from ... import %}",
    "Macro": "{% macro %}",
    "CallBlock": "{% call %}",
    "Call": "a call (range(), a method)",
    "Mul": "the * operator",
    "Pow": "the ** operator",
    "FilterBlock": "{% filter %}",
}
#: filters whose arguments can multiply the output (``center(10**9)``, ``indent``, ...)
_REFUSED_FILTERS = frozenset(
    {"center", "indent", "wordwrap", "format", "replace", "batch", "slice", "truncate", "xmlattr"}
)


def _refused_construct(tree: Any) -> str | None:
    """The first construct of a parsed Jinja template that an answer prompt may not use, as
    text for the error, or None."""
    from collections import deque

    from jinja2 import nodes

    queue: deque[tuple[Any, int]] = deque([(tree, 0)])  # breadth first: the outermost first
    while queue:
        node, loops = queue.popleft()
        kind = type(node).__name__
        if kind in _REFUSED_NODES:
            return _REFUSED_NODES[kind]
        if isinstance(node, nodes.Filter | nodes.Test) and node.name in _REFUSED_FILTERS:
            return f"the {node.name} filter"
        if isinstance(node, nodes.For):
            if loops:
                return "a loop inside a loop"
            loops += 1
        queue.extend((child, loops) for child in node.iter_child_nodes())
    return None


@dataclass
class Mem0Answerer:
    """Answers as Mem0's ``answer_question`` does (see the module docstring); role
    ``"answerer"``. ``prompt`` is ``ANSWER_PROMPT`` read from the pinned upstream file."""

    client: LLMClient
    prompt: Template
    shape: RequestShape
    #: conversation id -> conversation (filled by the plugin from the loaded datasets)
    conversations: dict[str, Conversation] = field(default_factory=dict)
    _index: dict[str, _ConversationIndex] = field(init=False, default_factory=dict, repr=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock, repr=False)
    _jinja: Any = field(init=False, repr=False)
    #: the message of the render failure that fails every later render at once
    _failed: str | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        # a dependency for this alone; imported only under the protocol. The sandbox renders
        # exactly as ``jinja2.Template`` (same default settings) but refuses a template that
        # reaches for Python internals (a local checkout's file is used even when it is not the
        # pinned one), so the upstream text is rendered, never run.
        from jinja2 import TemplateSyntaxError
        from jinja2.sandbox import SandboxedEnvironment

        env = SandboxedEnvironment()
        try:
            refused = _refused_construct(env.parse(self.prompt.text))
            self._jinja = env.from_string(self.prompt.text)
        except TemplateSyntaxError as exc:
            raise JudgeError(
                f"--memeval-protocol=mem0: ANSWER_PROMPT (sha256 {self.prompt.sha256[:12]}…) is "
                f"not a template Jinja can read ({exc.message}, line {exc.lineno}); use the "
                "pinned file (no --memeval-protocol-source, or a checkout at the pinned commit)"
            ) from None
        except RecursionError:
            refused = "expressions nested too deeply"
        if refused is not None:
            raise JudgeError(
                f"--memeval-protocol=mem0: ANSWER_PROMPT (sha256 {self.prompt.sha256[:12]}…) "
                f"uses {refused}, which an answer prompt is not allowed (it could read other "
                "files, recurse or loop without bound); use the pinned file (no "
                "--memeval-protocol-source, or a checkout at the pinned commit)"
            )
        self._failed = None

    @property
    def label(self) -> str:
        return self.client.label

    @property
    def prompt_sha256(self) -> str:
        return self.prompt.sha256

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {"mem0:ANSWER_PROMPT": self.prompt.sha256}

    def add_dataset(
        self, benchmark: str, conversations: Iterable[Conversation], questions: Iterable[Question]
    ) -> None:
        """Learn the conversations whose turns attribute and date the memories."""
        for conversation in conversations:
            self.conversations[conversation.id] = conversation

    def provenance(self) -> dict[str, Any]:
        return {
            "code_path": "evaluation/src/memzero/search.py (MemorySearch.answer_question)",
            "prompt": "ANSWER_PROMPT (evaluation/prompts.py)",
            "prompt_sha256": self.prompt.sha256,
            "request": {**vars(self.shape), "roles": "one system message"},
            "answerer": self.client.label,
            "render": REQUEST_SHAPE,
            "attribution": ATTRIBUTION_RULE,
            "timestamp": TIMESTAMP_RULE,
        }

    def _conversation_index(self, conversation_id: str) -> _ConversationIndex:
        with self._lock:
            index = self._index.get(conversation_id)
            if index is None:
                index = _ConversationIndex.of(self.conversations.get(conversation_id))
                self._index[conversation_id] = index
            return index

    def filing(self, question: Question, memories: Sequence[Memory]) -> Filing:
        return _file(self._conversation_index(question.conversation_id), memories)

    def render_filing(self, question: Question, filing: Filing) -> str:
        from jinja2.exceptions import SecurityError

        if self._failed is not None:  # a template that failed once fails the same way at once
            raise JudgeError(self._failed)
        values = {
            "speaker_1_user_id": filing.speaker_1,
            "speaker_2_user_id": filing.speaker_2,
            "speaker_1_memories": json.dumps(list(filing.speaker_1_lines), indent=4),
            "speaker_2_memories": json.dumps(list(filing.speaker_2_lines), indent=4),
            "speaker_1_graph_memories": json.dumps(None, indent=4),
            "speaker_2_graph_memories": json.dumps(None, indent=4),
            "question": question.question,
        }
        where = f"--memeval-protocol=mem0: ANSWER_PROMPT (sha256 {self.prompt.sha256[:12]}…)"
        limit = RENDER_FACTOR * (len(self.prompt.text) + sum(map(len, values.values()))) + (1 << 16)
        deadline = time.monotonic() + RENDER_SECONDS
        parts: list[str] = []
        size = 0
        try:
            for part in self._jinja.generate(**values):
                parts.append(part)
                size += len(part)
                if size > limit:
                    self._failed = (
                        f"{where} renders more than {limit} characters ({RENDER_FACTOR} times "
                        "its inputs); use the pinned file"
                    )
                    raise JudgeError(self._failed)
                if time.monotonic() > deadline:
                    self._failed = (
                        f"{where} took more than {RENDER_SECONDS:g}s to render; use the pinned file"
                    )
                    raise JudgeError(self._failed)
        except SecurityError as exc:
            self._failed = (
                f"{where} does what the Jinja sandbox refuses ({exc}); use the pinned file"
            )
            raise JudgeError(self._failed) from None
        except (RecursionError, MemoryError, OverflowError, TypeError, ValueError) as exc:
            self._failed = f"{where} cannot be rendered ({type(exc).__name__}); use the pinned file"
            raise JudgeError(self._failed) from None
        return "".join(parts)

    def render(self, question: Question, memories: Sequence[Memory]) -> str:
        """The system message for a question (exposed for tests and previews)."""
        return self.render_filing(question, self.filing(question, memories))

    def answer(self, question: Question, memories: Sequence[Memory]) -> Prediction:
        filing = self.filing(question, memories)
        reply = self.client.complete(
            [ChatMessage("system", self.render_filing(question, filing))],
            temperature=self.shape.temperature,
            max_tokens=self.shape.max_tokens,
            role="answerer",
            **self.shape.options(),
        ).text
        return Prediction(
            text=reply,
            memories=tuple(memories),
            answered_by=self.client.label,
            details={"answer_prompt": filing.details()},
        )
