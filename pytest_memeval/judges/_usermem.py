"""The user-memory suite's LLM-judge reward (docs/scoring.md#usermem-judge).

One temperature-0 call per case; the judge returns JSON with a ``reward`` in [0, 1] (``score`` is
accepted instead), found in a ```json fence, a plain ``` fence or the raw text; the reward is
clamped to [0, 1]. ``passed`` (in ``details``) is the judge's own ``passed`` when it gives a
boolean, else ``reward >= 0.8``.

Deliberate differences from upstream: a reply whose JSON cannot be parsed and in which no
``reward`` / ``score`` value can be found is UNSCORED (upstream silently scores it 0.5), and
parsed JSON without a reward is also UNSCORED (upstream scores it 0.0). Such items are excluded
from means and counted, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..llm import LLMClient
from ..records import Question
from ._base import (
    JudgeResult,
    PromptTemplate,
    ask,
    finite_number,
    load_template,
    parse_json_object,
)

__all__ = ["PASS_THRESHOLD", "UserMemJudge", "parse_usermem_reward"]

TEMPLATE_FILE = "usermem_judge.txt"
FIELDS = (
    "title",
    "category",
    "description",
    "question",
    "prediction",
    "criteria",
    "expected_behavior",
)
PASS_THRESHOLD = 0.8

_KEY_VALUE = {
    key: re.compile(rf'"?{key}"?\s*[:=]\s*"?(-?\d+(?:\.\d+)?)', re.IGNORECASE)
    for key in ("reward", "score")
}


def parse_usermem_reward(reply: str) -> tuple[float | None, dict[str, object]]:
    """(reward clamped to [0, 1], the parsed JSON object or {}); reward None when unparseable."""
    data = parse_json_object(reply)
    if data is not None:
        for key in ("reward", "score"):
            if key in data:
                value = finite_number(data[key])
                if value is not None:
                    return min(1.0, max(0.0, value)), data
        return None, data
    for key in ("reward", "score"):
        m = _KEY_VALUE[key].search(reply)
        if m:
            return min(1.0, max(0.0, float(m.group(1)))), {}
    return None, {}


@dataclass
class UserMemJudge:
    """Reward judge for the user-memory suite (``judge_usermem`` in [0, 1])."""

    template: PromptTemplate = field(default_factory=lambda: load_template(TEMPLATE_FILE, FIELDS))
    name: str = "usermem"
    #: the headline metric key
    metric: str = "judge_usermem"
    max_tokens: int = 1024

    @classmethod
    def from_path(cls, template_path: str | None = None) -> UserMemJudge:
        return cls(template=load_template(TEMPLATE_FILE, FIELDS, template_path))

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {self.template.name: self.template.sha256}

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        meta = question.meta
        expected = meta.get("expected_behavior")
        prompt = self.template.render(
            {
                "title": meta.get("title") or question.id,
                "category": question.category,
                "description": meta.get("description") or "",
                "question": question.question,
                "prediction": prediction,
                "criteria": meta.get("evaluation_criteria") or question.gold or "",
                "expected_behavior": expected if expected else "(none given)",
            }
        )
        reply = ask(client, prompt, max_tokens=self.max_tokens)
        reward, data = parse_usermem_reward(reply)
        reasoning = data.get("reasoning")
        details: dict[str, object] = {}
        warnings: list[str] = []
        if reward is None:
            warnings.append("usermem judge: no reward found in the reply; UNSCORED")
        else:
            passed = data.get("passed")
            details["passed"] = passed if isinstance(passed, bool) else reward >= PASS_THRESHOLD
            found = data.get("required_info_found")
            if isinstance(found, dict):
                details["required_info_found"] = {
                    str(k): (float(v) if isinstance(v, bool) else finite_number(v))
                    for k, v in found.items()
                }
        return JudgeResult(
            scores={self.metric: reward},
            unscored=reward is None,
            raw=[reply],
            reasoning=str(reasoning) if reasoning is not None else None,
            warnings=warnings,
            details=details,
        )
