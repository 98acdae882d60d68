"""Judge protocol, judge result record, prompt templates and the shared reply-parsing helpers.

Prompt templates are plain text files with ``{name}`` placeholders. They are filled with
``str.format_map`` on a dict of *values*: the question, gold and prediction text are substituted,
never parsed as format strings, so braces inside them are harmless. Literal braces in a template
(for example a JSON example) are written ``{{`` and ``}}``. Placeholders must be plain names from
the template's allowed set; anything else (attribute access, indexing, unknown names) is rejected
when the template is loaded, so a bad user template fails at configuration time.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from .._files import FileTooLarge, NotAFile, read_bounded_text
from ..errors import JudgeError
from ..llm import ChatMessage, LLMClient, run_parallel
from ..records import Question

__all__ = [
    "FIRST_JSON_SPAN",
    "QA_FIELDS",
    "Judge",
    "JudgeResult",
    "PromptTemplate",
    "ask",
    "extract_json_mem0",
    "finite_number",
    "gold_text",
    "json_or_none",
    "load_template",
    "parallel_map",
    "parse_json_object",
    "qa_values",
    "template_sha256",
]

T = TypeVar("T")
R = TypeVar("R")


def finite_number(value: object) -> float | None:
    """A JSON value as a finite float: numbers and numeric strings; booleans, NaN, infinities and
    anything else give None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            f = float(value)
        except OverflowError:  # an integer beyond float range (JSON allows 4,300 digits)
            return None
    elif isinstance(value, str):
        try:
            f = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return f if math.isfinite(f) else None


@dataclass
class JudgeResult:
    """What one judgment produced.

    ``scores`` maps metric keys to values (``None`` when the judge could not score);
    ``unscored`` is true when no usable value came out of the replies (the item is excluded from
    means and counted); ``raw`` keeps every raw reply for audit; ``skipped`` marks an item the
    judge deliberately does not judge (LoCoMo category 5 under the Mem0 protocol).
    """

    scores: dict[str, float | None] = field(default_factory=dict)
    unscored: bool = False
    raw: list[str] = field(default_factory=list)
    reasoning: str | None = None
    warnings: list[str] = field(default_factory=list)
    skipped: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scores": dict(self.scores),
            "unscored": self.unscored,
            "raw": list(self.raw),
            "reasoning": self.reasoning,
            "warnings": list(self.warnings),
            "skipped": self.skipped,
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeResult:
        scores = data.get("scores") or {}
        return cls(
            scores={str(k): (None if v is None else float(v)) for k, v in scores.items()},
            unscored=bool(data.get("unscored", False)),
            raw=[str(r) for r in data.get("raw") or ()],
            reasoning=data.get("reasoning"),
            warnings=[str(w) for w in data.get("warnings") or ()],
            skipped=bool(data.get("skipped", False)),
            details=dict(data.get("details") or {}),
        )


@runtime_checkable
class Judge(Protocol):
    """An LLM judge of one style. Stateless apart from its templates; thread-safe.

    A reply that cannot be parsed gives an UNSCORED result (never a guess); an exception raised
    by the client (a failed call after the client's own retries) propagates to the caller, which
    records the item as an error."""

    #: the style name (``mem0``, ``graded``, ``longmemeval``, ``beam-nugget``, ``usermem``)
    name: str
    #: the headline metric key the judge writes its score under (``judge_mem0``, ...); its extra
    #: values go under ``<metric>_<suffix>``, so no two styles ever write the same key
    metric: str

    @property
    def prompt_hashes(self) -> dict[str, str]:
        """Template name -> sha256 of the template text in use (for the provenance)."""
        ...

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult: ...


# --------------------------------------------------------------------------- templates


def template_sha256(text: str) -> str:
    """Hex sha256 of a template's text (UTF-8), as recorded in the provenance."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt template: its name, text, where it came from and its hash."""

    name: str
    text: str
    source: str  # "builtin:<file>" or the user's path
    allowed: frozenset[str]

    @property
    def sha256(self) -> str:
        return template_sha256(self.text)

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(_template_fields(self.text, self.source, self.allowed))

    def render(self, values: Mapping[str, object]) -> str:
        """Fill the placeholders with ``str(value)``; values are never interpreted as formats."""
        mapping = {name: str(values.get(name, "")) for name in self.allowed}
        return self.text.format_map(mapping)


def _template_fields(text: str, source: str, allowed: frozenset[str]) -> list[str]:
    names: list[str] = []
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:  # unbalanced braces
        raise JudgeError(
            f"prompt template {source}: {exc}. Write literal braces as '{{{{' and '}}}}'."
        ) from exc
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in allowed or spec or conversion:
            raise JudgeError(
                f"prompt template {source}: placeholder {{{name}}} is not allowed; "
                f"use plain placeholders from {sorted(allowed)} and write literal braces "
                "as '{{' and '}}'."
            )
        names.append(name)
    return names


