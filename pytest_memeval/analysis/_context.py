"""Context cost per system (pure): the tokens of memory text handed to the answerer, accuracy
against mean context tokens with its Pareto front, and the top-k warning.

Per question the pipeline records ``details.context_tokens`` (``run.budget``); questions a system
answered with its own ``answer()`` hand no memories to an answerer and are not counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..records import QuestionResult
from ._aggregate import percentile

__all__ = [
    "ConversationSize",
    "context_figures",
    "pareto_front",
    "top_k_warnings",
]


def context_figures(results: Iterable[QuestionResult]) -> dict[str, Any]:
    """``questions`` counted, ``mean``/``p50``/``p95``/``max`` context tokens, and with a budget,
    ``budget_cut`` (questions whose memories were cut) and ``memories_dropped``."""
    tokens: list[float] = []
    cut = 0
    dropped = 0
    budgeted = 0
    for r in results:
        value = r.details.get("context_tokens")
        if isinstance(value, int) and not isinstance(value, bool):
            tokens.append(float(value))
        budget = r.details.get("context_budget")
        if isinstance(budget, dict):
            budgeted += 1
            if budget.get("tokens_after", 0) < budget.get("tokens_before", 0):
                cut += 1
            dropped += len(budget.get("dropped") or ())
    out: dict[str, Any] = {
        "questions": len(tokens),
        "mean": math.fsum(tokens) / len(tokens) if tokens else None,
        "p50": percentile(tokens, 50),
        "p95": percentile(tokens, 95),
        "max": max(tokens) if tokens else None,
    }
    if budgeted:
        out["budget_cut"] = cut
        out["memories_dropped"] = dropped
    return out


def pareto_front(points: Sequence[tuple[float | None, float | None]]) -> list[bool]:
    """For each (tokens, accuracy) point: True when no other point has at most its tokens and at
    least its accuracy, one of them strictly (fewer tokens and higher accuracy are better).
    A point with a missing coordinate is never on the front."""
    out = []
    for i, (x, y) in enumerate(points):
        if x is None or y is None:
            out.append(False)
            continue
        dominated = any(
            j != i
            and ox is not None
            and oy is not None
            and ox <= x
            and oy >= y
            and (ox < x or oy > y)
            for j, (ox, oy) in enumerate(points)
        )
        out.append(not dominated)
    return out


@dataclass(frozen=True)
class ConversationSize:
    conversation_id: str
    sessions: int
    turns: int | None  # None: not known without loading the conversation


def top_k_warnings(
    benchmark: str,
    sizes: Sequence[ConversationSize],
    systems: Sequence[tuple[str, int] | tuple[str, int, str | None]],
) -> list[str]:
    """One warning per (system label, k[, unit]) whose k reaches the whole history of some
    conversation, so retrieval is bypassed and the comparison is not at an equal budget.

    ``unit`` is what the system retrieves: ``"turns"`` (bm25, embedding: warned only where k is
    at least a conversation's turn count), ``"sessions"`` (warned where k is at least its session
    count) or None, not declared (warned at the session count, worded as a condition: the
    plugin cannot tell whether the system returns sessions)."""
    if not sizes:
        return []
    out = []
    fewest = min(s.sessions for s in sizes)
    most = max(s.sessions for s in sizes)
    for entry in systems:
        label, k = entry[0], entry[1]
        unit = entry[2] if len(entry) > 2 else None
        by_turns = [s for s in sizes if s.turns is not None and k >= s.turns]
        if unit == "turns":
            if not by_turns:
                continue
            turns = [s.turns for s in sizes if s.turns is not None]
            out.append(
                f"{benchmark} · {label}: top-k {k} >= the turn count of {len(by_turns)} of "
                f"{len(sizes)} conversations (turns per conversation {min(turns)}-{max(turns)}): "
                "it retrieves turns, so it gets the whole history there (retrieval bypassed); "
                "compare systems at an equal budget (a smaller top-k, or "
                "--memeval-context-budget=N)"
            )
            continue
        by_sessions = [s for s in sizes if k >= s.sessions]
        if not by_sessions:
            continue
        line = (
            f"{benchmark} · {label}: top-k {k} >= the session count of {len(by_sessions)} of "
            f"{len(sizes)} conversations (sessions per conversation {fewest}-{most})"
        )
        if by_turns:
            line += f" and the turn count of {len(by_turns)}"
        line += (
            (
                ": it retrieves whole sessions, so it gets the whole history there"
                if unit == "sessions"
                else ": if it retrieves whole sessions, it gets the whole history there"
            )
            + " (retrieval bypassed); compare systems at an equal budget "
            + (
                f"(top-k below {fewest}, or --memeval-context-budget=N)"
                if fewest > 1
                else "(--memeval-context-budget=N)"
            )
        )
        out.append(line)
    return out
