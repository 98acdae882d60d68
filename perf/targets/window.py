"""Target ``window``: the LLM window stays full on every suite's shape (issue 36 item 1).

Three judged runs (``bm25``, LLM answerer + judge, both ``openai:gpt-4o-mini``) against the
loopback server at 200 ms per reply, ``--memeval-llm-concurrency=16``:

- one question per conversation (LongMemEval's and LoCoMo-Plus's shape): a generated
  LongMemEval-shaped file of 64 questions (``perf/gen_longmemeval.py``, synthetic text), ``-n 0``;
- the same at ``-n 2``;
- ten questions per conversation: LoCoMo, ``--memeval-limit=10`` (10 conversations x 10), ``-n 0``.

Each row is the run's extra wall time over the same run without LLM calls (offline metrics only;
each the best of 2 walls, each LLM run on a cache of its own) against the ideal ``calls x 0.2 s / 16``; target ratio <= 1.3. A companion row per run says its
per-question results are those of a window of 1 (a run at concurrency 1, server at 0 ms: a reply's
text does not depend on the latency).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from targets.common import PYTEST_BASE, Context, Row, Timing, best_of, run_timed
from targets.pipeline import LOOPBACK_KEY, SPEC, _reply, _rows, identical_row

LATENCY = 0.2
CONCURRENCY = 16
TARGET = 1.3
LME_QUESTIONS = 64
#: each run (with and without LLM calls) is the best of this many, the machine being shared
REPEATS = 2


def _lme_file(work: Path, questions: int) -> Path:
    gen: Any = importlib.import_module("gen_longmemeval")  # perf/gen_longmemeval.py
    path = work / f"lme_one_per_conversation_{questions}.json"
    if not path.exists():
        gen.generate(path, 2.0, questions)
    return path


def section_window(ctx: Context) -> list[Row]:
    llm_server: Any = importlib.import_module("llm_server")  # tests/llm_server.py
    proj = ctx.work / "window"
    proj.mkdir(parents=True, exist_ok=True)
    lme = _lme_file(proj, 8 if ctx.quick else LME_QUESTIONS)
    shapes: list[tuple[str, list[str], list[str]]] = [
        (
            f"one question per conversation (LongMemEval-shaped, {8 if ctx.quick else 64} q)",
            ["--memeval=longmemeval", f"--memeval-variant={lme}"],
            ["0"] if ctx.quick else ["0", "2"],
        ),
        (
            "ten questions per conversation (LoCoMo, --memeval-limit=10)",
            [
                "--memeval=locomo",
                f"--memeval-data={ctx.data}",
                f"--memeval-limit={2 if ctx.quick else 10}",
            ],
            ["0"],
        ),
    ]
    llm = [f"--memeval-answerer={SPEC}", f"--memeval-judge={SPEC}"]
    rows: list[Row] = []
    raw: dict[str, Any] = {}
    with llm_server.LLMServer(reply=_reply, latency=0.0) as server:
        env = {**ctx.env, **server.env(LOOPBACK_KEY)}
        for s, (label, suite, modes) in enumerate(shapes):

            def args(
                mode: str, name: str, *extra: str, _s: int = s, _suite: list[str] = suite
            ) -> list[str]:
                return [
                    *PYTEST_BASE,
                    *_suite,
                    "--memsys=bm25",
                    "-n",
                    mode,
                    f"--memeval-cache-dir={proj / f'{name}{_s}-cache'}",
                    f"--memeval-json={proj / f'{name}{_s}.json'}",
                    *extra,
                ]

            def report(name: str, _s: int = s) -> dict[str, Any]:
                data: dict[str, Any] = json.loads(
                    (proj / f"{name}{_s}.json").read_text(encoding="utf-8")
                )
                return data

            server.latency = 0.0
            run_timed(args("0", "warmup"), proj, env)  # bytecode, imports, the dataset
            run_timed(args("0", "ref", *llm, "--memeval-llm-concurrency=1"), proj, env)
            reference = _rows(report("ref"))
            server.latency = LATENCY
            for mode in modes:

                def offline_run(m: str = mode) -> Timing:
                    return run_timed(args(m, f"off{m}"), proj, env)

                offline, _ = best_of(REPEATS, offline_run)
                colds: list[Timing] = []
                before = server.count()
                for r in range(REPEATS):  # each on a cache of its own: every call is sent
                    colds.append(
                        run_timed(
                            args(
                                mode,
                                f"llm{mode}-{r}",
                                *llm,
                                f"--memeval-llm-concurrency={CONCURRENCY}",
                            ),
                            proj,
                            env,
                        )
                    )
                calls = (server.count() - before) // REPEATS
                best = min(range(REPEATS), key=lambda r: colds[r].wall)
                cold = colds[best]
                got = _rows(report(f"llm{mode}-{best}"))
                same = got == reference and len(got) > 0
                ideal = calls * LATENCY / CONCURRENCY
                extra = cold.wall - offline.wall
                ratio = extra / ideal if ideal else None
                raw[f"{label}, -n {mode}"] = {
                    "wall": cold.wall,
                    "offline_wall": offline.wall,
                    "extra": extra,
                    "calls": calls,
                    "ideal": ideal,
                    "ratio": ratio,
                    "identical": same,
                }
                rows += [
                    Row(
                        "window",
                        f"{label}, -n {mode}, {calls} calls at {LATENCY * 1000:.0f} ms, "
                        f"concurrency {CONCURRENCY}: extra wall over the offline run vs ideal",
                        extra,
                        ideal,
                        ratio,
                        f"<= {TARGET}x",
                        ratio is not None and ratio <= TARGET,
                        note=f"wall {cold.wall:.2f} s, offline {offline.wall:.2f} s",
                    ),
                    identical_row("window", mode, got, reference, same),
                ]
    ctx.raw["window"] = raw
    return rows
