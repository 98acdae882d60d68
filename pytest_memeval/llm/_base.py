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
#: the sampling fields a request may add to the body (:attr:`Request.extra`)
EXTRA_FIELDS = ("top_p", "seed", "stop")


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
    """One chat request, what :meth:`LLMClient.send` takes: what a provider sends and what the
    cache key is made of (the parameters are those of :meth:`LLMClient.complete`)."""

    messages: tuple[ChatMessage, ...]
    temperature: float | None = 0.0
    max_tokens: int | None = 256
    run_index: int = 0
    json_mode: bool = False
    n: int | None = None
    max_tokens_field: str | None = None
    stream: bool | None = None
    reasoning_effort: str | None = None
    #: more sampling fields sent as they are (an official protocol's ``top_p``, ``seed``,
    #: ``"stop": null``); OpenAI-style APIs only, part of the cache key when given
    extra: tuple[tuple[str, float | int | None], ...] = ()

    def __post_init__(self) -> None:
        check_request_options(self.n, self.max_tokens_field, self.stream, self.reasoning_effort)
        for name, value in self.extra:
            if name not in EXTRA_FIELDS or isinstance(value, bool):
                raise ValueError(
                    f"extra field {name}={value!r}: expected one of {', '.join(EXTRA_FIELDS)} "
                    "with a number or None"
                )


class LLMClient(Protocol):
    """One configured model (provider + model + base URL). Thread-safe; owns cache, retries and the
    per-process concurrency limit. Its one primitive is :meth:`send` (a :class:`Request`, and the
    ``role`` asking: ``"answerer"`` / ``"judge"``, used only for token accounting and the batch);
    :meth:`complete` builds the request from keywords and sends it. A class that subclasses this
    protocol writes ``send`` and inherits ``complete``.

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
    LongMemEval-V2's judge); Anthropic's API has no ``reasoning_effort`` and ignores it.
    ``extra`` adds ``top_p`` / ``seed`` / ``stop`` fields as given (MemoryAgentBench's
    summarisation judge); Anthropic's API ignores them too."""

    @property
    def label(self) -> str:
        """ "provider:model", never containing a key."""
        ...

    def send(self, request: Request, *, role: str = "judge") -> Completion:
        """The reply to ``request`` (from the cache or the provider), counted for ``role``."""
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
        extra: tuple[tuple[str, float | int | None], ...] = (),
    ) -> Completion:
        """``send`` of the :class:`Request` these keywords make."""
        request = Request(
            tuple(messages),
            temperature,
            max_tokens,
            run_index,
            json_mode,
            n,
            max_tokens_field,
            stream,
            reasoning_effort,
            tuple(extra),
        )
        return self.send(request, role=role)
