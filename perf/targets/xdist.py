"""Target ``xdist``: a memory system that sleeps per ingest and per answer, ``-n 2`` vs ``-n 0`` over
LoCoMo; ingests per system from the JSON provenance; identical scores in both modes.
"""

from __future__ import annotations

from typing import Any

from targets.common import (
    INSTANT,
    SLOW,
    Context,
    Row,
    Timing,
    count_selected,
    make_project,
    memeval_args,
    read_report,
    run_timed,
)

TARGET_XDIST = 0.6
TARGET_INGESTS = 10


def section_xdist(ctx: Context) -> list[Row]:
    limit = 2 if ctx.quick else None
    env = dict(ctx.env)
    if ctx.quick:
        env["MEMEVAL_PERF_INGEST_SECONDS"] = "0.15"
        env["MEMEVAL_PERF_ANSWER_SECONDS"] = "0.01"
    ingest_s = float(env.get("MEMEVAL_PERF_INGEST_SECONDS", "1.0"))
    answer_s = float(env.get("MEMEVAL_PERF_ANSWER_SECONDS", "0.02"))
    proj = make_project(ctx, "xdist")
    n = count_selected(ctx.data, limit)
    timings: dict[str, Timing] = {}
    reports: dict[str, dict[str, Any]] = {}
    if not ctx.quick:  # warm-up (bytecode cache, xdist's imports)
        run_timed(memeval_args(ctx, INSTANT, 1, "-n", "2"), proj, env)
    for mode in ("2", "0"):
        report = proj / f"report-n{mode}.json"
        args = memeval_args(ctx, SLOW, limit, "-n", mode, f"--memeval-json={report}")
        timings[mode] = run_timed(args, proj, env)
        reports[mode] = read_report(report)
    ingests = {m: dict(r["provenance"].get("ingests") or {}) for m, r in reports.items()}

    def scores(r: dict[str, Any]) -> dict[str, Any]:
        return {
            q["id"]: (q["scores"], q["prediction"]) for run in r["runs"] for q in run["questions"]
        }

    same = scores(reports["2"]) == scores(reports["0"]) and len(scores(reports["0"])) == n
    ratio = timings["2"].wall / timings["0"].wall
    ctx.raw["xdist"] = {
        "questions": n,
        "ingest_s": ingest_s,
        "answer_s": answer_s,
        "wall": {m: t.wall for m, t in timings.items()},
        "ingests": ingests,
    }
    workload = f"ingest {ingest_s:g} s, answer {answer_s * 1000:g} ms, {n} q"
    rows = [
        Row(
            "xdist",
            f"slow system ({workload}): -n 2 vs -n 0, wall s",
            timings["2"].wall,
            timings["0"].wall,
            ratio,
            f"<= {TARGET_XDIST:g}x",
            ratio <= TARGET_XDIST,
        ),
        Row(
            "xdist",
            "  ideal for that workload (sleep sum / 2 vs sleep sum)",
            (10 * ingest_s + n * answer_s) / 2,
            10 * ingest_s + n * answer_s,
            0.5,
        ),
    ]
    for mode in ("2", "0"):
        count = ingests[mode].get(SLOW, 0)
        rows.append(
            Row(
                "xdist",
                f"  ingests at -n {mode} ({SLOW}, provenance.ingests)",
                float(count),
                float(TARGET_INGESTS),
                None,
                f"== {TARGET_INGESTS}",
                count == TARGET_INGESTS and len(ingests[mode]) == 1,
                unit="n",
            )
        )
    rows.append(
        Row(
            "xdist",
            "  per-question scores and predictions identical, -n 2 vs -n 0",
            float(same),
            1.0,
            None,
            "identical",
            same,
            unit="bool",
        )
    )
    return rows