#: a user's prompt template is read up to this many bytes
MAX_TEMPLATE_BYTES = 1 << 20


def load_template(
    default_file: str,
    allowed: Iterable[str],
    path: str | None = None,
    *,
    folder: str = "templates",
) -> PromptTemplate:
    """Load the built-in template ``<folder>/<default_file>`` (``folder`` below the package:
    ``templates`` or a suite's home such as ``benchmarks/beam``) or, when ``path`` is given, the
    user's file instead. Placeholders are checked against ``allowed``."""
    allowed_set = frozenset(allowed)
    if path is not None:
        p = Path(path)
        try:
            text = read_bounded_text(p, MAX_TEMPLATE_BYTES)
        except NotAFile as exc:
            raise JudgeError(f"prompt template {exc}; give a text file") from None
        except FileTooLarge:
            raise JudgeError(
                f"prompt template {path}: larger than {MAX_TEMPLATE_BYTES // 1024} KB; "
                "a prompt template is a short text file"
            ) from None
        except UnicodeDecodeError as exc:
            raise JudgeError(f"prompt template {path}: not UTF-8 text (byte {exc.start})") from None
        except OSError as exc:
            raise JudgeError(f"cannot read prompt template {path}: {exc.strerror or exc}") from exc
        source = str(p)
    else:
        resource = resources.files("pytest_memeval").joinpath(*folder.split("/"), default_file)
        text = resource.read_text(encoding="utf-8")
        source = (
            f"builtin:{default_file}"
            if folder == "templates"
            else f"builtin:{folder}/{default_file}"
        )
    _template_fields(text, source, allowed_set)
    return PromptTemplate(name=default_file, text=text, source=source, allowed=allowed_set)


# --------------------------------------------------------------------------- helpers


def gold_text(gold: object) -> str:
    """The gold answer as prompt text (integers kept as written, ``None`` as empty)."""
    if gold is None:
        return ""
    return str(gold)


#: The placeholders of the question/gold/prediction judge prompts (mem0, graded, longmemeval).
QA_FIELDS = ("question", "gold", "prediction", "category")


def qa_values(question: Question, prediction: str) -> dict[str, str]:
    """The values for ``QA_FIELDS``."""
    return {
        "question": question.question,
        "gold": gold_text(question.gold),
        "prediction": prediction,
        "category": question.category,
    }


def ask(client: LLMClient, prompt: str, *, max_tokens: int) -> str:
    """One temperature-0 judge call with ``prompt`` as the user message; the reply text."""
    return client.complete(
        [ChatMessage("user", prompt)], temperature=0.0, max_tokens=max_tokens, role="judge"
    ).text


def parallel_map(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(x) for x in items]`` with one thread per item (the LLM client bounds the real
    concurrency). The first exception raised by ``fn`` propagates."""
    return run_parallel(fn, items, max(1, len(items)))


_MEM0_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)


def extract_json_mem0(text: str) -> str:
    """The JSON text Mem0's legacy judge would parse: strip; the inside of a code fence when there
    is one; else the span from the first ``{`` to the last ``}``; else the whole text."""
    text = text.strip()
    m = _MEM0_FENCE.search(text)
    if m:
        return m.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        return text[start : end + 1]
    return text


_FENCE_JSON = re.compile(r"```json\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_FENCE_ANY = re.compile(r"```[A-Za-z0-9_-]*\s*(.*?)```", re.DOTALL)
#: The first non-greedy ``{...}`` or ``[...]`` span of a reply.
FIRST_JSON_SPAN = re.compile(r"\{.*?\}|\[.*?\]", re.DOTALL)


def json_or_none(candidate: str) -> object | None:
    """``json.loads(candidate)``, or None when it is not JSON (or nested too deeply)."""
    try:
        return json.loads(candidate)  # type: ignore[no-any-return]
    except (ValueError, RecursionError):
        return None


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object found in a reply, trying in order: a ```json fence, any ``` fence,
    the whole reply, the first non-greedy ``{...}`` span, the first-``{``-to-last-``}`` span.
    ``None`` when nothing parses to an object."""
    text = text.strip()
    candidates: list[str] = []
    for rx in (_FENCE_JSON, _FENCE_ANY):
        m = rx.search(text)
        if m:
            candidates.append(m.group(1).strip())
    candidates.append(text)
    m = FIRST_JSON_SPAN.search(text)
    if m:
        candidates.append(m.group(0))
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        obj = json_or_none(candidate)
        if isinstance(obj, dict):
            return obj
    return None
