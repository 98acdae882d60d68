"""LoCoMo's published figures, each with the protocol that produced it
(docs/scoring.md#published-baselines): the LoCoMo paper's Table 2 (official F1) and the Mem0
paper's Table 1 (its J and its set-based F1). Values are keyed by LoCoMo's numeric category id,
never by name: the Mem0 paper labels its columns with another id -> name mapping (its
"single-hop" is LoCoMo category 1). The registry (``SUITE_PUBLISHED``) hands them to
``analysis.baselines``."""

from __future__ import annotations

from collections.abc import Mapping

from ...analysis import Baseline

__all__ = ["BASELINES", "DEFAULTS"]


def _pct(values: Mapping[int | str, float]) -> dict[int | str, float]:
    return {k: v / 100.0 for k, v in values.items()}


_LOCOMO_PAPER = (
    "official LoCoMo F1, LoCoMo paper, 50-conversation release (not locomo10), adversarial "
    "included in overall, multiple-choice protocol for category 5"
)
_MEM0_F1 = "set-based A-Mem F1 (not LoCoMo's F1), Mem0 paper, locomo10 categories 1-4"
_MEM0_J = "Mem0 binary LLM judge (gpt-4o-mini), Mem0 paper, locomo10 categories 1-4"

# LoCoMo ids: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
_PAPER_ROWS: dict[str, tuple[str, tuple[float, float, float, float, float, float]]] = {
    # name: (system, (single=cat4, multi=cat1, temporal=cat2, open=cat3, adversarial=cat5, overall))
    "locomo-human": ("Human", (95.1, 85.8, 92.6, 75.4, 89.4, 87.9)),
    "locomo-gpt-4-turbo": ("GPT-4-turbo (4K context)", (23.4, 23.4, 10.4, 24.6, 70.2, 32.1)),
    "locomo-gpt-3.5-turbo": ("GPT-3.5-turbo (4K context)", (29.9, 23.3, 17.5, 29.5, 12.8, 22.4)),
    "locomo-gpt-3.5-16k": ("GPT-3.5-turbo-16K @16K", (56.4, 42.0, 20.3, 37.2, 2.1, 37.8)),
    "locomo-rag-obs-top5": (
        "RAG gpt-3.5-turbo-16k, observations top-5",
        (44.3, 30.6, 41.9, 40.2, 44.7, 41.4),
    ),
    "locomo-mistral-7b": ("Mistral-Instruct-7B (8K)", (10.2, 12.8, 16.1, 19.5, 17.0, 13.9)),
    "locomo-llama-2-70b": ("Llama-2-Chat-70B (4K)", (19.7, 14.4, 13.3, 15.9, 22.1, 17.9)),
}

# Mem0 paper columns use Mem0's mapping: single = cat 1, multi = cat 3, temporal = cat 2,
# open = cat 4 (docs/scoring.md#published-baselines). Stored here by LoCoMo id.
_MEM0_J_ROWS: dict[str, tuple[str, tuple[float, float, float, float], float]] = {
    # name: (system, (cat1, cat2, cat3, cat4), overall)
    "mem0-j-mem0": ("Mem0", (67.13, 55.51, 51.15, 72.93), 66.88),
    "mem0-j-mem0g": ("Mem0g", (65.71, 58.13, 47.19, 75.71), 68.44),
    "mem0-j-zep": ("Zep", (61.70, 49.31, 41.35, 76.60), 65.99),
    "mem0-j-langmem": ("LangMem", (62.23, 23.43, 47.92, 71.12), 58.10),
    "mem0-j-openai": ("OpenAI Memory", (63.79, 21.71, 42.92, 62.29), 52.90),
    "mem0-j-amem": ("A-Mem", (39.79, 49.91, 18.85, 54.05), 48.38),
}
_MEM0_F1_ROWS: dict[str, tuple[str, tuple[float, float, float, float]]] = {
    "mem0-f1-mem0": ("Mem0", (38.72, 48.93, 28.64, 47.65)),
    "mem0-f1-mem0g": ("Mem0g", (38.09, 51.55, 24.32, 49.27)),
    "mem0-f1-zep": ("Zep", (35.74, 42.00, 19.37, 49.56)),
    "mem0-f1-langmem": ("LangMem", (35.51, 30.75, 26.04, 40.91)),
    "mem0-f1-openai": ("OpenAI Memory", (34.30, 14.04, 20.09, 39.31)),
    "mem0-f1-amem": ("A-Mem", (20.76, 35.40, 9.22, 33.34)),
}

_LOCOMO_COUNTS = {1: 282, 2: 321, 3: 96, 4: 841}


def _weighted_overall(values: Mapping[int | str, float]) -> float:
    total = sum(_LOCOMO_COUNTS.values())
    return sum(values[k] * n for k, n in _LOCOMO_COUNTS.items()) / total


def _rows() -> tuple[Baseline, ...]:
    out: list[Baseline] = []
    for name, (system, (single, multi, temporal, open_, adv, overall)) in _PAPER_ROWS.items():
        out.append(
            Baseline(
                name=name,
                benchmark="locomo",
                system=system,
                metric="f1",
                protocol=_LOCOMO_PAPER,
                source="LoCoMo paper (ACL 2024), Table 2",
                needs_protocol="locomo",
                overall=overall / 100.0,
                overall_scope="overall_all",
                by_category=_pct({4: single, 1: multi, 2: temporal, 3: open_, 5: adv}),
            )
        )
    for name, (system, (c1, c2, c3, c4), overall) in _MEM0_J_ROWS.items():
        out.append(
            Baseline(
                name=name,
                benchmark="locomo",
                system=system,
                metric="judge_mem0_official",
                protocol=_MEM0_J,
                source="Mem0 paper (arXiv 2504.19413), Table 1 J",
                needs_protocol="mem0",
                needs_judge_style="mem0-official",
                needs_judge_model="gpt-4o-mini",
                needs_answerer="gpt-4o-mini",
                overall=overall / 100.0,
                by_category=_pct({1: c1, 2: c2, 3: c3, 4: c4}),
            )
        )
    for name, (system, (c1, c2, c3, c4)) in _MEM0_F1_ROWS.items():
        cats = _pct({1: c1, 2: c2, 3: c3, 4: c4})
        out.append(
            Baseline(
                name=name,
                benchmark="locomo",
                system=system,
                metric="set_f1",
                protocol=_MEM0_F1,
                source="Mem0 paper (arXiv 2504.19413), Table 1 F1 (overall implied, 1,540-weighted)",
                needs_protocol="mem0",
                needs_answerer="gpt-4o-mini",
                overall=_weighted_overall(cats),
                by_category=cats,
            )
        )
    return tuple(out)


BASELINES: tuple[Baseline, ...] = _rows()

#: shown when --memeval-published-baselines is not given
DEFAULTS: tuple[str, ...] = (
    "locomo-gpt-3.5-16k",
    "locomo-rag-obs-top5",
    "mem0-f1-mem0",
    "mem0-j-mem0",
)
