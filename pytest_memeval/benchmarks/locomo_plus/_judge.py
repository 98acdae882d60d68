"""LoCoMo-Plus's official judge (``--memeval-protocol=locomo-plus``): upstream's
``llm_as_judge.py``, its prompt per category filled and prefixed as upstream does, the reply read
by its ``_parse_judge_response`` and scored by its ``LABEL_TO_SCORE``. The prompt texts come from
the pinned upstream files (:func:`~pytest_memeval.protocols._judges.load_protocol`); nothing here
holds upstream text."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ...judges import JudgeResult
from ...llm import ChatMessage, LLMClient
from ...protocols import LOCOMO_PLUS, LoadedProtocol, RequestShape, Template, ask
from ...records import Question

__all__ = [
    "LocomoPlusOfficialJudge",
    "locomo_plus_category",
    "locomo_plus_label",
    "locomo_plus_score",
    "official_judge",
]


#: upstream's ``_parse_judge_response`` regex, as written there
_LP_LABEL = re.compile(
    r'\{[^{}]*"label"\s*:\s*["\']([^"\']+)["\'][^{}]*"reason"\s*:\s*["\']([^"\']*)["\']',
    re.DOTALL,
)
#: upstream's LABEL_TO_SCORE
_LP_SCORES = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}
#: upstream's category names for LoCoMo's ids (data/unified_input.py LOCOMO_CATEGORY_NAMES)
_LP_LOCOMO_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "common-sense",
    4: "single-hop",
    5: "adversarial",
}


def locomo_plus_label(reply: str | None) -> tuple[str, str]:
    """``(label, reason)`` read from a judge reply exactly as upstream's ``_parse_judge_response``:
    the regex first, else ``json.loads``; on any exception (not JSON, not an object, a label that
    is not a string ...) the first of ``correct``, ``wrong``, ``partial`` found in the lower-cased
    reply (so ``incorrect`` reads as ``correct``), keeping a label already read when none is."""
    label, reason = "", ""
    raw = (reply or "").strip()
    try:
        m = _LP_LABEL.search(raw)
        if m:
            label, reason = m.group(1).strip(), (m.group(2) or "").strip()
        else:
            obj = json.loads(raw)
            label = (obj.get("label") or "").strip()
            reason = (obj.get("reason") or "").strip()
    except Exception:  # upstream's bare `except Exception` (any failure falls back)
        low = raw.lower()
        if "correct" in low:
            label = "correct"
        elif "wrong" in low:
            label = "wrong"
        elif "partial" in low:
            label = "partial"
        reason = raw[:200] if raw else ""
    return label, reason


def locomo_plus_score(label: str | None) -> float:
    """Upstream ``label_to_score``: correct 1, partial 0.5, wrong 0; anything else 0."""
    return _LP_SCORES.get((label or "").strip().lower(), 0.0)


def locomo_plus_category(question: Question) -> str:
    """The upstream category name that picks the template: ``Cognitive`` for LoCoMo-Plus items,
    LoCoMo's ids 1-5 by upstream's names (3 is ``common-sense``), else ``default``."""
    cat = question.category_id
    if cat == "Cognitive":
        return "Cognitive"
    if isinstance(cat, int) and not isinstance(cat, bool) and cat in _LP_LOCOMO_NAMES:
        return _LP_LOCOMO_NAMES[cat]
    return "default"


def _lp_gold(gold: object) -> object:
    """``build_output_record`` then ``r.get("ground_truth") or ...``: a missing or blank answer
    is ""; any other value is formatted as Python formats it."""
    if gold is None or (isinstance(gold, str) and gold.strip() == ""):
        return ""
    return gold or ""


@dataclass
class LocomoPlusOfficialJudge:
    """LoCoMo-Plus's ``llm_as_judge.py``: the category's ``PROMPT_TEMPLATES`` entry (else
    ``default``) filled with gold / prediction / evidence, prefixed by ``CONV_START_PROMPT`` with
    speakers A and B and sent as one user message (model, temperature 0.0, max_tokens 512); the
    reply read by :func:`locomo_plus_label`, scored by :func:`locomo_plus_score`."""

    templates: Mapping[str, Template]
    conversation_start: Template
    shape: RequestShape
    name: str = "locomo-plus-official"
    metric: str = LOCOMO_PLUS.metric

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {
            **{f"locomo-plus:{k}": t.sha256 for k, t in self.templates.items()},
            "locomo-plus:CONV_START_PROMPT": self.conversation_start.sha256,
        }

    def render(self, question: Question, prediction: str) -> str:
        category = locomo_plus_category(question)
        template = self.templates.get(category) or self.templates["default"]
        evidence = question.meta.get("evidence_text") or ""
        prompt = template.text.format(
            gold=_lp_gold(question.gold), pred=prediction or "", evidence=evidence
        )
        prefix = self.conversation_start.text.format("A", "B")
        if not prompt.strip():
            return prefix.strip()
        return prefix + prompt.strip()

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        reply = ask(client, [ChatMessage("user", self.render(question, prediction))], self.shape)
        label, reason = locomo_plus_label(reply)
        warnings: list[str] = []
        if label.strip().lower() not in _LP_SCORES:
            warnings.append(
                f"locomo-plus protocol: the reply gives no correct / partial / wrong label "
                f"({label!r:.40}); counted 0 as upstream's label_to_score does"
            )
        return JudgeResult(
            scores={self.metric: locomo_plus_score(label)},
            raw=[reply],
            warnings=warnings,
            details={
                "protocol": "locomo-plus",
                "template": locomo_plus_category(question),
                "label": label,
                "reason": reason,
            },
        )


def official_judge(protocol: LoadedProtocol) -> LocomoPlusOfficialJudge | None:
    """The judge of ``--memeval-protocol=locomo-plus`` from its loaded prompts (the category
    templates and ``CONV_START_PROMPT``); None under another protocol."""
    p, t = protocol.profile, protocol.templates
    if p.name != LOCOMO_PLUS.name or p.judge is None:
        return None
    return LocomoPlusOfficialJudge(
        {k: v for k, v in t.items() if k != "conversation_start"},
        t["conversation_start"],
        p.judge,
    )
