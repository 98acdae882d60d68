"""Target ``board``: ``memeval-board`` over 50 runs x 1,986 questions (5 systems x 10 commits,
LoCoMo-shaped reports over the real LoCoMo questions, written here, not timed) builds in under
30 s, and its index page stays under 2 MB (the questions live on the run pages). The reports name
the dataset's sha256 and hold its whole selection, so the board (given the data folder) verifies
their question sets and ranks them (re-scored), as it does real runs; synthetic questions would
be unverified, shown apart and never reach the ranked table. --quick: 6 runs x 300 questions
(``--memeval-limit=30``: the first 30 of each of the 10 conversations)."""

from __future__ import annotations

import json
import random
import re
import tempfile
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


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def write_reports(
    folder: Path, runs: int, data: Path, limit: int | None = None, seed: int = 0
) -> list[Path]:
    """``runs`` JSON reports of one system each (systems x commits) over LoCoMo's questions in
    ``data`` (the first ``limit`` of each conversation, or all), every question scored by the
    LoCoMo scorer so that the board re-scores them without a mismatch."""
    from pytest_memeval.analysis import add_confidence_intervals, aggregate_run, benchmark_shape
    from pytest_memeval.benchmarks import LoadRequest, get_benchmark
    from pytest_memeval.benchmarks.locomo import score_locomo
    from pytest_memeval.records import Memory, Prediction, QuestionResult
    from pytest_memeval.report import Summary, write_json
    from pytest_memeval.run import select_questions

    bench = get_benchmark("locomo")
    metas, metrics, round3 = benchmark_shape(bench)
    with tempfile.TemporaryDirectory(dir=folder) as cache:
        dataset = bench.load(LoadRequest(data, Path(cache)))
    base = select_questions(list(dataset.questions), limit=limit)
    rng = random.Random(seed)
    paths = []
    for n in range(runs):
        system = SYSTEMS[n % len(SYSTEMS)]
        commit = n // len(SYSTEMS)
        results = []
        for q in base:
            memories = tuple(Memory(_text(rng, 12), id=f"m{j}") for j in range(3))
            gold = str(q.gold) if q.gold is not None else ""
            pred = gold if gold and rng.random() < 0.3 + 0.02 * commit else _text(rng, 4)
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
            "datasets": {
                "locomo": {
                    "variant": None,
                    "sha256": dict(dataset.sha256),
                    "questions_selected": len(base),
                    "questions_run": len(base),
                }
            },
            "limit": limit,
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
    from pytest_memeval.board import build_board

    runs, limit = (6, 30) if ctx.quick else (50, None)
    folder = ctx.work / "board"
    folder.mkdir(parents=True, exist_ok=True)
    reports = write_reports(folder, runs, ctx.data, limit)
    questions = json.loads(reports[0].read_text("utf-8"))["provenance"]["datasets"]["locomo"][
        "questions_selected"
    ]
    start = time.perf_counter()
    out = build_board(reports, folder / "site", ctx.data)
    seconds = time.perf_counter() - start
    index_mb = out.index_bytes / 1e6
    # the ranked table is the workload: one re-scored row per system, nothing shown apart
    index = (folder / "site" / "index.html").read_text(encoding="utf-8")
    ranked = len(re.findall(r'<tr data-system="[^"]*" data-tier="re-scored"', index))
    apart = index.count('<tr class="apart"')
    systems = min(runs, len(SYSTEMS))
    ctx.raw["board"] = {
        "runs": runs,
        "questions": questions,
        "seconds": seconds,
        "index_bytes": out.index_bytes,
        "pages": len(out.pages),
        "ranked_rows": ranked,
        "apart_rows": apart,
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
        Row(
            "board",
            "  ranked rows (re-scored, one per system)",
            ranked,
            systems,
            ranked / systems,
            f"= {systems}, none apart",
            ranked == systems and apart == 0,
            unit="n",
            note=f"{apart} shown apart",
        ),
    ]
