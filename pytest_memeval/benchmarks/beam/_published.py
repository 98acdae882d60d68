"""BEAM's published figures: the BEAM paper's Table 1 LIGHT rows and a RAG row quoted by a
third-party page, all ``nugget_official`` and unverified. The registry (``SUITE_PUBLISHED``)
hands them to ``analysis.baselines``."""

from __future__ import annotations

from ...analysis import Baseline

__all__ = ["BASELINES", "DEFAULTS"]

_BEAM_T1 = "BEAM paper (ICLR 2026), Table 1"
_BEAM = (
    "BEAM paper Table 1 (0-1 scale): rubric-nugget LLM judge, how the paper's average is formed is "
    "not in the released code; unverified"
)


#: (name, system, metric, protocol, source, overall, variant); all unverified seeds
_ROWS: tuple[tuple[str, str, str, str, str, float, str], ...] = (
    (
        "beam-light-100k",
        "Llama-4-Maverick + LIGHT (100K)",
        "nugget_official",
        _BEAM,
        _BEAM_T1,
        0.358,
        "100K",
    ),
    (
        "beam-light-500k",
        "Llama-4-Maverick + LIGHT (500K)",
        "nugget_official",
        _BEAM,
        _BEAM_T1,
        0.359,
        "500K",
    ),
    (
        "beam-light-1m",
        "Llama-4-Maverick + LIGHT (1M)",
        "nugget_official",
        _BEAM,
        _BEAM_T1,
        0.336,
        "1M",
    ),
    (
        "beam-light-10m",
        "Llama-4-Maverick + LIGHT (10M)",
        "nugget_official",
        _BEAM,
        _BEAM_T1,
        0.266,
        "10M",
    ),
    (
        "beam-rag-10m",
        "RAG, Llama-4-Maverick (10M)",
        "nugget_official",
        _BEAM,
        "BEAM paper, as quoted by a third-party page",
        0.249,
        "10M",
    ),
)


BASELINES: tuple[Baseline, ...] = tuple(
    Baseline(
        name=name,
        benchmark="beam",
        system=system,
        metric=metric,
        protocol=protocol,
        source=source,
        overall=overall,
        verified=False,
        variant=variant,
        # what a run needs to stand beside them: BEAM's protocol, its judge and judge model
        needs_protocol="beam",
        needs_judge_style="beam-official",
        needs_judge_model="gpt-4.1-mini",
    )
    for name, system, metric, protocol, source, overall, variant in _ROWS
)

#: shown when --memeval-published-baselines is not given
DEFAULTS: tuple[str, ...] = (
    "beam-light-100k",
    "beam-light-500k",
    "beam-light-1m",
    "beam-light-10m",
)
