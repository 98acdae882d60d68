"""MemoryAgentBench's answer request under ``--memeval-protocol=memoryagentbench``.

Upstream's retrieval agents (``agent.py``, ``_handle_bm25_rag`` and the embedding retrievers)
send one system message, ``utils/templates.py``'s ``SYSTEM_MESSAGE``, and one user message: the
retrieved chunks as ``Memory 1:\\n<text>\\n`` lines joined by newlines, a newline, then the
source's query template for a RAG agent (``BASE_TEMPLATES[dataset]['query']['rag_agent']``)
formatted with the question. The texts are read from the pinned file at run time
(``protocols/_profiles.py``); only the layout, and which template set a source gets, is ours to
reproduce here.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from ...answerers import AnswerRequest
from ...llm import ChatMessage
from ...protocols import MEMORYAGENTBENCH, LoadedProtocol, ProtocolSourceError
from ...records import Memory, Question

__all__ = [
    "GENERATION_MAX_LENGTH",
    "QUERY_DATASETS",
    "MabAnswerPrompts",
    "official_answerer",
    "query_dataset",
    "template_fields",
]

#: upstream ``DATASET_MAPPING``: (substrings that must all be in the source) -> its template set,
#: tried in this order (``normalize_dataset_name``)
QUERY_DATASETS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("ruler_", "qa"), "ruler_qa"),
    (("icl_",), "in_context_learning"),
    (("infbench_", "sum"), "infbench_sum"),
    (("eventqa_",), "eventqa"),
    (("recsys_", "redial"), "recsys_redial"),
    (("longmemeval_",), "longmemeval"),
    (("factconsolidation_",), "factconsolidation"),
    (("detective_", "qa"), "detective_qa"),
)
#: ``generation_max_length`` of upstream's dataset configs (configs/data_conf/*.yaml: the same
#: value for every config of a template set): the answer's ``max_tokens``
GENERATION_MAX_LENGTH: Mapping[str, int] = MappingProxyType(
    {
        "ruler_qa": 50,
        "longmemeval": 50,
        "eventqa": 40,
        "in_context_learning": 20,
        "recsys_redial": 300,
        "infbench_sum": 1200,
        "detective_qa": 2000,
        "factconsolidation": 10,
    }
)


def query_dataset(source: str) -> str | None:
    """The template set upstream's ``get_template`` picks for ``source`` (None: upstream has
    none and raises, e.g. ``ruler_niah_*``)."""
    for patterns, name in QUERY_DATASETS:
        if all(p in source for p in patterns):
            return name
    return None


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

    def request(self, question: Question, memories: Sequence[Memory]) -> AnswerRequest | None:
        """Upstream's request for ``question``: its messages, temperature 0, ``max_tokens`` the
        template set's ``generation_max_length`` (``chat.completions.create(max_tokens=)``);
        None when upstream has no template for its source."""
        built = self.messages(question, memories)
        if built is None:
            return None
        messages, max_tokens, _ = built
        return AnswerRequest(messages, max_tokens, temperature=0.0, max_tokens_field="max_tokens")


def official_answerer(protocol: LoadedProtocol) -> MabAnswerPrompts | None:
    """The answer request of ``--memeval-protocol=memoryagentbench`` from its loaded prompts
    (``answer_system``, ``answer_query:<set>``); None under another protocol. A query template
    with fields upstream fills from metadata is a ProtocolSourceError."""
    if protocol.name != MEMORYAGENTBENCH.name:
        return None
    try:
        return MabAnswerPrompts.from_templates({k: t.text for k, t in protocol.templates.items()})
    except ValueError as exc:
        raise ProtocolSourceError(str(exc)) from None
