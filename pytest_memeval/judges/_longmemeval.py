"""LongMemEval's five judge rule sets with strict yes/no parsing.

Rules: docs/scoring.md#longmemeval-judge.

The template is chosen like upstream: abstention when ``_abs`` occurs in the question id (or the
record says ``abstention``), otherwise by question type. The verdict is read strictly: the last
line of the reply that is exactly ``yes`` or ``no`` once lower-cased and stripped of surrounding
punctuation. The official rule (``'yes' in reply.strip().lower()``) is stored beside it as
``judge_lme_substring``; a disagreement is flagged in the warnings and ``details``.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import JudgeError
from ..llm import LLMClient
from ..records import Question
from ._base import QA_FIELDS, JudgeResult, PromptTemplate, ask, load_template, qa_values

__all__ = [
    "QUESTION_TYPE_RULES",
    "RULE_FILES",
    "LongMemEvalJudge",
    "official_yes",
    "rule_set_for",
    "strict_yes_no",
]

FIELDS = QA_FIELDS

#: rule set -> template file
RULE_FILES: dict[str, str] = {
    "standard": "longmemeval_standard.txt",
    "temporal": "longmemeval_temporal.txt",
    "knowledge-update": "longmemeval_knowledge_update.txt",
    "preference": "longmemeval_preference.txt",
    "abstention": "longmemeval_abstention.txt",
}

#: LongMemEval question_type -> rule set
QUESTION_TYPE_RULES: dict[str, str] = {
    "single-session-user": "standard",
    "single-session-assistant": "standard",
    "multi-session": "standard",
    "temporal-reasoning": "temporal",
    "knowledge-update": "knowledge-update",
    "single-session-preference": "preference",
}

_STRIP = string.whitespace + string.punctuation + "\u201c\u201d\u2018\u2019"


def strict_yes_no(reply: str) -> bool | None:
    """True / False from the last line that is exactly yes or no (case-insensitive, surrounding
    punctuation stripped); None when there is no such line ("" and "no, not yes" are None)."""
    for line in reversed(reply.splitlines()):
        word = line.strip(_STRIP).lower()
        if word == "yes":
            return True
        if word == "no":
            return False
    return None


def official_yes(reply: str) -> bool:
    """LongMemEval's own rule: ``'yes' in reply.strip().lower()``."""
    return "yes" in reply.strip().lower()


def _question_type(question: Question) -> str | None:
    candidates = [question.category, question.category_id, question.meta.get("question_type")]
    for c in candidates:
        if isinstance(c, str):
            key = c.strip().lower().replace("_", "-")
            if key in QUESTION_TYPE_RULES:
                return key
    return None


def rule_set_for(question: Question) -> str:
    """The rule set name for a question (abstention overrides the type)."""
    if question.abstention or "_abs" in question.id:
        return "abstention"
    qtype = _question_type(question)
    if qtype is None:
        raise JudgeError(
            f"longmemeval judge: question {question.id!r} has unknown question type "
            f"{question.category!r}; expected one of {sorted(QUESTION_TYPE_RULES)}"
        )
    return QUESTION_TYPE_RULES[qtype]


def load_rule_templates(template_path: str | None = None) -> dict[str, PromptTemplate]:
    """The five templates. ``template_path`` may be a file (used for all five rule sets) or a
    folder holding any of the files named in ``RULE_FILES`` (the others stay built-in)."""
    out: dict[str, PromptTemplate] = {}
    folder = Path(template_path) if template_path is not None else None
    for rule, fname in RULE_FILES.items():
        path: str | None = None
        if folder is not None:
            if folder.is_dir():
                candidate = folder / fname
                path = str(candidate) if candidate.is_file() else None
            else:
                path = str(folder)
        out[rule] = load_template(fname, FIELDS, path)
    return out


@dataclass
class LongMemEvalJudge:
    """One call per question, temperature 0, max tokens 10; ``judge_lme`` in {0, 1} from the strict
    parse (UNSCORED when no yes/no line), ``judge_lme_substring`` from the substring rule."""

    templates: Mapping[str, PromptTemplate] = field(default_factory=load_rule_templates)
    name: str = "longmemeval"
    #: the headline metric key; the substring rule goes to ``<metric>_substring``
    metric: str = "judge_lme"
    max_tokens: int = 10

    @classmethod
    def from_path(cls, template_path: str | None = None) -> LongMemEvalJudge:
        return cls(templates=load_rule_templates(template_path))

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {t.name: t.sha256 for t in self.templates.values()}

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        rule = rule_set_for(question)
        prompt = self.templates[rule].render(qa_values(question, prediction))
        reply = ask(client, prompt, max_tokens=self.max_tokens)
        strict = strict_yes_no(reply)
        official = official_yes(reply)
        warnings: list[str] = []
        differs = strict is None or strict != official
        if strict is None:
            warnings.append(
                f"longmemeval judge: no yes/no line in the reply {reply[:60]!r}; UNSCORED "
                f"(the official substring rule says {'yes' if official else 'no'})"
            )
        elif differs:
            warnings.append(
                f"longmemeval judge: strict verdict {'yes' if strict else 'no'} differs from "
                f"the official substring rule ({'yes' if official else 'no'})"
            )
        return JudgeResult(
            scores={
                self.metric: None if strict is None else float(strict),
                f"{self.metric}_substring": float(official),
            },
            unscored=strict is None,
            raw=[reply],
            warnings=warnings,
            details={"rule_set": rule, "official_differs": differs},
        )
