"""``oracle``: returns exactly the question's evidence turns (the answer-quality ceiling at the
smallest context).

Evidence ids name turns or sessions, per benchmark: LoCoMo dia ids (``D1:3``), LongMemEval answer
session ids (the session's turns marked ``has_answer``, or the whole session when none is marked),
BEAM source message ids. An id that names neither is searched for LoCoMo-style dia ids inside it
(LoCoMo has a few malformed evidence strings such as ``D8:6; D9:17``). Turns come back in
conversation (date) order, each once, whatever ``k`` is (``ignores_top_k``); a question without
evidence (the user-memory suite, LoCoMo adversarial questions) gets no memory.
"""

from __future__ import annotations

import re

from ..records import Conversation, Memory, Question
from ._memories import turn_memory

__all__ = ["OracleSystem"]

_DIA_ID = re.compile(r"D\d+:\d+")


class OracleSystem:
    """Evidence turns only (see the module docstring)."""

    name = "oracle"
    #: the evidence is the point: --memeval-top-k does not cut it
    ignores_top_k = True
    #: ``search`` only reads the maps ``ingest`` built: the pipeline may search concurrently
    thread_safe = True

    def __init__(self) -> None:
        self._order: dict[str, int] = {}
        self._turns: dict[str, Memory] = {}
        self._sessions: dict[str, tuple[str, ...]] = {}
        self._marked: dict[str, tuple[str, ...]] = {}

    def ingest(self, conversation: Conversation) -> None:
        self._order.clear()
        self._turns.clear()
        self._sessions.clear()
        self._marked.clear()
        for session in conversation.sessions_by_date():
            ids = []
            marked = []
            for turn in session.turns:
                self._order.setdefault(turn.id, len(self._order))
                self._turns.setdefault(turn.id, turn_memory(session, turn))
                ids.append(turn.id)
                if turn.meta and turn.meta.get("has_answer"):
                    marked.append(turn.id)
            self._sessions[session.id] = tuple(ids)
            self._marked[session.id] = tuple(marked)

    def _turn_ids(self, evidence: str) -> tuple[str, ...]:
        if evidence in self._turns:
            return (evidence,)
        if evidence in self._sessions:
            return self._marked[evidence] or self._sessions[evidence]
        return tuple(i for i in _DIA_ID.findall(evidence) if i in self._turns)

    def search(self, question: Question, k: int) -> list[Memory]:
        wanted = {tid for e in question.evidence for tid in self._turn_ids(str(e))}
        return [self._turns[t] for t in sorted(wanted, key=self._order.__getitem__)]
