"""Target ``harness``: a full LoCoMo run with the instant memory system vs a bare pytest run of as
many trivial tests (wall and CPU, collection, the one-off metrics import), optionally profiled.
"""

from __future__ import annotations

from targets.common import (
    INSTANT,
    PYTEST_BASE,
    Context,
    Row,
    Timing,
    count_selected,
    import_cost,
    make_project,
    make_trivial,
    memeval_args,
    profile_run,
    read_report,
    run_timed,
)
from targets.pyspy import pyspy_run

TARGET_HARNESS = 1.5


def section_harness(ctx: Context) -> list[Row]:
    limit = 10 if ctx.quick else None
    repeats = 1 if ctx.quick else 3
    n = count_selected(ctx.data, limit)
    proj = make_project(ctx, "harness")
    trivial = make_trivial(ctx, n)
    report = proj / "report.json"
    run_args = memeval_args(ctx, INSTANT, limit, f"--memeval-json={report}")
    collect_args = memeval_args(ctx, INSTANT, limit, "--collect-only")
    trivial_args = list(PYTEST_BASE)
    trivial_collect = [*PYTEST_BASE, "--collect-only"]

    # warm-up: fill the private bytecode cache (and the OS page cache) for both projects
    run_timed(memeval_args(ctx, INSTANT, 1), proj, ctx.env)
    if not ctx.quick:
        run_timed(trivial_collect, trivial, ctx.env)

    # interleaved, so both see the same machine load
    runs: dict[str, list[Timing]] = {"run": [], "trivial": [], "collect": [], "tcollect": []}
    for _ in range(repeats):
        runs["run"].append(run_timed(run_args, proj, ctx.env))
        runs["trivial"].append(run_timed(trivial_args, trivial, ctx.env))
        runs["collect"].append(run_timed(collect_args, proj, ctx.env))
        runs["tcollect"].append(run_timed(trivial_collect, trivial, ctx.env))
    best = {k: min(v, key=lambda t: t.wall) for k, v in runs.items()}
    best_cpu = {k: min(t.cpu for t in v) for k, v in runs.items()}
    rep = read_report(report)
    extra = rep.get("extra", {})
    questions = sum(len(r["questions"]) for r in rep["runs"])
    if questions != n:
        raise RuntimeError(f"instant run reported {questions} questions, expected {n}")
    collected = [ln for ln in best["collect"].stdout.splitlines() if "::" in ln]
    if len(collected) != n:
        raise RuntimeError(f"--collect-only listed {len(collected)} items, expected {n}")
    import_s = import_cost(ctx, 1 if ctx.quick else 3)
    ctx.raw["harness"] = {
        "questions": n,
        "walls": {k: [t.wall for t in v] for k, v in runs.items()},
        "cpus": {k: [t.cpu for t in v] for k, v in runs.items()},
        "extra": extra,
        "import_metrics_s": import_s,
        "statuses": rep["runs"][0]["summary"]["overall"].get("statuses"),
    }
    wall_ratio = best["run"].wall / best["trivial"].wall
    label = f"{n} q" + (" (--memeval-limit=10)" if limit else "")
    rows = [
        Row(
            "harness",
            f"LoCoMo run, instant system, {label} vs {n} trivial tests: wall s, best of {repeats}",
            best["run"].wall,
            best["trivial"].wall,
            wall_ratio,
            f"<= {TARGET_HARNESS:g}x",
            wall_ratio <= TARGET_HARNESS,
        ),
        Row(
            "harness",
            "  same, CPU s (user+sys, best)",
            best_cpu["run"],
            best_cpu["trivial"],
            best_cpu["run"] / best_cpu["trivial"],
        ),
        Row(
            "harness",
            "  harness cost per item, ms (wall difference / items)",
            (best["run"].wall - best["trivial"].wall) * 1000 / n,
            unit="ms",
        ),
        Row(
            "harness",
            "  of the difference: `import pytest_memeval.metrics` (nltk stemmer+tokenizer, numpy) s",
            import_s,
            best["run"].wall - best["trivial"].wall,
            import_s / max(best["run"].wall - best["trivial"].wall, 1e-9),
        ),
        Row(
            "harness",
            "collection: `--collect-only -q`, wall s, best",
            best["collect"].wall,
            best["tcollect"].wall,
            best["collect"].wall / best["tcollect"].wall,
            "reported",
        ),
        Row(
            "harness",
            "  plugin's own collect_seconds (JSON extra)",
            float(extra.get("collect_seconds", float("nan"))),
        ),
    ]
    for name, secs in sorted((extra.get("load_seconds") or {}).items()):
        rows.append(
            Row(
                "harness",
                f"  plugin's own load_seconds[{name}] (parse once per process)",
                float(secs),
            )
        )
    if ctx.profile:
        ctx.raw["profile"] = profile_run(ctx, proj, run_args)
    if ctx.pyspy:
        ctx.raw["pyspy"] = {
            "ours": pyspy_run(proj, run_args, ctx.env),
            "bare": pyspy_run(trivial, trivial_args, ctx.env),
        }
    return rows
