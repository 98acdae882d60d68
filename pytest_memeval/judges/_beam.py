"""BEAM rubric-nugget judge (docs/scoring.md#rubric-nuggets): one call per rubric item, each 0 / 0.5
/ 1.

Two values are stored:

- ``nugget``: the mean of the item scores over the items that could be scored, keeping 0.5;
- ``nugget_beam_rule``: BEAM's own ``llm_judge_score``: ``sum(int(score)) / len(rubric)`` (``int``
  truncates, so 0.5 counts as 0) for every category except ``event_ordering``, where the scores
  are summed as floats. It is ``None`` when the official scorer would not produce a number (an
  item that cannot be parsed, or a string score such as ``"0.5"`` which makes ``int()`` raise).

(``nugget_official`` is the headline of the official protocol's judge, ``beam-official``; the
two never share a key.)

Unlike upstream, our prompt does give the judge the question (upstream leaves a literal
``<question>`` placeholder in its prompt).

:func:`read_beam_reply` is BEAM's own reading of a judge reply (the ``beam`` protocol uses it):
its ``parse_json_response`` and, on any exception, ``json.loads(repair_json(reply))`` with the
real ``json_repair`` package (docs/scoring.md#beam-official-protocol).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version

from json_repair import repair_json

from ..llm import ChatMessage, LLMClient
from ..records import Question
from ._base import (
    FIRST_JSON_SPAN,
    JudgeResult,
    PromptTemplate,
    finite_number,
    json_or_none,
    load_template,
    parallel_map,
    parse_json_object,
)

__all__ = [
    "JSON_REPAIR_UPSTREAM",
    "BeamNuggetJudge",
    "item_value",
    "json_repair_version",
    "official_item_value",
    "official_rubric_score",
    "parse_beam_json",
    "parse_json_response",
    "read_beam_reply",
]

TEMPLATE_FILE = "beam_nugget.txt"
FIELDS = ("question", "rubric_item", "prediction", "category")

_FENCED = re.compile(r"^```[A-Za-z0-9_-]*\s*(\{.*\}|\[.*\])\s*```", re.DOTALL)
_ALLOWED = (0.0, 0.5, 1.0)


def parse_beam_json(reply: str) -> object | None:
    """BEAM's parse: strip; when the reply starts with a code fence, take the fenced ``{...}`` /
    ``[...]``; ``json.loads``; else the first non-greedy ``{...}`` / ``[...]`` span. Where BEAM
    then tries ``json_repair``, this (our ``beam-nugget`` judge's reading) falls back to our
    general object search; the ``beam`` protocol reads with :func:`read_beam_reply` instead."""
    text = reply.strip()
    if text.startswith("```"):
        m = _FENCED.match(text)
        if m:
            text = m.group(1)
    obj = json_or_none(text)
    if obj is not None:
        return obj
    m2 = FIRST_JSON_SPAN.search(text)
    if m2:
        obj = json_or_none(m2.group(0))
        if obj is not None:
            return obj
    return parse_json_object(reply)


#: the json_repair release BEAM's requirements.txt pins (the protocol's repair step)
JSON_REPAIR_UPSTREAM = "0.44.1"

_UPSTREAM_FENCE = re.compile(r"```(?:json)?\s*(\[.*\]|\{.*\})\s*```", re.DOTALL)
_UPSTREAM_SPAN = re.compile(r"(\{.*?\}|\[.*?\])", re.DOTALL)


def parse_json_response(response: str) -> object:
    """BEAM's ``parse_json_response``, same steps (our code): strip; when the text starts with a
    code fence, the greedy fenced ``[...]`` / ``{...}`` found anywhere (``json`` or no language
    tag); ``json.loads``; else the first non-greedy ``{...}`` / ``[...]`` span, ``json.loads``.
    Raises ``ValueError`` where BEAM's raises."""
    response = response.strip()
    if response.startswith("```"):
        match = _UPSTREAM_FENCE.search(response)
        if match:
            response = match.group(1).strip()
    try:
        return json.loads(response)
    except json.JSONDecodeError:
        pass
    span = _UPSTREAM_SPAN.search(response)
    if span:
        try:
            return json.loads(span.group(1))
        except Exception as exc:
            raise ValueError(f"Found possible JSON but failed to parse it: {exc}") from exc
    raise ValueError("No valid JSON found in response.")


def read_beam_reply(reply: str) -> object:
    """What BEAM's judge loop holds after reading one reply: ``reply.strip()``, then
    :func:`parse_json_response`, and on *any* exception ``json.loads(repair_json(reply))`` (the
    stripped reply, fences and all). Raises where BEAM's evaluation would abort (json_repair
    finds nothing: ``json.loads("")``)."""
    response = reply.strip()
    try:
        return parse_json_response(response)
    except Exception:  # BEAM's bare ``except:``
        repaired = repair_json(response)
        return json.loads(repaired if isinstance(repaired, str) else json.dumps(repaired))


def json_repair_version() -> str | None:
    """The installed json_repair release (recorded in the protocol's provenance)."""
    try:
        return version("json_repair")
    except PackageNotFoundError:  # pragma: no cover - it is a dependency
        return None


def _raw_score(parsed: object) -> object:
    if isinstance(parsed, dict):
        return parsed.get("score")
    return None


def item_value(raw_score: object) -> tuple[float | None, str | None]:
    """Our value for one item: the score as a number (numeric strings accepted) in [0, 1];
    a value other than 0, 0.5 or 1 is snapped to the nearest of them with a warning;
    anything else -> (None, warning)."""
    value = finite_number(raw_score)
    if value is None or not 0.0 <= value <= 1.0:
        return None, f"rubric item score {raw_score!r} is not a number in [0, 1]"
    snapped = min(_ALLOWED, key=lambda a: abs(a - value))
    if abs(snapped - value) > 1e-9:
        return snapped, f"rubric item score {value} snapped to {snapped}"
    return snapped, None


def official_item_value(raw_score: object, *, event_ordering: bool = False) -> float | None:
    """What BEAM's scorer adds for one item: ``int(score)`` (``float(score)`` for event ordering);
    ``None`` where that raises (e.g. ``int("0.5")``) or there is no score."""
    if raw_score is None or isinstance(raw_score, dict | list):
        return None
    try:
        if event_ordering:
            return float(raw_score)  # type: ignore[arg-type]
        return float(int(raw_score))  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return None


def official_rubric_score(
    raw_scores: Sequence[object], *, event_ordering: bool = False
) -> float | None:
    """BEAM's ``llm_judge_score`` for one question; ``None`` where the official code would raise
    (empty rubric, a score ``int()`` cannot convert)."""
    if not raw_scores:
        return None
    values = [official_item_value(s, event_ordering=event_ordering) for s in raw_scores]
    if any(v is None for v in values):
        return None
    return math.fsum(v for v in values if v is not None) / len(raw_scores)


def _is_event_ordering(question: Question) -> bool:
    for c in (question.category, question.category_id):
        if isinstance(c, str) and c.strip().lower().replace("-", "_") == "event_ordering":
            return True
    return False


@dataclass
class BeamNuggetJudge:
    """One temperature-0 call per item of ``question.meta["rubric"]`` (calls in parallel)."""

    template: PromptTemplate = field(default_factory=lambda: load_template(TEMPLATE_FILE, FIELDS))
    name: str = "beam-nugget"
    #: the headline metric key; BEAM's own rule goes to ``<metric>_beam_rule``
    metric: str = "nugget"
    max_tokens: int = 256

    @classmethod
    def from_path(cls, template_path: str | None = None) -> BeamNuggetJudge:
        return cls(template=load_template(TEMPLATE_FILE, FIELDS, template_path))

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {self.template.name: self.template.sha256}

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        rubric_raw = question.meta.get("rubric") or []
        rubric = [str(r) for r in rubric_raw] if isinstance(rubric_raw, list | tuple) else []
        if not rubric:
            return JudgeResult(
                scores={self.metric: None, f"{self.metric}_beam_rule": None},
                unscored=True,
                warnings=[f"beam-nugget judge: question {question.id!r} has no rubric"],
            )

        def one_item(item: str) -> str:
            prompt = self.template.render(
                {
                    "question": question.question,
                    "rubric_item": item,
                    "prediction": prediction,
                    "category": question.category,
                }
            )
            return client.complete(
                [ChatMessage("user", prompt)],
                temperature=0.0,
                max_tokens=self.max_tokens,
                role="judge",
            ).text

        replies = parallel_map(one_item, rubric)
        event_ordering = _is_event_ordering(question)
        warnings: list[str] = []
        values: list[float | None] = []
        raw_scores: list[object] = []
        reasons: list[str | None] = []
        for i, reply in enumerate(replies):
            parsed = parse_beam_json(reply)
            raw = _raw_score(parsed)
            raw_scores.append(raw)
            reason = parsed.get("reason") if isinstance(parsed, dict) else None
            reasons.append(str(reason) if reason is not None else None)
            value, warning = item_value(raw)
            if parsed is None:
                warning = "reply is not JSON"
            values.append(value)
            if warning:
                warnings.append(f"beam-nugget judge, rubric item {i + 1}: {warning}")
        scored = [v for v in values if v is not None]
        nugget = math.fsum(scored) / len(scored) if scored else None
        official = official_rubric_score(raw_scores, event_ordering=event_ordering)
        if official is None:
            warnings.append(
                "beam-nugget judge: the official scorer would not produce a score for this "
                "question (an item without an integer-convertible score)"
            )
        return JudgeResult(
            scores={self.metric: nugget, f"{self.metric}_beam_rule": official},
            unscored=nugget is None,
            raw=replies,
            reasoning="; ".join(r for r in reasons if r) or None,
            warnings=warnings,
            details={
                "items": [
                    {"rubric": item, "score": v, "raw_score": rs if _jsonable(rs) else repr(rs)}
                    for item, v, rs in zip(rubric, values, raw_scores, strict=True)
                ],
                "items_scored": len(scored),
                "items_total": len(rubric),
            },
        )


def _jsonable(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)
