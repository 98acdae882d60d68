"""pytest-memeval performance table: every target of issues 2 and 6, measured side by side in one run.

    python perf/run.py                       # everything (about 5 minutes on 2 cores)
    python perf/run.py --quick               # small sizes, well under a minute (the smoke test)
    python perf/run.py --only harness,xdist  # some sections: f1, harness, idle, xdist, judge,
                                             # warmjudge, pipeline, window, longmemeval,
                                             # board
    python perf/run.py --json perf.json      # also save every number
    python perf/run.py --profile             # add a cProfile of the instant LoCoMo run (and the
                                             # warm judge rerun)
    python perf/run.py --py-spy              # add a py-spy sample of the instant LoCoMo run and of
                                             # the bare run: wall time per pytest phase, side by side

Reads ``$MEMEVAL_DATA_DIR/locomo/locomo10.json`` (default ``../shared/data`` next to the repository
root). Prints ONE table; each row is ``what | ours | reference | ratio | target | ok?``. The ratio is
``ours / reference`` except for speed-ups (F1), where it is ``reference / ours``; the target column
says which. Sections:

f1        official LoCoMo F1 over all 1,986 questions, ours vs a plain implementation
          (``perf/bench_f1.py``; CPU seconds, best of 5, cold and warm caches).
harness   a full LoCoMo run (``python -m pytest``) with an instant memory system (answers from a
          dict, ``perf/instant_system.py``) and the offline metrics vs a bare pytest run of 1,986
          trivial parametrized tests; wall time, best of 3; the same with ``--collect-only -q``; the
          plugin's own collect / load seconds from ``--memeval-json``.
idle      what the installed plugin costs a run that does not use it: 20 trivial tests with the
          plugin vs ``-p no:memeval``, wall and CPU, best of 7 (3 in --quick), interleaved; and
          ``import pytest_memeval.plugin`` after pytest in a fresh interpreter.
xdist     a memory system whose ingest sleeps 1 s per conversation and whose answer sleeps 20 ms:
          ``-n 2`` vs ``-n 0`` over LoCoMo; ingests per system from the JSON provenance.
judge     judge calls against the loopback server (``perf/bench_judge.py``): wall vs the ideal
          ``N x latency / concurrency``, and the warm rerun's HTTP requests.
warmjudge a LoCoMo run (instant system, ``--memeval-limit=20``: 200 questions) with
          ``--memeval-judge=openai:gpt-4o-mini`` against the loopback server: one cold run fills the
          LLM cache, then the warm rerun (best of 3) vs the same run with offline metrics only, and
          the HTTP requests the warm reruns made.
pipeline  the plugin's own LLM path: a judged LoCoMo run (bm25, LLM answerer + mem0 judge,
          all 1,986 questions; ``--memeval-limit=2`` in --quick) against the loopback server at 200 ms, concurrency
          32, at ``-n 0`` and ``-n 2`` (``-n 0`` only in --quick): wall vs 1.3 x (calls x latency /
          concurrency) + the same run without LLM calls; per-question results vs concurrency 1;
          HTTP requests of the warm rerun.
window    the LLM window on every suite's shape: judged runs (bm25, LLM answerer + judge) at 200 ms,
          concurrency 16: one question per conversation (a generated LongMemEval-shaped file, 64
          q) at ``-n 0`` and ``-n 2``, ten per conversation (LoCoMo ``--memeval-limit=10``) at
          ``-n 0``; extra wall over the run without LLM calls vs ``calls x 0.2 s / 16`` (<= 1.3x);
          per-question results vs concurrency 1.
longmemeval  a generated LongMemEval-S-size file (``perf/gen_longmemeval.py``, ~277 MB, 500
          questions): the loader's peak RSS vs the file size, and a ``pytest --collect-only`` of it.

All pytest runs are subprocesses in temporary folders with ``-p no:cacheprovider -p no:benchmark``
and bytecode caching on in a private ``PYTHONPYCACHEPREFIX`` (each configuration is warmed up once
first), so the numbers are a normal warm start whatever ``PYTHONDONTWRITEBYTECODE`` says.
Exit status: 0 when every measurement ran (missed targets are shown as ``NO``), 1 when one failed,
or with ``--strict`` when a target was missed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

PERF = Path(__file__).resolve().parent
ROOT = PERF.parent
for _p in (str(ROOT), str(PERF), str(ROOT / "tests")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from targets.board import section_board  # noqa: E402
from targets.common import Context, Row, child_env, data_dir, write_answers  # noqa: E402
from targets.f1 import section_f1  # noqa: E402
from targets.harness import section_harness  # noqa: E402
from targets.idle import section_idle  # noqa: E402
from targets.judge import section_judge  # noqa: E402
from targets.longmemeval import section_longmemeval  # noqa: E402
from targets.pipeline import section_pipeline  # noqa: E402
from targets.pyspy import format_pyspy, pyspy_phases  # noqa: E402
from targets.table import format_table, machine_info  # noqa: E402
from targets.warmjudge import section_warmjudge  # noqa: E402
from targets.window import section_window  # noqa: E402
from targets.xdist import section_xdist  # noqa: E402

__all__ = [
    "SECTIONS",
    "Row",
    "Runner",
    "data_dir",
    "format_table",
    "main",
    "pyspy_phases",
    "write_answers",
]

SECTIONS = (
    "f1",
    "harness",
    "idle",
    "xdist",
    "judge",
    "warmjudge",
    "pipeline",
    "window",
    "longmemeval",
    "board",
)

RUNNERS: dict[str, Callable[[Context], list[Row]]] = {
    "f1": section_f1,
    "harness": section_harness,
    "idle": section_idle,
    "xdist": section_xdist,
    "judge": section_judge,
    "warmjudge": section_warmjudge,
    "pipeline": section_pipeline,
    "window": section_window,
    "longmemeval": section_longmemeval,
    "board": section_board,
}


@dataclass
class Runner:
    """Runs the chosen sections; a section that raises becomes one ``ERROR`` row."""

    ctx: Context
    sections: Sequence[str]
    rows: list[Row] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def run(self) -> list[Row]:
        for name in self.sections:
            start = time.perf_counter()
            try:
                self.rows.extend(RUNNERS[name](self.ctx))
            except Exception as exc:  # one failed measurement must not hide the others
                msg = f"{type(exc).__name__}: {exc}"
                self.errors[name] = msg
                first = msg.splitlines()[0][:90]
                self.rows.append(Row(name, f"{name}: ERROR {first}", None, ok=False))
            self.seconds[name] = time.perf_counter() - start
        return self.rows


def _parse_only(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [n for n in names if n not in SECTIONS]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown section {bad}; choose from {', '.join(SECTIONS)}"
        )
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (about 30 s)")
    parser.add_argument("--only", type=_parse_only, default=None, help=",".join(SECTIONS))
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="save numbers")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile the instant LoCoMo run and the warm judge rerun",
    )
    parser.add_argument(
        "--py-spy",
        dest="pyspy",
        action="store_true",
        help="sample the instant LoCoMo run and the bare run with py-spy: seconds per pytest phase",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument(
        "--no-m", action="store_true", help="skip the 2.7 GB LongMemEval-M-size file"
    )
    args = parser.parse_args(argv)

    data = data_dir().resolve()
    if not (data / "locomo" / "locomo10.json").is_file():
        print(f"perf/run.py: no {data}/locomo/locomo10.json; set MEMEVAL_DATA_DIR", file=sys.stderr)
        return 2
    sections = list(args.only or SECTIONS)
    if args.quick and args.only is None:
        sections = [s for s in sections if s != "longmemeval"]  # 277 MB: full mode only
    work = Path(tempfile.mkdtemp(prefix="memeval-perf-"))
    before = machine_info()
    started = time.perf_counter()
    try:
        ctx = Context(
            data,
            work,
            args.quick,
            child_env(work),
            profile=args.profile,
            with_m=not args.no_m,
            pyspy=args.pyspy,
        )
        runner = Runner(ctx, sections)
        rows = runner.run()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    total = time.perf_counter() - started
    after = machine_info()

    mode = "quick" if args.quick else "full"
    print(
        f"pytest-memeval performance ({mode}; {before['cpus']} CPUs, load average "
        f"{before['loadavg'][0]:.2f} -> {after['loadavg'][0]:.2f}; Python {before['python']}; "
        f"{total:.0f} s)"
        if before["loadavg"]
        else f"pytest-memeval performance ({mode}; {total:.0f} s)"
    )
    print(format_table(rows))
    if "longmemeval" in RUNNERS and args.quick and args.only is None:
        print("(longmemeval skipped in --quick mode)")
    for name, msg in runner.errors.items():
        print(f"\n{name} failed:\n{msg}", file=sys.stderr)
    for key, title in (
        ("profile", "the instant LoCoMo run"),
        ("profile_warmjudge", "the warm judge rerun"),
    ):
        profile = ctx.raw.get(key)
        if not profile:
            continue
        print(
            f"\ncProfile of {title} ({ctx.raw[key + '_total_s']:.2f} s under the "
            "profiler): top 15 pytest_memeval functions by cumulative time"
        )
        print(f"{'cumulative s':>12} {'own s':>8} {'calls':>7}  function")
        for p in profile:
            print(f"{p['cumtime']:>12.3f} {p['tottime']:>8.3f} {p['calls']:>7}  {p['function']}")
    if ctx.raw.get("pyspy"):
        print("\n" + format_pyspy(ctx.raw["pyspy"]))
    if args.json is not None:
        payload = {
            "mode": mode,
            "machine": {"before": before, "after": after},
            "seconds": runner.seconds,
            "rows": [asdict(r) for r in rows],
            "raw": ctx.raw,
            "errors": runner.errors,
        }
        args.json.write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    if runner.errors:
        return 1
    if args.strict and any(r.ok is False for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
