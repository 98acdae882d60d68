"""Published baselines, each with the protocol that produced it
(docs/scoring.md#published-baselines).

Values are keyed by the benchmark's numeric category id, never by name: the Mem0 paper labels its
columns with a different id->name mapping than LoCoMo's (its "single-hop" is LoCoMo category 1).
A baseline is only ever shown in a column of its own, labelled with its protocol; the report never
puts a baseline in the same column as the run's number when the protocols differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

__all__ = [
    "BASELINES",
    "DEFAULT_BASELINES",
    "SYSTEM_ANSWERED",
    "Baseline",
    "RunProtocol",
    "answerer_label",
    "baselines_for",
    "comparability_label",
    "comparability_reasons",
    "mark_comparability",
    "not_comparable",
]


@dataclass(frozen=True)
class Baseline:
    name: str  # short unique key, used by --memeval-published-baselines
    benchmark: str
    system: str
    #: the exact run metric it was published as: "f1" (official LoCoMo), "set_f1",
    #: "judge_mem0_official", "judge_lme_official", "nugget_official", ...
    metric: str
    protocol: str  # what makes it (in)comparable, shown beside it
    source: str
    by_category: Mapping[int | str, float] = field(default_factory=dict)  # 0-1 scale
    overall: float | None = None  # over the categories `overall_scope` names
    overall_scope: str = "overall"  # "overall" (LoCoMo 1-4) or "overall_all" (1-5)
    verified: bool = True
    variant: str | None = None  # LongMemEval oracle/s/m, BEAM 100K/500K/1M/10M
    #: what a run must use for its number to stand beside this one (None: anything)
    needs_protocol: str | None = None  # --memeval-protocol
    needs_judge_style: str | None = None  # the judge style that produced the metric
    needs_judge_model: str | None = None  # the judge model it was published with
    #: the model that wrote the published answers (None: not recorded)
    needs_answerer: str | None = None
    #: set when the run differs: the first of ``reasons`` (what to change first)
    not_comparable: str | None = None
    #: every way the run differs (protocol, judge, judge model, answerer, metric); empty: the
    #: baseline is "comparable", else it is shown as a "reference" with these reasons
    reasons: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``comparable`` or ``reference`` (shown beside the number, never instead of it)."""
        return comparability_label(self.reasons)


@dataclass(frozen=True)
class RunProtocol:
    """How one benchmark of a run was scored: what baselines are compared against."""

    metrics: frozenset[str]
    protocol: str | None = None
    judge_style: str | None = None
    judge_model: str | None = None
    #: the answerer's label (``extractive``, ``openai:gpt-4o-mini``); None: not recorded
    answerer: str | None = None


#: how a run's answers are named when the memory system gave them itself (``answer()``:
#: ``replay:`` saved answers, or a system that answers), not the configured answerer
SYSTEM_ANSWERED = "the memory system itself (its own answer(), e.g. replay's saved answers)"


def answerer_label(answered_by: Iterable[str], configured: str | None) -> str | None:
    """Who answered a benchmark's questions in a run, from each result's ``answered_by``
    (``system``, ``extractive``, ``PROVIDER:MODEL``): one label, several joined with ``and``
    (two systems answered differently), ``system`` named :data:`SYSTEM_ANSWERED`; the
    ``configured`` answerer when no result says (none recorded)."""
    seen = sorted({a for a in answered_by if a})
    if not seen:
        return configured
    return " and ".join(SYSTEM_ANSWERED if a == "system" else a for a in seen)


def comparability_label(reasons: Sequence[str]) -> str:
    """``comparable`` (no difference) or ``reference`` (shown with its reasons)."""
    return "reference" if reasons else "comparable"


