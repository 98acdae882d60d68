"""LongMemEval-V2's published figures: the rows upstream's leaderboard script holds (copied
there from the paper's main results table), small and medium tiers, unverified against the paper
itself. The registry (``SUITE_PUBLISHED``) hands them to ``analysis.baselines``."""

from __future__ import annotations

from ...analysis import Baseline

__all__ = ["BASELINES", "DEFAULTS"]


_LME2_SOURCE = (
    "xiaowu0162/LongMemEval-V2@be15ea6e995462f3391c1a610892df3f67dfa7bd "
    "leaderboard/compute_lafs.py fixed_frontier_points (copied there from the paper's main "
    "results table)"
)
_LME2 = (
    "LongMemEval-V2 harness: accuracy over the web and enterprise questions of the tier, the "
    "rule eval functions plus the gpt-5.2 LLM checks (medium reasoning) for abstention and "
    "gotchas; reader Qwen/Qwen3.5-9B (README setup, leaderboard/README.md requirement); "
    "unverified against the paper itself"
)
#: (name, system, tier, accuracy in %) as the cited file holds them
_LME2_ROWS: tuple[tuple[str, str, str, float], ...] = (
    ("lme2-rag-slice-notes-small", "RAG: query -> slice + notes", "small", 51.0),
    ("lme2-codex-small", "Codex", "small", 69.9),
    ("lme2-agentrunbook-r-small", "AgentRunbook-R", "small", 58.6),
    ("lme2-agentrunbook-c-small", "AgentRunbook-C", "small", 74.9),
    ("lme2-rag-slice-notes-medium", "RAG: query -> slice + notes", "medium", 45.9),
    ("lme2-codex-medium", "Codex", "medium", 68.7),
    ("lme2-agentrunbook-r-medium", "AgentRunbook-R", "medium", 57.0),
    ("lme2-agentrunbook-c-medium", "AgentRunbook-C", "medium", 70.1),
)


def _rows() -> tuple[Baseline, ...]:
    return tuple(
        Baseline(
            name=name,
            benchmark="longmemeval-v2",
            system=system,
            metric="judge_lme2_official",
            protocol=_LME2,
            source=_LME2_SOURCE,
            overall=accuracy / 100.0,
            verified=False,
            variant=tier,
            needs_protocol="longmemeval-v2",
            needs_judge_style="longmemeval-v2-official",
            needs_judge_model="gpt-5.2",
            needs_answerer="Qwen/Qwen3.5-9B",
        )
        for name, system, tier, accuracy in _LME2_ROWS
    )


BASELINES: tuple[Baseline, ...] = _rows()

#: shown when --memeval-published-baselines is not given
DEFAULTS: tuple[str, ...] = tuple(row[0] for row in _LME2_ROWS)
