"""BEAM's official judge (``--memeval-protocol=beam``): one call per rubric item, replies read as
BEAM reads them (its parse, then ``json_repair``), event ordering aligned by LLM equivalence
calls; and the json_repair release that reads the replies, against the one BEAM pins (recorded
in the provenance, warned about when it differs). The prompt texts come from the pinned upstream
files (:func:`~pytest_memeval.protocols._judges.load_protocol`); nothing here holds upstream
text."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...judges import (
    JSON_REPAIR_UPSTREAM,
    JudgeResult,
    json_repair_version,
    parallel_map,
    read_beam_reply,
)
from ...llm import ChatMessage, LLMClient
from ...metrics import OrderingResult, ordering_score
from ...protocols import BEAM, LoadedProtocol, RequestShape, Template, ask
from ...records import Question

__all__ = [
    "BeamOfficialJudge",
    "beam_json_repair",
    "beam_official_item",
    "json_repair_warning",
    "official_judge",
    "official_provenance",
    "official_warnings",
]


def _is_event_ordering(question: Question) -> bool:
    return any(
        isinstance(c, str) and c.strip().lower().replace("-", "_") == "event_ordering"
        for c in (question.category, question.category_id, question.meta.get("category"))
    )


@dataclass
class BeamOfficialJudge:
    """One call per rubric item: the base prompt with ``<rubric_item>`` and ``<llm_response>``
    replaced literally (``<question>`` stays as written), sent as one user message; each reply
    read as BEAM reads it (:func:`~pytest_memeval.judges._beam.read_beam_reply`: its own parse,
    then ``json_repair``), each score read with ``int()`` (``float()`` for event ordering) and
    summed over the rubric length. Event ordering, in upstream's order: first the
    fact-extraction call (the facts prompt with ``<question>`` then ``<input_text>`` replaced,
    one user message; its reply is unused, as upstream discards it), then the alignment of the
    answer's lines to the rubric with one equivalence call per (line, unused rubric item) pair
    (system + user message, ``'yes' in reply.lower()``), then the rubric calls; the category's
    official value is ``tau_norm``."""

    prompt: Template
    equivalence_system: Template
    equivalence_user: Template
    shape: RequestShape
    alignment: RequestShape
    fact_extraction: Template
    name: str = "beam-official"
    #: ``nugget_official``; the extras are ``nugget_official_llm_judge``,
    #: ``nugget_official_ordering_f1`` and ``nugget_official_ordering_final`` (event ordering)
    metric: str = BEAM.metric

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {
            "beam:unified_llm_judge_base_prompt": self.prompt.sha256,
            "beam:break_paragraph_to_facts_detailed_prompt": self.fact_extraction.sha256,
            "beam:llm_equivalence.system": self.equivalence_system.sha256,
            "beam:llm_equivalence.user": self.equivalence_user.sha256,
        }

    def render(self, rubric_item: str, prediction: str) -> str:
        return self.prompt.text.replace("<rubric_item>", rubric_item).replace(
            "<llm_response>", prediction
        )

    def render_facts(self, question: str, prediction: str) -> str:
        """``extract_facts``'s prompt: ``<question>`` replaced first, then ``<input_text>``."""
        return self.fact_extraction.text.replace("<question>", question).replace(
            "<input_text>", prediction
        )

    def equivalence_messages(self, first: str, second: str) -> list[ChatMessage]:
        user = self.equivalence_user.fill({"first_paragraph": first, "second_paragraph": second})
        return [ChatMessage("system", self.equivalence_system.text), ChatMessage("user", user)]

    def _ordering(
        self, question: Question, prediction: str, rubric: list[str], client: LLMClient
    ) -> tuple[OrderingResult, int]:
        """Upstream's first two steps of ``evaluate_event_ordering``: the fact-extraction call
        (reply unused), then the LLM alignment. Returns the ordering scores and the number of
        equivalence calls."""
        ask(
            client,
            [ChatMessage("user", self.render_facts(question.question, prediction))],
            self.shape,
        )
        calls: list[int] = [0]

        def equivalent(reference_item: str, system_line: str) -> bool:
            calls[0] += 1
            reply = ask(
                client, self.equivalence_messages(reference_item, system_line), self.alignment
            )
            return "yes" in reply.lower()

        return ordering_score(prediction.split("\n"), rubric, equivalent), calls[0]

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        rubric_raw = question.meta.get("rubric") or []
        rubric = [str(r) for r in rubric_raw] if isinstance(rubric_raw, list | tuple) else []
        if not rubric:  # upstream divides by len(rubric): ZeroDivisionError
            return JudgeResult(
                scores={self.metric: None},
                unscored=True,
                warnings=[f"beam protocol: question {question.id!r} has no rubric"],
            )
        event_ordering = _is_event_ordering(question)
        ordering = self._ordering(question, prediction, rubric, client) if event_ordering else None
        replies = parallel_map(
            lambda item: ask(
                client, [ChatMessage("user", self.render(item, prediction))], self.shape
            ),
            rubric,
        )
        warnings: list[str] = []
        total = 0.0
        items: list[dict[str, Any]] = []
        for i, reply in enumerate(replies):
            value, problem = beam_official_item(reply, event_ordering=event_ordering)
            if problem is not None:
                warnings.append(
                    f"beam protocol, rubric item {i + 1}: {problem} (BEAM's evaluation would "
                    "abort); counted as 0"
                )
            total += value
            items.append({"rubric": rubric[i], "score": value})
        llm_judge_score = total / len(rubric)
        m = self.metric
        scores: dict[str, float | None] = {m: llm_judge_score}
        details: dict[str, Any] = {"protocol": "beam", "items": items}
        if ordering is not None:
            result, calls = ordering
            tau = None if math.isnan(result.tau_norm) else result.tau_norm
            scores = {
                m: tau,
                f"{m}_llm_judge": llm_judge_score,
                f"{m}_ordering_f1": result.f1,
                f"{m}_ordering_final": (
                    None if math.isnan(result.final_score) else result.final_score
                ),
            }
            details["alignment_calls"] = calls
            details["fact_extraction_calls"] = 1
            if tau is None:
                warnings.append(
                    "beam protocol: tau_norm is NaN (one-item union); the official column "
                    "would be NaN, here the question is left out of the mean"
                )
        return JudgeResult(
            scores=scores,
            unscored=scores[m] is None,
            raw=replies,
            warnings=warnings,
            details=details,
        )