def comparability_reasons(baseline: Baseline, run: RunProtocol) -> list[str]:
    """Every way the run differs from how ``baseline`` was measured, each starting with what
    differs (``protocol:``, ``judge:``, ``judge model:``, ``answerer:``, ``metric:``); empty: the
    two numbers are comparable. The protocol, judge style and judge model come first (their
    reasons say what to change), then the answerer and the metric: every judge style writes its
    own metric name, so a run's graded ``judge_graded`` never stands for a published binary
    ``judge_mem0_official``."""
    out: list[str] = []
    if baseline.needs_protocol is not None and run.protocol != baseline.needs_protocol:
        out.append(
            f"protocol: published under the {baseline.needs_protocol} protocol; this run "
            + (f"used --memeval-protocol={run.protocol}" if run.protocol else "used no protocol")
            + f" (run with --memeval-protocol={baseline.needs_protocol})"
        )
    if baseline.needs_judge_style is not None and run.judge_style != baseline.needs_judge_style:
        out.append(
            f"judge: {baseline.metric} was published by the {baseline.needs_judge_style} judge, "
            f"this run's is {run.judge_style or 'none'}"
        )
    if baseline.needs_judge_model is not None and run.judge_model != baseline.needs_judge_model:
        out.append(
            f"judge model: judged by {baseline.needs_judge_model}, this run by "
            f"{run.judge_model or 'no judge'}"
        )
    if baseline.needs_answerer is not None and run.answerer is not None:
        models = {a.partition(":")[2] or a for a in run.answerer.split(" and ")}
        if models != {baseline.needs_answerer}:
            out.append(
                f"answerer: published answers by {baseline.needs_answerer}, this run's by "
                f"{run.answerer}"
            )
    if baseline.metric not in run.metrics:
        judged = sorted(m for m in run.metrics if m.startswith(("judge_", "nugget")))
        out.append(
            f"metric: published as {baseline.metric}; this run has no {baseline.metric}"
            + (f" (its judge metrics: {', '.join(judged)})" if judged else "")
        )
    return out


def not_comparable(baseline: Baseline, run: RunProtocol) -> str | None:
    """The first of :func:`comparability_reasons`, without its ``what:`` prefix (None: the
    baseline is comparable)."""
    reasons = comparability_reasons(baseline, run)
    return reasons[0].partition(": ")[2] if reasons else None


def mark_comparability(baselines: Sequence[Baseline], run: RunProtocol) -> list[Baseline]:
    """The baselines with ``reasons`` (and ``not_comparable``, the first) set where the run
    differs from how they were measured."""
    out = []
    for b in baselines:
        reasons = tuple(comparability_reasons(b, run))
        first = reasons[0].partition(": ")[2] if reasons else None
        out.append(replace(b, reasons=reasons, not_comparable=first))
    return out


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


def _build() -> tuple[Baseline, ...]:
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
    out.extend(_longmemeval_and_beam())
    out.extend(_longmemeval_v2())
    return tuple(out)


_LME = (
    "LongMemEval official protocol: GPT-4o judge with the five per-type rule sets, overall = micro "
    "accuracy over 500 questions; paper figure read off a chart, unverified"
)
_LME_MEM0 = (
    "Mem0 memory-benchmarks: one lenient gpt-5 judge prompt for every type, not the official rule "
    "sets; not comparable with the official protocol"
)
_LME_FIG = "LongMemEval paper (ICLR 2025), Fig. 4b"
_BEAM_T1 = "BEAM paper (ICLR 2026), Table 1"
_BEAM = (
    "BEAM paper Table 1 (0-1 scale): rubric-nugget LLM judge, how the paper's average is formed is "
    "not in the released code; unverified"
)


