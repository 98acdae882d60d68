"""LongMemEval-V2's official judge (``--memeval-protocol=longmemeval-v2`` and its labelled
``longmemeval-v2-corrected`` variant): ``evaluation/qa_eval_metrics.py``'s LLM checkers, sent and
read as upstream does; the other questions are scored by their offline eval function under the
same metric. The prompt texts come from the pinned upstream file
(:func:`~pytest_memeval.protocols._judges.load_protocol`); nothing here holds upstream text."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import JudgeError
from ...judges import JudgeResult, gold_text
from ...llm import ChatMessage, LLMClient
from ...protocols import LME2_PROTOCOLS, LONGMEMEVAL_V2, LoadedProtocol, RequestShape, Template, ask
from ...records import Question
from ._scorer import EvalSpec, extract_boxed, score_reply

__all__ = ["LongMemEvalV2OfficialJudge", "lme2_label", "official_judge"]


_LME2_JSON = re.compile(r"\{.*\}", re.DOTALL)
_LME2_LABELS = (
    re.compile(r'"label"\s*:\s*([01])', re.IGNORECASE),
    re.compile(r"'label'\s*:\s*([01])", re.IGNORECASE),
    re.compile(r"\blabel\b\s*[:=]\s*([01])", re.IGNORECASE),
)


#: json.loads found no JSON in the span (upstream falls through to its regexes)
_NO_JSON = object()


def _lme2_unfence(text: str) -> str:
    """Upstream ``_strip_markdown_code_fence``: the lines inside a reply that starts and ends
    with a code fence (three lines at least)."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        lines = stripped.splitlines()
        if len(lines) >= 3:
            return "\n".join(lines[1:-1]).strip()
    return stripped


def lme2_label(reply: str | None) -> int | None:
    """The judge's label (0 or 1) read from a reply as upstream's
    ``_parse_llm_binary_judgement`` reads it; None where upstream raises (an empty reply, a JSON
    span that is not an object or holds an unhashable label, no label the regexes find)."""
    cleaned = _lme2_unfence((reply or "").strip())
    if not cleaned:
        return None
    match = _LME2_JSON.search(cleaned)
    if match:
        try:
            payload = json.loads(match.group(0))
        except json.JSONDecodeError:
            payload = _NO_JSON
        except (ValueError, RecursionError):  # a number literal too long, nesting too deep
            return None
        if payload is not _NO_JSON:
            if not isinstance(payload, dict):
                return None  # upstream raises ValueError (not caught there)
            label = payload.get("label")
            if isinstance(label, list | dict):
                return None  # upstream's `label in {...}` raises TypeError
            if label in {0, 1, "0", "1"}:
                return int(label)
    for rx in _LME2_LABELS:
        found = rx.search(cleaned)
        if found:
            return int(found.group(1))
    return None


@dataclass
class LongMemEvalV2OfficialJudge:
    """LongMemEval-V2's ``llm_abstention_checker`` / ``llm_gotchas_checker`` as the harness calls
    them (``score_prediction``): the question's system prompt and the ``_build_<kind>_judge_
    messages`` f-string (question, reference answer, the full reply, the boxed answer else the
    reply) as system + user messages, sent with the harness's evaluator settings (no
    temperature, ``reasoning_effort``, ``max_completion_tokens``); label 1 -> 1.0. An UNKNOWN
    boxed answer is 0 (upstream forces it), and a question scored by an offline eval function
    gets that verdict, without a request, so the metric is upstream's accuracy on every
    question."""

    templates: Mapping[str, Template]
    shape: RequestShape
    name: str = "longmemeval-v2-official"
    metric: str = LONGMEMEVAL_V2.metric

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {f"longmemeval-v2:{key}": t.sha256 for key, t in self.templates.items()}

    def messages(self, question: Question, prediction: str) -> list[ChatMessage]:
        """The judge request's messages (the question's eval function must be an LLM check)."""
        spec = _lme2_spec(question)
        kind = "abstention" if spec.name == "llm_abstention_checker" else "gotchas"
        full = prediction.strip()
        user = self.templates[f"{kind}_user"].fill(
            {
                "question_text": question.question.strip(),
                "reference_answer": gold_text(question.gold).strip(),
                "model_full_response": full,
                "model_final_answer": extract_boxed(prediction).strip() or full,
            }
        )
        return [
            ChatMessage("system", self.templates[f"{kind}_system"].text),
            ChatMessage("user", user),
        ]

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        spec = _lme2_spec(question)
        details: dict[str, Any] = {"protocol": "longmemeval-v2", "eval_function": spec.name}
        offline = score_reply(spec, prediction, gold_text(question.gold))
        if "lme2_score" in offline:  # an offline eval function, or an UNKNOWN boxed answer
            details["judged_by"] = "unknown" if offline["lme2_unknown"] else "rule"
            return JudgeResult(scores={self.metric: offline["lme2_score"]}, details=details)
        require = spec.options.get("require_non_empty", True)
        answer = gold_text(question.gold).strip()
        if require and not (prediction.strip() and answer):
            details["judged_by"] = "require_non_empty"
            return JudgeResult(scores={self.metric: 0.0}, details=details)
        shape = self.shape
        if spec.options.get("evaluator_top_p") is not None:
            raise JudgeError(
                f"longmemeval-v2 protocol: question {question.id!r} sets evaluator_top_p, which "
                "pytest-memeval cannot send; remove it from its eval_function"
            )
        temperature = spec.options.get("evaluator_temperature")
        if temperature is not None:
            if isinstance(temperature, bool) or not isinstance(temperature, int | float):
                raise JudgeError(
                    f"longmemeval-v2 protocol: question {question.id!r}: evaluator_temperature "
                    f"{temperature!r} is not a number"
                )
            shape = dataclasses.replace(shape, temperature=temperature)
        reply = ask(client, self.messages(question, prediction), shape)
        label = lme2_label(reply)
        warnings: list[str] = []
        if label is None:
            warnings.append(
                "longmemeval-v2 protocol: the judge reply has no label upstream can read (its "
                "harness would abort); counted as 0"
            )
            details["unscored_counted_as"] = 0.0
        details["judged_by"] = "llm"
        details["label"] = label
        return JudgeResult(
            scores={self.metric: 1.0 if label == 1 else 0.0},
            raw=[reply],
            warnings=warnings,
            details=details,
        )


def _lme2_spec(question: Question) -> EvalSpec:
    spec = question.meta.get("eval_spec")
    if not isinstance(spec, EvalSpec):
        raise JudgeError(
            f"longmemeval-v2 protocol: question {question.id!r} has no eval_function "
            "(only --memeval=longmemeval-v2 questions are judged by it)"
        )
    return spec


def official_judge(protocol: LoadedProtocol) -> LongMemEvalV2OfficialJudge | None:
    """The judge of ``--memeval-protocol=longmemeval-v2`` (or its corrected variant) from its
    loaded prompts (the ``answer_*`` ones are the reader's). None under another protocol."""
    p = protocol.profile
    if p.name not in LME2_PROTOCOLS or p.judge is None:
        return None
    templates = {k: v for k, v in protocol.templates.items() if not k.startswith("answer_")}
    return LongMemEvalV2OfficialJudge(templates, p.judge)
