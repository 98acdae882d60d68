"""The LLM interface shared by the answerer and the judges (implemented in this package)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["ChatMessage", "Completion", "LLMClient"]


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False
    model: str = ""


class LLMClient(Protocol):
    """One configured model (provider + model + base URL). Thread-safe; owns cache, retries and the
    per-process concurrency limit. ``role`` ("answerer" / "judge") is only used for token accounting;
    ``run_index`` separates the N runs of a graded judgment in the cache key. ``max_tokens=None``
    sends no limit (an official protocol that sends none); ``json_mode`` asks an OpenAI-style API
    for a JSON object (``response_format={"type": "json_object"}``; ignored by Anthropic)."""

    @property
    def label(self) -> str:
        """ "provider:model", never containing a key."""
        ...

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = 256,
        run_index: int = 0,
        role: str = "judge",
        json_mode: bool = False,
    ) -> Completion: ...
