"""The graded judge: a 0-100 score, N runs at temperature 0.5, mean and sample std.

Rules: docs/scoring.md#graded-judge.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..llm import ChatMessage, LLMClient
from ..records import Question
from ._base import (
    QA_FIELDS,
    JudgeResult,
    PromptTemplate,
    finite_number,
    load_template,
    parallel_map,
    parse_json_object,
    qa_values,
)
from ._mem0 import is_locomo_adversarial

__all__ = ["GradedJudge", "graded_stats", "parse_graded_score"]

TEMPLATE_FILE = "graded_judge.txt"
FIELDS = QA_FIELDS

_NUM = r"(-?\d+(?:\.\d+)?)"
#: ``"score": 80`` / ``Score = "80"`` / ``**Score:** 80`` (also inside JSON too broken to parse,
#: e.g. ``{"score": 0, "explanation": <single sentence>}``); not ``"player_score": ...``
_SCORE_KEY = re.compile(r'(?<![\w])"?score"?\s*\**\s*[:=]\s*\**\s*"?' + _NUM, re.IGNORECASE)
#: ``85/100``, ``85 / 100``, ``85 out of 100``
_OUT_OF_100 = re.compile(_NUM + r"\s*(?:/|out\s+of)\s*100\b", re.IGNORECASE)
#: a reply that is only a number (``85``, ``85.``, ``85%``)
_ONLY_NUMBER = re.compile(r"^\s*\**\s*" + _NUM + r"\s*%?\s*\**\s*\.?\s*$")


def _in_range(value: float) -> float | None:
    return value if 0.0 <= value <= 100.0 else None


def parse_graded_score(reply: str) -> tuple[float | None, str | None]:
    """(score on 0-100, explanation) from one reply, or (None, None) when the run failed.

    Order: a JSON object with a numeric ``score`` (numeric strings accepted); else the first
    ``score: N`` / ``"score": N`` in the text (JSON too broken to parse, or prose); else the first
    ``N/100`` or ``N out of 100``; else a reply that is a bare number. A score outside [0, 100]
    fails the run. Any other number in the text is *not* taken: small models answer with dates,
    ids and counts (``19 January, 2023``, ``{"id": 10, ...}``), and reading those as scores would
    turn a failed run into a made-up score."""
    data = parse_json_object(reply)
    if data is not None and "score" in data:
        score = finite_number(data["score"])
        explanation = data.get("explanation")
        expl = str(explanation) if explanation is not None else None
        if score is None or not 0.0 <= score <= 100.0:
            return None, expl
        return score, expl
    for rx in (_SCORE_KEY, _OUT_OF_100, _ONLY_NUMBER):
        m = rx.search(reply)
        if m:
            return _in_range(float(m.group(1))), None
    return None, None


def graded_stats(scores: Sequence[float]) -> tuple[float | None, float | None]:
    """(mean, sample std with n-1) of 0-100 scores; std 0 for one score; (None, None) if empty."""
    n = len(scores)
    if n == 0:
        return None, None
    mean = math.fsum(scores) / n
    if n == 1:
        return mean, 0.0
    var = math.fsum((s - mean) ** 2 for s in scores) / (n - 1)
    return mean, math.sqrt(var)


@dataclass
class GradedJudge:
    """0-100 graded judge, ``runs`` calls in parallel (``run_index`` 0..runs-1), temperature 0.5,
    max tokens 256. ``judge_graded`` = mean / 100, ``judge_graded_std`` = sample std / 100,
    ``judge_graded_runs`` = successful runs. Fewer than half the runs succeeding adds a warning; none -> UNSCORED."""

    runs: int = 10
    template: PromptTemplate = field(default_factory=lambda: load_template(TEMPLATE_FILE, FIELDS))
    name: str = "graded"
    #: the headline metric key; extras ``<metric>_std`` and ``<metric>_runs``
    metric: str = "judge_graded"
    temperature: float = 0.5
    max_tokens: int = 256

    @classmethod
    def from_path(cls, template_path: str | None = None, runs: int = 10) -> GradedJudge:
        return cls(runs=runs, template=load_template(TEMPLATE_FILE, FIELDS, template_path))

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {self.template.name: self.template.sha256}

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        if is_locomo_adversarial(question):
            # no gold to grade against; LoCoMo's keyword rule (f1) decides category 5
            return JudgeResult(skipped=True, details={"reason": "LoCoMo category 5 is not judged"})
        prompt = self.template.render(qa_values(question, prediction))
        messages = [ChatMessage("user", prompt)]

        def one_run(index: int) -> str:
            return client.complete(
                messages,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                run_index=index,
                role="judge",
            ).text

        replies = parallel_map(one_run, list(range(self.runs)))
        parsed = [parse_graded_score(r) for r in replies]
        ok = [score for score, _ in parsed if score is not None]
        explanations = [e for s, e in parsed if s is not None and e]
        mean, std = graded_stats(ok)
        m = self.metric
        warnings: list[str] = []
        if ok and 2 * len(ok) < self.runs:
            warnings.append(f"graded judge: only {len(ok)} of {self.runs} runs gave a usable score")
        details = {
            "individual_scores": [s for s, _ in parsed],
            "failed_runs": self.runs - len(ok),
        }
        if mean is None or std is None:
            return JudgeResult(
                scores={m: None, f"{m}_std": None, f"{m}_runs": 0.0},
                unscored=True,
                raw=replies,
                warnings=[f"graded judge: none of the {self.runs} runs gave a usable score"],
                details=details,
            )
        return JudgeResult(
            scores={
                m: mean / 100.0,
                f"{m}_std": std / 100.0,
                f"{m}_runs": float(len(ok)),
            },
            raw=replies,
            reasoning=explanations[0] if explanations else None,
            warnings=warnings,
            details=details,
        )
