"""LongMemEval-V2's reader request under ``--memeval-protocol=longmemeval-v2`` (and its labelled
``longmemeval-v2-corrected`` variant).

Upstream's ``evaluation/harness.py`` (``build_messages``) sends one system message, the domain's
``DOMAIN_SYSTEM_PROMPTS[domain]``, and one user message: ``### Memory context:\\n`` (then
``(empty)`` when nothing was retrieved), each memory's text, then ``\\n\\n### Question to
answer:\\n<question>``. Upstream writes ``\\boxed{}`` once in a non-raw string, so the text it
sends holds a backspace (U+0008) followed by ``oxed{}``: the official profile sends those exact
characters (read from the pinned file at run time); the corrected variant sends ``\\boxed{}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...answerers import AnswerRequest
from ...llm import ChatMessage
from ...protocols import LME2_CORRECTED, LME2_PROTOCOLS, LoadedProtocol
from ...records import Memory, Question

__all__ = [
    "BACKSPACE_BOXED",
    "CORRECTED_BOXED",
    "DOMAINS",
    "READER_MAX_COMPLETION_TOKENS",
    "Lme2AnswerPrompts",
    "corrected",
    "official_answerer",
]

#: what upstream's ``"\boxed{}"`` (a non-raw string) holds: a backspace, then ``oxed{}``
BACKSPACE_BOXED = "\x08oxed{}"
#: what it was meant to say (the corrected variant)
CORRECTED_BOXED = "\\boxed{}"
DOMAINS = ("web", "enterprise")
#: upstream ``--max-completion-tokens`` default (sent as ``max_completion_tokens`` to OpenAI)
READER_MAX_COMPLETION_TOKENS = 20000


def corrected(text: str) -> str:
    """``text`` with upstream's backspace-``oxed{}`` written as ``\\boxed{}``."""
    return text.replace(BACKSPACE_BOXED, CORRECTED_BOXED)


@dataclass(frozen=True)
class Lme2AnswerPrompts:
    """The domain system prompts as read upstream (``systems``), sent as they are or corrected."""

    systems: Mapping[str, str]
    fix_backspace: bool = False

    @classmethod
    def from_templates(cls, texts: Mapping[str, str], *, fix_backspace: bool) -> Lme2AnswerPrompts:
        """From the protocol's ``answer_system:<domain>`` texts."""
        systems = {
            key.partition(":")[2]: text
            for key, text in texts.items()
            if key.startswith("answer_system:")
        }
        return cls(systems, fix_backspace)

    def system(self, domain: str) -> str:
        text = self.systems[domain]
        return corrected(text) if self.fix_backspace else text

    def messages(self, question: Question, memories: Sequence[Memory]) -> list[ChatMessage] | None:
        """The reader's messages for ``question`` (None: a domain upstream has no prompt for).
        Upstream's user message is a list of text parts; here they are joined into one string
        (the same characters, in order)."""
        domain = str(question.meta.get("domain", ""))
        if domain not in self.systems:
            return None
        parts = ["### Memory context:\n" + ("" if memories else "(empty)")]
        parts.extend(m.text for m in memories)
        parts.append(f"\n\n### Question to answer:\n{question.question}")
        return [ChatMessage("system", self.system(domain)), ChatMessage("user", "".join(parts))]

    def request(self, question: Question, memories: Sequence[Memory]) -> AnswerRequest | None:
        """Upstream's harness request: no temperature, ``max_completion_tokens``
        :data:`READER_MAX_COMPLETION_TOKENS`; the whole reply is the prediction (upstream scores
        its last ``\\boxed{}`` itself). None for a domain upstream has no prompt for."""
        messages = self.messages(question, memories)
        if messages is None:
            return None
        return AnswerRequest(
            messages,
            READER_MAX_COMPLETION_TOKENS,
            temperature=None,
            max_tokens_field="max_completion_tokens",
        )


def official_answerer(protocol: LoadedProtocol) -> Lme2AnswerPrompts | None:
    """The reader request of ``--memeval-protocol=longmemeval-v2`` (upstream's bytes) or of
    ``longmemeval-v2-corrected`` (``\\boxed{}`` written out) from the loaded
    ``answer_system:<domain>`` prompts; None under another protocol."""
    if protocol.name not in LME2_PROTOCOLS:
        return None
    return Lme2AnswerPrompts.from_templates(
        {k: t.text for k, t in protocol.templates.items()},
        fix_backspace=protocol.name == LME2_CORRECTED,
    )