#: (name, benchmark, system, metric, protocol, source, overall, variant); all unverified seeds
_OVERALL_ONLY: tuple[tuple[str, str, str, str, str, str, float, str], ...] = (
    (
        "lme-gpt-4o-oracle",
        "longmemeval",
        "GPT-4o (oracle)",
        "judge_lme_official",
        _LME,
        _LME_FIG,
        0.870,
        "oracle",
    ),
    ("lme-gpt-4o-s", "longmemeval", "GPT-4o (s)", "judge_lme_official", _LME, _LME_FIG, 0.606, "s"),
    (
        "lme-llama-3.1-8b-oracle",
        "longmemeval",
        "Llama-3.1-8B (oracle)",
        "judge_lme_official",
        _LME,
        _LME_FIG,
        0.744,
        "oracle",
    ),
    (
        "lme-llama-3.1-8b-s",
        "longmemeval",
        "Llama-3.1-8B (s)",
        "judge_lme_official",
        _LME,
        _LME_FIG,
        0.334,
        "s",
    ),
    (
        "lme-mem0-platform-top50",
        "longmemeval",
        "Mem0 platform, top-50",
        # Mem0's own lenient gpt-5 judge: a metric no judge of this plugin writes
        "judge_mem0_memory_benchmarks",
        _LME_MEM0,
        "mem0ai/memory-benchmarks README",
        0.948,
        "s",
    ),
    (
        "beam-light-100k",
        "beam",
        "Llama-4-Maverick + LIGHT (100K)",
        "nugget_official",
        _BEAM,
        _BEAM_T1,
        0.358,
        "100K",
    ),
    (
        "beam-light-500k",
        "beam",
        "Llama-4-Maverick + LIGHT (500K)",
        "nugget_official",
        _BEAM,
        _BEAM_T1,
        0.359,
        "500K",
    ),
    (
        "beam-light-1m",
        "beam",
        "Llama-4-Maverick + LIGHT (1M)",
        "nugget_official",
        _BEAM,
        _BEAM_T1,
        0.336,
        "1M",
    ),
    (
        "beam-light-10m",
        "beam",
        "Llama-4-Maverick + LIGHT (10M)",
        "nugget_official",
        _BEAM,
        _BEAM_T1,
        0.266,
        "10M",
    ),
    (
        "beam-rag-10m",
        "beam",
        "RAG, Llama-4-Maverick (10M)",
        "nugget_official",
        _BEAM,
        "BEAM paper, as quoted by a third-party page",
        0.249,
        "10M",
    ),
)


#: suite of an ``_OVERALL_ONLY`` row -> the (protocol, judge style, judge model) a run needs to
#: stand beside its published figure: the suite's official protocol, its judge and judge model
_OFFICIAL_NEEDS: dict[str, tuple[str, str | None, str | None]] = {
    "longmemeval": ("longmemeval", "longmemeval-official", "gpt-4o-2024-08-06"),
    "beam": ("beam", "beam-official", "gpt-4.1-mini"),
}


def _needs(name: str, bench: str) -> tuple[str, str | None, str | None]:
    """(protocol, judge style, judge model) a run needs to stand beside the baseline."""
    if name.startswith("lme-mem0"):  # Mem0's own harness: a protocol we do not run
        return ("mem0-memory-benchmarks", None, None)
    return _OFFICIAL_NEEDS[bench]


def _longmemeval_and_beam() -> list[Baseline]:
    return [
        Baseline(
            name=name,
            benchmark=bench,
            system=system,
            metric=metric,
            protocol=protocol,
            source=source,
            overall=overall,
            verified=False,
            variant=variant,
            needs_protocol=_needs(name, bench)[0],
            needs_judge_style=_needs(name, bench)[1],
            needs_judge_model=_needs(name, bench)[2],
        )
        for name, bench, system, metric, protocol, source, overall, variant in _OVERALL_ONLY
    ]


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


def _longmemeval_v2() -> list[Baseline]:
    return [
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
    ]


BASELINES: tuple[Baseline, ...] = _build()

#: shown when --memeval-published-baselines is not given
DEFAULT_BASELINES: tuple[str, ...] = (
    "locomo-gpt-3.5-16k",
    "locomo-rag-obs-top5",
    "mem0-f1-mem0",
    "mem0-j-mem0",
    "lme-gpt-4o-oracle",
    "lme-gpt-4o-s",
    "beam-light-100k",
    "beam-light-500k",
    "beam-light-1m",
    "beam-light-10m",
    *(row[0] for row in _LME2_ROWS),
)


def baselines_for(
    benchmark: str,
    names: tuple[str, ...] | None = None,
    metrics: tuple[str, ...] | None = None,
    variant: str | None = None,
) -> list[Baseline]:
    """Baselines of one benchmark (the demo uses LoCoMo's schema but has no published figures).

    ``names`` None -> the defaults; ("all",) -> every one; ("none",) -> none. ``metrics`` keeps only
    baselines whose metric the run computes."""
    if names is not None and tuple(names) == ("none",):
        return []
    chosen = [b for b in BASELINES if b.benchmark == benchmark]
    if names is None:
        chosen = [b for b in chosen if b.name in DEFAULT_BASELINES]
    elif tuple(names) != ("all",):
        chosen = [b for b in chosen if b.name in names]
    if metrics is not None:
        chosen = [b for b in chosen if b.metric in metrics]
    if variant is not None:
        chosen = [b for b in chosen if b.variant is None or b.variant.lower() == variant.lower()]
    return chosen
