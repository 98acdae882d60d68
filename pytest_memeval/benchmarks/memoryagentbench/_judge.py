"""MemoryAgentBench's official judges (``--memeval-protocol=memoryagentbench``): long-memory QA
as ``llm_based_eval/longmem_qa_evaluate.py`` sends and reads it, ∞Bench-Sum as
``summarization_evaluate.py`` does. The prompt texts come from the pinned upstream files
(:func:`~pytest_memeval.protocols._judges.load_protocol`); nothing here holds upstream text."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import JudgeError
from ...judges import QUESTION_TYPE_RULES, JudgeResult
from ...llm import ChatMessage, LLMClient
from ...protocols import MEMORYAGENTBENCH, LoadedProtocol, RequestShape, Template, ask
from ...records import Question

__all__ = [
    "MemoryAgentBenchOfficialJudge",
    "mab_parse_json",
    "mab_rule",
    "mab_summary_scores",
    "official_judge",
]


def mab_rule(question: Question) -> str | None:
    """MemoryAgentBench's ``longmem_qa_evaluate.py`` choice: abstention when ``'_abs'`` is in the
    record's question id, else by question type; None for a question outside its LongMemEval
    sources (not judged)."""
    if "longmemeval" not in str(question.meta.get("source", "")):
        return None
    if "_abs" in str(question.meta.get("question_id") or ""):
        return "abstention"
    qtype = question.meta.get("question_type")
    if isinstance(qtype, str) and qtype in QUESTION_TYPE_RULES:
        return QUESTION_TYPE_RULES[qtype]
    raise JudgeError(
        f"memoryagentbench protocol: question {question.id!r} has question type {qtype!r}, "
        "which the official script does not judge"
    )


_MAB_BRACES = re.compile(r"\{.*?\}", re.DOTALL)
_MAB_FENCE = re.compile(r"(?:```json)(.+)(?:```)", re.DOTALL)


def mab_parse_json(text: str) -> Any:
    """``parse_json`` of summarization_evaluate.py: the last ``{...}`` (non-greedy) parsed; if
    it does not parse, the last fenced json block; None when neither parses or there is none."""
    matches = _MAB_BRACES.findall(text)
    if not matches:
        return None
    try:
        return json.loads(matches[-1])
    except (ValueError, RecursionError):
        fenced = _MAB_FENCE.findall(text)
        try:
            return json.loads(fenced[-1])
        except (ValueError, RecursionError, IndexError):
            return None


def _number(data: Any, key: str) -> float | None:
    value = data.get(key) if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def mab_summary_scores(
    fluency: Any, recall: Any, precision: Any, keypoints: int
) -> dict[str, float] | None:
    """The ∞Bench-Sum scores from the three parsed replies as check_metrics computes them
    (recall = found / key points, 0 without key points; precision = supported / sentences, 0 for
    no sentence; f1 = fluency x harmonic mean); None where upstream skips or raises (a reply
    without JSON, a missing or non-numeric field)."""
    flu = _number(fluency, "fluency")
    found = _number(recall, "recall")
    supported = _number(precision, "precision")
    sentences = _number(precision, "sentence_count")
    if flu is None or found is None or supported is None or sentences is None:
        return None
    rec = found / keypoints if keypoints > 0 else 0.0
    prec = supported / sentences if sentences > 0 else 0.0
    f1 = flu * 2 * (rec * prec) / (rec + prec) if rec + prec > 0 else 0.0
    return {"fluency": flu, "recall": rec, "precision": prec, "f1": f1}


@dataclass
class MemoryAgentBenchOfficialJudge:
    """MemoryAgentBench's LLM judges. Long-memory QA (``longmemeval`` sources): LongMemEval's
    templates as its own file holds them, ``template.format(question, answer, response)``,
    gpt-4o, temperature 0, max tokens 10; label = ``'yes' in reply.strip().lower()``.
    ∞Bench-Sum (``infbench_sum`` sources): summarization_evaluate.py's three calls (fluency,
    recall against the record's key points, precision against the expert summary), the
    metric its F1. Questions of other sources are skipped."""

    templates: Mapping[str, Template]
    shape: RequestShape
    summary: Mapping[str, Template] = field(default_factory=dict)
    summary_shape: RequestShape | None = None
    name: str = "memoryagentbench-official"
    metric: str = MEMORYAGENTBENCH.metric

    @property
    def prompt_hashes(self) -> dict[str, str]:
        out = {f"memoryagentbench:{rule}": t.sha256 for rule, t in self.templates.items()}
        out.update({f"memoryagentbench:{key}": t.sha256 for key, t in self.summary.items()})
        return out

    def summary_prompts(self, question: Question, prediction: str) -> list[str]:
        """The fluency, recall and precision prompts, filled as check_metrics fills them."""
        output = prediction.strip()
        keypoints = question.meta.get("keypoints") or []
        answers = question.meta.get("answers", [question.gold])
        return [
            self.summary["sum_fluency"].text.format(text=output),
            self.summary["sum_recall"].text.format(
                keypoints="\n".join(f"{i + 1}. {kp}" for i, kp in enumerate(keypoints)),
                summary=output,
            ),
            self.summary["sum_precision"].text.format(expert_summary=answers[0], summary=output),
        ]

    def _judge_summary(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        assert self.summary_shape is not None
        shape = self.summary_shape
        replies = [
            ask(client, [ChatMessage("user", prompt)], shape)
            for prompt in self.summary_prompts(question, prediction)
        ]
        keypoints = len(question.meta.get("keypoints") or [])
        fluency, recall, precision = (mab_parse_json(r) for r in replies)
        scores = mab_summary_scores(fluency, recall, precision, keypoints)
        details: dict[str, Any] = {"protocol": "memoryagentbench", "rule_set": "infbench_sum"}
        if scores is None:
            return JudgeResult(
                scores={self.metric: None},
                unscored=True,
                raw=replies,
                warnings=[
                    "memoryagentbench ∞Bench-Sum judge: a reply without the JSON score; "
                    "upstream skips the question"
                ],
                details=details,
            )
        details.update({k: scores[k] for k in ("fluency", "recall", "precision")})
        return JudgeResult(scores={self.metric: scores["f1"]}, raw=replies, details=details)

    def render(self, question: Question, prediction: str) -> str:
        rule = mab_rule(question)
        if rule is None:
            raise JudgeError(f"memoryagentbench protocol: question {question.id!r} is not judged")
        # upstream's reference answer: the record's answers[i] (one question: answers[0]), as
        # the record holds it (a list is formatted as Python formats it)
        meta = question.meta
        answer = meta.get("reference_answer", meta.get("answers", question.gold))
        return self.templates[rule].text.format(question.question, answer, prediction)

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        if self.summary and "infbench_sum" in str(question.meta.get("source", "")):
            return self._judge_summary(question, prediction, client)
        rule = mab_rule(question)
        if rule is None:
            return JudgeResult(
                skipped=True,
                details={
                    "reason": "only LongMemEval and ∞Bench-Sum sources are LLM-judged by "
                    "MemoryAgentBench"
                },
            )
        reply = ask(client, [ChatMessage("user", self.render(question, prediction))], self.shape)
        return JudgeResult(
            scores={self.metric: float("yes" in reply.strip().lower())},
            raw=[reply],
            details={"protocol": "memoryagentbench", "rule_set": rule},
        )


def official_judge(protocol: LoadedProtocol) -> MemoryAgentBenchOfficialJudge | None:
    """The judge of ``--memeval-protocol=memoryagentbench`` from its loaded prompts: the
    long-memory QA templates by rule, the three ∞Bench-Sum prompts (``sum_*``); the answer
    prompts (``answer_*``) are the answerer's. None for a protocol without a judge."""
    p, t = protocol.profile, protocol.templates
    if p.name != MEMORYAGENTBENCH.name or p.judge is None:
        return None
    assert p.summary is not None
    return MemoryAgentBenchOfficialJudge(
        {k: v for k, v in t.items() if not k.startswith(("answer_", "sum_"))},
        p.judge,
        summary={k: v for k, v in t.items() if k.startswith("sum_")},
        summary_shape=p.summary,
    )
