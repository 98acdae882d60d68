"""Target ``board``: ``memeval-board`` over 50 runs x 2,000 questions (5 systems x 10 commits,
LoCoMo-shaped synthetic reports written here, not timed) builds in under 30 s, and its index page
stays under 2 MB (the questions live on the run pages). --quick: 6 runs x 300 questions."""

from __future__ import annotations

import random
import time
from pathlib import Path

from targets.common import Context, Row

TARGET_SECONDS = 30.0
TARGET_INDEX_MB = 2.0
SYSTEMS = ("bm25", "full-context", "no-memory", "oracle", "mine")
_WORDS = [
    "the",
    "a",
    "dog",
    "pixel",
    "beagle",
    "kyoto",
    "ceramics",
    "marathon",
    "lisbon",
    "sister",
    "lena",
    "trip",
    "may",
    "june",
]
_CATEGORIES = (
    (1, "multi-hop"),
    (2, "temporal"),
    (3, "open-domain"),
    (4, "single-hop"),
    (5, "adversarial"),
)


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def write_reports(folder: Path, runs: int, questions: int, seed: int = 0) -> list[Path]:
    """``runs`` JSON reports of one system each (systems x commits), every question scored by
    the LoCoMo scorer so that the board re-scores them without a mismatch."""
    from pytest_memeval.analysis.aggregate import aggregate_run, benchmark_shape
    from pytest_memeval.analysis.stats import add_confidence_intervals
    from pytest_memeval.benchmarks import get_benchmark
    from pytest_memeval.benchmarks.locomo import score_locomo
    from pytest_memeval.records import Memory, Prediction, Question, QuestionResult
    from pytest_memeval.report.json_report import write_json
    from pytest_memeval.report.model import Summary

    metas, metrics, round3 = benchmark_shape(get_benchmark("locomo"))
    rng = random.Random(seed)
    base = []
    for i in range(questions):
        cat_id, cat = _CATEGORIES[i % 5]
        q = Question(f"q{i}", f"conv-{i % 10}", cat, _text(rng, 8) + "?", _text(rng, 3),
                     category_id=cat_id, cluster=f"conv-{i % 10}")  # fmt: skip
        base.append(q)
    paths = []
    for n in range(runs):
        system = SYSTEMS[n % len(SYSTEMS)]
        commit = n // len(SYSTEMS)
        results = []
        for q in base:
            memories = tuple(Memory(_text(rng, 12), id=f"m{j}") for j in range(3))
            pred = str(q.gold) if rng.random() < 0.3 + 0.02 * commit else _text(rng, 4)
            scores = score_locomo(q, Prediction(pred, memories))
            results.append(
                QuestionResult(
                    benchmark="locomo", system=system, question_id=q.id,
                    conversation_id=q.conversation_id, category=q.category,
                    category_id=q.category_id, question=q.question, gold=q.gold,
                    prediction=pred, status="CORRECT" if scores["f1"] >= 0.5 else "WRONG",
                    scores=scores, memories=list(memories),
                    latency={"search": rng.random() / 100, "answer": rng.random() / 10},
                    details={"k": 10, "pass_metric": "f1", "context_tokens": rng.randint(50, 900)},
                    cluster=q.cluster,
                )
            )  # fmt: skip
        run = aggregate_run("locomo", system, "", results, metas, metrics, round3)
        add_confidence_intervals(run, metrics, round3=round3)
        provenance = {
            "plugin_version": "0.1.0",
            "datasets": {"locomo": {"variant": None, "sha256": {"locomo10.json": "f" * 64}}},
            "answerer": "extractive",
            "top_k": [10],
            "git_commit": f"{commit:040x}",
            "created": f"2026-01-{commit + 1:02d}T00:00:00+00:00",
            "run_id": f"run-{n:03d}",
            "pass_metric": {"locomo": "f1"},
        }
        path = folder / f"run-{n:03d}.json"
        write_json(Summary(runs=[run], provenance=provenance), path)
        paths.append(path)
    return paths


def section_board(ctx: Context) -> list[Row]:
    from pytest_memeval.board.site import build_board

    runs, questions = (6, 300) if ctx.quick else (50, 2000)
    folder = ctx.work / "board"
    folder.mkdir(parents=True, exist_ok=True)
    reports = write_reports(folder, runs, questions)
    start = time.perf_counter()
    out = build_board(reports, folder / "site")
    seconds = time.perf_counter() - start
    index_mb = out.index_bytes / 1e6
    ctx.raw["board"] = {
        "runs": runs,
        "questions": questions,
        "seconds": seconds,
        "index_bytes": out.index_bytes,
        "pages": len(out.pages),
    }
    return [
        Row(
            "board",
            f"memeval-board, {runs} runs x {questions:,} q (reports read, re-scored, site written)",
            seconds,
            TARGET_SECONDS,
            seconds / TARGET_SECONDS,
            f"< {TARGET_SECONDS:g} s",
            seconds < TARGET_SECONDS,
        ),
        Row(
            "board",
            "  index page size",
            index_mb,
            TARGET_INDEX_MB,
            index_mb / TARGET_INDEX_MB,
            f"< {TARGET_INDEX_MB:g} MB",
            index_mb < TARGET_INDEX_MB,
            unit="MB",
        ),
    ]
