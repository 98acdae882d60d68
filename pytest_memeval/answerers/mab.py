"""MemoryAgentBench's answer request under ``--memeval-protocol=memoryagentbench``.

Upstream's retrieval agents (``agent.py``, ``_handle_bm25_rag`` and the embedding retrievers)
send one system message, ``utils/templates.py``'s ``SYSTEM_MESSAGE``, and one user message: the
retrieved chunks as ``Memory 1:\\n<text>\\n`` lines joined by newlines, a newline, then the
source's query template for a RAG agent (``BASE_TEMPLATES[dataset]['query']['rag_agent']``)
formatted with the question. The texts are read from the pinned file at run time
(``protocols/profiles.py``); only the layout is ours to reproduce here.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..benchmarks.memoryagentbench import GENERATION_MAX_LENGTH, query_dataset
from ..llm.base import ChatMessage
from ..records import Memory, Question

__all__ = ["MabAnswerPrompts", "template_fields"]


def template_fields(text: str) -> set[str]:
    """The ``str.format`` fields of ``text`` (``{{`` escapes are not fields)."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


@dataclass(frozen=True)
class MabAnswerPrompts:
    """The system message and the query template of each template set, as read upstream."""

    system: str
    queries: Mapping[str, str]  # template set (``eventqa``, ...) -> query template text

    @classmethod
    def from_templates(cls, texts: Mapping[str, str]) -> MabAnswerPrompts:
        """From the protocol's ``answer_system`` and ``answer_query:<set>`` texts; a query
        template with a field other than ``{question}`` is refused (upstream would fill it from
        the record's metadata, which is not reproduced)."""
        queries = {
            key.partition(":")[2]: text
            for key, text in texts.items()
            if key.startswith("answer_query:")
        }
        for name, text in queries.items():
            extra = template_fields(text) - {"question"}
            if extra:
                raise ValueError(
                    f"MemoryAgentBench query template {name!r} has fields {sorted(extra)}; only "
                    "{question} is filled (use the pinned utils/templates.py)"
                )
        return cls(texts["answer_system"], queries)

    def messages(
        self, question: Question, memories: Sequence[Memory]
    ) -> tuple[list[ChatMessage], int, str] | None:
        """(messages, max_tokens, template set) for ``question``; None when upstream has no
        template for its source (our own prompt is used then)."""
        dataset = query_dataset(str(question.meta.get("source", "")))
        if dataset is None or dataset not in self.queries:
            return None
        query = self.queries[dataset].format(question=question.question)
        retrieved = "\n".join(f"Memory {i + 1}:\n{m.text}\n" for i, m in enumerate(memories))
        user = retrieved + "\n" + query
        return (
            [ChatMessage("system", self.system), ChatMessage("user", user)],
            GENERATION_MAX_LENGTH[dataset],
            dataset,
        )
