"""pytest-memeval performance table: every target of issues 2 and 6, measured side by side in one run.

    python perf/run.py                       # everything (about 5 minutes on 2 cores)
    python perf/run.py --quick               # small sizes, well under a minute (the smoke test)
    python perf/run.py --only harness,xdist  # some sections: f1, harness, xdist, judge, longmemeval
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
xdist     a memory system whose ingest sleeps 1 s per conversation and whose answer sleeps 20 ms:
          ``-n 2`` vs ``-n 0`` over LoCoMo; ingests per system from the JSON provenance.
judge     judge calls against the loopback server (``perf/bench_judge.py``): wall vs the ideal
          ``N x latency / concurrency``, and the warm rerun's HTTP requests.
warmjudge a LoCoMo run (instant system, ``--memeval-limit=20``: 200 questions) with
          ``--memeval-judge=openai:gpt-4o-mini`` against the loopback server: one cold run fills the
          LLM cache, then the warm rerun (best of 3) vs the same run with offline metrics only, and
          the HTTP requests the warm reruns made.
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
import contextlib
import importlib
import io
import json
import os
import platform
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PERF = Path(__file__).resolve().parent
ROOT = PERF.parent
for _p in (str(ROOT), str(PERF), str(ROOT / "tests")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

__all__ = [
    "SECTIONS",
    "Row",
    "Runner",
    "data_dir",
    "format_table",
    "main",
    "write_answers",
]

SECTIONS = ("f1", "harness", "xdist", "judge", "warmjudge", "longmemeval")
PYTEST_BASE = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark")
INSTANT = "instant_system:instant"
SLOW = "instant_system:slow"
ABSTAIN = "Not mentioned in the conversation"

TARGET_F1 = 10.0
TARGET_HARNESS = 1.5
TARGET_XDIST = 0.6
TARGET_INGESTS = 10
TARGET_JUDGE = 1.25
TARGET_WARM_JUDGE = 1.2
JUDGE_SPEC = "openai:gpt-4o-mini"
LOOPBACK_KEY = "sk-perf-loopback"
TARGET_RSS = 1.0


@dataclass
class Row:
    """One line of the table. ``ok`` is None for rows that only report a number."""

    section: str
    what: str
    ours: float | None
    reference: float | None = None
    ratio: float | None = None
    target: str = ""
    ok: bool | None = None
    unit: str = "s"
    note: str = ""


@dataclass
class Timing:
    wall: float
    cpu: float
    maxrss: int
    stdout: str


@dataclass
class Context:
    """What every section needs: sizes for quick / full mode and a scratch folder."""

    data: Path
    work: Path
    quick: bool
    env: dict[str, str]
    profile: bool = False
    with_m: bool = True
    pyspy: bool = False
    raw: dict[str, Any] = field(default_factory=dict)


def data_dir() -> Path:
    """``$MEMEVAL_DATA_DIR`` or ``../shared/data`` relative to the repository root."""
    env = os.environ.get("MEMEVAL_DATA_DIR")
    return Path(env) if env else ROOT.parent / "shared" / "data"


# ------------------------------------------------------------------------------------------------
# subprocess helpers


def _child_env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MEMEVAL_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def run_timed(args: Sequence[str], cwd: Path, env: dict[str, str], check: bool = True) -> Timing:
    """Run ``python *args`` in ``cwd``; wall seconds, CPU seconds (user + sys, with its own
    children such as xdist workers) and peak RSS in bytes of the largest process."""
    out_path = cwd / ".perf-stdout.txt"
    with open(out_path, "w", encoding="utf-8") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, *args], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = out_path.read_text(encoding="utf-8", errors="replace")
    if check and proc.returncode != 0:
        tail = "\n".join(text.splitlines()[-25:])
        raise RuntimeError(f"`python {' '.join(args)}` exited {proc.returncode} in {cwd}:\n{tail}")
    rss_unit = 1 if sys.platform == "darwin" else 1024
    return Timing(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * rss_unit, text)


def best_of(n: int, fn: Callable[[], Timing]) -> tuple[Timing, list[float]]:
    """The fastest of ``n`` runs (by wall time) and all wall times."""
    runs = [fn() for _ in range(n)]
    return min(runs, key=lambda t: t.wall), [t.wall for t in runs]


# ------------------------------------------------------------------------------------------------
# LoCoMo workload


def locomo_questions(data: Path) -> list[tuple[str, str, int, dict[str, Any]]]:
    """``(question_id, conversation_id, index_in_conversation, qa)`` in file order (ids as the
    LoCoMo loader makes them: ``<sample_id>-q<n>``)."""
    file = data / "locomo" / "locomo10.json"
    with open(file, encoding="utf-8") as fh:
        samples = json.load(fh)
    out = []
    for sample in samples:
        for i, qa in enumerate(sample["qa"]):
            out.append((f"{sample['sample_id']}-q{i + 1}", sample["sample_id"], i, qa))
    return out


def write_answers(data: Path, path: Path) -> int:
    """Write ``{question_id: answer}`` for every LoCoMo question and return how many.

    Even positions get the gold answer (the abstention phrase for adversarial questions), odd ones
    another question's answer, so about half are CORRECT and half WRONG: both item outcomes, their
    report sections and every metric are exercised."""
    questions = locomo_questions(data)
    n = len(questions)
    table: dict[str, str] = {}
    for i, (qid, _, _, qa) in enumerate(questions):
        gold = qa.get("answer", ABSTAIN if qa.get("category") == 5 else "")
        other = questions[(i * 7 + 3) % n][3].get("answer", "no idea")
        if i % 2 == 0:
            table[qid] = ABSTAIN if qa.get("category") == 5 else str(gold)
        else:
            table[qid] = str(other)
    path.write_text(json.dumps(table), encoding="utf-8")
    return n


def count_selected(data: Path, limit: int | None) -> int:
    """How many LoCoMo questions ``--memeval-limit=limit`` selects (first N per conversation)."""
    return sum(1 for _, _, i, _ in locomo_questions(data) if limit is None or i < limit)


def make_project(ctx: Context, name: str) -> Path:
    """A temp project holding ``instant_system.py`` and ``answers.json``."""
    proj = ctx.work / name
    proj.mkdir(parents=True, exist_ok=True)
    shutil.copy(PERF / "instant_system.py", proj / "instant_system.py")
    write_answers(ctx.data, proj / "answers.json")
    return proj


def make_trivial(ctx: Context, n: int) -> Path:
    proj = ctx.work / f"trivial{n}"
    proj.mkdir(parents=True, exist_ok=True)
    (proj / "test_trivial.py").write_text(
        "import pytest\n\n\n"
        f"@pytest.mark.parametrize('i', range({n}))\n"
        "def test_trivial(i):\n    assert True\n",
        encoding="utf-8",
    )
    return proj


def memeval_args(ctx: Context, system: str, limit: int | None, *extra: str) -> list[str]:
    args = [
        *PYTEST_BASE,
        "--memeval=locomo",
        f"--memeval-data={ctx.data}",
        f"--memsys={system}",
    ]
    if limit is not None:
        args.append(f"--memeval-limit={limit}")
    return [*args, *extra]


def read_report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# ------------------------------------------------------------------------------------------------
# sections


def section_f1(ctx: Context) -> list[Row]:
    bench_f1: Any = importlib.import_module("bench_f1")
    res = bench_f1.main(repeats=1 if ctx.quick else 5)
    ctx.raw["f1"] = res
    q = res["questions"]
    rows = [
        Row(
            "f1",
            f"LoCoMo F1, {q} q x 2 pairs, CPU s, cold caches (ours vs plain)",
            res["ours_cold_s"],
            res["plain_s"],
            res["ratio_cold"],
            f"speed-up >= {TARGET_F1:g}x",
            res["ratio_cold"] >= TARGET_F1,
        ),
        Row(
            "f1",
            "LoCoMo F1, same, warm caches (rescoring, 2nd system)",
            res["ours_warm_s"],
            res["plain_s"],
            res["ratio_warm"],
            f"speed-up >= {TARGET_F1:g}x",
            res["ratio_warm"] >= TARGET_F1,
        ),
        Row(
            "f1",
            "LoCoMo F1 mismatches vs plain (exact float equality)",
            float(res["mismatches"]),
            float(res["pairs"]),
            None,
            "0 mismatches",
            bool(res["identical"]),
            unit="n",
        ),
    ]
    return rows


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
    import_s = _import_cost(ctx, 1 if ctx.quick else 3)
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


_IMPORT_PROBE = (
    "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
)


def _import_cost(
    ctx: Context,
    repeats: int,
    module: str = "pytest_memeval.metrics",
    already: str = "_pytest.python, pytest_memeval.plugin",
) -> float:
    """Best of ``repeats``: seconds to import ``module`` in a fresh interpreter that has imported
    ``already`` (by default what every pytest run imports anyway: pytest and the plugin's own
    light modules)."""
    best = float("inf")
    for _ in range(repeats):
        t = run_timed(
            ["-c", f"import {already};" + _IMPORT_PROBE.format(module=module)],
            ctx.work,
            ctx.env,
        )
        best = min(best, float(t.stdout.strip().splitlines()[-1]))
    return best


def profile_run(
    ctx: Context,
    proj: Path,
    run_args: list[str],
    env: dict[str, str] | None = None,
    key: str = "profile",
) -> list[dict[str, Any]]:
    """cProfile a run; the 15 functions of ``pytest_memeval`` with most cumulative time (the
    profiler's total goes to ``ctx.raw[key + "_total_s"]``)."""
    out = proj / f"{key}.out"
    args = ["-m", "cProfile", "-o", str(out), *run_args]
    run_timed(args, proj, env if env is not None else ctx.env)
    stats = pstats.Stats(str(out), stream=io.StringIO())
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = float(stats.total_tt)  # type: ignore[attr-defined]
    rows = []
    for (filename, line, func), (_cc, nc, tt, ct, _) in raw.items():
        if "pytest_memeval" in filename:
            rel = filename.split("pytest_memeval", 1)[1].lstrip("/")
            rows.append(
                {
                    "function": f"pytest_memeval/{rel}:{line}({func})",
                    "calls": nc,
                    "tottime": tt,
                    "cumtime": ct,
                }
            )
    rows.sort(key=lambda r: -float(r["cumtime"]))
    ctx.raw[f"{key}_total_s"] = total
    return rows[:15]


#: Pytest phases, by the hook whose frame is outermost in a sampled stack (first match wins).
PYSPY_PHASES = (
    ("configure (plugins' pytest_configure)", "pytest_configure"),
    ("session start (dataset parsed here)", "pytest_sessionstart"),
    ("collection", "pytest_collection"),
    ("test loop (setup, call, teardown, reports)", "pytest_runtestloop"),
    ("session finish (summary, reports, gates)", "pytest_sessionfinish"),
    ("terminal summary", "pytest_terminal_summary"),
    ("unconfigure", "pytest_unconfigure"),
)
PYSPY_RATE = 500  # samples per second


def _frame_name(frame: str) -> tuple[str, str]:
    """``"func (path/to/file.py:123)"`` -> ``("func", "path/to/file.py")``."""
    func, _, where = frame.partition(" (")
    return func, where.rstrip(")").rsplit(":", 1)[0]


def pyspy_phases(raw: str, rate: int = PYSPY_RATE) -> dict[str, Any]:
    """Seconds per pytest phase and per ``pytest_memeval`` function from py-spy's ``--format raw``
    output (one ``frame;frame;...;frame count`` line per distinct stack, outermost frame first).

    A stack is charged to the first phase hook found walking from the outermost frame; stacks
    outside ``wrap_session`` are start-up (imports, plugin loading, option parsing), the rest of
    ``wrap_session`` is "other in session" (``gc``, exit). ``memeval`` is the time with a
    ``pytest_memeval`` frame anywhere on the stack; ``functions`` the inclusive time of each
    ``pytest_memeval`` function (counted once per stack)."""
    phases: dict[str, float] = {}
    memeval_phases: dict[str, float] = {}
    functions: dict[str, float] = {}
    total = 0.0
    names = dict((hook, label) for label, hook in PYSPY_PHASES)
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        secs = int(count_text) / rate
        total += secs
        frames = [_frame_name(f) for f in stack.split(";")]
        phase = "start-up (imports, plugins, options)"
        if any(func == "wrap_session" for func, _ in frames):
            phase = "other in session (gc, exit)"
        for func, _ in frames:
            hook = func.rsplit(".", 1)[-1]  # py-spy writes methods as Class.method
            if hook in names:
                phase = names[hook]
                break
        phases[phase] = phases.get(phase, 0.0) + secs
        ours = {f"{func} ({path})" for func, path in frames if "pytest_memeval/" in path}
        if ours:
            memeval_phases[phase] = memeval_phases.get(phase, 0.0) + secs
        for name in ours:
            functions[name] = functions.get(name, 0.0) + secs
    top = sorted(functions.items(), key=lambda kv: -kv[1])[:15]
    return {"total": total, "phases": phases, "memeval": memeval_phases, "top": top}


def pyspy_run(cwd: Path, run_args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Sample ``python *run_args`` with py-spy: non-blocking, so the process is not paused, and
    with idle samples, so waiting (file reads, page faults) counts as the wall time it is."""
    exe = shutil.which("py-spy")
    if exe is None:
        raise RuntimeError("--py-spy needs the py-spy executable (pip install py-spy)")
    out = cwd / "pyspy.txt"
    cmd = [exe, "record", "--format", "raw", "--nonblocking", "--idle", "-r", str(PYSPY_RATE)]
    cmd += ["-o", str(out), "--", sys.executable, *run_args]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not out.is_file():
        raise RuntimeError(f"py-spy failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return pyspy_phases(out.read_text(encoding="utf-8", errors="replace"))


def format_pyspy(result: dict[str, Any]) -> str:
    """The phase table (ours, bare, difference) and the top ``pytest_memeval`` functions."""
    ours, bare = result["ours"], result["bare"]
    order = ["start-up (imports, plugins, options)", *(label for label, _ in PYSPY_PHASES)]
    order.append("other in session (gc, exit)")
    width = max(len(x) for x in order) + 2
    lines = [
        f"py-spy of the instant LoCoMo run vs the bare run ({PYSPY_RATE} Hz, non-blocking, idle "
        "included): "
        "sampled seconds per pytest phase",
        f"{'phase':<{width}} {'ours':>7} {'of it ours':>10} {'bare':>7} {'diff':>7}",
    ]
    for label in [*order, "total"]:
        if label == "total":
            a, m, b = ours["total"], sum(ours["memeval"].values()), bare["total"]
        else:
            a = ours["phases"].get(label, 0.0)
            m = ours["memeval"].get(label, 0.0)
            b = bare["phases"].get(label, 0.0)
        if a or b:
            lines.append(f"{label:<{width}} {a:>7.3f} {m:>10.3f} {b:>7.3f} {a - b:>+7.3f}")
    lines.append("('of it ours': samples with a pytest_memeval frame on the stack)")
    lines.append("\ntop 15 pytest_memeval functions, inclusive sampled seconds")
    lines.extend(f"{secs:>7.3f}  {name}" for name, secs in ours["top"])
    return "\n".join(lines)


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


def section_judge(ctx: Context) -> list[Row]:
    bench_judge: Any = importlib.import_module("bench_judge")
    argv = ["--calls", "60", "--latency", "0.02", "--concurrency", "4"] if ctx.quick else []
    with contextlib.redirect_stdout(io.StringIO()):
        res = bench_judge.main(argv)
    ctx.raw["judge"] = res
    rows = []
    for case in res["cases"]:
        what = (
            f"judge: {case['calls']} calls at {case['latency'] * 1000:g} ms, "
            f"{case['processes']} proc x {case['concurrency']} conc: wall vs N x lat / conc"
        )
        rows.append(
            Row(
                "judge",
                what,
                case["wall"],
                case["ideal"],
                case["ratio"],
                f"<= {TARGET_JUDGE:g}x",
                case["ratio"] <= TARGET_JUDGE and case["requests"] == case["calls"],
            )
        )
        rows.append(
            Row(
                "judge",
                f"  warm rerun: HTTP requests (cache hits {case['warm_hits']}, "
                f"{case['warm_wall']:.2f} s)",
                float(case["warm_requests"]),
                0.0,
                None,
                "0 requests",
                case["warm_requests"] == 0,
                unit="n",
            )
        )
    return rows


def _judge_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    """The loopback judge: a mem0-style verdict (the JSON LoCoMo's default judge parses)."""
    return '{"label": "CORRECT"}'


def section_warmjudge(ctx: Context) -> list[Row]:
    """Issue 6 item 5, second half: a warm judge rerun (every call answered from the LLM cache)
    makes zero HTTP requests and costs at most 1.2x the same run with offline metrics only."""
    llm_server: Any = importlib.import_module("llm_server")  # tests/llm_server.py
    limit = 2 if ctx.quick else 20
    repeats = 1 if ctx.quick else 3
    n = count_selected(ctx.data, limit)
    proj = make_project(ctx, "warmjudge")
    cache = ctx.work / "warmjudge-cache"
    with llm_server.LLMServer(reply=_judge_reply) as server:
        env = {**ctx.env, **server.env(LOOPBACK_KEY)}
        common = [f"--memeval-cache-dir={cache}"]

        def args(judge: bool, report: Path) -> list[str]:
            extra = [*common, f"--memeval-json={report}"]
            if judge:
                extra.append(f"--memeval-judge={JUDGE_SPEC}")
            return memeval_args(ctx, INSTANT, limit, *extra)

        before = server.count()
        cold = run_timed(args(True, proj / "cold.json"), proj, env)
        cold_requests = server.count() - before
        run_timed(args(False, proj / "offline.json"), proj, env)  # warm-up of the offline path

        runs: dict[str, list[Timing]] = {"warm": [], "offline": []}
        warm_requests = 0
        for i in range(repeats):  # interleaved, so both see the same machine load
            before = server.count()
            runs["warm"].append(run_timed(args(True, proj / f"warm{i}.json"), proj, env))
            warm_requests += server.count() - before
            runs["offline"].append(run_timed(args(False, proj / f"offline{i}.json"), proj, env))
        if ctx.profile:
            ctx.raw["profile_warmjudge"] = profile_run(
                ctx, proj, args(True, proj / "profiled.json"), env, key="profile_warmjudge"
            )

    warm_reports = [read_report(proj / f"warm{i}.json") for i in range(repeats)]
    offline_report = read_report(proj / "offline0.json")
    cold_report = read_report(proj / "cold.json")
    for name, rep in (("cold", cold_report), ("warm", warm_reports[0])):
        overall = rep["runs"][0]["summary"]["overall"]
        if overall.get("count") != n or "judge" not in overall:
            raise RuntimeError(
                f"{name} judge run: {overall.get('count')} questions scored, "
                f"expected {n} with a judge score"
            )
    if "judge" in offline_report["runs"][0]["summary"]["overall"]:
        raise RuntimeError("the offline-only run has a judge score")
    hits = [int((r.get("extra", {}).get("llm_cache") or {}).get("hits", 0)) for r in warm_reports]
    best = {k: min(v, key=lambda t: t.wall) for k, v in runs.items()}
    best_cpu = {k: min(t.cpu for t in v) for k, v in runs.items()}
    ratio = best["warm"].wall / best["offline"].wall
    diff = best["warm"].wall - best["offline"].wall
    openai_s = _import_cost(
        ctx,
        1 if ctx.quick else 3,
        "openai",
        "_pytest.python, pytest_memeval.plugin, pytest_memeval.metrics, pytest_memeval.judging",
    )
    ctx.raw["warmjudge"] = {
        "questions": n,
        "limit": limit,
        "cold_wall": cold.wall,
        "cold_requests": cold_requests,
        "walls": {k: [t.wall for t in v] for k, v in runs.items()},
        "cpus": {k: [t.cpu for t in v] for k, v in runs.items()},
        "warm_requests": warm_requests,
        "warm_cache_hits": hits,
        "import_openai_s": openai_s,
        "warm_extra": warm_reports[0].get("extra", {}),
    }
    label = f"{n} q (--memeval-limit={limit})"
    return [
        Row(
            "warmjudge",
            f"warm judge rerun, {label}, {JUDGE_SPEC} cached vs offline only: wall, best of "
            f"{repeats}",
            best["warm"].wall,
            best["offline"].wall,
            ratio,
            f"<= {TARGET_WARM_JUDGE:g}x",
            ratio <= TARGET_WARM_JUDGE,
        ),
        Row(
            "warmjudge",
            "  same, CPU s (user+sys, best)",
            best_cpu["warm"],
            best_cpu["offline"],
            best_cpu["warm"] / best_cpu["offline"],
        ),
        Row(
            "warmjudge",
            "  `import openai`, s (not paid when every call is cached: clients are built lazily)",
            openai_s,
            diff,
            # the reference is the wall difference warm - offline: near zero, a ratio means nothing
            openai_s / diff if diff > 0.01 else None,
        ),
        Row(
            "warmjudge",
            f"  warm reruns: HTTP requests to the loopback server ({repeats} runs, cache hits "
            f"{min(hits)} per run)",
            float(warm_requests),
            0.0,
            None,
            "0 requests",
            warm_requests == 0 and min(hits) > 0,
            unit="n",
        ),
        Row(
            "warmjudge",
            "  cold run (fills the cache): HTTP requests vs questions",
            float(cold_requests),
            float(n),
            None,
            unit="n",
        ),
        Row("warmjudge", "  cold run wall, s", cold.wall),
    ]


_RSS_LAUNCHER = r"""
import json, os, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1], "w"), stderr=subprocess.STDOUT)
_, status, usage = os.wait4(proc.pid, 0)
print(json.dumps({"wall": time.perf_counter() - t0, "maxrss": usage.ru_maxrss,
                  "rc": os.waitstatus_to_exitcode(status)}))
"""


def run_rss(args: Sequence[str], cwd: Path, env: dict[str, str]) -> Timing:
    """Like :func:`run_timed`, but started from a small launcher process.

    Linux keeps ``ru_maxrss`` across ``execve``: a child forked from this (large) process starts
    with this process's peak as its own. The launcher is a fresh interpreter that imports nothing
    heavy, so the peak it reports for its child is the child's own."""
    out = cwd / ".perf-rss-stdout.txt"
    launch = run_timed(["-c", _RSS_LAUNCHER, str(out), sys.executable, *args], cwd, env)
    info = json.loads(launch.stdout.strip().splitlines()[-1])
    text = out.read_text(encoding="utf-8", errors="replace")
    if info["rc"] != 0:
        tail = "\n".join(text.splitlines()[-25:])
        raise RuntimeError(f"`python {' '.join(args)}` exited {info['rc']} in {cwd}:\n{tail}")
    rss_unit = 1 if sys.platform == "darwin" else 1024
    return Timing(float(info["wall"]), launch.cpu, int(info["maxrss"]) * rss_unit, text)


_MEASURE_LOADER = (
    "import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
    "import gen_longmemeval; "
    "print(json.dumps(gen_longmemeval.measure(Path(sys.argv[2]), naive=False)))"
)


def _lme_rows(ctx: Context, variant: str, size_mb: float) -> list[Row]:
    """Generate a LongMemEval file of ``size_mb`` (500 questions), measure, delete it."""
    folder = ctx.work / "lme"
    folder.mkdir(exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < 2 * size_mb * 1e6:
        return [
            Row(
                "longmemeval",
                f"LongMemEval-{variant} ({size_mb:g} MB): does not fit the disk "
                f"({free / 1e9:.1f} GB free), not measured",
                None,
            )
        ]
    path = folder / f"longmemeval_{variant.lower()}_generated.json"
    gen = run_timed(
        [str(PERF / "gen_longmemeval.py"), "--out", str(path), "--size", str(size_mb)],
        folder,
        ctx.env,
    )
    size = path.stat().st_size
    try:
        # gen_longmemeval.measure runs the loader in its own subprocess; calling it from a small
        # interpreter keeps this process's RSS out of the measured peak (see run_rss)
        probe = run_timed(["-c", _MEASURE_LOADER, str(PERF), str(path)], folder, ctx.env)
        loader = json.loads(probe.stdout.strip().splitlines()[-1])
        collect = run_rss(
            [
                *PYTEST_BASE,
                "--collect-only",
                "--memeval=longmemeval",
                f"--memeval-variant={path}",
                "--memsys=no-memory",
            ],
            folder,
            ctx.env,
        )
        items = sum(1 for ln in collect.stdout.splitlines() if "::" in ln)
    finally:
        path.unlink(missing_ok=True)
    mb = 1e6
    ctx.raw[f"longmemeval_{variant}"] = {
        "file_bytes": size,
        "generate_s": gen.wall,
        "loader": loader,
        "collect_wall": collect.wall,
        "collect_maxrss": collect.maxrss,
        "collect_items": items,
    }
    peak = float(loader["peak_rss"])
    return [
        Row(
            "longmemeval",
            f"LongMemEval-{variant} generated ({int(loader['questions'])} q): loader peak RSS "
            "vs file, MB",
            peak / mb,
            size / mb,
            peak / size,
            f"< {TARGET_RSS:g}x",
            peak / size < TARGET_RSS,
            unit="MB",
        ),
        Row(
            "longmemeval",
            "  of which RSS before loading (interpreter + package), MB",
            float(loader["rss_before"]) / mb,
            unit="MB",
        ),
        Row(
            "longmemeval",
            f"  pytest --collect-only ({items} items): peak RSS vs file, MB",
            collect.maxrss / mb,
            size / mb,
            collect.maxrss / size,
            f"< {TARGET_RSS:g}x",
            collect.maxrss / size < TARGET_RSS and items == int(loader["questions"]),
            unit="MB",
        ),
        Row("longmemeval", "  loader time (index + 5 conversations), s", float(loader["seconds"])),
        Row("longmemeval", "  pytest --collect-only wall (collection time), s", collect.wall),
    ]


def section_longmemeval(ctx: Context) -> list[Row]:
    """S size (~277 MB) always; M size (~2.7 GB, same 500 questions with 10x longer sessions,
    not M's 500 sessions per question) unless ``--no-m`` or the disk is too small."""
    rows = _lme_rows(ctx, "S", 277.0)
    if ctx.with_m:
        rows += _lme_rows(ctx, "M", 2700.0)
    return rows


RUNNERS: dict[str, Callable[[Context], list[Row]]] = {
    "f1": section_f1,
    "harness": section_harness,
    "xdist": section_xdist,
    "judge": section_judge,
    "warmjudge": section_warmjudge,
    "longmemeval": section_longmemeval,
}


# ------------------------------------------------------------------------------------------------
# table


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if value != value:  # NaN
        return "n/a"
    if unit in ("n", "bool"):
        return f"{value:.0f}"
    if unit == "MB":
        return f"{value:.1f}"
    return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"


def format_table(rows: Sequence[Row]) -> str:
    """The table as text: ``what | ours | reference | ratio | target | ok?``."""
    head = ("what", "ours", "reference", "ratio", "target", "ok?")
    body = []
    for r in rows:
        ok = "-" if r.ok is None else ("yes" if r.ok else "NO")
        ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
        unit = "" if r.unit in ("n", "bool") else f" {r.unit}"
        ours = _num(r.ours, r.unit) + (unit if r.ours is not None else "")
        ref = _num(r.reference, r.unit) + (unit if r.reference is not None else "")
        what = r.what + (f" [{r.note}]" if r.note else "")
        body.append((what, ours, ref, ratio, r.target or "-", ok))
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:5], widths[1:5], strict=True)]
        return " | ".join([first, *rest, cells[5].ljust(widths[5])]).rstrip()

    sep = "-+-".join("-" * w for w in widths)
    out = [line(head), sep]
    section = None
    for r, cells in zip(rows, body, strict=True):
        if section is not None and r.section != section:
            out.append(sep)
        section = r.section
        out.append(line(cells))
    return "\n".join(out)


def _machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


# ------------------------------------------------------------------------------------------------
# main


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
    before = _machine()
    started = time.perf_counter()
    try:
        ctx = Context(
            data,
            work,
            args.quick,
            _child_env(work),
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
    after = _machine()

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
