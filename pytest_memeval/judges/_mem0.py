"""The Mem0 binary judge: CORRECT / WRONG with generous rules, ``judge_mem0`` in {0, 1}.

Rules: docs/scoring.md#mem0-judge.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..llm import LLMClient
from ..records import Question
from ._base import (
    QA_FIELDS,
    JudgeResult,
    PromptTemplate,
    ask,
    extract_json_mem0,
    load_template,
    qa_values,
)

__all__ = ["Mem0Judge", "is_locomo_adversarial", "parse_mem0_label"]

TEMPLATE_FILE = "mem0_judge.txt"
FIELDS = QA_FIELDS


def is_locomo_adversarial(question: Question) -> bool:
    """LoCoMo category 5, which the Mem0 protocol does not judge."""
    return question.category_id == 5 or question.category == "adversarial"


#: ``Label: CORRECT``, ``"label": "WRONG"`` in JSON too broken to parse, ``**Label:** correct``
_LABEL_KEY = re.compile(
    r'(?<![\w])"?label"?\s*\**\s*[:=]\s*\**\s*["\']?(CORRECT|WRONG)\b', re.IGNORECASE
)
#: a reply that is only the label (``CORRECT``, ``**WRONG**.``)
_ONLY_LABEL = re.compile(r"^\W*(CORRECT|WRONG)\W*$", re.IGNORECASE)


def _label_fallback(reply: str) -> tuple[float | None, list[str]]:
    """The label when the reply has no parseable JSON with a ``label`` key: a ``label: X`` pair
    or a reply that is only the label (either case). Prose such as "the answer is incorrect"
    is never read as a label."""
    m = _LABEL_KEY.search(reply) or _ONLY_LABEL.match(reply.strip())
    if m is None:
        return None, []
    label = m.group(1)
    warning = (
        f"mem0 judge: label {label!r} read from a reply that is not the JSON the prompt asks for "
        "(Mem0's own parser would raise)"
    )
    return (1.0 if label.upper() == "CORRECT" else 0.0), [warning]


def parse_mem0_label(reply: str) -> tuple[float | None, str | None, list[str]]:
    """Parse a reply the way Mem0's legacy judge does: extract the JSON (code fence, else first
    ``{`` to last ``}``, else the whole text), ``json.loads``, take ``label``; 1 iff it equals
    ``"CORRECT"`` exactly (case-sensitive, as upstream). Where upstream raises (invalid JSON, no
    ``label`` key), a ``label: CORRECT`` pair in the text or a reply that is only the label is
    accepted with a warning; anything else is ``None`` (UNSCORED). Returns (value, reasoning,
    warnings)."""
    try:
        data = json.loads(extract_json_mem0(reply))
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or "label" not in data:
        value, warnings = _label_fallback(reply)
        return value, None, warnings
    label = data["label"]
    reasoning = data.get("reasoning")
    reasoning_text = str(reasoning) if reasoning is not None else None
    warnings = []
    if label == "CORRECT":
        return 1.0, reasoning_text, warnings
    if label != "WRONG":
        warnings.append(
            f"mem0 judge label {label!r} is neither 'CORRECT' nor 'WRONG'; "
            "scored 0 as Mem0's exact, case-sensitive comparison does"
        )
    return 0.0, reasoning_text, warnings


@dataclass
class Mem0Judge:
    """Binary CORRECT/WRONG judge; one call per question at temperature 0; LoCoMo category 5 is
    skipped (``skipped=True``, no scores)."""

    template: PromptTemplate = field(default_factory=lambda: load_template(TEMPLATE_FILE, FIELDS))
    name: str = "mem0"
    #: the headline metric key (docs/scoring.md#metric-names)
    metric: str = "judge_mem0"
    max_tokens: int = 256

    @classmethod
    def from_path(cls, template_path: str | None = None) -> Mem0Judge:
        return cls(template=load_template(TEMPLATE_FILE, FIELDS, template_path))

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {self.template.name: self.template.sha256}

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        if is_locomo_adversarial(question):
            return JudgeResult(skipped=True, details={"reason": "LoCoMo category 5 is not judged"})
        prompt = self.template.render(qa_values(question, prediction))
        reply = ask(client, prompt, max_tokens=self.max_tokens)
        value, reasoning, warnings = parse_mem0_label(reply)
        return JudgeResult(
            scores={self.metric: value},
            unscored=value is None,
            raw=[reply],
            reasoning=reasoning,
            warnings=warnings,
        )
