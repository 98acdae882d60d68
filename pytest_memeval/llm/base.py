"""The LLM interface shared by the answerer and the judges (implemented in this package)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "MAX_TOKENS_FIELDS",
    "ChatMessage",
    "Completion",
    "LLMClient",
    "Request",
    "check_request_options",
]

#: the names an OpenAI-style API knows for the output limit
MAX_TOKENS_FIELDS = ("max_tokens", "max_completion_tokens")


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
    #: a cache hit imported from another machine's export: "FILE (sha256 HEX12)"; "" otherwise
    source: str = ""


class LLMClient(Protocol):
    """One configured model (provider + model + base URL). Thread-safe; owns cache, retries and the
    per-process concurrency limit. ``role`` ("answerer" / "judge") is only used for token accounting;
    ``run_index`` separates the N runs of a graded judgment in the cache key. ``max_tokens=None``
    sends no limit (an official protocol that sends none); ``json_mode`` asks an OpenAI-style API
    for a JSON object (``response_format={"type": "json_object"}``; ignored by Anthropic).
    ``n`` (only ``None`` or ``1``: one choice is read) is sent as the ``n`` field when given, and
    ``max_tokens_field`` names the field the limit is sent in (``"max_tokens"`` or
    ``"max_completion_tokens"``; ``None``: the provider's default), and ``stream=False`` is sent
    as ``"stream": false`` when given, as an official protocol's request has them; Anthropic's API
    has none of the three and ignores them. ``temperature=None`` sends no temperature and
    ``reasoning_effort`` (``"low"``, ``"medium"``, ``"high"``, ...) is sent as that field when
    given (an official protocol that sends a reasoning model's effort and no temperature:
    LongMemEval-V2's judge); Anthropic's API has no ``reasoning_effort`` and ignores it."""

    @property
    def label(self) -> str:
        """ "provider:model", never containing a key."""
        ...

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float | None = 0.0,
        max_tokens: int | None = 256,
        run_index: int = 0,
        role: str = "judge",
        json_mode: bool = False,
        n: int | None = None,
        max_tokens_field: str | None = None,
        stream: bool | None = None,
        reasoning_effort: str | None = None,
    ) -> Completion: ...


def check_request_options(
    n: int | None,
    max_tokens_field: str | None,
    stream: bool | None = None,
    reasoning_effort: str | None = None,
) -> None:
    """Raise ValueError for an ``n`` other than ``None``/``1``, an unknown limit field, a
    ``stream`` other than ``None``/``False`` (the reply is read whole), or a ``reasoning_effort``
    that is not a non-empty word."""
    if reasoning_effort is not None and not (
        isinstance(reasoning_effort, str) and reasoning_effort.isalpha()
    ):
        raise ValueError(f"reasoning_effort={reasoning_effort!r}: expected a word such as medium")
    if stream is not None and stream is not False:
        raise ValueError(f"stream={stream!r}: the reply is read whole, so stream must be false")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise ValueError(f"n={n!r}: only one choice is read, so n must be 1 or not sent")
    if max_tokens_field is not None and max_tokens_field not in MAX_TOKENS_FIELDS:
        raise ValueError(
            f"max_tokens_field={max_tokens_field!r}: expected one of {', '.join(MAX_TOKENS_FIELDS)}"
        )


@dataclass(frozen=True)
class Request:
    """One chat request as :meth:`LLMClient.complete` was asked for it: what a provider sends and
    what the cache key is made of (the parameters are those of ``complete``)."""

    messages: tuple[ChatMessage, ...]
    temperature: float | None = 0.0
    max_tokens: int | None = 256
    run_index: int = 0
    json_mode: bool = False
    n: int | None = None
    max_tokens_field: str | None = None
    stream: bool | None = None
    reasoning_effort: str | None = None

    def __post_init__(self) -> None:
        check_request_options(self.n, self.max_tokens_field, self.stream, self.reasoning_effort)
