"""py-spy sampling for ``perf/run.py --py-spy``: seconds per pytest phase, ours vs the bare run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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
