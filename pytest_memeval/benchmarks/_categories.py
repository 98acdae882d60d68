"""One shared category set across benchmarks.

Every benchmark keeps its own category names (for markers and its own tables); each of them maps
onto one *shared* category so that results from different benchmarks can be shown side by side in
an extra column. The map is a plain table (``SHARED_CATEGORY``); the benchmark modules'
``CategoryInfo`` values use it and a test checks that every category of every built-in benchmark is
mapped.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..errors import MemevalError

__all__ = [
    "SHARED_CATEGORIES",
    "SHARED_CATEGORY",
    "shared_category",
]

#: The shared categories, in display order, with a one-line description.
SHARED_CATEGORIES: Mapping[str, str] = MappingProxyType(
    {
        "fact-recall": "recall one stated fact (single session or single hop)",
        "multi-hop": "combine facts from several turns or sessions",
        "temporal": "reason about dates, durations and the order of time points",
        "world-knowledge": "answer with conversation facts plus general knowledge",
        "knowledge-update": "use the latest value of a fact that changed",
        "preference": "recall and apply the user's stated preferences",
        "instruction": "follow an instruction the user gave earlier",
        "abstention": "recognise that the answer is not in the history",
        "contradiction": "notice and resolve contradicting statements",
        "ordering": "put mentioned events in the order they happened or were mentioned",
        "summarization": "summarise what was discussed over many sessions",
        "synthesis": "connect information across sessions to help proactively",
    }
)

_LOCOMO: dict[str, str] = {
    "multi-hop": "multi-hop",
    "temporal": "temporal",
    "open-domain": "world-knowledge",
    "single-hop": "fact-recall",
    "adversarial": "abstention",
}

#: (benchmark, category name) -> shared category.
SHARED_CATEGORY: Mapping[tuple[str, str], str] = MappingProxyType(
    {
        **{("locomo", name): shared for name, shared in _LOCOMO.items()},
        **{("demo", name): shared for name, shared in _LOCOMO.items()},
        # LoCoMo-Plus: apply an earlier implicit cue to a later trigger (docs/scoring.md#locomo-plus)
        ("locomo-plus", "cognitive"): "synthesis",
        # LongMemEval question types (docs/scoring.md#longmemeval-records)
        ("longmemeval", "single-session-user"): "fact-recall",
        ("longmemeval", "single-session-assistant"): "fact-recall",
        ("longmemeval", "single-session-preference"): "preference",
        ("longmemeval", "multi-session"): "multi-hop",
        ("longmemeval", "temporal-reasoning"): "temporal",
        ("longmemeval", "knowledge-update"): "knowledge-update",
        # BEAM abilities (docs/scoring.md#beam-records)
        ("beam", "abstention"): "abstention",
        ("beam", "contradiction_resolution"): "contradiction",
        ("beam", "event_ordering"): "ordering",
        ("beam", "information_extraction"): "fact-recall",
        ("beam", "instruction_following"): "instruction",
        ("beam", "knowledge_update"): "knowledge-update",
        ("beam", "multi_session_reasoning"): "multi-hop",
        ("beam", "preference_following"): "preference",
        ("beam", "summarization"): "summarization",
        ("beam", "temporal_reasoning"): "temporal",
        # MemoryAgentBench splits (docs/scoring.md#memoryagentbench)
        ("memoryagentbench", "Accurate_Retrieval"): "fact-recall",
        ("memoryagentbench", "Test_Time_Learning"): "preference",
        ("memoryagentbench", "Long_Range_Understanding"): "summarization",
        ("memoryagentbench", "Conflict_Resolution"): "knowledge-update",
        # LongMemEval-V2 question types (docs/scoring.md#longmemeval-v2)
        ("longmemeval-v2", "static-environment"): "fact-recall",
        ("longmemeval-v2", "static-environment-abs"): "abstention",
        ("longmemeval-v2", "dynamic-environment"): "knowledge-update",
        ("longmemeval-v2", "dynamic-environment-abs"): "abstention",
        ("longmemeval-v2", "procedure"): "ordering",
        ("longmemeval-v2", "procedure-abs"): "abstention",
        ("longmemeval-v2", "errors-gotchas"): "synthesis",
        # HaluMem question types (docs/scoring.md#halumem)
        ("halumem", "basic_fact_recall"): "fact-recall",
        ("halumem", "multi_hop_inference"): "multi-hop",
        ("halumem", "dynamic_update"): "knowledge-update",
        ("halumem", "memory_boundary"): "abstention",
        ("halumem", "generalization_application"): "synthesis",
        ("halumem", "memory_conflict"): "contradiction",
        # user-memory suite layers (docs/scoring.md#user-memory-suite)
        ("usermem", "layer1"): "fact-recall",  # exact factual recall from one session
        ("usermem", "layer2"): "multi-hop",  # disambiguate; retrieve every relevant item
        ("usermem", "layer3"): "synthesis",  # cross-session synthesis and proactive help
    }
)


def shared_category(benchmark: str, category: str) -> str:
    """The shared category of ``category`` (a category *name*) of ``benchmark``.

    Raises MemevalError for a pair that is not in the table: a new benchmark or category must be
    added to ``SHARED_CATEGORY`` deliberately rather than fall into a catch-all.
    """
    try:
        return SHARED_CATEGORY[(benchmark, category)]
    except KeyError:
        raise MemevalError(
            f"no shared category for {benchmark!r} category {category!r}: add it to "
            "pytest_memeval.benchmarks._categories.SHARED_CATEGORY"
        ) from None