def beam_official_item(reply: str, *, event_ordering: bool) -> tuple[float, str | None]:
    """One rubric item as BEAM's loop scores it: :func:`read_beam_reply`, then
    ``int(response['score'])`` (``float()`` for event ordering). Where BEAM raises, (0, why)."""
    try:
        parsed = read_beam_reply(reply)
    except Exception as exc:  # BEAM's json.loads(repair_json(...)) raises: no JSON at all
        return 0.0, f"json_repair finds no JSON in the reply ({type(exc).__name__})"
    if not isinstance(parsed, dict) or "score" not in parsed:
        return 0.0, f"the reply reads as {type(parsed).__name__}, not a JSON object with a 'score'"
    raw = parsed["score"]
    try:
        value = float(raw) if event_ordering else float(int(raw))
    except (TypeError, ValueError, OverflowError):
        return 0.0, f"score {raw!r} is what BEAM's int()/float() cannot read"
    if not math.isfinite(value):
        return 0.0, f"score {raw!r} is not finite"
    return value, None


def beam_json_repair() -> dict[str, Any]:
    """The json_repair release that reads BEAM judge replies, against the one BEAM pins. Releases
    differ on some malformed replies (docs/scoring.md#beam-official-protocol)."""
    installed = json_repair_version()
    out: dict[str, Any] = {
        "installed": installed,
        "upstream": JSON_REPAIR_UPSTREAM,
        "matches_upstream": installed == JSON_REPAIR_UPSTREAM,
    }
    if installed != JSON_REPAIR_UPSTREAM:
        out["warning"] = json_repair_warning(installed)
    return out


def json_repair_warning(installed: str | None) -> str:
    return (
        f"json_repair {installed} reads the BEAM judge replies, BEAM pins {JSON_REPAIR_UPSTREAM}: "
        "on replies without JSON and on Python literals the two releases repair differently "
        "(the score read is the same on every reply of the project's corpus); install "
        f"json_repair=={JSON_REPAIR_UPSTREAM} for BEAM's exact reading"
    )


def official_judge(protocol: LoadedProtocol) -> BeamOfficialJudge | None:
    """The judge of ``--memeval-protocol=beam`` from its loaded prompts (rubric, fact
    extraction, equivalence); None under another protocol."""
    p, t = protocol.profile, protocol.templates
    if p.name != BEAM.name or p.judge is None:
        return None
    assert p.alignment is not None
    return BeamOfficialJudge(
        t["judge"],
        t["equivalence_system"],
        t["equivalence_user"],
        p.judge,
        p.alignment,
        t["fact_extraction"],
    )


def official_provenance(protocol: LoadedProtocol) -> dict[str, Any]:
    """What ``--memeval-protocol=beam`` adds to the protocol's provenance: ``json_repair`` (the
    installed release against BEAM's); nothing under another protocol."""
    return {"json_repair": beam_json_repair()} if protocol.name == BEAM.name else {}


def official_warnings(protocol: LoadedProtocol) -> list[str]:
    """The configure-time warning of ``--memeval-protocol=beam`` when the installed json_repair
    is not the release BEAM pins."""
    if protocol.name != BEAM.name:
        return []
    repair = beam_json_repair()
    return [str(repair["warning"])] if "warning" in repair else []
