"""LongMemEval's official judge (``--memeval-protocol=longmemeval``): ``evaluate_qa.py``'s
``get_anscheck_prompt`` templates, chosen by question type (abstention by the id), sent and read
as upstream does. The prompt texts come from the pinned upstream file
(:func:`~pytest_memeval.protocols._judges.load_protocol`); nothing here holds upstream text."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...errors import JudgeError
from ...judges import QUESTION_TYPE_RULES, JudgeResult, gold_text, strict_yes_no
from ...llm import ChatMessage, LLMClient
from ...protocols import LONGMEMEVAL, LoadedProtocol, RequestShape, Template, ask
from ...records import Question

__all__ = ["LongMemEvalOfficialJudge", "longmemeval_rule", "official_judge"]


def longmemeval_rule(question: Question) -> str:
    """Upstream's choice: abstention when ``'_abs' in question_id``, else by question type
    (an unknown type raises, as upstream's ``NotImplementedError``)."""
    if "_abs" in question.id:
        return "abstention"
    for c in (question.meta.get("question_type"), question.category):
        if isinstance(c, str) and c in QUESTION_TYPE_RULES:
            return QUESTION_TYPE_RULES[c]
    raise JudgeError(
        f"longmemeval protocol: question {question.id!r} has question type "
        f"{question.category!r}, which the official script does not judge"
    )


@dataclass
class LongMemEvalOfficialJudge:
    """``template.format(question, answer, response)`` (positional) as one user message,
    temperature 0, max tokens 10; label = ``'yes' in reply.strip().lower()``. The strict
    whole-line parse is kept as the diagnostic ``judge_lme_official_strict``."""

    templates: Mapping[str, Template]
    shape: RequestShape
    name: str = "longmemeval-official"
    metric: str = LONGMEMEVAL.metric

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {f"longmemeval:{rule}": t.sha256 for rule, t in self.templates.items()}

    def render(self, question: Question, prediction: str) -> str:
        template = self.templates[longmemeval_rule(question)]
        return template.text.format(question.question, gold_text(question.gold), prediction)

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        rule = longmemeval_rule(question)
        reply = ask(client, [ChatMessage("user", self.render(question, prediction))], self.shape)
        label = "yes" in reply.strip().lower()
        strict = strict_yes_no(reply)
        return JudgeResult(
            scores={
                self.metric: float(label),
                f"{self.metric}_strict": None if strict is None else float(strict),
            },
            raw=[reply],
            details={"protocol": "longmemeval", "rule_set": rule},
        )


def official_judge(protocol: LoadedProtocol) -> LongMemEvalOfficialJudge | None:
    """The judge of ``--memeval-protocol=longmemeval`` from its loaded templates (one per rule
    set); None under another protocol."""
    p, t = protocol.profile, protocol.templates
    if p.name != LONGMEMEVAL.name or p.judge is None:
        return None
    rules = {*QUESTION_TYPE_RULES.values(), "abstention"}
    return LongMemEvalOfficialJudge({k: v for k, v in t.items() if k in rules}, p.judge)
