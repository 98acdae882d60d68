"""LongMemEval's published figures: the LongMemEval paper's Fig. 4b (read off a chart,
unverified) and the Mem0 harness's row (its own lenient judge, a protocol the plugin does not
run: never comparable). The registry (``SUITE_PUBLISHED``) hands them to ``analysis.baselines``."""

from __future__ import annotations

from ...analysis import Baseline

__all__ = ["BASELINES", "DEFAULTS"]

_LME = (
    "LongMemEval official protocol: GPT-4o judge with the five per-type rule sets, overall = micro "
    "accuracy over 500 questions; paper figure read off a chart, unverified"
)
_LME_MEM0 = (
    "Mem0 memory-benchmarks: one lenient gpt-5 judge prompt for every type, not the official rule "
    "sets; not comparable with the official protocol"
)
_LME_FIG = "LongMemEval paper (ICLR 2025), Fig. 4b"

#: (name, system, metric, protocol, source, overall, variant); all unverified seeds
_ROWS: tuple[tuple[str, str, str, str, str, float, str], ...] = (
    (
        "lme-gpt-4o-oracle",
        "GPT-4o (oracle)",
        "judge_lme_official",
        _LME,
        _LME_FIG,
        0.870,
        "oracle",
    ),
    ("lme-gpt-4o-s", "GPT-4o (s)", "judge_lme_official", _LME, _LME_FIG, 0.606, "s"),
    (
        "lme-llama-3.1-8b-oracle",
        "Llama-3.1-8B (oracle)",
        "judge_lme_official",
        _LME,
        _LME_FIG,
        0.744,
        "oracle",
    ),
    (
        "lme-llama-3.1-8b-s",
        "Llama-3.1-8B (s)",
        "judge_lme_official",
        _LME,
        _LME_FIG,
        0.334,
        "s",
    ),
    (
        "lme-mem0-platform-top50",
        "Mem0 platform, top-50",
        # Mem0's own lenient gpt-5 judge: a metric no judge of this plugin writes
        "judge_mem0_memory_benchmarks",
        _LME_MEM0,
        "mem0ai/memory-benchmarks README",
        0.948,
        "s",
    ),
)

#: what a run needs to stand beside the paper's rows: the official protocol, its judge style and
#: judge model; Mem0's harness row needs a protocol the plugin does not run
_OFFICIAL = ("longmemeval", "longmemeval-official", "gpt-4o-2024-08-06")
_MEM0_HARNESS: tuple[str, None, None] = ("mem0-memory-benchmarks", None, None)


def _row(
    name: str, system: str, metric: str, protocol: str, source: str, overall: float, variant: str
) -> Baseline:
    needs = _MEM0_HARNESS if name.startswith("lme-mem0") else _OFFICIAL
    return Baseline(
        name=name,
        benchmark="longmemeval",
        system=system,
        metric=metric,
        protocol=protocol,
        source=source,
        overall=overall,
        verified=False,
        variant=variant,
        needs_protocol=needs[0],
        needs_judge_style=needs[1],
        needs_judge_model=needs[2],
    )


BASELINES: tuple[Baseline, ...] = tuple(_row(*row) for row in _ROWS)

#: shown when --memeval-published-baselines is not given
DEFAULTS: tuple[str, ...] = ("lme-gpt-4o-oracle", "lme-gpt-4o-s")
